"""Copy-on-read: the same numbers held as Python objects or as one numpy
array, and what reading them costs each worker process in memory (chapter 2).

A forked worker shares its parent's memory pages until it writes to one; then
the kernel copies that page for the worker alone. Reading a Python object
writes to it: CPython updates the object's reference count. So a worker that
merely reads every sample of a list of Python objects ends up with a private
copy of every page those objects live on. A numpy array keeps its numbers in
one buffer with no per-number reference counts: reading them writes nothing
there, and the pages stay shared.
"""

from __future__ import annotations

import functools
import multiprocessing
import time

import numpy as np

from minidataloader.dataset import Dataset


class PythonFloats(Dataset):
    """Sample ``i`` is the float ``i``, from a list of Python floats."""

    def __init__(self, size: int):
        self.values = [float(i) for i in range(size)]

    def __getitem__(self, index):
        return self.values[index]

    def __len__(self):
        return len(self.values)


class NumpyFloats(Dataset):
    """Sample ``i`` is the float ``i``, from one float64 numpy array."""

    def __init__(self, size: int):
        self.values = np.arange(size, dtype=np.float64)

    def __getitem__(self, index):
        return self.values[index]

    def __len__(self):
        return len(self.values)


def _wait_for(start, worker_id):
    """A worker_init_fn: read nothing until the parent has measured."""
    start.wait(timeout=60)


def worker_memory_growth(loader_class, dataset, num_workers=2, **settings):
    """Private memory (USS: the bytes only that process holds) of each forked
    worker of ``loader_class(dataset, num_workers=..., **settings)``, before
    it reads any sample and after one epoch: a ``(before, after)`` pair of
    byte counts per worker.
    """
    import psutil  # only here: measuring is the book's business

    context = multiprocessing.get_context("fork")
    start = context.Event()
    loader = loader_class(
        dataset, num_workers=num_workers, multiprocessing_context=context,
        persistent_workers=True,  # alive after the epoch, to be measured
        worker_init_fn=functools.partial(_wait_for, start), **settings)
    me = psutil.Process()
    already = {child.pid for child in me.children()}
    iterator = iter(loader)  # forks the workers
    deadline = time.monotonic() + 30
    while True:  # forked workers run our command line (helpers would not)
        workers = [child for child in me.children() if child.pid not in
                   already and child.cmdline() == me.cmdline()]
        if len(workers) == num_workers or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    before = [worker.memory_full_info().uss for worker in workers]
    start.set()  # now the workers may read
    for _ in iterator:
        pass
    after = [worker.memory_full_info().uss for worker in workers]
    del iterator, loader  # ends the workers
    return list(zip(before, after))
