"""Synthetic datasets for the chapters on workers: importable, so that workers started with
spawn or forkserver find them, and small, so that what they show is the loader.

- :class:`SlowDataset`: each sample takes a set time, sleeping (like reading a file) or
  computing (like decoding an image). The benchmark's (``minidataloader.bench``), used by
  the prefetching chapter too.
- :class:`FlowDataset`: a :class:`SlowDataset` with a few slower samples, the one the
  queue-flow view (:mod:`minidataloader_course.viz.queueflow`) loads.
- :class:`SeedsObserver`: each sample reports what code inside a worker sees: which
  worker it is, its seeds, and one draw from each random number generator.
- :class:`CountingStream`: an IterableDataset of ``0 .. n-1``, split among the workers or
  (``shard=False``) repeated by each of them.
- :class:`FaultyDataset`: fails at one index, in a chosen way (an exception, a crash, a
  hang), for the chapter on failures.
"""

from __future__ import annotations

import ctypes
import os
import random
import signal
import sys
import time

import numpy as np
import torch

from minidataloader.bench.workloads import SlowDataset
from minidataloader.dataset import Dataset, IterableDataset
from minidataloader.worker import get_worker_info


class FlowDataset(SlowDataset):
    """``n`` samples of ``sample_kb`` KiB each (float32); each takes ``seconds`` to load,
    asleep as while reading a file, and sample ``i`` in ``slow`` takes ``slow[i]`` seconds
    more: the one slow sample that holds up every batch behind it when the loader keeps
    sampler order (``in_order=True``)."""

    def __init__(self, n: int = 64, seconds: float = 0.005, sample_kb: int = 16,
                 slow: dict[int, float] | None = None):
        if sample_kb < 1:
            raise ValueError(f"sample_kb should be at least 1 (KiB per sample), got {sample_kb}")
        super().__init__(n, seconds, busy=False, shape=(sample_kb * 256,))
        self.slow = dict(slow or {})

    def __getitem__(self, i):
        extra = self.slow.get(i, 0.0)
        if extra > 0 and 0 <= i < self.n:
            time.sleep(extra)
        return super().__getitem__(i)


class SeedsObserver(Dataset):
    """Sample ``i`` is a dict of what the code fetching it observes: ``worker`` (its id, or
    None in the main process), ``num_workers``, ``seed`` (``get_worker_info().seed``),
    ``torch_seed`` (``torch.initial_seed()``), one draw each from ``torch.rand``,
    ``np.random.rand`` and ``random.random``, and the ``pid`` of the process."""

    def __init__(self, n: int = 8):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = any_worker_info()
        return {
            "index": i,
            "worker": None if info is None else info.id,
            "num_workers": None if info is None else info.num_workers,
            "seed": None if info is None else info.seed,
            "torch_seed": torch.initial_seed(),
            "torch_rand": torch.rand(()).item(),
            "numpy_rand": float(np.random.rand()),
            "random_random": random.random(),
            "pid": os.getpid(),
        }


def any_worker_info():
    """This worker's info under either loader: minidataloader's workers answer its
    ``get_worker_info``, torch's own DataLoader (the book runs both) answers torch's, which
    is asked only if torch.utils.data is already loaded, never importing it."""
    info = get_worker_info()
    if info is None and (module := sys.modules.get("torch.utils.data")) is not None:
        info = module.get_worker_info()
    return info


class CountingStream(IterableDataset):
    """The numbers ``0 .. n-1`` as a stream. With ``shard=True`` worker ``w`` of ``W``
    yields ``w, w + W, w + 2W, ...``, so the workers together yield each number once; with
    ``shard=False`` every worker yields all of them (the classic mistake)."""

    def __init__(self, n: int = 10, shard: bool = True):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = any_worker_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


class TwoArgumentError(Exception):
    """An exception whose constructor takes two arguments, as some libraries' do: the
    loader cannot rebuild it from a message, so it arrives as RuntimeError."""

    def __init__(self, path, reason):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


FAULTS = ("ValueError", "KeyError", "TwoArgumentError", "exit", "kill", "segfault", "hang")


class FaultyDataset(Dataset):
    """``n`` samples (sample ``i`` is ``i``); fetching index ``at`` fails with ``fault``:

    - ``"ValueError"``, ``"KeyError"``, ``"TwoArgumentError"``: raises that exception;
    - ``"exit"``: the process ends at once (``os._exit(3)``), as a C library calling exit();
    - ``"kill"``: the process is killed (SIGKILL), as by the out-of-memory killer;
    - ``"segfault"``: the process reads address 0, as a crash in native code does;
    - ``"hang"``: the sample never comes (sleeps an hour).

    Only inside a worker process, unless ``in_main=True``: a crash in the main process
    would take the notebook with it."""

    def __init__(self, n: int = 8, at: int = 3, fault: str = "ValueError",
                 in_main: bool = False):
        if fault not in FAULTS:
            raise ValueError(f"fault should be one of {FAULTS}, got {fault!r}")
        self.n, self.at, self.fault, self.in_main = n, at, fault, in_main

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        in_worker = (any_worker_info()) is not None
        if i != self.at or not (in_worker or self.in_main):
            return i
        if self.fault == "ValueError":
            raise ValueError(f"sample {i} is corrupt")
        if self.fault == "KeyError":
            raise KeyError(f"sample {i}")
        if self.fault == "TwoArgumentError":
            raise TwoArgumentError(f"/data/{i}.png", "truncated file")
        if self.fault == "exit":
            os._exit(3)
        if self.fault == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if self.fault == "segfault":
            ctypes.string_at(0)
        time.sleep(3600)  # "hang"
        return i
