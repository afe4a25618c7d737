"""Chapter 8 (epochs and persistent workers): model solutions."""

import multiprocessing

import torch
from torch.utils.data import Dataset

from minidataloader.demo.ch08_pool import Resume


def startup_seconds(epochs, start_s, persistent, resume_s=0.0):
    if epochs == 0:
        return 0.0
    if persistent:  # one start, then a handshake at each later epoch
        return start_s + (epochs - 1) * resume_s
    return epochs * start_s  # new workers every epoch


def resume_workers(index_queues, result_queue):
    for index_queue in index_queues:
        index_queue.put(Resume())  # behind all the worker has to do
    stale = []
    acknowledged = 0
    while acknowledged < len(index_queues):
        message = result_queue.get()
        if isinstance(message[0], Resume):
            acknowledged += 1  # nothing old can follow it
        else:
            stale.append(message)  # left from the last epoch
    return stale


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
