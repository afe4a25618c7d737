"""Random augmentations of digit images, where their random numbers come from, and a stream
that workers share or split (chapter 7). Importable, so that workers started with spawn or
forkserver find them.

An augmentation here shifts the image by ``dy, dx`` pixels (each from -2 to 2) and scales
its brightness by a factor from 0.6 to 1.4: three random numbers per sample, which the
sample carries along as ``params`` so that duplicates are easy to count. The brightness is
a float, so two samples get the same ``params`` by chance with probability zero: identical
params mean identical random streams.

- :class:`AugmentedDigits`: draws from one chosen source, a global generator (``"torch"``,
  ``"numpy"``, ``"random"``) or a generator object made in ``__init__`` (``"numpy object"``,
  ``"torch object"``, ``"random object"``);
- :class:`EverySource`: draws the three numbers from each source in turn, so that one
  epoch shows what every source does;
- :class:`PerWorkerDigits`: the repair, a generator object made in each worker from
  ``get_worker_info().seed``;
- :class:`PerSampleDigits`: numbers that depend on the sample and the epoch only, not on
  which worker drew them;
- :class:`NumberStream`: an IterableDataset of ``0 .. n-1`` with a ``__len__``, split
  among the workers in one of the ways the epoch explorer draws;
- :func:`first_numpy_draw`: what a new process draws first from numpy's global generator,
  the question of numpy's duplicates before torch 1.9.
"""

from __future__ import annotations

import random

import numpy as np
import torch

from minidataloader.dataset import Dataset
from minidataloader_course.shared.digits import DigitsDataset
from minidataloader_course.shared.synthetic import any_worker_info
from minidataloader_course.viz.arithmetic import SHARDINGS, worker_shard

GLOBAL_SOURCES = ("torch", "numpy", "random")
OBJECT_SOURCES = ("torch object", "numpy object", "random object")
SOURCES = GLOBAL_SOURCES + OBJECT_SOURCES
MAX_SHIFT = 2


def make_generator(source: str, seed: int):
    """A generator object of the kind ``source`` names, seeded with ``seed``."""
    if source == "numpy object":
        return np.random.default_rng(seed)
    if source == "torch object":
        return torch.Generator().manual_seed(seed)
    if source == "random object":
        return random.Random(seed)
    raise ValueError(f"source should be one of {OBJECT_SOURCES}, got {source!r}")


def draw(source: str, rng=None) -> tuple[int, int, float]:
    """``(dy, dx, brightness)`` from ``source``; object sources draw from ``rng``."""
    low, high = -MAX_SHIFT, MAX_SHIFT + 1
    if source == "torch":
        dy, dx = torch.randint(low, high, (2,)).tolist()
        u = torch.rand(()).item()
    elif source == "numpy":
        dy, dx = np.random.randint(low, high, size=2).tolist()
        u = float(np.random.rand())
    elif source == "random":
        dy, dx = random.randrange(low, high), random.randrange(low, high)
        u = random.random()
    elif source == "torch object":
        dy, dx = torch.randint(low, high, (2,), generator=rng).tolist()
        u = torch.rand((), generator=rng).item()
    elif source == "numpy object":
        dy, dx = rng.integers(low, high, size=2).tolist()
        u = float(rng.random())
    elif source == "random object":
        dy, dx, u = rng.randrange(low, high), rng.randrange(low, high), rng.random()
    else:
        raise ValueError(f"source should be one of {SOURCES}, got {source!r}")
    return dy, dx, 0.6 + 0.8 * u


def augment(image: torch.Tensor, dy: int, dx: int, brightness: float) -> torch.Tensor:
    """``image`` (uint8, 1 x H x W) shifted by ``dy, dx`` pixels (the edge filled with
    black) and scaled by ``brightness``, as floats from 0 to 1."""
    m = MAX_SHIFT
    padded = torch.nn.functional.pad(image.float() / 255, (m, m, m, m))
    height, width = image.shape[-2:]
    shifted = padded[..., m - dy:m - dy + height, m - dx:m - dx + width]
    return (shifted * brightness).clamp(0, 1)


