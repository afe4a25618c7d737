"""Datasets, collate functions and observations the milestones use, in a module of their own
so that worker processes started with spawn can import them (a class defined in a notebook
or in ``__main__`` cannot be sent to such a worker)."""

from __future__ import annotations

import random
import warnings

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset

from .._framework import take


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
