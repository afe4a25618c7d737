"""Chapter 10 (when things go wrong): model solutions.

``rebuild_exception``, ``worker_loop``, ``get_result``, ``shutdown_workers`` and
``MultiProcessIterator`` are pieces of the learner's loader: a worker's error travels with its
traceback and comes back as its own type, each side watches the other, a wait can time out,
and the workers are stopped in an order that leaves nothing behind.
"""

import functools
import math
import multiprocessing
import os
import queue
import random
import signal
import threading
import time
import traceback
import warnings

import numpy as np
import torch
from torch.utils.data import IterableDataset

from minidataloader_course.chapters.ch05.solution import IterableFetcher, MapFetcher
from minidataloader_course.chapters.ch07.solution import generate_state
from minidataloader_course.chapters.ch09 import solution as ch09
from minidataloader_course.chapters.ch09.solution import pin_batch, pin_loop
from minidataloader_course.learner.stubs.worker import (
    Resume,
    StreamEnded,
    WorkerError,
    WorkerInfo,
)

_worker_info = None  # as in the learner's worker.py


def rebuild_exception(exc_type, message):
    if exc_type is KeyError:
        class KeyErrorMessage(str):
            """KeyError prints the repr() of its argument, and a str's repr() would show a
            traceback as one line full of \\n: this one's repr() is the text itself."""

            def __repr__(self):
                return self

        return KeyError(KeyErrorMessage(message))
    try:
        return exc_type(message)
    except Exception:  # its constructor wants something else than one string
        return RuntimeError(message)


def worker_loop(dataset, index_queue, result_queue, done_event, auto_collation, collate_fn,
                drop_last, base_seed, init_fn, worker_id, num_workers):
    global _worker_info
    parent = os.getppid()
    torch.set_num_threads(1)
    seed = base_seed + worker_id
    random.seed(seed)
    torch.manual_seed(seed)
    np.random.seed(generate_state(base_seed, worker_id))
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                              dataset=dataset)
    if init_fn is not None:
        init_fn(worker_id)
    fetcher_class = IterableFetcher if isinstance(dataset, IterableDataset) else MapFetcher
    fetcher = fetcher_class(dataset, auto_collation, collate_fn, drop_last)
    ended = False
    try:
        while True:
            try:
                task = index_queue.get(timeout=1.0)  # wake up now and then, to look around
            except queue.Empty:
                if done_event.is_set() or os.getppid() != parent:
                    break  # shutting down (and the None is late), or the main process is gone
                continue
            if task is None:
                break
            if isinstance(task, Resume):
                result_queue.put((task, worker_id))
                fetcher = fetcher_class(dataset, auto_collation, collate_fn, drop_last)
                ended = False
                continue
            if ended or done_event.is_set():
                continue  # nothing to give, or shutting down: skip what is left
            batch_number, indices = task
            try:
                batch = fetcher.fetch(indices)
            except StopIteration:
                batch, ended = StreamEnded(worker_id), True
            except Exception as error:  # its type, and its traceback as text, travel
                batch = WorkerError(type(error), f"{type(error).__name__} in DataLoader worker "
                                                 f"{worker_id} (pid {os.getpid()}):\n"
                                                 f"{traceback.format_exc()}")
            result_queue.put((batch_number, batch))
    except KeyboardInterrupt:  # Ctrl-C reached every process: the main process reports it
        pass
    if os.getppid() != parent:  # nobody will read what is still buffered: exit anyway
        result_queue.cancel_join_thread()


def get_result(result_queue, workers, timeout):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return result_queue.get(timeout=0.1)  # short: check on the workers often
        except queue.Empty:
            pass
        for worker_id, worker in enumerate(workers):
            if not worker.is_alive():
                code = worker.exitcode
                how = (f"was killed by {signal.Signals(-code).name}" if code < 0
                       else f"exited with exit code {code}")
                raise RuntimeError(f"worker {worker_id} (pid {worker.pid}) {how}")
        if time.monotonic() >= deadline:
            raise RuntimeError(f"timed out: no result within {timeout} seconds")


def shutdown_workers(workers, index_queues, result_queue, done_event, timeout):
    done_event.set()  # 1. skip the tasks still queued
    for index_queue in index_queues:
        index_queue.put(None)  # 2. leave your loop
    deadline = time.monotonic() + timeout
    while any(w.is_alive() for w in workers) and time.monotonic() < deadline:
        try:  # 3. read what they still send: a worker cannot exit before it is read
            result_queue.get(timeout=0.05)
        except Exception:  # nothing came; or a batch whose sender has exited, taking its
            pass  # tensors with it: either way, nothing to keep
    terminated = []
    for worker_id, worker in enumerate(workers):
        if worker.is_alive():  # 4. stuck: end it
            worker.terminate()
            terminated.append(worker_id)
            worker.join(1)
            if worker.is_alive():  # it ignores SIGTERM: SIGKILL cannot be ignored
                worker.kill()
        worker.join()
    for q in [result_queue, *index_queues]:  # 5. nobody reads them any more
        q.cancel_join_thread()
        q.close()
    return terminated


