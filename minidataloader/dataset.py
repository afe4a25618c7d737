"""Datasets: the two protocols a DataLoader reads from, and the ways to combine them.

A *map-style* dataset answers ``dataset[i]`` (and usually ``len(dataset)``); the loader
decides which keys to ask for. An *iterable-style* dataset is a stream: the loader can only
ask "next?", so the dataset itself decides the order.
"""

from __future__ import annotations

import bisect
import itertools
import math
import sys
import warnings
from collections.abc import Sequence
from typing import Generic, Iterable, TypeVar  # noqa: UP035 - typing.Iterable, as torch

from torch import Generator, Tensor, default_generator, randperm

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


# The core's own exception types. They live here, with the datasets that raise most of them
# (TensorDataset, ConcatDataset, ChainDataset), because every module that raises them
# imports this one anyway: the DataLoader (timeout without workers, prefetch_factor=0) and
# DistributedSampler (a dataset whose length changed) raise AssertionValueError too.
class AssertionValueError(AssertionError, ValueError):
    """Raised where torch raises a bare AssertionError for a bad value: ``except
    AssertionError`` keeps working, and ``except ValueError`` says what really happened."""


class AssertionTypeError(AssertionError, TypeError):
    """Like :class:`AssertionValueError`, for an argument of the wrong kind."""


class Dataset(Generic[T_co]):
    """A map from keys to samples: subclasses define ``__getitem__`` and usually ``__len__``.

    They may also define ``__getitems__(indices) -> list`` to fetch a whole batch at once.
    """

    def __getitem__(self, index) -> T_co:
        raise NotImplementedError("subclasses of Dataset must define __getitem__(index)")

    # NOTE [ No default __len__ or __getitems__ ]
    # A default __len__ that raised would break Python's fallbacks (list(x) asks for len()
    # first and copes with a missing one, not with an exception). A default __getitems__
    # would make the loader believe every dataset can fetch batches itself.

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """A stream of samples: subclasses define ``__iter__``. With worker processes, each
    worker iterates its own copy, so ``get_worker_info()`` is how a copy knows its share."""

    def __add__(self, other: Dataset[T_co]) -> ChainDataset:
        return ChainDataset([self, other])


def _is_iterable_dataset(dataset) -> bool:
    """Ours or torch's. torch's class is checked only if the user already imported it:
    a dataset built on it cannot exist otherwise."""
    torch_data = sys.modules.get("torch.utils.data")
    return isinstance(dataset, IterableDataset) or (
        torch_data is not None and isinstance(dataset, torch_data.IterableDataset))


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``."""

    tensors: tuple[Tensor, ...]

    def __init__(self, *tensors: Tensor) -> None:
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            sizes = [tensor.size(0) for tensor in tensors]
            raise AssertionValueError(
                f"TensorDataset needs tensors with the same first dimension, got sizes {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Datasets side by side: ``StackDataset(a, b)[i] == (a[i], b[i])`` and
    ``StackDataset(x=a, y=b)[i] == {"x": a[i], "y": b[i]}``."""

    datasets: tuple | dict

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("StackDataset takes datasets either by position (samples are "
                             "tuples) or by name (samples are dicts), not both")
        if not (args or kwargs):
            raise ValueError("StackDataset needs at least one dataset")
        self.datasets = args or kwargs
        parts = list(args or kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(dataset) for dataset in parts):
            raise ValueError("StackDataset needs datasets of the same length, got lengths "
                             f"{[len(dataset) for dataset in parts]}")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {key: dataset[index] for key, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices: list) -> list:
        named = isinstance(self.datasets, dict)
        columns = [_fetch_many(dataset, indices) for dataset in
                   (self.datasets.values() if named else self.datasets)]
        if named:
            return [dict(zip(self.datasets, row)) for row in zip(*columns)]
        return [tuple(row) for row in zip(*columns)]

    def __len__(self) -> int:
        return self._length


def _fetch_many(dataset, indices: list) -> list:
    """One column of a StackDataset batch, in one call when the dataset can batch."""
    if not callable(getattr(dataset, "__getitems__", None)):
        return [dataset[index] for index in indices]
    items = dataset.__getitems__(indices)
    if len(items) != len(indices):
        raise ValueError(f"a stacked dataset's __getitems__ returned {len(items)} samples "
                         f"for {len(indices)} indices")
    return items


