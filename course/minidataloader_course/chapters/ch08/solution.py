"""Chapter 8 (epochs and persistent workers): model solutions.

``resume_workers``, ``worker_loop``, ``MultiProcessIterator`` and ``DataLoader`` are pieces of
the learner's loader: the handshake, the worker's answer to it, the iterator's reset for a
new epoch, and the loader that keeps one iterator when its workers persist.
"""

import itertools
import multiprocessing
import queue
import random

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset

from minidataloader_course.chapters.ch05 import solution as ch05
from minidataloader_course.chapters.ch05.solution import (
    IterableFetcher,
    MapFetcher,
    SingleProcessIterator,
)
from minidataloader_course.chapters.ch07 import solution as ch07
from minidataloader_course.chapters.ch07.solution import generate_state
from minidataloader_course.learner.stubs.worker import Resume, StreamEnded, WorkerInfo

_worker_info = None  # as in the learner's worker.py


def startup_seconds(epochs, start_s, persistent, resume_s=0.0):
    if epochs == 0:
        return 0.0
    if persistent:  # one start, then a handshake at each later epoch
        return start_s + (epochs - 1) * resume_s
    return epochs * start_s  # new workers every epoch


def resume_workers(index_queues, result_queue, workers):
    for index_queue in index_queues:
        index_queue.put(Resume())  # behind all the worker has to do
    stale = []
    acknowledged = 0
    while acknowledged < len(index_queues):
        try:
            message = result_queue.get(timeout=0.1)  # wake up to see who is alive
        except queue.Empty:
            dead = [w for w, worker in enumerate(workers) if not worker.is_alive()]
            if dead:  # its acknowledgement will never come
                raise RuntimeError(f"worker(s) {dead} exited unexpectedly") from None
            continue
        if isinstance(message[0], Resume):
            acknowledged += 1  # nothing old can follow it
        else:
            stale.append(message)  # left from the last epoch
    return stale


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
        if isinstance(task, Resume):  # a new epoch: all I sent before has been sent
            result_queue.put((task, worker_id))
            fetcher = fetcher_class(dataset, auto_collation, collate_fn, drop_last)
            ended = False  # a stream starts again
            continue
        if ended:
            continue
        batch_number, indices = task
        try:
            batch = fetcher.fetch(indices)
        except StopIteration:
            batch, ended = StreamEnded(worker_id), True
        except Exception as error:
            batch = error
        result_queue.put((batch_number, batch))


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
        self.indices = iter(self.index_sampler)
        self.sent = 0  # numbers start at 0 again
        self.next_number = 0
        self.worker_of = {}
        self.waiting = {}
        self.tasks = [0] * self.num_workers
        self.active = [True] * self.num_workers
        self.turn = itertools.cycle(range(self.num_workers))
        if not first_iter:  # what the last epoch left in flight must not reach this one
            resume_workers(self.index_queues, self.result_queue, self.workers)
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


class DataLoader(ch05.DataLoader):
    def __iter__(self):
        if self.num_workers == 0:
            return SingleProcessIterator(self)
        if not self.persistent_workers:
            return MultiProcessIterator(self)  # new workers every epoch
        if getattr(self, "_iterator", None) is None:  # the first epoch starts the workers
            self._iterator = MultiProcessIterator(self)
        else:  # later epochs reuse them
            self._iterator._reset(self)
        return self._iterator


class CurriculumDataset(Dataset):
    def __init__(self, n):
        self.n = n
        # made before the workers start: they inherit the same memory
        self.level = multiprocessing.Value("d", 0.0)

    def set_level(self, level):
        self.level.value = level

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i, self.level.value


def worker_seeds_by_epoch(generator_seed, num_workers, epochs,
                          persistent):
    if persistent and num_workers == 0:
        raise ValueError("persistent workers need num_workers > 0")
    generator = torch.Generator().manual_seed(generator_seed)
    seeds = []
    base_seed = None
    for _ in range(epochs):
        if base_seed is None or not persistent:  # a new iterator
            base_seed = torch.empty((), dtype=torch.int64).random_(
                generator=generator).item()
        seeds.append([base_seed + w for w in range(num_workers)])
    return seeds
