"""Chapter 5 (the loader, single-process): model solutions.

Every piece here goes into the learner's package (``notebooks/myloader/``): the names they
use are the ones its files import (torch, itertools, IterableDataset, the samplers of
chapter 3, the collate functions of chapter 4, and each other).
"""

import itertools

import torch
from torch.utils.data import IterableDataset

from minidataloader_course.chapters.ch03.solution import (
    BatchSampler,
    RandomSampler,
    SequentialSampler,
)
from minidataloader_course.chapters.ch04.solution import default_collate, default_convert


def check_loader_arguments(dataset, batch_size=1, shuffle=None, sampler=None,
                           batch_sampler=None, num_workers=0, drop_last=False, timeout=0,
                           prefetch_factor=None, persistent_workers=False):
    if num_workers < 0:
        raise ValueError(f"num_workers should be >= 0, got {num_workers}")
    if timeout < 0:
        raise ValueError(f"timeout should be >= 0, got {timeout}")
    if prefetch_factor is not None and num_workers == 0:
        raise ValueError("prefetch_factor counts batches per worker: it needs num_workers > 0")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError(f"prefetch_factor should be >= 0, got {prefetch_factor}")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers needs num_workers > 0")
    if isinstance(dataset, IterableDataset):  # a stream decides its own order
        if shuffle not in (None, False):
            raise ValueError("an IterableDataset cannot be shuffled by the loader")
        if sampler is not None or batch_sampler is not None:
            raise ValueError("an IterableDataset takes no sampler and no batch_sampler")
    if sampler is not None and shuffle:
        raise ValueError("pass sampler or shuffle=True, not both")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("a batch_sampler replaces batch_size, shuffle, sampler, drop_last")
    elif batch_size is None:
        if drop_last:
            raise ValueError("batch_size=None makes no batches: there is no last one to drop")
    else:  # the loader builds a BatchSampler, which checks its own arguments
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer, got {batch_size!r}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be True or False, got {drop_last!r}")
    # A timeout without workers is accepted here, as torch's constructor accepts it: the
    # single-process iterator refuses it when the epoch starts.


def loader_len(dataset, batch_size=1, sampler=None, batch_sampler=None, drop_last=False):
    if isinstance(dataset, IterableDataset):
        count = len(dataset)  # a guess the stream makes; TypeError if it has no __len__
    elif batch_sampler is not None:
        return len(batch_sampler)  # it decides the batches: it knows how many
    elif sampler is not None:
        count = len(sampler)  # the sampler, not the dataset, sets the number of samples
    else:
        count = len(dataset)
    if batch_size is None:
        return count  # no batching: one item per sample
    if drop_last:
        return count // batch_size
    return -(-count // batch_size)  # ceil(count / batch_size)


class MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last  # only a stream can come up short: unused here

    def fetch(self, possibly_batched_index):
        if not self.auto_collation:  # batch_size=None: one index, one sample
            return self.collate_fn(self.dataset[possibly_batched_index])
        if getattr(self.dataset, "__getitems__", None):
            samples = self.dataset.__getitems__(possibly_batched_index)  # one call per batch
        else:
            samples = [self.dataset[index] for index in possibly_batched_index]
        return self.collate_fn(samples)


class IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.stream = iter(dataset)  # one pass over the stream for the whole epoch
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, possibly_batched_index):
        if not self.auto_collation:  # batch_size=None: one sample at a time
            return self.collate_fn(next(self.stream))  # StopIteration ends the epoch
        batch = []
        for _ in possibly_batched_index:  # only its length matters: the indices are None
            try:
                batch.append(next(self.stream))
            except StopIteration:
                break
        if not batch or (self.drop_last and len(batch) < len(possibly_batched_index)):
            raise StopIteration  # the stream has ended: so has the epoch
        return self.collate_fn(batch)


class SingleProcessIterator:
    def __init__(self, loader):
        self.loader = loader
        batched = loader.batch_sampler is not None
        index_sampler = loader.batch_sampler if batched else loader.sampler
        self.indices = iter(index_sampler)  # this epoch's order
        # The base seed: one draw per epoch, from the loader's generator (or the global
        # one), after iter(sampler) and before the first index, as torch draws it.
        self.base_seed = torch.empty((), dtype=torch.int64).random_(
            generator=loader.generator).item()
        if loader.timeout != 0:  # torch's check, after the draw: a timeout waits for workers
            raise AssertionError("a timeout waits for worker processes: it needs num_workers > 0")
        stream = isinstance(loader.dataset, IterableDataset)
        fetcher = IterableFetcher if stream else MapFetcher
        self.fetcher = fetcher(loader.dataset, batched, loader.collate_fn, loader.drop_last)

    def __iter__(self):
        return self

    def __next__(self):
        # a StopIteration from the indices or from the fetcher ends the epoch
        return self.fetcher.fetch(next(self.indices))

    def __len__(self):
        return len(self.loader)


class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        check_loader_arguments(dataset, batch_size, shuffle, sampler, batch_sampler,
                               num_workers, drop_last, timeout, prefetch_factor,
                               persistent_workers)
        if multiprocessing_context is not None and num_workers == 0:
            raise ValueError("multiprocessing_context starts worker processes: it needs "
                             "num_workers > 0")
        if isinstance(dataset, IterableDataset):
            sampler = itertools.repeat(None)  # a stream has no indices: None, forever
        elif sampler is None:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_sampler is not None:  # it makes the batches: no batch size of ours
            batch_size, drop_last = None, False
        elif batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if collate_fn is None:  # batches are collated; single samples only converted
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn
        self.generator = generator
        self.num_workers = num_workers
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers else prefetch_factor
        self.persistent_workers = persistent_workers
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

    def __len__(self):
        return loader_len(self.dataset, self.batch_size, self.sampler, self.batch_sampler,
                          self.drop_last)

    def __iter__(self):
        if self.num_workers == 0:
            return SingleProcessIterator(self)
        return MultiProcessIterator(self)


class MultiProcessIterator:
    """A stand-in: the iterator with worker processes is chapter 6's piece."""

    def __init__(self, loader):
        raise NotImplementedError("worker processes come in chapter 6")


class LabLoader:
    """A single-process loader for map-style datasets of dict samples (the debugging lab)."""

    def __init__(self, dataset, batch_size=1, shuffle=False, generator=None):
        self.dataset = dataset
        self.batch_size = batch_size
        self.generator = generator
        if shuffle:
            self.sampler = RandomSampler(dataset, generator=generator)
        else:
            self.sampler = SequentialSampler(dataset)

    def __len__(self):
        return -(-len(self.sampler) // self.batch_size)  # a short last batch counts

    def __iter__(self):  # one epoch
        # the base seed first, as torch's iterator draws it: before the sampler's draws
        self.base_seed = torch.empty((), dtype=torch.int64).random_(
            generator=self.generator).item()
        samples = []
        for index in self.sampler:
            samples.append(self.dataset[index])
            if len(samples) == self.batch_size:
                yield self.collate(samples)
                samples = []
        if samples:  # the short last batch
            yield self.collate(samples)

    def collate(self, samples):
        return {key: default_collate([sample[key] for sample in samples])
                for key in samples[0]}
