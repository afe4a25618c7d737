"""Datasets that show what persistent workers keep between epochs (chapter 8). Importable,
so that workers started with spawn or forkserver find them.

- :class:`EpochTagged`: each sample reports the epoch its dataset copy believes in (set
  with ``set_epoch`` in the main process, as samplers and curricula do), the process that
  fetched it, and how many samples that copy has fetched so far;
- :class:`SharedEpochTagged`: the same, with the epoch in shared memory;
- :class:`EpochKeySampler` and :class:`KeyedEpochTagged`: the epoch handed to the
  dataset with each index, by a sampler;
- :class:`FetchCounter`: counts every fetch, in every worker, in shared memory;
- :class:`CachingDataset`: keeps every sample it made, as a dataset that caches decoded
  images does.
"""

from __future__ import annotations

import multiprocessing
import os
import time

import torch

from minidataloader.dataset import Dataset
from minidataloader.sampler import Sampler


class EpochTagged(Dataset):
    """Sample ``i`` is a dict: ``index``, the ``epoch`` this copy of the dataset was told
    (by ``set_epoch``), the ``pid`` of the process that fetched it, and ``fetched``: how many
    samples this copy has fetched so far, this one included."""

    def __init__(self, n: int = 8):
        self.n = n
        self.epoch = 0
        self.fetched = 0  # grows in whichever process holds this copy

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(f"index {i} out of range for {self.n} samples")
        self.fetched += 1
        return {"index": i, "epoch": self.epoch, "pid": os.getpid(), "fetched": self.fetched}


class SharedEpochTagged(EpochTagged):
    """:class:`EpochTagged` with the epoch in shared memory, which every copy
    of the dataset, in every worker, reads from the same place. It is made
    before the workers start, so that they inherit it."""

    def __init__(self, n=8):
        self.shared_epoch = multiprocessing.Value("q", 0)  # a 64-bit int
        super().__init__(n)

    @property
    def epoch(self):
        return self.shared_epoch.value

    @epoch.setter
    def epoch(self, epoch):
        self.shared_epoch.value = epoch


class EpochKeySampler(Sampler):
    """Yields ``(epoch, index)`` for the indices ``0 .. n-1``. Its ``__iter__``
    runs in the main process at the start of every epoch, so it sees the
    current epoch, and the key carries it to whichever worker fetches."""

    def __init__(self, n):
        self.n, self.epoch = n, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        epoch = self.epoch
        return iter([(epoch, i) for i in range(self.n)])

    def __len__(self):
        return self.n


class KeyedEpochTagged(EpochTagged):
    """:class:`EpochTagged` whose keys are ``(epoch, index)`` pairs, from
    :class:`EpochKeySampler`: the epoch comes with each key, not from the dataset copy."""

    def __getitem__(self, key):
        epoch, i = key
        self.epoch = epoch
        return super().__getitem__(i)


class FetchCounter(Dataset):
    """Sample ``i`` is ``i``; every fetch, in any process, adds one to ``fetches`` (a
    counter in shared memory), so the main process can see work it never received."""

    def __init__(self, n: int = 32):
        self.n = n
        self.counter = multiprocessing.Value("q", 0)

    @property
    def fetches(self) -> int:
        return self.counter.value

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(f"index {i} out of range for {self.n} samples")
        with self.counter.get_lock():
            self.counter.value += 1
        return i


class CachingDataset(Dataset):
    """``n`` samples of ``sample_mb`` MiB each; making one takes ``seconds`` (as decoding
    an image does), after which it is kept in ``self.cache``. Each process holds its own
    copy of the dataset, so each worker fills a cache of its own, and keeps it as long as
    the worker lives. Sample ``i`` is ``(i, hit, pid)``: ``hit`` says it came from the cache."""

    def __init__(self, n: int = 16, sample_mb: float = 2.0, seconds: float = 0.01):
        self.n, self.seconds = n, seconds
        self.numel = int(sample_mb * 2**20) // 4  # float32
        self.cache: dict[int, torch.Tensor] = {}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(f"index {i} out of range for {self.n} samples")
        hit = i in self.cache
        if not hit:
            time.sleep(self.seconds)
            self.cache[i] = torch.full((self.numel,), float(i))
        return i, hit, os.getpid()