class MultiProcessIterator(ch09.MultiProcessIterator):
    def __init__(self, loader):
        self.loader = loader
        self.num_workers = loader.num_workers
        self.shut_down = False
        self.owner = os.getpid()  # a forked worker holds a copy of this iterator, too
        batched = loader.batch_sampler is not None
        self.index_sampler = loader.batch_sampler if batched else loader.sampler
        self.base_seed = torch.empty((), dtype=torch.int64).random_(
            generator=loader.generator).item()
        context = loader.multiprocessing_context
        if context is None or isinstance(context, str):
            context = multiprocessing.get_context(context)
        self.result_queue = context.Queue()
        self.done_event = context.Event()
        self.index_queues, self.workers = [], []
        self.pin_thread = None
        for worker_id in range(self.num_workers):
            index_queue = context.Queue()
            worker = context.Process(target=worker_loop, daemon=True, args=(
                loader.dataset, index_queue, self.result_queue, self.done_event, batched,
                loader.collate_fn, loader.drop_last, self.base_seed, loader.worker_init_fn,
                worker_id, self.num_workers))
            worker.start()
            self.index_queues.append(index_queue)
            self.workers.append(worker)
        self.data_queue = self.result_queue
        pin_fn = getattr(loader, "_pin_memory_fn", None)
        if pin_fn is None and loader.pin_memory:
            if torch.cuda.is_available():
                pin_fn = functools.partial(pin_batch, pin_fn=torch.Tensor.pin_memory)
            else:  # as torch: say so, and yield the batches unpinned
                warnings.warn("'pin_memory' argument is set as true but no accelerator is "
                              "found, then device pinned memory won't be used.", stacklevel=2)
        if pin_fn is not None:
            self.data_queue = queue.Queue()
            self.pin_done = threading.Event()
            self.pin_thread = threading.Thread(target=pin_loop, daemon=True, args=(
                self.result_queue, self.data_queue, self.pin_done, pin_fn))
            self.pin_thread.start()
        self._reset(loader, first_iter=True)

    def _get(self):
        # only the workers still at work: one whose stream ended may have left already
        working = [w for w, active in zip(self.workers, self.active) if active]
        timeout = self.loader.timeout if self.loader.timeout > 0 else math.inf
        return get_result(self.data_queue, working, timeout)

    def _hand_out(self, number, data):
        if number == self.next_number:
            self.next_number += 1
        self.tasks[self.worker_of.pop(number)] -= 1
        self._dispatch()
        if isinstance(data, WorkerError):  # raised as the type it had in the worker
            raise rebuild_exception(data.exc_type, data.message)
        if isinstance(data, Exception):  # pin_fn's error, from the pin thread
            raise data
        return data

    def _shutdown(self):
        if self.shut_down or os.getpid() != self.owner:
            return  # once, and only by the process that started the workers
        self.shut_down = True
        if self.pin_thread is not None:
            self.pin_done.set()
            self.pin_thread.join()
        shutdown_workers(self.workers, self.index_queues, self.result_queue, self.done_event,
                         timeout=5.0)

    def __del__(self):  # after break, del or an exception: no worker may outlive it
        self._shutdown()


def shared_memory_needed(sample_shape, element_size, batch_size, num_workers,
                         prefetch_factor, batches_held=1):
    if num_workers == 0:
        return 0  # batches are made in the main process: nothing crosses processes
    batch_bytes = batch_size * math.prod(sample_shape) * element_size
    in_flight = num_workers * prefetch_factor  # fetched ahead, waiting in shared memory
    return (in_flight + batches_held) * batch_bytes


CLUES = [  # checked in this order: the first category with a clue in the message wins
    ("cuda in fork", ["Cannot re-initialize CUDA in forked subprocess"]),
    ("exception", ["in DataLoader worker process", "raised in DataLoader worker"]),
    ("open files", ["Too many open files", "items of ancdata"]),
    ("timeout", ["timed out"]),
    ("shared memory", ["Bus error", "SIGBUS", "bus error"]),
    ("killed", ["signal: Killed", "SIGKILL"]),
    ("crashed", ["killed by signal", "killed by SIG", "segmentation fault"]),
    ("exited", ["exited"]),
]


def classify_failure(message):
    for category, clues in CLUES:
        if any(clue in message for clue in clues):
            return category
    return "unknown"
