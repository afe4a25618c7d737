"""Run real loaders (torch's and minidataloader's) and record what they
deliver, so that the explorer's model is checked against what actually happens; and run a
visual's book cells in a real kernel (:func:`run_in_kernel`); and read a colour's
luminance (:func:`luminance`), for the browser tests of the dark theme.

A library is named by a string so that tests parametrize over ``LIBRARIES``; adding a
library is one entry there and one branch in :func:`library`.
"""

from __future__ import annotations

import math
import random
import re
import warnings
from dataclasses import dataclass

import pytest
import torch

LIBRARIES = ["torch", "minidataloader"]


def run_in_kernel(*sources: str, timeout: int) -> list:
    """Run ``sources`` as the cells of a notebook in a real kernel, as the book's build
    does; return the executed cells (their outputs)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)
                                               for source in sources])
    nbclient.NotebookClient(notebook, timeout=timeout, kernel_name="python3").execute()
    return notebook.cells


def luminance(css_colour: str) -> float:
    """0 (black) to 1 (white), from a computed "rgb(r, g, b)"."""
    red, green, blue = (int(part) for part in css_colour[css_colour.index("(") + 1:-1]
                        .split(",")[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


def library(name: str):
    """The module whose DataLoader, DistributedSampler, IterableDataset and get_worker_info
    the test uses."""
    if name == "torch":
        import torch.utils.data as lib
        return lib
    import minidataloader as lib
    return lib


# --------------------------------------------------------------------------- map-style

@dataclass
class MapRun:
    reported_len: list[int]  # len(loader) per rank
    sampler_streams: list[list[list[int]] | None]  # [epoch][rank] -> what DistributedSampler yields
    epochs: list[list[list[list[int]]]]  # [epoch][rank] -> batches, each a list of indices


def run_map(name: str, *, dataset_size, batch_size, drop_last, epochs, replicas,
            sampler_drop_last, shuffle, seed) -> MapRun:
    """Iterate every rank's loader for every epoch, as a training script would."""
    lib = library(name)
    dataset = list(range(dataset_size))
    if replicas == 1:
        samplers = [None]
        loaders = [lib.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle,
                                  drop_last=drop_last,
                                  generator=torch.Generator().manual_seed(seed))]
    else:
        samplers = [lib.DistributedSampler(dataset, num_replicas=replicas, rank=rank,
                                           shuffle=shuffle, seed=seed,
                                           drop_last=sampler_drop_last)
                    for rank in range(replicas)]
        loaders = [lib.DataLoader(dataset, batch_size=batch_size, sampler=sampler,
                                  drop_last=drop_last) for sampler in samplers]
    streams, delivered = [], []
    for epoch in range(epochs):
        for sampler in samplers:
            if sampler is not None:
                sampler.set_epoch(epoch)
        # a DistributedSampler can be listed without disturbing anything; the loader's
        # RandomSampler cannot (it would draw from the loader's generator)
        streams.append(None if replicas == 1 else [list(sampler) for sampler in samplers])
        delivered.append([[batch.tolist() for batch in loader] for loader in loaders])
    return MapRun([len(loader) for loader in loaders], streams, delivered)


def map_grid(count: int, seed: int = 20261129) -> list[dict]:
    """A wide random grid of map-style cases (fixed seed), plus the corners."""
    rng = random.Random(seed)
    cases = [
        dict(dataset_size=0, batch_size=1, drop_last=False, epochs=1, replicas=1,
             sampler_drop_last=False, shuffle=False, seed=0),
        dict(dataset_size=1, batch_size=5, drop_last=True, epochs=2, replicas=1,
             sampler_drop_last=False, shuffle=True, seed=3),
        dict(dataset_size=3, batch_size=2, drop_last=False, epochs=1, replicas=7,
             sampler_drop_last=False, shuffle=True, seed=1),  # padding longer than the data
        dict(dataset_size=3, batch_size=2, drop_last=False, epochs=1, replicas=5,
             sampler_drop_last=True, shuffle=False, seed=0),  # every sample cut
    ]
    while len(cases) < count:
        replicas = rng.choice([1, 1, 2, 3, 4, 5, 8])
        size = rng.randint(1 if replicas == 1 else 0, 70)
        cases.append(dict(
            dataset_size=size, batch_size=rng.choice([1, 2, 3, 4, 5, 7, 8, 16, 32, 64, 100]),
            drop_last=rng.random() < 0.5, epochs=rng.randint(1, 3), replicas=replicas,
            sampler_drop_last=replicas > 1 and rng.random() < 0.5,
            shuffle=size > 0 and rng.random() < 0.6, seed=rng.choice([0, 1, 7, 42, 2**31 - 1])))
    return cases


