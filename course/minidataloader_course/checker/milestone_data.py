"""Datasets, collate functions and observations the milestones use, in a module of their own
so that worker processes started with spawn can import them (a class defined in a notebook
or in ``__main__`` cannot be sent to such a worker)."""

from __future__ import annotations

import functools
import multiprocessing
import os
import random
import signal
import time
import warnings

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset

from minidataloader_course.checker.framework import take
from minidataloader_course.shared.synthetic import TwoArgumentError


class Pairs(Dataset):
    """Sample ``i`` is ``{"x": tensor([i, -i]), "i": i}``: a dict, a tensor and an int."""

    def __init__(self, size: int):
        self.size = size

    def __getitem__(self, index):
        if not 0 <= index < self.size:
            raise IndexError(f"index {index} out of range for {self.size} samples")
        return {"x": torch.tensor([index, -index]), "i": index}

    def __len__(self):
        return self.size

    def __repr__(self):
        return f"a map-style dataset of {self.size} samples"


class BatchedPairs(Pairs):
    """Pairs that can also fetch a whole batch with one ``__getitems__`` call."""

    def __getitems__(self, indices):
        return [self[i] for i in indices]

    def __repr__(self):
        return f"a map-style dataset of {self.size} samples with __getitems__"


class PairStream(IterableDataset):
    """The same samples as :class:`Pairs`, as a stream with a (true) ``__len__``."""

    def __init__(self, size: int):
        self.size = size

    def __iter__(self):
        return ({"x": torch.tensor([i, -i]), "i": i} for i in range(self.size))

    def __len__(self):
        return self.size

    def __repr__(self):
        return f"an IterableDataset of {self.size} samples"


DATASETS = {"map": Pairs, "batched": BatchedPairs, "stream": PairStream}


def as_list(batch):
    """A collate_fn of the reader's kind: the samples' numbers, as a plain list."""
    return [sample["i"] for sample in batch]


def numbers_only(sample):
    """A collate_fn for batch_size=None: one sample's number."""
    return sample["i"]


COLLATE_FNS = {"as_list": as_list, "numbers_only": numbers_only}


def loader_arguments(arguments: dict) -> dict:
    """Turn a configuration's plain data into DataLoader arguments: a generator seed into a
    new generator, a collate function's name into the function."""
    arguments = dict(arguments)
    if arguments.get("generator") is not None:
        arguments["generator"] = torch.Generator().manual_seed(arguments["generator"])
    if "collate_fn" in arguments:
        arguments["collate_fn"] = COLLATE_FNS[arguments["collate_fn"]]
    return arguments


def drawn_afterwards() -> dict:
    """The next numbers from the three global generators: they show how many numbers the
    loader drew, and from where."""
    return {"torch.rand(2)": torch.rand(2), "random.random()": random.random(),
            "np.random.rand()": float(np.random.rand())}