class AugmentedDigits(Dataset):
    """Sample ``k`` is ``(image, label, params)``: digit ``indices[k]``
    augmented with numbers drawn from ``source``, and ``params``, the tensor
    ``[dy, dx, brightness]``. An object source is made in ``__init__``,
    seeded with ``seed``: the way most augmentation code is written."""

    def __init__(self, source="numpy object", indices=None, seed=0):
        if source not in SOURCES:
            raise ValueError(f"source should be one of {SOURCES}, "
                             f"got {source!r}")
        self.digits = DigitsDataset()
        if indices is None:
            indices = range(len(self.digits))
        self.indices = list(indices)
        self.source = source
        self.rng = None  # a global source needs no object
        if source in OBJECT_SOURCES:
            self.rng = make_generator(source, seed)

    def __len__(self):
        return len(self.indices)

    def generator(self):
        """The generator object to draw from (None: a global one)."""
        return self.rng

    def __getitem__(self, k):
        image, label = self.digits[self.indices[k]]
        dy, dx, brightness = draw(self.source, self.generator())
        params = torch.tensor([dy, dx, brightness], dtype=torch.float64)
        return augment(image, dy, dx, brightness), label, params


class PerWorkerDigits(AugmentedDigits):
    """The repair: in a worker, the generator object is replaced, the first
    time it is needed, by a new one seeded with ``get_worker_info().seed``,
    which differs from worker to worker and from epoch to epoch. Without
    workers, the generator made in ``__init__`` is used."""

    def __init__(self, source="numpy object", indices=None, seed=0):
        if source not in OBJECT_SOURCES:
            raise ValueError(f"source should be one of {OBJECT_SOURCES}, "
                             f"got {source!r}")
        super().__init__(source, indices, seed)
        self.rng_seed = None  # the worker seed self.rng was made for

    def generator(self):
        info = any_worker_info()
        if info is not None and self.rng_seed != info.seed:
            self.rng = make_generator(self.source, info.seed)
            self.rng_seed = info.seed
        return self.rng


class EverySource(Dataset):
    """Sample ``k`` is a dict: for each source in :data:`SOURCES`, the tensor
    ``[dy, dx, brightness]`` it drew for this sample (no image: only the numbers matter)."""

    def __init__(self, n: int = 32, seed: int = 0):
        self.n = n
        self.rngs = {source: make_generator(source, seed) for source in OBJECT_SOURCES}

    def __len__(self):
        return self.n

    def __getitem__(self, k):
        if not 0 <= k < self.n:
            raise IndexError(f"index {k} out of range for {self.n} samples")
        return {source: torch.tensor(draw(source, self.rngs.get(source)),
                                     dtype=torch.float64)
                for source in SOURCES}


class PerSampleDigits(AugmentedDigits):
    """Numbers that depend only on ``(seed, epoch, sample)``: a new generator
    for every sample, seeded with all three. However many workers fetch the
    samples, in whatever order, each sample gets the same augmentation.
    ``set_epoch`` changes them all (if it reaches the fetching process)."""

    def __init__(self, indices=None, seed=0):
        super().__init__("numpy object", indices, seed)
        self.seed, self.epoch = seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __getitem__(self, k):
        self.rng = np.random.default_rng([self.seed, self.epoch, k])
        return super().__getitem__(k)


class NumberStream(torch.utils.data.IterableDataset):
    """The numbers ``0 .. n-1`` as a stream whose ``len()`` is ``n``, built on torch's
    ``IterableDataset`` so that both loaders see a stream (minidataloader recognises
    torch's base classes; torch does not know minidataloader's). In a worker, its copy
    yields the worker's share (:func:`~minidataloader_course.viz.arithmetic.worker_shard`):
    ``"stride"``: every ``num_workers``-th number from its id; ``"blocks"``: one contiguous
    block; ``"none"``: all of them, as every worker of a stream that ignores
    ``get_worker_info`` does."""

    def __init__(self, n: int = 10, sharding: str = "stride"):
        if sharding not in SHARDINGS:
            raise ValueError(f"sharding should be one of {SHARDINGS}, got {sharding!r}")
        self.n, self.sharding = n, sharding

    def __len__(self):
        return self.n

    def __iter__(self):
        info = any_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(worker_shard(self.n, info.id, info.num_workers, self.sharding))


def first_numpy_draw(results) -> None:
    """Put this process's first draw from numpy's global generator on ``results`` (a
    multiprocessing queue): a forked process inherits its parent's state, a spawned one
    imports numpy afresh, which seeds itself from the operating system."""
    results.put(float(np.random.rand()))
