"""Chapter 7 (randomness and identity in workers): model solutions.

``generate_state``, ``worker_loop`` and ``MultiProcessIterator`` are pieces of the learner's
loader. The worker loop grows chapter 6's in two steps (NOTE [ A piece grown in steps ]):
it installs the seeds and tells code in the worker who it is (``worker_seeded.worker_loop``),
then says when its copy of a stream has run out (``worker_loop`` here); the iterator retires
such a worker. The classes the messages are made of come with the learner's ``worker.py``.
"""

import itertools
import multiprocessing
import random

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from minidataloader_course.chapters.ch05.solution import IterableFetcher, MapFetcher
from minidataloader_course.chapters.ch06 import solution as ch06
from minidataloader_course.learner.stubs.worker import StreamEnded, WorkerInfo

# as in the learner's worker.py: set by the worker loop, None in the main process
_worker_info = None


def generate_state(base_seed, worker_id):
    words = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    return np.random.SeedSequence(words).generate_state(4).tolist()


def worker_loop(dataset, index_queue, result_queue, done_event, auto_collation, collate_fn,
                drop_last, base_seed, init_fn, worker_id, num_workers):
    global _worker_info
    torch.set_num_threads(1)
    seed = base_seed + worker_id  # every worker a seed of its own
    random.seed(seed)
    torch.manual_seed(seed)
    np.random.seed(generate_state(base_seed, worker_id))  # numpy takes no 64-bit seed
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                              dataset=dataset)
    if init_fn is not None:
        init_fn(worker_id)  # after the seeds and the info: it may use both
    fetcher_class = IterableFetcher if isinstance(dataset, IterableDataset) else MapFetcher
    fetcher = fetcher_class(dataset, auto_collation, collate_fn, drop_last)
    ended = False  # this worker's copy of the stream has run out
    while True:
        task = index_queue.get()
        if task is None:
            return
        if ended:
            continue  # nothing left to give: the main process knows, and skips these
        batch_number, indices = task
        try:
            batch = fetcher.fetch(indices)
        except StopIteration:
            batch, ended = StreamEnded(worker_id), True
        except Exception as error:
            batch = error
        result_queue.put((batch_number, batch))


class MultiProcessIterator(ch06.MultiProcessIterator):
    def __init__(self, loader):
        self.loader = loader
        self.num_workers = loader.num_workers
        batched = loader.batch_sampler is not None
        self.indices = iter(loader.batch_sampler if batched else loader.sampler)
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
        self.sent = 0
        self.next_number = 0
        self.worker_of = {}
        self.waiting = {}
        self.tasks = [0] * self.num_workers
        self.active = [True] * self.num_workers  # False: its stream ran out this epoch
        self.turn = itertools.cycle(range(self.num_workers))
        for _ in range(loader.prefetch_factor * self.num_workers):
            self._dispatch()

    def _dispatch(self):
        try:
            indices = next(self.indices)
        except StopIteration:
            return
        for _ in range(self.num_workers):
            worker_id = next(self.turn)
            if not self.active[worker_id]:
                continue  # its stream has ended: it gets no more tasks
            share = self.loader.prefetch_factor * self.num_workers // sum(self.active)
            if self.loader.in_order or self.tasks[worker_id] < share:
                break
        else:
            return
        self.index_queues[worker_id].put((self.sent, indices))
        self.worker_of[self.sent] = worker_id
        self.tasks[worker_id] += 1
        self.sent += 1

    def __next__(self):
        while True:
            # skip the numbers that will not come: handed out already (out of order), or
            # owed by a worker whose stream has ended (unless it came before the end)
            while self.next_number < self.sent and (
                    self.next_number not in self.worker_of
                    or (self.next_number not in self.waiting
                        and not self.active[self.worker_of[self.next_number]])):
                self.worker_of.pop(self.next_number, None)
                self.next_number += 1
            if self.next_number == self.sent:
                self._shutdown()
                raise StopIteration
            if self.next_number in self.waiting:
                return self._hand_out(self.next_number, self.waiting.pop(self.next_number))
            number, data = self._get()
            if isinstance(data, StreamEnded):  # that worker's copy of the stream ran out
                self.active[data.worker_id] = False
                self.index_queues[data.worker_id].put(None)  # it may leave now
                self._dispatch()  # the task goes to a worker that can still take it
                continue
            if number == self.next_number or not self.loader.in_order:
                return self._hand_out(number, data)
            self.waiting[number] = data


def seed_worker(worker_id):
    info = get_worker_info()  # its seed, and its dataset copy
    info.dataset.rng = np.random.default_rng(info.seed)


def count_duplicate_augmentations(batches):
    seen = set()
    duplicates = 0
    for batch in batches:
        for params in batch.tolist():
            key = tuple(params)
            if key in seen:
                duplicates += 1
            seen.add(key)
    return duplicates


class ShardedStream(IterableDataset):
    def __init__(self, items):
        self.items = items

    def __iter__(self):
        info = get_worker_info()
        if info is None:  # no workers: the main process reads all
            return iter(self.items)
        # every num_workers-th item, from the worker's id on
        return iter(self.items[info.id::info.num_workers])
