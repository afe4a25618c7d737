"""The DataLoader: a sampler, a dataset and a collate function, put together into an
iterable of batches. Each ``iter(loader)`` is one epoch, run by an iterator object:

    DataLoader --iter()--> _SingleProcessDataLoaderIter   (num_workers == 0)
                           _MultiProcessingDataLoaderIter (num_workers > 0)

Both share _BaseDataLoaderIter: the index stream, the base seed, the length check. The
multi-process iterator's workers, queues and pin thread belong to a _WorkerGroup
(worker_group.py), which also stops them; each worker runs _worker_loop (worker.py).
"""

from __future__ import annotations

import collections
import itertools
import math
import os
import queue
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable
from multiprocessing.context import BaseContext
from typing import Any, Generic, TypeVar

import torch
import torch.multiprocessing

from . import _tracing
from .collate import default_collate, default_convert
from .dataset import AssertionValueError, Dataset, _is_iterable_dataset
from .fetch import _DatasetKind
from .pin_memory import _pin, _pin_memory_loop, _pin_memory_plan
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from .worker import (
    _STATUS_CHECK_INTERVAL,
    _is_error,
    _is_resume_ack,
    _is_stream_end,
    _ResumeIteration,
    _worker_loop,
)
from .worker_group import _describe_death, _raise_if_out_of_file_descriptors, _WorkerGroup

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
            return self._iterator
        return self._get_iterator()

    def _new_base_seed(self) -> int:
        """One number from the loader's generator (or the global RNG): see NOTE [ The base
        seed ]. (A stateful loader resuming an epoch returns the saved one, drawing nothing.)"""
        return torch.empty((), dtype=torch.int64).random_(generator=self.generator).item()

    def _get_iterator(self) -> _BaseDataLoaderIter:
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

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
        # with len(dataset) in samples, so with batch_size > 1 the warning comes late. And
        # an iterator copies the length when it is made (and at _reset), as torch's does:
        # a len() called after iter(loader) is not seen until the next epoch.
        length = self._IterableDataset_len_called = len(self.dataset)
        if self.batch_size is not None:
            length = length // self.batch_size if self.drop_last else math.ceil(
                length / self.batch_size)
        return length

    def check_worker_number_rationality(self) -> None:
        """Warn when there are more workers than CPUs this process may use."""
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        if self.num_workers and (cpus is None or self.num_workers > cpus):
            warnings.warn(f"This DataLoader will start {self.num_workers} worker processes, but "
                          f"this process may use {cpus or 'an unknown number of'} CPUs. Extra "
                          "workers compete for the same cores and can slow loading down or "
                          "freeze it; lower num_workers.", stacklevel=2)


# NOTE [ Hooks for the stateful loader ]
# minidataloader.stateful checkpoints and resumes an epoch through these names, and touches
# no other private state of the loader or its iterators (tests/library/stateful/
# test_hooks.py holds it to this list). Here each one does what torch does:
#
#   DataLoader._new_base_seed()             the epoch's one draw; a resumed epoch: the saved one
#   DataLoader._get_iterator()              the iterator an epoch runs
#   DataLoader._iterator                    the persistent workers' iterator (None: start anew)
#   _BaseDataLoaderIter._next_index()       each pull from the index stream
#   _BaseDataLoaderIter._keepers            worker id (None: this process) -> what makes its
#                                           fetcher and wraps its results: NOTE [ The keeper hook ]
#   _MultiProcessingDataLoaderIter._first_batch     an epoch's first batch number (and so
#                                                   its first worker: see _reset)
#   _MultiProcessingDataLoaderIter._reset()         a new epoch of persistent workers
#   _MultiProcessingDataLoaderIter._get_data()      each message received
#   _MultiProcessingDataLoaderIter._process_data()  each result consumed, and its worker
#
# Besides these, a subclass reads (and may replace) what _BaseDataLoaderIter.__init__
# builds from the loader: _dataset, _dataset_kind, _index_sampler, _sampler_iter,
# _num_workers, _persistent_workers, _base_seed, _num_yielded; and it names
# _SingleProcessDataLoaderIter, _MultiProcessingDataLoaderIter, _DatasetKind,
# _ExceptionWrapper, _is_error, _is_stream_end and _tracing.


