"""Chapter 8 (epochs and persistent workers): model solutions.

``resume_workers``, ``worker_loop``, ``MultiProcessIterator`` and ``DataLoader`` are pieces of
the learner's loader: the handshake, the worker's answer to it (in ``worker_resumed``), the
iterator, grown in two steps (NOTE [ A piece grown in steps ]: an iterator for every epoch
in ``persistent_iterator``, then the handshake here), and the loader that keeps one iterator
when its workers persist.
"""

import itertools
import multiprocessing
import queue

import torch
from torch.utils.data import Dataset

from minidataloader_course.chapters.ch05 import solution as ch05
from minidataloader_course.chapters.ch05.solution import SingleProcessIterator
from minidataloader_course.chapters.ch08 import persistent_iterator
from minidataloader_course.chapters.ch08.worker_resumed import worker_loop
from minidataloader_course.learner.stubs.worker import Resume

__all__ = ["CurriculumDataset", "DataLoader", "MultiProcessIterator", "resume_workers",
           "startup_seconds", "worker_loop", "worker_seeds_by_epoch"]


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


class MultiProcessIterator(persistent_iterator.MultiProcessIterator):
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
