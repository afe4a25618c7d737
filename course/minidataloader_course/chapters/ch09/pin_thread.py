"""Chapter 9, the iterator's first step: a thread of the main process, between the workers'
result queue and the training loop, pins every batch with the loader's ``_pin_memory_fn``.
(The second step, in ``solution.py``, decides what ``pin_memory=True`` pins with.)"""

import itertools
import multiprocessing
import queue
import threading

import torch

from minidataloader_course.chapters.ch08 import solution as ch08
from minidataloader_course.chapters.ch08.solution import resume_workers, worker_loop
from minidataloader_course.chapters.ch09.pinning import pin_loop


class MultiProcessIterator(ch08.MultiProcessIterator):
    def __init__(self, loader):
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
        self.data_queue = self.result_queue  # where the batches are read: the workers' queue,
        self.pin_thread = None
        pin_fn = self._pin_function(loader)
        if pin_fn is not None:  # or the pin thread's
            self.data_queue = queue.Queue()
            self.pin_done = threading.Event()
            self.pin_thread = threading.Thread(target=pin_loop, daemon=True, args=(
                self.result_queue, self.data_queue, self.pin_done, pin_fn))
            self.pin_thread.start()
        self._reset(loader, first_iter=True)

    def _pin_function(self, loader):
        return getattr(loader, "_pin_memory_fn", None)  # a function of one batch, if set

    def _reset(self, loader, first_iter=False):
        self.indices = iter(self.index_sampler)
        self.sent = 0
        self.next_number = 0
        self.worker_of = {}
        self.waiting = {}
        self.tasks = [0] * self.num_workers
        self.active = [True] * self.num_workers
        self.turn = itertools.cycle(range(self.num_workers))
        if not first_iter:  # the acknowledgements come through the pin thread too
            resume_workers(self.index_queues, self.data_queue, self.workers)
        for _ in range(loader.prefetch_factor * self.num_workers):
            self._dispatch()

    def _get(self):
        return self.data_queue.get()

    def _shutdown(self):
        if self.pin_thread is not None:  # first: it reads the result queue
            self.pin_done.set()
            self.pin_thread.join()
        for index_queue in self.index_queues:
            index_queue.put(None)
        for worker in self.workers:
            worker.join()
