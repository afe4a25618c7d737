"""Chapter 8, the iterator's first step (NOTE [ A piece grown in steps ]): one iterator
serves every epoch of its workers. ``__init__`` makes what lives as long as the workers,
``_reset`` what belongs to one epoch; with persistent workers nothing stops a worker when an
epoch ends. The second step, the handshake before a later epoch, is
``solution.MultiProcessIterator``.
"""

import itertools
import multiprocessing

import torch

from minidataloader_course.chapters.ch07 import solution as ch07
from minidataloader_course.chapters.ch08.worker_resumed import worker_loop
from minidataloader_course.learner.stubs.worker import StreamEnded


class MultiProcessIterator(ch07.MultiProcessIterator):
    def __init__(self, loader):
        self.loader = loader
        self.num_workers = loader.num_workers
        batched = loader.batch_sampler is not None
        self.index_sampler = loader.batch_sampler if batched else loader.sampler
        self.base_seed = torch.empty((), dtype=torch.int64).random_(
            generator=loader.generator).item()  # once: persistent workers keep their seeds
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
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        """Start an epoch: the first one, or a later one with the same workers."""
        self.indices = iter(self.index_sampler)  # a new pass of the sampler
        self.sent = 0  # numbers start at 0 again
        self.next_number = 0
        self.worker_of = {}
        self.waiting = {}
        self.tasks = [0] * self.num_workers
        self.active = [True] * self.num_workers
        self.turn = itertools.cycle(range(self.num_workers))
        for _ in range(loader.prefetch_factor * self.num_workers):
            self._dispatch()

    def __next__(self):
        while True:
            while self.next_number < self.sent and (
                    self.next_number not in self.worker_of
                    or (self.next_number not in self.waiting
                        and not self.active[self.worker_of[self.next_number]])):
                self.worker_of.pop(self.next_number, None)
                self.next_number += 1
            if self.next_number == self.sent:
                if not self.loader.persistent_workers:  # persistent: they wait for _reset
                    self._shutdown()
                raise StopIteration
            if self.next_number in self.waiting:
                return self._hand_out(self.next_number, self.waiting.pop(self.next_number))
            number, data = self._get()
            if isinstance(data, StreamEnded):
                self.active[data.worker_id] = False
                if not self.loader.persistent_workers:  # persistent: it stays for _reset
                    self.index_queues[data.worker_id].put(None)
                self._dispatch()
                continue
            if number == self.next_number or not self.loader.in_order:
                return self._hand_out(number, data)
            self.waiting[number] = data
