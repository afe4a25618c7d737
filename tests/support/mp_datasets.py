"""Datasets and functions that run inside worker processes during the tests. They live at
the top level of a module so that workers started with spawn can import them.

Map-style datasets need no base class in either library. An IterableDataset must be built
on the library's own class for torch's loader to recognise it, so streams come in pairs."""

from __future__ import annotations

import enum
import os
import random
import time

import numpy as np
import torch
import torch.utils.data as tud

import minidataloader as mdl


def info(lib=None):
    """The worker info of whichever library runs us."""
    return mdl.get_worker_info() or tud.get_worker_info()


def observe(i):
    """What code in a worker sees, minus the pid (which differs from run to run)."""
    worker = info()
    seen = {
        "index": i, "worker": None, "torch_seed": torch.initial_seed(),
        "torch_rand": torch.rand(2), "numpy_rand": np.random.rand(2),
        "random_random": random.random(), "threads": torch.get_num_threads(),
    }
    if worker is not None:
        seen.update(worker=worker.id, num_workers=worker.num_workers, seed=worker.seed,
                    dataset=type(worker.dataset).__name__, rng=repr(worker.rng),
                    worker_method=worker.worker_method)
    return seen


class Observer:
    """Map-style: sample i is what the worker fetching it observes."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return observe(i)


class Squares:
    """Sample i is {"x": [i, i*i], "i": i}; sample ``slow`` takes ``delay`` seconds."""

    def __init__(self, n, delay=0.0, slow=None):
        self.n, self.delay, self.slow = n, delay, slow

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay and self.slow in (None, i):
            time.sleep(self.delay)
        return {"x": torch.tensor([i, i * i]), "i": i}


class Pids:
    """Sample i is the pid of the process that fetched it."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return os.getpid()


class Counting:
    """Keeps state in the worker's copy: how many samples this copy has fetched."""

    def __init__(self, n):
        self.n, self.calls = n, 0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.calls += 1
        return (i, self.calls, torch.rand(1))


class _Stream:
    """0..n-1, split among workers (shard=True) or repeated by each; each item carries a
    draw of the worker's RNGs and the count of items this copy has made so far."""

    def __init__(self, n, shard):
        self.n, self.shard, self.made = n, shard, 0

    def __iter__(self):
        worker = info()
        start, step = (worker.id, worker.num_workers) if worker and self.shard else (0, 1)
        for i in range(start, self.n, step):
            self.made += 1
            yield {"i": i, "made": self.made, "worker": worker.id if worker else None,
                   "r": torch.rand(1), "np": np.random.rand()}


class TorchStream(_Stream, tud.IterableDataset):
    pass


class MdlStream(_Stream, mdl.IterableDataset):
    pass


def stream(lib, n, shard=True):
    return (TorchStream if lib is tud else MdlStream)(n, shard)


def record_init(worker_id):
    """A worker_init_fn whose effect shows in the samples: it draws from every RNG."""
    torch.rand(3)
    np.random.rand()
    random.random()


def failing_init(worker_id):
    if worker_id == 1:
        raise ZeroDivisionError("worker_init_fn failed in worker 1")


def failing_collate(batch):
    if any(sample == 5 for sample in batch):
        raise TypeError("cannot collate a batch holding 5")
    return batch


class Fd:
    """Each sample holds many small tensors: each one held in the main process costs an
    open file descriptor under the file_descriptor sharing strategy."""

    def __len__(self):
        return 400

    def __getitem__(self, i):
        return [torch.full((3,), i) for _ in range(8)]


class TorchOnlyStream(tud.IterableDataset):
    """A stream written for torch alone: torch's base class, torch's get_worker_info."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        worker = tud.get_worker_info()
        if worker is None:
            return iter(range(self.n))
        return iter(range(worker.id, self.n, worker.num_workers))


class Color(enum.IntEnum):
    """An index that is an int subclass: it must reach a dataset as itself, not as an int."""

    RED = 0
    GREEN = 1
    BLUE = 2


# Keys of every kind a sampler may yield: each must reach the dataset as it was yielded.
KEYS = [True, Color.BLUE, np.int64(1), np.bool_(False), torch.tensor(2), torch.tensor(True),
        -1, np.int64(-2)]


class KeyEcho:
    """Map-style: the sample for a key is the key as received, with its exact type."""

    def __len__(self):
        return 4

    def __getitem__(self, key):
        return type(key), key

    def __getitems__(self, keys):
        return [("batch", type(keys), len(keys))] + [self[key] for key in keys]


def as_received(samples):
    """A collate_fn that changes nothing."""
    return samples
