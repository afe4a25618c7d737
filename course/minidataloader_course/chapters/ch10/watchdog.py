"""Chapter 10, the watchful steps: the main process waits for a result without waiting
forever (``get_result``: a dead worker, a ``timeout``), and a worker waits for a task
without waiting forever (the done event, a dead main process)."""

import math
import os
import queue
import random
import signal
import time
import traceback

import numpy as np
import torch
from torch.utils.data import IterableDataset

from minidataloader_course.chapters.ch05.solution import IterableFetcher, MapFetcher
from minidataloader_course.chapters.ch07.solution import generate_state
from minidataloader_course.chapters.ch10 import errors
from minidataloader_course.learner.stubs.worker import (
    Resume,
    StreamEnded,
    WorkerError,
    WorkerInfo,
)

_worker_info = None  # as in the learner's worker.py


def get_result(result_queue, workers, timeout):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return result_queue.get(timeout=0.1)  # short: check on the workers often
        except queue.Empty:
            pass
        except Exception:  # a result that cannot be read: did its worker die as it was read?
            time.sleep(0.1)  # (a process takes a moment to be seen dead once it is killed)
            if all(worker.is_alive() for worker in workers):
                raise
        for worker_id, worker in enumerate(workers):
            if not worker.is_alive():
                code = worker.exitcode
                how = (f"was killed by {signal.Signals(-code).name}" if code < 0
                       else f"exited with exit code {code}")
                raise RuntimeError(f"worker {worker_id} (pid {worker.pid}) {how}")
        if time.monotonic() >= deadline:
            raise RuntimeError(f"timed out: no result within {timeout} seconds")


class MultiProcessIterator(errors.MultiProcessIterator):
    def _get(self):
        # only the workers still at work: one whose stream ended may have left already
        working = [w for w, active in zip(self.workers, self.active) if active]
        timeout = self.loader.timeout if self.loader.timeout > 0 else math.inf
        return get_result(self.data_queue, working, timeout)


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
        except Exception as error:
            batch = WorkerError(type(error), f"{type(error).__name__} in DataLoader worker "
                                             f"{worker_id} (pid {os.getpid()}):\n"
                                             f"{traceback.format_exc()}")
        result_queue.put((batch_number, batch))
    if os.getppid() != parent:  # nobody will read what is still buffered: exit anyway
        result_queue.cancel_join_thread()