class _BaseDataLoaderIter:
    """One epoch over a DataLoader. Subclasses define ``_next_data()``: the next batch,
    or StopIteration at the end of the epoch."""

    _keepers: dict = {}  # worker id (None: this process) -> its keeper: none here

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        # the function that pins a batch, or None; see NOTE [ Whether batches are pinned ]
        self._pin_fn, self._pin_device_index = _pin_memory_plan(loader)
        self._pin_memory = self._pin_fn is not None
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # NOTE [ The base seed ]
        # Every new iterator takes one number from loader.generator (or the global RNG),
        # workers or not, as torch does: workers derive their seeds from it. torch says
        # nothing about why it draws without workers. What the draw gives: when neither
        # the dataset nor collate_fn draws from the global RNG, the script's later draws
        # do not depend on num_workers. When they do draw, they draw from the main
        # process's RNG without workers and from the workers' with them, and the script's
        # draws part ways anyway. Persistent workers keep one iterator, which draws once:
        # _reset does not draw. The draw comes after iter(sampler) and before the first
        # index, which matters when both share an RNG:
        #
        #   iter(loader)    iter(batch_sampler)   nothing yet (samplers are generators)
        #                   base seed             draw 1
        #   first next()    RandomSampler seed    draw 2 (only without a generator)
        self._base_seed = loader._new_base_seed()
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self) -> _BaseDataLoaderIter:
        return self

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        """Start a new epoch with this iterator (persistent workers): no new base seed."""
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)  # StopIteration ends the epoch

    def __next__(self) -> Any:
        try:
            data = self._next_data()
        except StopIteration:
            _tracing.epoch_end(self)
            raise
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
        self._dataset_fetcher = (self._keepers.get(None) or _DatasetKind).create_fetcher(
            self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
            self._drop_last)
        _tracing.epoch_start(self, loader)

    def _next_data(self):
        batch = self._num_yielded  # its number, for the trace
        index = self._next_index()  # may raise StopIteration: the sampler is exhausted
        _tracing.emit("fetch_start", batch=batch, worker=None)
        data = self._dataset_fetcher.fetch(index)  # may raise StopIteration: end of stream
        _tracing.emit("fetch_end", batch=batch, worker=None)
        if self._pin_memory:
            data = _pin(self._pin_fn, data, batch)
        _tracing.emit("yielded", batch=batch)
        return data


