"""Chapter 6, the multi-process iterator, step 1 of 4: one worker, batches in order.

Each step of the iterator is a class of the same name that subclasses the step before it
and holds what changes (NOTE [ A piece grown in steps ] in ``learner/package.py``); the last
step is ``solution.MultiProcessIterator``. The names the methods use (``worker_loop``,
``torch``, ``multiprocessing``, ``itertools``) are those of the learner's ``dataloader.py``.
"""

import multiprocessing

import torch

from minidataloader_course.chapters.ch06.worker_loop import worker_loop


class MultiProcessIterator:
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
        self.next_number = 0  # the batch the training loop gets next
        self._dispatch()  # one task ahead: the worker reads while the loop trains

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.loader)

    def _dispatch(self):
        try:
            indices = next(self.indices)
        except StopIteration:
            return  # the sampler is exhausted: nothing more to send
        self.index_queues[0].put((self.sent, indices))
        self.sent += 1

    def __next__(self):
        if self.next_number == self.sent:  # nothing in flight: the epoch is over
            self._shutdown()
            raise StopIteration
        number, data = self.result_queue.get()  # one worker: they come in the order sent
        self.next_number += 1
        self._dispatch()  # one batch handed out, one more task sent
        return data

    def _shutdown(self):
        for index_queue in self.index_queues:
            index_queue.put(None)
        for worker in self.workers:
            worker.join()
