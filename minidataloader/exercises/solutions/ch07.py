"""Chapter 7 (randomness and identity in workers): model solutions."""

import numpy as np
from torch.utils.data import IterableDataset, get_worker_info


def worker_seeds(base_seed, num_workers):
    seeds = []
    for worker_id in range(num_workers):
        low, high = base_seed & 0xFFFFFFFF, base_seed >> 32
        words = [worker_id, low, high, 0]
        state = np.random.SeedSequence(words).generate_state(4)
        seeds.append((base_seed + worker_id, state.tolist()))
    return seeds


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