# --------------------------------------------------------------------------- iterable

def _shard(sharding: str, dataset_size: int, info) -> range:
    """Written apart from minidataloader_course.viz.arithmetic.worker_shard, as a user would write it."""
    if info is None or sharding == "none":
        return range(dataset_size)
    if sharding == "stride":
        return range(info.id, dataset_size, info.num_workers)
    # the example in torch's IterableDataset documentation: contiguous pieces
    per_worker = int(math.ceil(dataset_size / float(info.num_workers)))
    start = info.id * per_worker
    return range(start, min(start + per_worker, dataset_size))


def make_stream(lib, dataset_size: int, sharding: str):
    """An IterableDataset of `dataset_size` samples whose __len__ says so; each sample is
    (index, id of the worker that yielded it, or -1 in the main process)."""

    class Stream(lib.IterableDataset):
        def __len__(self):
            return dataset_size

        def __iter__(self):
            info = lib.get_worker_info()
            worker = -1 if info is None else info.id
            return iter([(index, worker) for index in _shard(sharding, dataset_size, info)])

    return Stream()


@dataclass
class IterableRun:
    reported_len: int
    batches: list[tuple[int, list[int]]]  # (worker id, indices) in arrival order
    len_warnings: list[str]  # warnings about the length, raised while iterating


def run_iterable(name: str, *, dataset_size, batch_size, drop_last, num_workers,
                 sharding) -> IterableRun:
    lib = library(name)
    extra = dict(multiprocessing_context="fork", timeout=60) if num_workers else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. "more workers than cores": not under test here
        loader = lib.DataLoader(make_stream(lib, dataset_size, sharding), batch_size=batch_size,
                                drop_last=drop_last, num_workers=num_workers, **extra)
    reported = len(loader)  # called first, as torch's length warning requires
    batches = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for indices, workers in loader:
            assert len(set(workers.tolist())) == 1, "a batch mixes samples of two workers"
            batches.append((int(workers[0]), indices.tolist()))
    about_length = [str(w.message) for w in caught if issubclass(w.category, UserWarning)
                    and re.search(r"\blen(gth)?\b", str(w.message), re.IGNORECASE)]
    return IterableRun(reported, batches, about_length)


def iterable_grid(count: int, seed: int = 5) -> list[dict]:
    rng = random.Random(seed)
    cases = [
        dict(dataset_size=2, batch_size=4, drop_last=False, num_workers=3, sharding="blocks"),
        dict(dataset_size=7, batch_size=1, drop_last=False, num_workers=2, sharding="none"),
        dict(dataset_size=6, batch_size=2, drop_last=True, num_workers=3, sharding="none"),
        dict(dataset_size=0, batch_size=3, drop_last=True, num_workers=2, sharding="stride"),
    ]
    while len(cases) < count:
        cases.append(dict(dataset_size=rng.randint(0, 40), batch_size=rng.choice([1, 2, 3, 4, 5, 8]),
                          drop_last=rng.random() < 0.4, num_workers=rng.choice([0, 1, 2, 3]),
                          sharding=rng.choice(["stride", "blocks", "none"])))
    return cases


def case_id(case: dict) -> str:
    short = {"dataset_size": "N", "batch_size": "B", "drop_last": "dl", "epochs": "E",
             "replicas": "R", "sampler_drop_last": "sdl", "shuffle": "sh", "seed": "s",
             "num_workers": "W", "sharding": ""}
    return "-".join(f"{short[k]}{int(v) if isinstance(v, bool) else v}" for k, v in case.items())
