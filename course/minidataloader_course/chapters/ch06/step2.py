"""Chapter 6, the multi-process iterator, step 2 of 4: several workers, taking tasks in turn
(round robin), and the prefetch window; the batches go out in the order they arrive."""

import itertools
import multiprocessing

import torch

from minidataloader_course.chapters.ch06 import step1
from minidataloader_course.chapters.ch06.worker_loop import worker_loop


class MultiProcessIterator(step1.MultiProcessIterator):
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
        self.worker_of = {}  # batch number -> its worker, until it is handed out
        self.turn = itertools.cycle(range(self.num_workers))  # round robin
        for _ in range(loader.prefetch_factor * self.num_workers):
            self._dispatch()

    def _dispatch(self):
        try:
            indices = next(self.indices)
        except StopIteration:
            return  # the sampler is exhausted: nothing more to send
        worker_id = next(self.turn)
        self.index_queues[worker_id].put((self.sent, indices))
        self.worker_of[self.sent] = worker_id
        self.sent += 1

    def _get(self):
        return self.result_queue.get()

    def __next__(self):
        if not self.worker_of:  # nothing in flight: the epoch is over
            self._shutdown()
            raise StopIteration
        number, data = self._get()  # whichever batch is ready first
        return self._hand_out(number, data)

    def _hand_out(self, number, data):
        del self.worker_of[number]
        self._dispatch()  # one batch handed out, one more task sent
        return data
