"""The worker process: what runs inside each of the ``num_workers`` processes.

A worker seeds its random number generators, runs ``worker_init_fn``, then loops: take a
task (a batch number and the indices of its samples) from its own index queue, fetch and
collate the batch, put ``(batch number, batch)`` on the result queue shared by all workers.
Besides tasks, its index queue brings two sentinels:

    _ResumeIteration     (persistent workers) a new epoch starts: acknowledge, restart
    None                 the loader is done with this worker: leave the loop and exit

What it sends back is one of the messages of NOTE [ Messages on the result queue ], below.
See NOTE [ The pipeline and its shutdown ] in dataloader.py for the other side.
"""

from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from . import _tracing
from .fetch import _DatasetKind

# How often a process that waits on another one checks that the other is still alive: a
# worker waiting for tasks checks its parent, the main process waiting for batches checks
# its workers. A death is noticed within about this long.
_STATUS_CHECK_INTERVAL = 1.0


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """Handed to code running inside a worker: which worker this is, of how many, the seed
    it was given, and its own copy of the dataset. (``rng`` and ``worker_method`` are
    there because torch has them; workers here are always processes.)"""

    id: int
    num_workers: int
    seed: int
    dataset: Any
    rng: Any = None
    worker_method: str | None = "multiprocessing"


_worker_info: WorkerInfo | None = None  # set once, at the start of each worker process


def get_worker_info() -> WorkerInfo | None:
    """This worker's :class:`WorkerInfo`, or None in the main process."""
    return _worker_info


def _tell_torch(info: WorkerInfo) -> None:
    """Make torch's ``get_worker_info()`` answer too, inside our workers: a dataset written
    for torch splits its stream with it, and would otherwise repeat it in every worker.
    (Only if torch's data module is loaded: `import torch` loads it, but we never import it.)"""
    torch_worker = sys.modules.get("torch.utils.data._utils.worker")
    if torch_worker is not None:
        torch_worker._worker_info = torch_worker.WorkerInfo(
            id=info.id, num_workers=info.num_workers, seed=info.seed, dataset=info.dataset)


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """Sent by a worker whose IterableDataset copy ran out: give me no more tasks."""

    worker_id: int


class _ResumeIteration:
    """Sent to each persistent worker when a new epoch starts; the worker sends it back."""


class _KeyErrorMessage(str):
    """A message whose repr() is itself: KeyError prints repr(argument), which would show a
    traceback as one line full of \\n."""

    def __repr__(self):
        return self


class _ExceptionWrapper:
    """An exception caught in a worker (or the pin-memory thread), packed to travel to the
    main process: its type and its formatted traceback. (The exception object itself may
    not pickle, and its traceback never does.)"""

    def __init__(self, where: str) -> None:
        exc_type, exc, tb = sys.exc_info()
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where
        try:
            pickle.dumps(exc_type)
        except Exception:  # a class defined inside a function cannot travel (torch hangs)
            exc_type = RuntimeError
        self.exc_type = exc_type

    def reraise(self):
        """Raise the same type in this process, the original traceback in its message.

        As torch does: a type that cannot be built from one string (a constructor with two
        arguments, say) comes back as RuntimeError; a type that declares a ``message``
        attribute is built with ``message=``."""
        name = self.exc_type.__name__
        msg = f"{name} raised {self.where}; its traceback there:\n{self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


# NOTE [ Messages on the result queue ]
# Every worker puts its messages on the one result queue, and the main process reads them
# from it (through the pin thread, when batches are pinned). A message is a pair; the types
# in it alone say which of five it is:
#
#   (i, batch)                  batch i, fetched and collated: the pin thread pins it, the
#                               iterator yields it in its turn (_next_data, _process_data)
#   (i, _ExceptionWrapper)      fetching batch i raised (or pinning it, when the pin thread
#                               sends it): raised in batch i's turn (_process_data)
#   (i, _IterableDatasetStopIteration(w))
#                               worker w's stream ran out at batch i: batch i never comes,
#                               and w gets no more tasks this epoch (_next_data)
#   (_ResumeIteration(), None)  a persistent worker acknowledges a new epoch: all it sent
#                               before has been sent; _reset drops that, counts these
#   (None, None)                sent by the main process at shutdown, to wake the pin thread
#
#   worker 0 --+
#   worker 1 --+--> result_queue --> [pin thread] --> data_queue --> the iterator
#   worker 2 --+        ^            pins (i, batch)  (the result queue itself,
#                       |            only; passes     when batches are not pinned)
#   shutdown: (None, None)           the rest on
#
# The four checks below are the only code that tells the messages apart.


def _is_batch(idx, data) -> bool:
    return isinstance(idx, int) and not isinstance(
        data, (_ExceptionWrapper, _IterableDatasetStopIteration))


def _is_error(data) -> bool:
    return isinstance(data, _ExceptionWrapper)


