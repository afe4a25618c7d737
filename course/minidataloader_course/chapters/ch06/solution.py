"""Chapter 6 (workers and queues): model solutions.

``worker_loop`` and ``MultiProcessIterator`` are pieces of the learner's own loader: they use
the names their files in ``myloader`` provide (the fetchers of chapter 5, ``torch``,
``multiprocessing``, ``itertools``, and each other). Chapters 7 to 10 grow both.
"""

import itertools
import multiprocessing

import torch
from torch.utils.data import IterableDataset

from minidataloader_course.chapters.ch05.solution import IterableFetcher, MapFetcher


def worker_loop(dataset, index_queue, result_queue, done_event, auto_collation, collate_fn,
                drop_last, base_seed, init_fn, worker_id, num_workers):
    torch.set_num_threads(1)  # every worker a core at most: they share the machine
    fetcher_class = IterableFetcher if isinstance(dataset, IterableDataset) else MapFetcher
    fetcher = fetcher_class(dataset, auto_collation, collate_fn, drop_last)
    while True:
        task = index_queue.get()  # wait for the next task
        if task is None:  # the sentinel: no more work
            return
        batch_number, indices = task
        try:
            batch = fetcher.fetch(indices)
        except Exception as error:  # a bad sample must not kill the worker:
            batch = error  # send the error back, and go on
        result_queue.put((batch_number, batch))


def dispatch_schedule(num_batches, num_workers, prefetch_factor):
    in_flight = prefetch_factor * num_workers  # sent by iter(loader)
    schedule = []
    for batch in range(num_batches):
        worker = batch % num_workers  # round robin
        trigger = None if batch < in_flight else batch - in_flight
        schedule.append((worker, trigger))
    return schedule


def samples_loaded_ahead(dataset_size, batch_size, num_workers, prefetch_factor=2,
                         drop_last=False):
    if num_workers == 0:
        return 0  # the main process loads a batch only when next() asks for it
    full_batches, leftover = divmod(dataset_size, batch_size)
    sizes = [batch_size] * full_batches
    if leftover and not drop_last:
        sizes.append(leftover)
    return sum(sizes[:prefetch_factor * num_workers])  # batches sent by iter()


def reorder_batches(arrivals, in_order=True):
    waiting = {}  # batch number -> batch, for those that came early
    next_number = 0
    for number, batch in arrivals:
        if not in_order:
            yield batch  # whatever is ready goes out at once
            continue
        waiting[number] = batch
        while next_number in waiting:  # hand out all that is now in order
            yield waiting.pop(next_number)
            next_number += 1


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
        self.next_number = 0  # the batch the training loop gets next (in order)
        self.worker_of = {}  # batch number -> its worker, until it is handed out
        self.waiting = {}  # the reorder buffer: batch number -> a batch that came early
        self.tasks = [0] * self.num_workers  # tasks each worker has, not yet handed out
        self.turn = itertools.cycle(range(self.num_workers))  # round robin
        for _ in range(loader.prefetch_factor * self.num_workers):
            self._dispatch()

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.loader)

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

    def _get(self):
        return self.result_queue.get()

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

    def _shutdown(self):
        for index_queue in self.index_queues:
            index_queue.put(None)
        for worker in self.workers:
            worker.join()
