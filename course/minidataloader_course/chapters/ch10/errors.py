"""Chapter 10, the first steps of the worker loop and of the iterator: a worker's error
travels home with its traceback, as text, and the main process raises it again as its own
type (``rebuild_exception``)."""

import multiprocessing
import os
import queue
import random
import threading
import traceback

import numpy as np
import torch
from torch.utils.data import IterableDataset

from minidataloader_course.chapters.ch05.solution import IterableFetcher, MapFetcher
from minidataloader_course.chapters.ch07.solution import generate_state
from minidataloader_course.chapters.ch09 import solution as ch09
from minidataloader_course.chapters.ch09.solution import pin_loop
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
        task = index_queue.get()
        if task is None:
            return
        if isinstance(task, Resume):
            result_queue.put((task, worker_id))
            fetcher = fetcher_class(dataset, auto_collation, collate_fn, drop_last)
            ended = False
            continue
        if ended:
            continue
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


class MultiProcessIterator(ch09.MultiProcessIterator):
    def __init__(self, loader):  # as chapter 9's: its workers run the loop above
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
        self.pin_thread = None
        pin_fn = self._pin_function(loader)
        if pin_fn is not None:
            self.data_queue = queue.Queue()
            self.pin_done = threading.Event()
            self.pin_thread = threading.Thread(target=pin_loop, daemon=True, args=(
                self.result_queue, self.data_queue, self.pin_done, pin_fn))
            self.pin_thread.start()
        self._reset(loader, first_iter=True)

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