class ConcatDataset(Dataset[T_co]):
    """Map-style datasets end to end; index ``i`` is found by bisecting the running sizes."""

    datasets: list[Dataset[T_co]]
    cumulative_sizes: list[int]

    @staticmethod
    def cumsum(sequence) -> list[int]:
        return list(itertools.accumulate(len(dataset) for dataset in sequence))

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionValueError("ConcatDataset needs at least one dataset")
        for dataset in self.datasets:
            if _is_iterable_dataset(dataset):
                raise AssertionTypeError("ConcatDataset takes map-style datasets only; "
                                         "chain IterableDatasets with ChainDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError(f"index {idx} is out of range for a ConcatDataset of "
                                 f"length {len(self)}")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        if which == len(self.datasets):
            raise IndexError(f"index {idx} is out of range for a ConcatDataset of "
                             f"length {len(self)}")
        # The first dataset gets the index object itself, as in torch: `idx - 0` would turn
        # a bool, an IntEnum or a numpy bool into an int, and fail for a 0-d bool tensor.
        if which:
            idx = idx - self.cumulative_sizes[which - 1]
        return self.datasets[which][idx]

    @property
    def cummulative_sizes(self) -> list[int]:
        warnings.warn("`cummulative_sizes` is renamed to `cumulative_sizes`",
                      FutureWarning, stacklevel=2)
        return self.cumulative_sizes


class ChainDataset(IterableDataset):
    """IterableDatasets one after the other, chained lazily while iterating."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self):
        for dataset in self.datasets:
            _check_chainable(dataset)
            yield from dataset

    def __len__(self) -> int:
        return sum(len(_check_chainable(dataset)) for dataset in self.datasets)


def _check_chainable(dataset):
    if not _is_iterable_dataset(dataset):
        raise AssertionTypeError(f"ChainDataset takes IterableDatasets only, got "
                                 f"{type(dataset).__name__}; join map-style ones with "
                                 "ConcatDataset")
    return dataset


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``, in that order.

    A subclass that overrides ``__getitem__`` must override ``__getitems__`` too: the loader
    fetches batches through ``__getitems__``, which would silently bypass the override.
    """

    dataset: Dataset[T_co]
    indices: Sequence[int]

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices
        cls = type(self)
        if cls.__getitem__ is not Subset.__getitem__ and cls.__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{cls.__name__} overrides __getitem__ but not __getitems__, which the "
                "DataLoader uses to fetch batches; add\n\n"
                "    def __getitems__(self, indices):\n"
                "        return [self[i] for i in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[T_co]:
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[idx] for idx in indices])
        return [self.dataset[self.indices[idx]] for idx in indices]  # looked up in turn

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset[T], lengths: Sequence[int | float],
                 generator: Generator | None = default_generator) -> list[Subset[T]]:
    """Split ``dataset`` into non-overlapping random subsets of the given ``lengths``, or of
    the given fractions (summing to 1) of its length."""
    # NOTE [ Fractions in random_split ]
    # Lengths that sum to 1 are read as fractions: each split gets floor(fraction * n), and
    # the few samples that flooring leaves over are dealt out one each, round-robin from
    # the first split. So [0.5, 0.5] of 5 samples is [3, 2], never [2, 2] plus a lost one.
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, fraction in enumerate(lengths):
            if fraction < 0 or fraction > 1:
                raise ValueError(f"fraction {fraction} at index {i} is not between 0 and 1")
            counts.append(math.floor(len(dataset) * fraction))
        for i in range(len(dataset) - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"split {i} of random_split is empty: the dataset is too "
                              "small for that fraction", stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError(f"the lengths sum to {sum(lengths)} but the dataset has "
                         f"{len(dataset)} samples; pass lengths that add up to it, or "
                         "fractions that add up to 1")
    indices = randperm(sum(lengths), generator=generator).tolist()
    ends = itertools.accumulate(lengths)
    return [Subset(dataset, indices[end - length:end]) for end, length in zip(ends, lengths)]
