"""The benchmark's workloads: each one a function of the library under test
(``torch.utils.data`` or ``minidataloader``, both have the same names) and of ``quick``,
that runs one measurement and returns ``{"s": seconds, ...}`` (``s`` is what is compared;
other keys are extra facts of that run).

Datasets are defined here, at the top level of an importable module, so that workers
started with spawn find them.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from minidataloader.dataset import Dataset

LARGE_SHAPE = (3, 224, 224)  # an ImageNet-sized float32 image: 588 KiB
IO_SECONDS = 0.005  # the latency of one I/O-bound sample
IO_WORKERS = 4


class SlowDataset(Dataset):
    """``n`` samples; sample ``i`` is ``torch.full(shape, i)`` and takes ``seconds`` to
    make: asleep (``busy=False``, the CPU is free, as while waiting for a disk) or
    computing (``busy=True``, one core busy, as while decoding)."""

    def __init__(self, n: int = 64, seconds: float = 0.01, busy: bool = False,
                 shape: tuple = (16,)):
        self.n, self.seconds, self.busy, self.shape = n, seconds, busy, tuple(shape)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(f"index {i} out of range for {self.n} samples")
        if self.busy:
            end = time.perf_counter() + self.seconds
            while time.perf_counter() < end:
                pass
        elif self.seconds > 0:
            time.sleep(self.seconds)
        return torch.full(self.shape, float(i))


class OneSlowInTen:
    """``n`` samples; sample ``i`` sleeps ``slow`` seconds when ``i % 10 == 0`` and ``fast``
    seconds otherwise (a file on a slow disk among cached ones)."""

    def __init__(self, n: int, slow: float = 0.05, fast: float = 0.002):
        self.n, self.slow, self.fast = n, slow, fast

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.slow if i % 10 == 0 else self.fast)
        return torch.tensor([i])


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _epoch(loader) -> dict:
    """Time one whole epoch, and when its first batch came.

    Also CPU times, which other processes on the machine hardly change: ``main_cpu_s``,
    the main process (all its threads), and ``workers_cpu_s``, the worker processes ended
    (and waited for) during the epoch -- all of them, unless workers persist."""
    cpu, workers_cpu, start = time.process_time(), _children_cpu(), time.perf_counter()
    first = None
    for _ in loader:
        if first is None:
            first = time.perf_counter()
    end = time.perf_counter()
    return {"s": end - start, "first_batch_s": first - start, "after_first_s": end - first,
            "main_cpu_s": time.process_time() - cpu,
            "workers_cpu_s": _children_cpu() - workers_cpu}


def tiny(data, quick: bool, num_workers: int) -> dict:
    """Per-batch overhead: 8 floats per sample, 64 samples per batch."""
    dataset = SlowDataset(2_000 if quick else 12_800, seconds=0, shape=(8,))
    return _epoch(data.DataLoader(dataset, batch_size=64, num_workers=num_workers))


def large(data, quick: bool) -> dict:
    """Shared memory: 3x224x224 float32 samples, 16 per batch (9.6 MB batches)."""
    dataset = SlowDataset(96 if quick else 384, seconds=0, shape=LARGE_SHAPE)
    return _epoch(data.DataLoader(dataset, batch_size=16, num_workers=2))


def io_bound(data, quick: bool, multiprocessing_context=None) -> dict:
    """Waiting, not computing: every sample sleeps IO_SECONDS; 4 workers, 8 per batch."""
    dataset = SlowDataset(160 if quick else 640, seconds=IO_SECONDS)
    result = _epoch(data.DataLoader(dataset, batch_size=8, num_workers=IO_WORKERS,
                                    multiprocessing_context=multiprocessing_context))
    # Throughput once the pipeline runs (worker start-up excluded), against the ideal:
    # num_workers samples in flight at all times, each taking IO_SECONDS.
    samples_after_first = len(dataset) - 8
    result["fraction_of_ideal"] = (samples_after_first / result["after_first_s"]) / (
        IO_WORKERS / IO_SECONDS)
    return result


def first_batch(data, quick: bool, method: str) -> dict:
    """From iter(loader) to the first batch, 2 workers started with ``method``.

    Also ``workers_cpu_s``: the CPU time of both workers over their whole lives (with spawn,
    mostly importing torch), which a busy machine stretches in wall-clock time but hardly
    changes."""
    loader = data.DataLoader(SlowDataset(64, seconds=0), batch_size=8, num_workers=2,
                             multiprocessing_context=method)
    workers_cpu, start = _children_cpu(), time.perf_counter()
    iterator = iter(loader)
    next(iterator)
    elapsed = time.perf_counter() - start
    del iterator  # the shutdown, not timed, joins the workers: their CPU time is counted
    return {"s": elapsed, "workers_cpu_s": _children_cpu() - workers_cpu}


def epoch_startup(data, quick: bool, persistent: bool) -> dict:
    """Time to the first batch of an epoch, mean of epochs 2..10 (the first one starts the
    workers either way): without persistent workers each epoch starts and stops its own."""
    loader = data.DataLoader(SlowDataset(32, seconds=0), batch_size=8, num_workers=2,
                             persistent_workers=persistent)
    starts, epochs = [], []
    for epoch in range(3 if quick else 10):
        result = _epoch(loader)
        if epoch > 0:
            starts.append(result["first_batch_s"])
            epochs.append(result["s"])
    del loader
    return {"s": sum(starts) / len(starts), "epoch_s": sum(epochs) / len(epochs)}


def unordered(data, quick: bool) -> dict:
    """in_order=False, 2 workers, one sample in ten slow (50 ms, the rest 2 ms)."""
    dataset = OneSlowInTen(40 if quick else 100)
    return _epoch(data.DataLoader(dataset, batch_size=1, num_workers=2, in_order=False))


@dataclass(frozen=True)
class Workload:
    name: str
    what: str  # what the compared seconds are
    run: Callable[..., dict]
    kwargs: dict
    quick_pairs: int = 2
    warm_up: bool = True  # in quick mode; the full run always warms up


WORKLOADS = [
    Workload("tiny-w0", "epoch", tiny, {"num_workers": 0}),
    Workload("tiny-w2", "epoch", tiny, {"num_workers": 2}),
    Workload("large-w2", "epoch", large, {}),
    Workload("io-w4", "epoch", io_bound, {}),
    Workload("first-batch-fork", "first batch", first_batch, {"method": "fork"}),
    # each spawned worker imports torch: seconds per run
    Workload("first-batch-spawn", "first batch", first_batch, {"method": "spawn"},
             quick_pairs=1, warm_up=False),
    Workload("epoch-start-persistent", "first batch/epoch", epoch_startup,
             {"persistent": True}),
    Workload("epoch-start-fresh", "first batch/epoch", epoch_startup, {"persistent": False}),
    Workload("unordered-w2", "epoch", unordered, {}),
]