def two_epochs(data, spec: dict) -> dict:
    """What a user observes of ``data.DataLoader(dataset, **arguments)``: its length, two
    epochs of batches, the warnings, and the random numbers drawn afterwards. Errors escape:
    the exception's type is the observation."""
    dataset = DATASETS[spec["dataset"]](spec["size"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = data.DataLoader(dataset, **loader_arguments(spec["arguments"]))
        seen = {"len(loader)": len(loader)}
        for epoch in (1, 2):
            seen[f"epoch {epoch}"] = take(iter(loader), 4 * spec["size"] + 8)
    seen["warnings"] = [w.category.__name__ for w in caught]
    seen["random numbers drawn afterwards"] = drawn_afterwards()
    return seen


# ---------------------------------------------------------------------------------------
# Milestones 7 and 10: what code inside the workers sees, and how the loader fails


def _seen(index: int, info) -> tuple:
    """What code fetching sample ``index`` sees: its worker's id and seed as
    ``get_worker_info()`` tells them, torch's initial seed, and one draw from each global
    generator (their seeds, installed in the worker, decide them)."""
    if info is None:
        return index, -1, -1, torch.initial_seed(), -1.0, -1.0, -1.0
    return (index, info.id, info.seed, torch.initial_seed(), float(np.random.rand()),
            random.random(), torch.rand(()).item())


class WhoFetched(Dataset):
    """Sample ``i`` is ``_seen(i, get_worker_info())``, asked of the ``get_worker_info`` of
    the loader that reads it (torch's, or the learner's: ``info`` is either function, which
    a spawned worker finds by its module and name)."""

    def __init__(self, size: int, info=None):
        self.size, self.info = size, info

    def __getitem__(self, index):
        if not 0 <= index < self.size:
            raise IndexError(f"index {index} out of range for {self.size} samples")
        return _seen(index, self.info())

    def __len__(self):
        return self.size

    def __repr__(self):
        return f"a map-style dataset of {self.size} samples that report what their worker sees"


class BatchedWhoFetched(WhoFetched):
    def __getitems__(self, indices):
        return [self[i] for i in indices]

    def __repr__(self):
        return super().__repr__() + ", with __getitems__"


class WhoStreamed(IterableDataset):
    """The samples ``0 .. size-1`` of :class:`WhoFetched` as a stream; ``shard``: worker
    ``w`` of ``W`` reads ``w, w + W, ...``, else every worker reads all of it."""

    def __init__(self, size: int, info=None, shard: bool = False):
        self.size, self.info, self.shard = size, info, shard

    def __iter__(self):
        info = self.info()
        start, step = (info.id, info.num_workers) if self.shard and info is not None else (0, 1)
        return (_seen(i, self.info()) for i in range(start, self.size, step))

    def __len__(self):
        return self.size

    def __repr__(self):
        split = "split among the workers" if self.shard else "read whole by every worker"
        return f"a stream of {self.size} samples that report what their worker sees, {split}"


WORKER_DATASETS = {"map": WhoFetched, "batched": BatchedWhoFetched, "stream": WhoStreamed,
                   "sharded": functools.partial(WhoStreamed, shard=True)}


class Faulty(Dataset):
    """Sample ``i`` is ``(i, the pid that read it)``; sample ``at`` fails: raises
    ValueError, KeyError or TwoArgumentError (an exception torch cannot rebuild from one
    string), kills its worker (SIGKILL, once ``started`` is set: the main process is then
    inside ``next()``), or takes ``seconds``."""

    def __init__(self, size: int, at: int | None = None, fault: str = "ValueError",
                 seconds: float = 1.5):
        self.size, self.at, self.fault, self.seconds = size, at, fault, seconds
        self.started = multiprocessing.get_context("fork").Event()

    def __getitem__(self, index):
        if index == self.at:
            if self.fault == "ValueError":
                raise ValueError(f"sample {index} is corrupt")
            if self.fault == "KeyError":
                raise KeyError("label")
            if self.fault == "TwoArgumentError":
                raise TwoArgumentError(f"/data/{index}.png", "truncated file")
            if self.fault == "SIGKILL":
                self.started.wait(5.0)
                os.kill(os.getpid(), signal.SIGKILL)
            if self.fault == "slow":
                time.sleep(self.seconds)
        return index, os.getpid()

    def __len__(self):
        return self.size

    def __repr__(self):
        fault = {"ValueError": "raises ValueError", "KeyError": "raises KeyError('label')",
                 "TwoArgumentError": "raises TwoArgumentError (two arguments: torch cannot "
                                     "rebuild it from its message)",
                 "SIGKILL": "kills its worker (SIGKILL)",
                 "slow": f"takes {self.seconds:g} s"}[self.fault]
        where = f"; sample {self.at} {fault}" if self.at is not None else ""
        return f"a dataset of {self.size} samples (i, the pid that read it){where}"


def init_draw(worker_id):
    """A worker_init_fn that draws one number from each global generator: the draws the
    samples then see show that it ran after the seeds were installed."""
    random.random()
    np.random.rand()
    torch.rand(())


class Gated(Dataset):
    """Sample ``i`` is ``i``; the samples in ``gated`` wait (half a second at most) until
    ``handed_out`` is set, and count it when they had to wait: with ``gated`` the samples of
    batch 1, a loader that hands batch 0 out as soon as it arrives reads them late enough."""

    def __init__(self, size: int, gated: tuple):
        context = multiprocessing.get_context("fork")
        self.size, self.gated = size, gated
        self.handed_out = context.Event()
        self.read_too_early = context.Value("i", 0)

    def __getitem__(self, index):
        if index in self.gated and not self.handed_out.wait(0.5):
            with self.read_too_early.get_lock():
                self.read_too_early.value += 1
        return index

    def __len__(self):
        return self.size

    def __repr__(self):
        return (f"a dataset of {self.size} samples, samples {list(self.gated)} waiting until "
                f"batch 0 is handed out")
