"""Samplers: which keys a map-style dataset is asked for, and in what order.

A sampler is any iterable of keys; a batch sampler is any iterable of lists of keys.
Every random draw here happens when (and as often as) torch's does, so that a script
seeded once gets the same indices, and the same random numbers afterwards, as with torch.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Generic, TypeVar

import torch

T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class: subclasses define ``__iter__`` and, if they can, ``__len__``
    (see NOTE [ No default __len__ or __getitems__ ] in dataset.py)."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError("subclasses of Sampler must define __iter__")


class SequentialSampler(Sampler[int]):
    """0, 1, ..., len(data_source) - 1, every epoch."""

    data_source: Sized

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """A fresh random order every epoch: permutations of the indices, or ``num_samples``
    independent draws with ``replacement=True``."""

    data_source: Sized
    replacement: bool

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be True or False, got {self.replacement!r}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer, got "
                             f"{self.num_samples!r} (an empty dataset has nothing to sample)")

    @property
    def num_samples(self) -> int:
        # read len() late: the dataset may grow or shrink between epochs
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        # NOTE [ When RandomSampler draws ]
        # This is a generator function: nothing below runs until the first index is asked
        # for. Without a generator of its own, the sampler then takes ONE number from the
        # global RNG and seeds a private generator with it, so the global RNG moves by one
        # draw per epoch, however many indices the epoch has.
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            seed = int(torch.empty((), dtype=torch.int64).random_().item())
            generator = torch.Generator()
            generator.manual_seed(seed)
        if self.replacement:
            # in chunks of 32, and a last (possibly empty) chunk: torch's exact draw sizes
            for _ in range(self.num_samples // 32):
                yield from torch.randint(high=n, size=(32,), dtype=torch.int64,
                                         generator=generator).tolist()
            yield from torch.randint(high=n, size=(self.num_samples % 32,), dtype=torch.int64,
                                     generator=generator).tolist()
        else:
            # whole permutations, then the head of one more (drawn even if the head is empty)
            for _ in range(self.num_samples // n):
                yield from torch.randperm(n, generator=generator).tolist()
            yield from torch.randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a fresh random order every epoch."""

    indices: Sequence[int]

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in torch.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices drawn with probability proportional to ``weights``."""

    weights: torch.Tensor
    num_samples: int
    replacement: bool

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator=None) -> None:
        if not _is_positive_int(num_samples):
            raise ValueError(f"num_samples should be a positive integer, got {num_samples!r}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be True or False, got {replacement!r}")
        weights_tensor = torch.as_tensor(weights, dtype=torch.double)
        if len(weights_tensor.shape) != 1:
            raise ValueError("weights should be one weight per index (a 1-d sequence), got "
                             f"shape {tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        yield from torch.multinomial(self.weights, self.num_samples, self.replacement,
                                     generator=self.generator).tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Groups the indices of ``sampler`` (any iterable) into lists of ``batch_size``; with
    ``drop_last`` a short final list is dropped."""

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        if not _is_positive_int(batch_size):
            raise ValueError(f"batch_size should be a positive integer, got {batch_size!r}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be True or False, got {drop_last!r}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        indices = iter(self.sampler)
        while batch := list(itertools.islice(indices, self.batch_size)):
            if self.drop_last and len(batch) < self.batch_size:
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


def _is_positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