def _is_stream_end(data) -> bool:
    return isinstance(data, _IterableDatasetStopIteration)


def _is_resume_ack(idx) -> bool:
    return isinstance(idx, _ResumeIteration)


def _hasher(multiplier: int, step: int):
    """A 32-bit hash whose multiplier moves on after every call (numpy's SeedSequence)."""

    def hash32(value: int) -> int:
        nonlocal multiplier
        value = (value ^ multiplier) & 0xFFFFFFFF
        multiplier = (multiplier * step) & 0xFFFFFFFF
        value = (value * multiplier) & 0xFFFFFFFF
        return value ^ (value >> 16)

    return hash32


def _generate_state(base_seed: int, worker_id: int) -> list[int]:
    """The seed of numpy's global RNG in a worker: four 32-bit words, mixed from the worker
    id and the 64-bit base seed the way ``numpy.random.SeedSequence`` mixes its entropy.

    Seeding numpy with ``base_seed + worker_id`` would start numpy and ``random`` (both
    Mersenne Twisters) from the same seed, and give neighbouring workers related streams.
    """
    hash_in = _hasher(0x43B0D7E5, 0x931E8875)
    pool = [hash_in(word) for word in (worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0)]
    for src in range(4):  # let every word influence every other word
        for dst in range(4):
            if src != dst:
                mixed = (0xCA01F9DD * pool[dst] - 0x4973F715 * hash_in(pool[src])) & 0xFFFFFFFF
                pool[dst] = mixed ^ (mixed >> 16)
    hash_out = _hasher(0x8B51F9DD, 0x58F38DED)
    return [hash_out(word) for word in pool]


def _worker_loop(dataset_kind, dataset, index_queue, result_queue, done_event,
                 auto_collation, collate_fn, drop_last, base_seed, init_fn, worker_id,
                 num_workers, trace_folder, keeper=None) -> None:
    # NOTE [ The keeper hook ]
    # A stateful loader (minidataloader.stateful) gives each worker a keeper (the
    # iterator's _keepers[worker_id]): it creates the fetchers, restoring a saved position
    # first, and wraps every result with the worker's state after it. (Without workers, the
    # main process's fetcher comes from _keepers[None].) Without one, this loop is exactly
    # torch's.
    _tracing.attach_worker(trace_folder)
    parent = os.getppid()
    try:
        # One thread: num_workers processes each using every core would fight for them.
        torch.set_num_threads(1)
        seed = base_seed + worker_id
        random.seed(seed)
        torch.manual_seed(seed)
        np.random.seed(_generate_state(base_seed, worker_id))
        global _worker_info
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        _tell_torch(_worker_info)
        _tracing.emit("worker_start", worker=worker_id)
        where = f"in DataLoader worker {worker_id} (pid {os.getpid()})"

        # A failure here is sent as the answer to the first task: the main process raises
        # it when it reaches that batch, as it would any fetching error. (`fetcher` then
        # stays unset, and later tasks fail with UnboundLocalError -- as in torch.)
        init_error = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = (keeper or _DatasetKind).create_fetcher(
                dataset_kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = _ExceptionWrapper(where)

        # After sending _IterableDatasetStopIteration, or once the main process has set
        # done_event, the worker fetches nothing more and only waits for its None.
        stream_ended = False
        while os.getppid() == parent:  # an orphan is adopted: its parent pid changes
            try:
                task = index_queue.get(timeout=_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if done_event.is_set():  # shutting down, and the None is late: go anyway
                    break
                continue
            if isinstance(task, _ResumeIteration):
                result_queue.put((task, None))  # acknowledge: everything before it is sent
                stream_ended = False
                fetcher = (keeper or _DatasetKind).create_fetcher(
                    dataset_kind, dataset, auto_collation, collate_fn, drop_last)
                _tracing.emit("resume", worker=worker_id)
                continue
            if task is None:
                break
            if done_event.is_set() or stream_ended:
                continue
            idx, index = task
            _tracing.emit("fetch_start", batch=idx, worker=worker_id)
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as error:
                    if isinstance(error, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        stream_ended = True
                    else:
                        data = _ExceptionWrapper(where)
            _tracing.emit("fetch_end", batch=idx, worker=worker_id)
            # result_put comes before put(): the main process may receive it at once
            _tracing.emit("result_put", batch=idx, worker=worker_id)
            result_queue.put((idx, data if keeper is None else keeper.report(data)))
            del data, idx, index, task  # keep no batch alive while waiting for the next task
    except KeyboardInterrupt:
        pass  # Ctrl-C reached the whole process group: the main process handles it
    if os.getppid() != parent:
        # Nobody will read what is still buffered: do not let it block this process's exit.
        # (Otherwise the process sends it all before exiting; the shutdown reads it.)
        result_queue.cancel_join_thread()
    _tracing.emit("worker_exit", worker=worker_id)
