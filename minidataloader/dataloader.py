"""The DataLoader: a sampler, a dataset and a collate function, put together into an
iterable of batches. Each ``iter(loader)`` is one epoch, run by an iterator object:

    DataLoader --iter()--> _SingleProcessDataLoaderIter   (num_workers == 0)
                           _MultiProcessingDataLoaderIter (num_workers > 0)

Both share _BaseDataLoaderIter: the index stream, the base seed, the length check.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Iterable
from multiprocessing.context import BaseContext
from typing import Any, Generic, TypeVar

import torch

from . import _tracing
from .collate import default_collate, default_convert
from .dataset import AssertionValueError, Dataset, _is_iterable_dataset
from .fetch import _DatasetKind
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

T_co = TypeVar("T_co", covariant=True)

# NOTE [ Frozen attributes ]
# The batch sampler is built from batch_size, sampler and drop_last in __init__; changing
# one of them afterwards would leave the others describing a loader that no longer exists.
# So they (and the dataset they index, and persistent_workers) cannot be reassigned.
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: None, forever. Batched by a BatchSampler, it
    only says how many samples make a batch; the stream itself ends the epoch."""

    def __iter__(self):
        while True:
            yield None


class DataLoader(Generic[T_co]):
    """Iterates over ``dataset`` in batches: ``batch_size`` samples, in the order of
    ``sampler`` (or of a ``RandomSampler`` when ``shuffle=True``), joined by ``collate_fn``.
    ``batch_size=None`` yields samples one by one (``default_convert`` still turns numpy
    arrays into tensors).

    Every argument means what it means in ``torch.utils.data.DataLoader``; for the same
    seeds the batches, and the random numbers drawn afterwards, are the same.
    """

    dataset: Dataset[T_co]
    batch_size: int | None
    num_workers: int
    pin_memory: bool
    drop_last: bool
    timeout: float
    sampler: Sampler | Iterable
    pin_memory_device: str
    prefetch_factor: int | None
    __initialized = False

    def __init__(
        self, dataset: Dataset[T_co], batch_size: int | None = 1, shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler[list] | Iterable[list] | None = None, num_workers: int = 0,
        collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False,
        drop_last: bool = False, timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None, multiprocessing_context=None,
        generator: torch.Generator | None = None, *, prefetch_factor: int | None = None,
        persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True,
    ) -> None:
        if num_workers < 0:
            raise ValueError(f"num_workers should be >= 0 (0 loads in the main process), "
                             f"got {num_workers}")
        if timeout < 0:
            raise ValueError(f"timeout should be >= 0 seconds (0 waits forever), got {timeout}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor counts batches loaded ahead by each worker, so "
                             "it needs num_workers > 0; leave it None for num_workers=0")
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError(f"prefetch_factor should be >= 0, got {prefetch_factor}")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers keeps worker processes alive between epochs, "
                             "so it needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if _is_iterable_dataset(dataset):
            # NOTE [ An IterableDataset refuses samplers ]
            # A sampler chooses keys, and a stream has none: the dataset decides the order
            # itself. With workers each one iterates its own copy of the stream, so the
            # loader could not even tell a worker which samples to produce. A batch_sampler
            # could only set batch sizes, which batch_size already does. (shuffle=False is
            # accepted: it was the default once.)
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError(f"an IterableDataset decides its own order, so shuffle must "
                                 f"be left unset, got shuffle={shuffle}; shuffle inside the "
                                 "dataset's __iter__")
            if sampler is not None:
                raise ValueError(f"an IterableDataset decides its own order, so sampler must "
                                 f"be left unset, got sampler={sampler}")
            elif batch_sampler is not None:
                raise ValueError(f"an IterableDataset decides its own order, so batch_sampler "
                                 f"must be left unset, got batch_sampler={batch_sampler}; "
                                 "use batch_size")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        # NOTE [ Options that exclude each other ]
        # shuffle=True is shorthand for sampler=RandomSampler(dataset), and a batch_sampler
        # replaces batch_size, shuffle, sampler and drop_last all at once. Given both, the
        # loader would have to drop one of them silently; it refuses instead.
        if sampler is not None and shuffle:
            raise ValueError("sampler and shuffle=True both decide the order; pass one "
                             "(use RandomSampler as the sampler to shuffle)")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("a batch_sampler decides batch size, order and the last "
                                 "batch itself; leave batch_size, shuffle, sampler and "
                                 "drop_last at their defaults")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None yields single samples, so there is no last "
                             "batch to drop; leave drop_last=False")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None  # see NOTE [ len() of an iterable loader ]
        self._iterator = None  # the one iterator of persistent workers
        self._epochs_started = 0  # numbers the epochs in the trace
        self.check_worker_number_rationality()

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context) -> None:
        if context is not None:
            if self.num_workers <= 0:
                raise ValueError("multiprocessing_context says how worker processes start, so "
                                 f"it needs num_workers > 0, got num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = torch.multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError(f"multiprocessing_context should be one of {methods!r} "
                                     f"here, got {context!r}")
                context = torch.multiprocessing.get_context(context)
            if not isinstance(context, BaseContext):
                raise TypeError("multiprocessing_context should be a start method name or a "
                                f"multiprocessing context object, got {context!r}")
        self.__multiprocessing_context = context

    def __setattr__(self, attr, value) -> None:
        if self.__initialized and attr in _FROZEN:
            raise ValueError(f"{attr} cannot be changed once the {type(self).__name__} is "
                             "built; build a new one")
        super().__setattr__(attr, value)

    def __iter__(self) -> _BaseDataLoaderIter:
        # Persistent workers live in one iterator for the loader's lifetime, reset each epoch.
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            iterator = self._iterator
        else:
            iterator = self._get_iterator()
        self._epochs_started += 1
        return iterator

    def _get_iterator(self) -> _BaseDataLoaderIter:
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        raise NotImplementedError("multi-process loading (num_workers > 0) is not built yet; "
                                  "use num_workers=0")

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        """What the fetcher is fed: lists of keys when batching, single keys otherwise."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._dataset_kind == _DatasetKind.Map:
            return len(self._index_sampler)
        # NOTE [ len() of an iterable loader ]
        # A stream has no sampler to count, so the loader trusts the dataset's own len()
        # and divides by batch_size. That is a guess: with workers, each worker batches its
        # own share, which can leave several short batches (or, with drop_last, several
        # dropped ones), and a dataset that does not split itself per worker yields
        # everything num_workers times. The loader remembers the len() it read and warns
        # when an epoch goes past it -- though, as torch does, it compares batches yielded
        # with len(dataset) in samples, so with batch_size > 1 the warning comes late.
        length = self._IterableDataset_len_called = len(self.dataset)
        if self.batch_size is not None:
            length = length // self.batch_size if self.drop_last else math.ceil(
                length / self.batch_size)
        return length

    def check_worker_number_rationality(self) -> None:
        """Warn when there are more workers than CPUs this process may use."""
        if not self.num_workers:
            return
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        if cpus is None or self.num_workers > cpus:
            warnings.warn(f"This DataLoader will start {self.num_workers} worker processes, but "
                          f"this process may use {cpus or 'an unknown number of'} CPUs. Extra "
                          "workers compete for the same cores and can slow loading down or "
                          "freeze it; lower num_workers.", stacklevel=2)


class _BaseDataLoaderIter:
    """One epoch over a DataLoader. Subclasses define ``_next_data()``: the next batch,
    or StopIteration at the end of the epoch."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn(f"pin_memory_device is deprecated and ignored "
                          f"(pin_memory_device={loader.pin_memory_device!r}): batches are "
                          "pinned for the current accelerator", stacklevel=2)
        self._pin_memory = loader.pin_memory and torch.accelerator.is_available()
        if loader.pin_memory and not self._pin_memory:
            warnings.warn("pin_memory=True, but no accelerator was found, so there is nothing "
                          "to pin memory for; set pin_memory=False", stacklevel=2)
        accelerator = torch.accelerator.current_accelerator() if self._pin_memory else None
        self._pin_memory_device = accelerator.type if accelerator is not None else None
        if self._pin_memory_device == "mps":
            self._pin_memory = False
            warnings.warn("pin_memory=True is not supported on MPS; batches stay in ordinary "
                          "memory", stacklevel=2)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # NOTE [ The base seed ]
        # Every new iterator takes one number from loader.generator (or the global RNG),
        # workers or not: workers derive their seeds from it, and drawing it always keeps
        # the random numbers the script draws afterwards independent of num_workers. The
        # draw comes after iter(sampler) and before the first index, which matters when
        # both share an RNG:
        #
        #   iter(loader)    iter(batch_sampler)   nothing yet (samplers are generators)
        #                   base seed             draw 1
        #   first next()    RandomSampler seed    draw 2 (only without a generator)
        self._base_seed = (torch.empty((), dtype=torch.int64)
                           .random_(generator=loader.generator).item())
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0
        self._epoch = loader._epochs_started

    def __iter__(self) -> _BaseDataLoaderIter:
        return self

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        """Start a new epoch with this iterator (persistent workers): no new base seed."""
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._epoch = loader._epochs_started

    def _next_index(self):
        return next(self._sampler_iter)  # StopIteration ends the epoch

    def __next__(self) -> Any:
        data = self._next_data()
        self._num_yielded += 1
        if (self._dataset_kind == _DatasetKind.Iterable
                and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            message = (f"{self._dataset!r} reported len() == {self._IterableDataset_len_called}"
                       f" (read by len(dataloader)), but {self._num_yielded} batches have "
                       "been yielded; make its __len__ match what its __iter__ yields.")
            if self._num_workers > 0:
                message += (" With num_workers > 0 each worker iterates its own copy: split "
                            "the stream with get_worker_info() so that copies do not repeat.")
            warnings.warn(message, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled: it is a position "
                                  "in a running epoch. Pickle the DataLoader instead")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Loads every batch in the main process, when asked for it."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionValueError("timeout limits the wait for worker processes, and "
                                      "num_workers=0 has none; leave timeout=0")
        self._dataset_fetcher = _DatasetKind.create_fetcher(
            self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
            self._drop_last)
        if _tracing.enabled:
            _tracing.emit("epoch_start", epoch=self._epoch)

    def _next_data(self):
        batch = self._num_yielded
        try:
            index = self._next_index()  # the sampler may end the epoch here...
            if _tracing.enabled:
                _tracing.emit("fetch_start", batch=batch, worker=None)
            data = self._dataset_fetcher.fetch(index)  # ...or an IterableDataset here
        except StopIteration:
            if _tracing.enabled:
                _tracing.emit("epoch_end", epoch=self._epoch)
            raise
        if _tracing.enabled:
            _tracing.emit("fetch_end", batch=batch, worker=None)
        if self._pin_memory:
            from .pin_memory import pin_memory  # only on machines with an accelerator

            data = pin_memory(data, self._pin_memory_device)
        if _tracing.enabled:
            _tracing.emit("yielded", batch=batch)
        return data