# A batch dispatched and not yet yielded: the worker it was sent to, and, once it has come
# before its turn and waits for it, arrived=True and what came (a batch, or an error to
# raise in its turn). See the NOTE on dispatch and reorder bookkeeping, in the class below.
_Task = collections.namedtuple("_Task", ["worker_id", "arrived", "data"], defaults=[False, None])


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Loads batches in ``num_workers`` worker processes, ``prefetch_factor`` batches
    ahead per worker, and yields them in sampler order (``in_order=False``: as they come).

    NOTE [ The pipeline ]

        main process                                           worker processes
        ------------                                           ----------------
        sampler -> _try_put_index --(i, indices)--> index_queue[w] --> _worker_loop w
                   (round robin)                    (one per worker)        | fetch, collate
                                                                            v
        __next__ <- reorder <- data_queue <- [pin thread] <-------- result_queue
                   (_task_info)             (pin_memory=True)    (i, batch), shared by all

    Without pin memory, data_queue *is* the result queue. Tensors in a batch travel as
    handles to shared memory, where the worker's collate put them. What else travels on
    the result queue: NOTE [ Messages on the result queue ] in worker.py.
    """

    # NOTE [ Dispatch and reorder bookkeeping ]
    # Batches are numbered in sampler order. Two counters split the numbers in three:
    #
    #     0 ........ _rcvd_idx ................... _send_idx ..........
    #     | yielded  | dispatched, not yet yielded | not asked of the sampler yet
    #
    # _task_info holds a _Task for each batch of the middle part:
    #     _Task(w)                       worker w has it in its queue or is fetching it
    #     _Task(w, arrived=True, data)   it arrived before an earlier batch: it waits here
    # __next__ wants batch _rcvd_idx: from _task_info if it waited there, else from the
    # result queue, parking whatever else arrives first. Each batch handed out dispatches one
    # more, so prefetch_factor * num_workers batches stay in flight: a slow batch holds the
    # line (head-of-line blocking) while the others wait, fetched, in _task_info.
    #
    # A worker whose IterableDataset ran out is retired (_workers_status[w] = False): it
    # gets no more tasks and its batches still owed are skipped. With in_order=False a batch
    # is yielded the moment it arrives, and a task goes only to a worker with fewer than its
    # share of tasks, so a slow worker does not collect a queue of them.

    # NOTE [ The pipeline and its shutdown ]
    # Three things could leave a process hanging or running forever:
    #   (a) waiting on a queue for a process that is gone;
    #   (b) exiting: a multiprocessing.Queue sends through a background "feeder" thread,
    #       which Python joins at exit -- forever, if nobody reads the other end;
    #   (c) a parent that dies without saying goodbye.
    # The rules:
    #   1. Every get() has a timeout (_STATUS_CHECK_INTERVAL), after which the waiter checks
    #      on whom it waits for: the main process its workers (is_alive(); a dead one raises
    #      RuntimeError naming its pid), the main loop the pin thread, a worker its parent
    #      (a worker whose parent died has a new parent pid, so it leaves its loop). (a, c)
    #   2. A feeder is abandoned (cancel_join_thread) only by a side nobody will read again:
    #      the main process's index queues, from the start (the workers only serve it), and
    #      a worker's result queue once its parent is gone. Otherwise a worker sends all it
    #      has queued before exiting, and the shutdown reads it. (b)
    #   3. Workers are daemonic: if nothing below runs, multiprocessing terminates them when
    #      the main process exits normally.
    #
    # _WorkerGroup.shutdown (in worker_group.py) runs once: at the end of an epoch (unless
    # workers persist), when the iterator is freed (after `break`, an exception,
    # KeyboardInterrupt), or at interpreter exit (see NOTE [ Who stops the workers ]):
    #
    #   main process                          pin thread            worker w
    #   1. pin_done.set(); (None, None) ---> wakes, sees pin_done,
    #      join(bounded)                     exits
    #   2. done_event.set() ----------------------------------------> skips its other tasks
    #      None -> index_queue[w] -------------------------------------> leaves its loop
    #   3. drain: receive and drop <---------- (i, batch) ------------- sends what it had
    #      results until all exited                                    queued, exits
    #      (bounded), terminate() the rest                (idle with done_event set: exits
    #   4. close the queues                                 even if its None is lost)
    #
    # The pin thread goes first because it reads the result queue; the drain reads it now.
    # A batch never received would keep its shared memory (see _WorkerGroup._drain).
    # torch's shutdown differs in three places: it joins the pin thread without a time
    # limit, never reads the result queue (its workers abandon what they have not sent,
    # with cancel_join_thread), and its workers wait for their None however long it takes.

    _first_batch = 0  # the number of an epoch's first batch: 0 here

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._prefetch_factor <= 0:
            raise AssertionValueError("prefetch_factor=0 would give the workers no task; use "
                                      "prefetch_factor >= 1 (batches loaded ahead per worker)")
        context = loader.multiprocessing_context or torch.multiprocessing
        group = self._group = _WorkerGroup(context)
        weakref.finalize(self, group.shutdown)  # when this iterator dies: see _WorkerGroup
        for worker_id in range(self._num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()  # rule 2
            worker = context.Process(target=_worker_loop, daemon=True, kwargs=dict(
                dataset_kind=self._dataset_kind, dataset=self._dataset, index_queue=index_queue,
                result_queue=group.result_queue, done_event=group.done_event,
                auto_collation=self._auto_collation, collate_fn=self._collate_fn,
                drop_last=self._drop_last, base_seed=self._base_seed, worker_id=worker_id,
                init_fn=loader.worker_init_fn, num_workers=self._num_workers,
                trace_folder=_tracing.worker_folder(), keeper=self._keepers.get(worker_id)))
            group.start(worker, index_queue)
        self._data_queue = queue.Queue() if self._pin_memory else group.result_queue
        if self._pin_memory:
            group.pin_done_event = threading.Event()
            group.pin_thread = threading.Thread(target=_pin_memory_loop, name="pin_memory",
                                                daemon=True, args=(
                group.result_queue, self._data_queue, self._pin_device_index,
                group.pin_done_event, self._pin_fn))
            group.pin_thread.start()
        self._reset(loader, first_iter=True)

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        _tracing.epoch_start(self, loader)
        self._send_idx = self._rcvd_idx = self._first_batch
        self._task_info = {}  # batch number -> _Task: see the NOTE on the bookkeeping above
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        # Round robin from the first batch's worker on: batch b goes to worker b % num_workers.
        first = self._send_idx % self._num_workers
        turns = itertools.cycle(range(self._num_workers))
        self._worker_queue_idx_cycle = itertools.islice(turns, first, None)
        if not first_iter:
            # Persistent workers: each answers _ResumeIteration after whatever it still had
            # to send from the last epoch (left over after a `break`), which is dropped here.
            for index_queue in self._group.index_queues:
                index_queue.put(_ResumeIteration())
            resumed = 0
            while resumed < self._num_workers:
                idx, _ = self._get_data()
                resumed += _is_resume_ack(idx)
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout: float = _STATUS_CHECK_INTERVAL):
        """(True, message) from the data queue, or (False, None) after ``timeout`` seconds;
        raises if a worker died or the open-files limit was reached."""
        try:
            return True, self._data_queue.get(timeout=max(timeout, 0))
        except queue.Empty as error:
            self._raise_if_a_worker_died(error)
            return False, None
        except Exception as error:
            # A batch from a worker that died as it sent it cannot be rebuilt here: its
            # tensors' file descriptors must be fetched from the sender, which is gone
            # (ConnectionRefusedError, EOFError...). Wait a moment for it to end.
            self._group.wait_for_an_exit(self._workers_status)
            self._raise_if_a_worker_died(error)
            _raise_if_out_of_file_descriptors()
            raise

    def _raise_if_a_worker_died(self, cause: BaseException | None = None) -> None:
        workers = self._group.workers
        dead = [worker_id for worker_id, worker in enumerate(workers)
                if self._workers_status[worker_id] and not worker.is_alive()]
        for worker_id in dead:
            self._mark_worker_as_unavailable(worker_id)
        if dead:
            raise RuntimeError("; ".join(
                f"DataLoader worker {i} (pid {workers[i].pid}) {_describe_death(workers[i])}"
                for i in dead)) from cause

    def _get_data(self):
        """The next message from the data queue, waiting at most ``timeout`` if set."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else math.inf
        while not self._pin_memory or self._group.pin_thread.is_alive():
            wait = min(_STATUS_CHECK_INTERVAL, deadline - time.monotonic())
            success, data = self._try_get_data(wait)
            if success:
                return data
            if time.monotonic() >= deadline:
                raise RuntimeError(
                    f"DataLoader timed out: no batch within timeout={self._timeout} s, though "
                    "every worker is alive: a sample is slow or stuck (a network read, a lock), or "
                    "workers are still starting (spawn imports torch in each): raise timeout.")
        self._raise_if_a_worker_died()  # a worker dying as it sent a batch kills the thread
        raise RuntimeError("the DataLoader's pin-memory thread exited unexpectedly")

    def _next_data(self):
        while True:
            # Skip the batches that will not come: those owed by retired workers (their
            # IterableDataset ran out), and those already yielded out of order
            # (in_order=False), which left _task_info then. Both _get_data and an
            # end-of-stream message below can retire a worker, hence inside the loop.
            while self._rcvd_idx < self._send_idx:
                task = self._task_info.get(self._rcvd_idx)
                if task is not None:
                    if task.arrived or self._workers_status[task.worker_id]:
                        break  # it is here, or it will come
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:  # nothing in flight, and the sampler is exhausted: the epoch is over
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            task = self._task_info[self._rcvd_idx]
            if task.arrived:  # it came early, and waited for its turn
                del self._task_info[self._rcvd_idx]
                _tracing.emit("reorder_leave", batch=self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(task.data, task.worker_id, self._rcvd_idx - 1)
            idx, data = self._get_data()
            task = self._task_info[idx]
            _tracing.emit("received", batch=idx, worker=task.worker_id)
            if _is_stream_end(data):
                if self._persistent_workers:  # it stays, idle, for the next epoch
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx and self._in_order:  # early: park it until its turn
                self._task_info[idx] = task._replace(arrived=True, data=data)
                _tracing.emit("reorder_enter", batch=idx)
                continue
            if idx == self._rcvd_idx:
                self._rcvd_idx += 1
            del self._task_info[idx]
            return self._process_data(data, task.worker_id, idx)

    def _try_put_index(self) -> None:
        """Dispatch the sampler's next batch to the next worker in turn that can take it."""
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id] and (
                    self._in_order or self._workers_num_tasks[worker_id]
                    < max_tasks // sum(self._workers_status)):
                break
        else:  # no worker can take it (as in torch, the sampler's batch is dropped)
            return
        # (the dispatch is reported before put(): the worker may start on it at once)
        _tracing.emit("dispatch", batch=self._send_idx, worker=worker_id)
        self._group.index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = _Task(worker_id)
        self._workers_num_tasks[worker_id] += 1
        self._send_idx += 1

    def _process_data(self, data, worker_id: int, batch: int):
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if _is_error(data):
            data.reraise()
        _tracing.emit("yielded", batch=batch)
        return data

    def _mark_worker_as_unavailable(self, worker_id: int) -> None:
        """Retire a worker for this epoch: no more tasks, and a None to make it exit. (It is
        joined later, by the shutdown, so that an error it still raises is seen.)"""
        self._group.index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self) -> None:
        self._group.shutdown()
