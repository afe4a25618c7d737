"""Chapter 10 (when things go wrong): model solutions.

``rebuild_exception``, ``worker_loop``, ``get_result``, ``shutdown_workers`` and
``MultiProcessIterator`` are pieces of the learner's loader: a worker's error travels with its
traceback and comes back as its own type (``errors.py``), each side watches the other and a
wait can time out (``watchdog.py``), and the workers are stopped in an order that leaves
nothing behind (here). The worker loop and the iterator grow in steps, one module each.
"""

import math
import multiprocessing
import os
import queue
import random
import threading
import time
import traceback

import numpy as np
import torch
from torch.utils.data import IterableDataset

from minidataloader import _tracing
from minidataloader_course.chapters.ch05.solution import IterableFetcher, MapFetcher
from minidataloader_course.chapters.ch07.solution import generate_state
from minidataloader_course.chapters.ch09.solution import pin_loop
from minidataloader_course.chapters.ch10 import watchdog
from minidataloader_course.chapters.ch10.errors import rebuild_exception
from minidataloader_course.chapters.ch10.lab import BuggyIterator
from minidataloader_course.chapters.ch10.watchdog import get_result
from minidataloader_course.learner.stubs.worker import (
    Resume,
    StreamEnded,
    WorkerError,
    WorkerInfo,
)

__all__ = ["rebuild_exception", "get_result", "worker_loop", "shutdown_workers",
           "MultiProcessIterator", "shared_memory_needed", "classify_failure",
           "RepairedIterator"]

_worker_info = None  # as in the learner's worker.py


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


class MultiProcessIterator(watchdog.MultiProcessIterator):
    def __init__(self, loader):
        self.shut_down = False
        self.owner = os.getpid()  # a forked worker holds a copy of this iterator, too
        self.loader = loader
        self.num_workers = loader.num_workers
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
        pin_fn = self._pin_function(loader)
        if pin_fn is not None:
            self.data_queue = queue.Queue()
            self.pin_done = threading.Event()
            self.pin_thread = threading.Thread(target=pin_loop, daemon=True, args=(
                self.result_queue, self.data_queue, self.pin_done, pin_fn))
            self.pin_thread.start()
        self._reset(loader, first_iter=True)

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


class RepairedIterator(BuggyIterator):
    def __next__(self):
        while True:
            if self.next_number == self.sent:  # nothing in flight: the epoch is over
                self._shutdown()
                raise StopIteration
            if self.next_number in self.waiting:  # it came early, and its turn has come
                number = self.next_number
                _tracing.emit("reorder_leave", batch=number)
                return self._hand_out(number, self.waiting.pop(number))
            number, data = self.result_queue.get()
            _tracing.emit("received", batch=number, worker=self.worker_of[number])
            if number == self.next_number:
                return self._hand_out(number, data)
            _tracing.emit("reorder_enter", batch=number)
            self.waiting[number] = data

    def _shutdown(self):
        if self.shut_down:
            return
        self.shut_down = True
        _tracing.epoch_end(self)
        self.done_event.set()  # the tasks still queued are skipped
        for index_queue in self.index_queues:  # every worker, busy or not, is told to leave
            index_queue.put(None)
        for worker in self.workers:
            worker.join()

    def __del__(self):  # after a break or a del: no worker outlives the iterator
        self._shutdown()
