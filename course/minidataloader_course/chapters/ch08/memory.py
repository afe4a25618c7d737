"""Copy-on-read: the same numbers held as Python objects, as one numpy array or as one
tensor, and what reading them costs each worker process in memory (chapter 8).

A forked worker shares its parent's memory pages until it writes to one; then the kernel
copies that page for the worker alone. Reading a Python object writes to it: CPython
updates the object's reference count. So a worker that merely reads every sample of a list
of Python objects ends up with a private copy of every page those objects live on. A numpy
array keeps its numbers in one buffer with no per-number reference counts: reading them
writes nothing there, and the pages stay shared.

A worker started with spawn or forkserver shares nothing with its parent: it receives the
dataset pickled and rebuilds it, so every worker holds a copy of its own, numpy array
included. Only a tensor escapes that: pickling it for another process moves its storage
into shared memory, and the worker maps the same pages.

Each dataset fetches a whole batch with ``__getitems__`` (chapter 4), which still touches
every sample: the memory measured is the data's, not that of a million indexing calls.
"""

from __future__ import annotations

import functools
import gc
import multiprocessing
import os

import numpy as np
import torch

from minidataloader.dataset import Dataset


class PythonFloats(Dataset):
    """Sample ``i`` is the float ``i``, from a list of Python floats."""

    def __init__(self, size: int):
        self.values = [float(i) for i in range(size)]

    def __getitem__(self, index):
        return self.values[index]

    def __getitems__(self, indices):
        return [self.values[i] for i in indices]  # every float read: its count written

    def __len__(self):
        return len(self.values)


class NumpyFloats(PythonFloats):
    """Sample ``i`` is the float ``i``, from one float64 numpy array."""

    def __init__(self, size: int):
        self.values = np.arange(size, dtype=np.float64)

    def __getitems__(self, indices):
        return self.values[indices]  # one read of the buffer, no per-number object


class TensorFloats(NumpyFloats):
    """Sample ``i`` is the float ``i``, from one float64 tensor."""

    def __init__(self, size: int):
        self.values = torch.arange(size, dtype=torch.float64)


def memory_of(pid: int) -> dict[str, int]:
    """Bytes of memory of process ``pid``, from ``/proc/<pid>/smaps_rollup`` (Linux):

    - ``uss``: private (unique set size): pages no other process maps;
    - ``pss``: proportional set size: private pages, plus each shared page divided by
      the number of processes that map it;
    - ``shared_memory``: the part of ``pss`` in shared memory (``/dev/shm``, memfd).
    """
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as file:
        for line in file:
            name, _, rest = line.partition(":")
            if rest.strip().endswith("kB"):
                fields[name] = int(rest.split()[0]) * 1024
    return {"uss": fields["Private_Clean"] + fields["Private_Dirty"], "pss": fields["Pss"],
            "shared_memory": fields.get("Pss_Shmem", 0)}


def _wait_for(ready, start, worker_id):
    """A worker_init_fn: say "ready", then read nothing until the parent has measured."""
    ready.release()
    start.wait(timeout=60)


def worker_memory(loader_class, dataset, start_method="fork", num_workers=2, **settings):
    """The memory (see :func:`memory_of`) of each worker of ``loader_class(dataset,
    num_workers=..., **settings)`` started with ``start_method``, once when it has its
    copy of the dataset but has read no sample yet, and once after one epoch: a
    ``(before, after)`` pair per worker.
    """
    context = multiprocessing.get_context(start_method)
    ready, start = context.Semaphore(0), context.Event()
    loader = loader_class(
        dataset, num_workers=num_workers, multiprocessing_context=context,
        persistent_workers=True,  # alive after the epoch, to be measured
        worker_init_fn=functools.partial(_wait_for, ready, start), **settings)
    iterator = iter(loader)  # starts the workers
    for _ in range(num_workers):
        if not ready.acquire(timeout=60):
            raise TimeoutError("the workers did not start within 60 s")
    workers = getattr(iterator, "_workers", None) or iterator._group.workers  # torch's, ours
    before = [memory_of(worker.pid) for worker in workers]
    start.set()  # now the workers may read
    for _ in iterator:
        pass
    after = [memory_of(worker.pid) for worker in workers]
    del iterator, loader  # ends the workers
    return list(zip(before, after))


def worker_memory_growth(loader_class, dataset, num_workers=2, **settings):
    """How much each forked worker's private memory grew during one epoch, in bytes."""
    return [after["uss"] - before["uss"] for before, after in
            worker_memory(loader_class, dataset, "fork", num_workers, **settings)]


def _collect_in_child(connection) -> None:
    """Run a full garbage collection, read nothing, report how much private memory grew."""
    before = memory_of(os.getpid())["uss"]
    gc.collect()
    connection.send(memory_of(os.getpid())["uss"] - before)
    connection.close()


def growth_of_a_collection(objects, freeze: bool) -> int:
    """Fork a child while ``objects`` are alive (after ``gc.freeze()`` if ``freeze``), let
    it run one garbage collection without reading anything, and return how many bytes its
    private memory grew by. ``gc.unfreeze()`` afterwards, in this process."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    if freeze:
        gc.freeze()
    try:
        child = context.Process(target=_collect_in_child, args=(send,))
        child.start()
    finally:
        gc.unfreeze()
    try:
        if not receive.poll(60):
            raise TimeoutError("the child did not report within 60 s")
        return receive.recv()
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
