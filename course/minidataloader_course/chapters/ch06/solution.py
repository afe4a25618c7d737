"""Chapter 6 (workers and queues): model solutions.

``worker_loop`` (in ``worker_loop.py``) and ``MultiProcessIterator`` are pieces of the
learner's own loader: they use the names their files in ``myloader`` provide (the fetchers of
chapter 5, ``torch``, ``multiprocessing``, ``itertools``, and each other). The iterator grows
in four checked steps (``step1.py`` to ``step3.py``, then the class below, each a subclass of
the step before); chapters 7 to 10 grow both pieces further.
"""

import itertools
import multiprocessing

import torch

from minidataloader_course.chapters.ch06 import step3
from minidataloader_course.chapters.ch06.worker_loop import worker_loop

__all__ = ["MultiProcessIterator", "worker_loop"]


class MultiProcessIterator(step3.MultiProcessIterator):
    """Step 4 of 4: ``in_order=False``, and a worker's error raised in its batch's turn."""

    def __init__(self, loader):
        self.loader = loader
        self.num_workers = loader.num_workers
        batched = loader.batch_sampler is not None
        self.indices = iter(loader.batch_sampler if batched else loader.sampler)
        self.base_seed = torch.empty((), dtype=torch.int64).random_(
            generator=loader.generator).item()  # as in chapter 5: one draw per epoch
        context = loader.multiprocessing_context
        if context is None or isinstance(context, str):  # the default, or a start method
            context = multiprocessing.get_context(context)
        self.result_queue = context.Queue()  # shared by all the workers
        self.done_event = context.Event()
        self.index_queues, self.workers = [], []
        for worker_id in range(self.num_workers):
            index_queue = context.Queue()  # one per worker
            worker = context.Process(target=worker_loop, daemon=True, args=(
                loader.dataset, index_queue, self.result_queue, self.done_event, batched,
                loader.collate_fn, loader.drop_last, self.base_seed, loader.worker_init_fn,
                worker_id, self.num_workers))
            worker.start()
            self.index_queues.append(index_queue)
            self.workers.append(worker)
        self.sent = 0  # batches sent to the workers: the next one gets this number
        self.next_number = 0  # the batch the training loop gets next (in order)
        self.worker_of = {}  # batch number -> its worker, until it is handed out
        self.waiting = {}  # the reorder buffer: batch number -> a batch that came early
        self.tasks = [0] * self.num_workers  # tasks each worker has, not yet handed out
        self.turn = itertools.cycle(range(self.num_workers))  # round robin
        for _ in range(loader.prefetch_factor * self.num_workers):
            self._dispatch()

    def _dispatch(self):
        try:
            indices = next(self.indices)
        except StopIteration:
            return  # the sampler is exhausted: nothing more to send
        for _ in range(self.num_workers):  # the next worker in turn that may take it
            worker_id = next(self.turn)
            if self.loader.in_order or self.tasks[worker_id] < self.loader.prefetch_factor:
                break  # out of order, a worker takes a task only when it has room
        else:
            return  # no worker has room (as in torch, this batch is never sent)
        self.index_queues[worker_id].put((self.sent, indices))
        self.worker_of[self.sent] = worker_id
        self.tasks[worker_id] += 1
        self.sent += 1

    def __next__(self):
        while True:
            while self.next_number < self.sent and self.next_number not in self.worker_of:
                self.next_number += 1  # handed out already, out of order
            if self.next_number == self.sent:  # nothing in flight: the epoch is over
                self._shutdown()
                raise StopIteration
            if self.next_number in self.waiting:  # it came early, and waited for its turn
                return self._hand_out(self.next_number, self.waiting.pop(self.next_number))
            number, data = self._get()
            if number == self.next_number or not self.loader.in_order:
                return self._hand_out(number, data)
            self.waiting[number] = data  # early: it waits in the reorder buffer

    def _hand_out(self, number, data):
        if number == self.next_number:
            self.next_number += 1
        self.tasks[self.worker_of.pop(number)] -= 1
        self._dispatch()  # one batch handed out, one more task sent
        if isinstance(data, Exception):  # a worker's error: raised in its batch's turn
            raise data
        return data
