"""Datasets and measuring tools for chapter 11 (performance): importable, so that workers
started with any start method find them. (The benchmark's report: :mod:`minidataloader.bench`.)

- :class:`DigitsForTraining`: the digits image folder with a transform that costs CPU time,
  for a sweep over ``num_workers`` and ``batch_size``.
- :class:`InMemoryRows` and :class:`SlicedRows`: a table already in memory, fetched one
  row at a time, or a whole batch by one slice (``__getitems__``).
- :class:`SharedArray`: a large numpy array that every worker reads, and that reports the
  process that fetched each sample, for measuring memory per worker.
- :class:`TokenSamples`, :func:`text_lengths` and :func:`epoch_vs_ideal`: samples of
  different lengths whose loading takes time in proportion to their length, for measuring
  how evenly a batch sampler shares the work among the workers.
- :func:`memory_kib`: a process's memory from ``/proc/<pid>/smaps_rollup`` (Linux).
- :data:`IO_BOUND` and :data:`CPU_BOUND`: two workloads of the benchmark's harness
  (``minidataloader.bench``) for any library with torch's names, such as the learner's own
  ``myloader``: an epoch once the workers run, waiting or computing.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import statistics
import time

import numpy as np
import torch

from minidataloader.bench.workloads import IO_SECONDS, IO_WORKERS, SlowDataset, Workload
from minidataloader.dataset import Dataset
from minidataloader_course.shared.digits import DigitsDataset


def enlarge(image: torch.Tensor) -> torch.Tensor:
    """A transform with a realistic cost: the 8x8 digit as floats in [0, 1], enlarged to
    64x64 (bilinear), as a pipeline resizes small images for a network."""
    pixels = image.float().div_(255).unsqueeze(0)
    return torch.nn.functional.interpolate(pixels, size=(64, 64), mode="bilinear",
                                           align_corners=False).squeeze(0)


class DigitsForTraining(DigitsDataset):
    """The digits images from ``data/digits/``, each read from its PNG file and enlarged,
    after waiting ``latency`` seconds (asleep), as for a file on a network disk."""

    def __init__(self, root=None, latency: float = 0.0):
        super().__init__(root, transform=enlarge)
        self.latency = latency

    def __getitem__(self, index):
        if self.latency:
            time.sleep(self.latency)
        return super().__getitem__(index)


class InMemoryRows(Dataset):
    """A table in memory: sample ``i`` is ``(features[i], labels[i])``."""

    def __init__(self, features: torch.Tensor, labels: torch.Tensor):
        self.features, self.labels = features, labels

    def __getitem__(self, index):
        return self.features[index], self.labels[index]

    def __len__(self):
        return len(self.labels)


class SlicedRows(InMemoryRows):
    """The same table, a whole batch at a time: ``__getitems__`` returns the finished batch
    ``(features[indices], labels[indices])`` -- one gather per tensor -- so the loader
    needs ``collate_fn=keep_batch``, which hands it on as it is."""

    def __getitems__(self, indices):
        indices = torch.as_tensor(indices)
        return self.features[indices], self.labels[indices]


def keep_batch(batch):
    """The collate function for a dataset whose ``__getitems__`` already made the batch."""
    return batch


class SharedArray(Dataset):
    """``rows`` rows of a float32 array of ``megabytes`` MB, made in the main process.

    The first sample a process fetches reads the whole array (as a worker that computes
    statistics, or visits every row, would); each sample is ``(row sum, pid)``, so the
    batches say which processes did the work."""

    def __init__(self, megabytes: int = 64, rows: int = 64):
        values = megabytes * 2**20 // 4
        self.array = np.arange(values, dtype=np.float32).reshape(rows, -1)
        self._read_by: set[int] = set()

    def __getitem__(self, index):
        if os.getpid() not in self._read_by:
            self._read_by.add(os.getpid())
            float(self.array.sum())  # every page of the array read once in this process
        return float(self.array[index].sum()), os.getpid()

    def __len__(self):
        return len(self.array)


def memory_kib(pid: int | str = "self") -> dict[str, int]:
    """``rss`` (resident pages, shared ones included), ``pss`` (each shared page divided
    among the processes that share it) and ``uss`` (pages of this process only) of a
    process, in KiB, from ``/proc/<pid>/smaps_rollup`` (Linux 4.14 or later)."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as file:
        for line in file:
            name, _, rest = line.partition(":")
            if rest.strip().endswith("kB"):
                fields[name] = int(rest.split()[0])
    return {"rss": fields["Rss"], "pss": fields["Pss"],
            "uss": fields["Private_Clean"] + fields["Private_Dirty"]}


class TouchedArray(Dataset):
    """One sample: how many MB of the reading process's memory became its own (its USS grew
    by) while it read every page of a ``megabytes`` MB tensor made in the main process, or
    wrote to every page (``write``). The tensor is filled here, so that its pages exist
    before a worker is forked."""

    def __init__(self, megabytes: int, write: bool):
        self.tensor = torch.ones(megabytes * 2**18)  # float32: every page written here
        self.write = write

    def __len__(self):
        return 1

    def __getitem__(self, index):
        before = memory_kib()["uss"]
        if self.write:
            self.tensor.mul_(1.0)  # every element written: every page
        else:
            float(self.tensor.sum())  # every element read
        return (memory_kib()["uss"] - before) / 1024


def private_megabytes(megabytes: int = 64, repeats: int = 3) -> dict[str, list[float]]:
    """In a worker of torch's loader (forked), how many MB of a ``megabytes`` MB tensor made
    in the main process became the worker's own when it read the tensor, and when it wrote
    to it: ``repeats`` measurements each, a fresh worker every time."""
    import torch.utils.data

    found = {"reading": [], "writing": []}
    for _ in range(repeats):
        for how in found:
            loader = torch.utils.data.DataLoader(
                TouchedArray(megabytes, write=how == "writing"), batch_size=None,
                num_workers=1, multiprocessing_context="fork")
            found[how] += [float(grown) for grown in loader]
    return found


# ---------------------------------------------------------------------------------------
# Shared memory vs plain pickling: one tensor from a child process to its parent

HOW = ("pickled bytes", "into shared memory at put", "already in shared memory")


def _send(requests, results, megabytes: int, how: str) -> None:
    import pickle
    import time

    # A forked child must not use the parent's OpenMP threads (they were not copied, and
    # torch.ones would wait for them forever): one thread, as every DataLoader worker does.
    torch.set_num_threads(1)
    while requests.get(timeout=60) is not None:  # one tensor per request; None: stop
        tensor = torch.ones(megabytes * 2**18)  # a new batch: float32, 4 bytes each
        if how == "already in shared memory":
            tensor.share_memory_()  # as a worker's collate does: the batch is made there
        sent = time.perf_counter()  # one clock for all processes (CLOCK_MONOTONIC)
        results.put((sent, pickle.dumps(tensor) if how == "pickled bytes" else tensor))
    # Returning only now keeps the sender alive until the last tensor has been received:
    # shared memory handed over as a file descriptor needs its sender to pass it on.


def _receive(results, child, how: str):
    """The next result, or a clear error when the sender died or went silent."""
    for _ in range(60):
        try:
            return results.get(timeout=1)
        except queue.Empty:
            if not child.is_alive():
                raise RuntimeError(f"the sender ({how}) exited with code {child.exitcode} "
                                   "before sending its tensor") from None
    raise TimeoutError(f"the sender ({how}) sent nothing for 60 s")


def transfer_seconds(megabytes: int, how: str, count: int = 5) -> list[float]:
    """Ask a forked child ``count`` times for a float32 tensor of ``megabytes`` MB, sent
    through a torch.multiprocessing queue; returns the seconds from just before each
    ``put`` to a usable tensor here. ``how``: one of ``HOW``."""
    import pickle
    import time

    import torch.multiprocessing as multiprocessing

    if how not in HOW:
        raise ValueError(f"how should be one of {HOW}, not {how!r}")
    context = multiprocessing.get_context("fork")
    requests, results = context.Queue(), context.Queue()
    child = context.Process(target=_send, args=(requests, results, megabytes, how),
                            daemon=True)
    child.start()
    seconds = []
    try:
        for _ in range(count):  # one at a time: no tensor waits behind another
            requests.put(True)
            sent, payload = _receive(results, child, how)
            tensor = pickle.loads(payload) if how == "pickled bytes" else payload
            seconds.append(time.perf_counter() - sent)
            assert tensor.numel() == megabytes * 2**18
            del tensor, payload
    finally:
        requests.put(None)
        child.join(10)
        if child.is_alive():
            child.kill()
    return seconds


# ---------------------------------------------------------------------------------------
# Threads inside workers: torch's pool is set to one thread in every worker; numpy's BLAS
# pool is not


def thread_pools() -> dict[str, int]:
    """The size of this process's two thread pools: torch's own (``torch.get_num_threads()``)
    and numpy's BLAS library's (OpenBLAS in numpy's wheels), as threadpoolctl reads it."""
    from threadpoolctl import threadpool_info

    blas = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    return {"torch threads": torch.get_num_threads(), "numpy BLAS threads": max(blas, default=0)}


class ThreadPools(Dataset):
    """Four samples, each the thread pools of the process that loads it (and its pid)."""

    def __len__(self):
        return 4

    def __getitem__(self, index):
        return {"pid": os.getpid(), **thread_pools()}


def blas_threads_by_environment(worker_id: int) -> None:
    """A ``worker_init_fn`` that asks for one BLAS thread through the environment: too late
    in a forked worker, whose numpy read these variables when the parent imported it."""
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "1"


def one_blas_thread(worker_id: int) -> None:
    """A ``worker_init_fn`` that sets numpy's BLAS pool to one thread in this worker."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


# ---------------------------------------------------------------------------------------
# Samples of different lengths: what a batch costs to load


def text_lengths(n: int, seed: int = 0) -> list[int]:
    """``n`` sample lengths in tokens with a long tail, as texts and audio clips have: most a
    few dozen, a few several hundred (log-normal, from a generator of its own)."""
    rng = np.random.default_rng(seed)
    return [int(x) for x in np.clip(rng.lognormal(3.5, 1.0, n), 2, 1000).round()]


class TokenSamples(Dataset):
    """Sample ``i`` has ``lengths[i]`` tokens, and loading it takes ``seconds_per_token`` per
    token, asleep (a longer text or clip takes longer to read and decode; asleep, so that
    the workers overlap even on a busy machine). A batch is read by one ``__getitems__``
    call and is the list of its indices: use ``collate_fn=keep_batch``."""

    def __init__(self, lengths, seconds_per_token: float):
        self.lengths, self.seconds_per_token = lengths, seconds_per_token

    def __len__(self):
        return len(self.lengths)

    def __getitems__(self, indices):
        time.sleep(self.seconds_per_token * sum(self.lengths[i] for i in indices))
        return list(indices)


def epoch_vs_ideal(batch_samplers: dict, lengths, seconds_per_token: float,
                   num_workers: int = 2, rounds: int = 3, **loader_options) -> dict[str, float]:
    """For each batch sampler (by name), the median time of an epoch of
    :class:`TokenSamples` read by ``num_workers`` workers, as a multiple of the ideal: the
    total loading time shared out perfectly among the workers. The workers are persistent
    and started by a first epoch that is not measured; the samplers take turns, round after
    round. ``loader_options`` go to the DataLoader (``prefetch_factor``, ``in_order``)."""
    import minidataloader

    dataset = TokenSamples(lengths, seconds_per_token)
    fork = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    loaders = {name: minidataloader.DataLoader(
                   dataset, batch_sampler=sampler, collate_fn=keep_batch,
                   num_workers=num_workers, persistent_workers=True,
                   multiprocessing_context=fork, **loader_options)
               for name, sampler in batch_samplers.items()}
    for loader in loaders.values():  # starts the workers
        for _ in loader:
            pass
    seconds = {name: [] for name in loaders}
    for _ in range(rounds):
        for name, loader in loaders.items():
            start = time.perf_counter()
            for _ in loader:
                pass
            seconds[name].append(time.perf_counter() - start)
    ideal = seconds_per_token * sum(lengths) / num_workers
    return {name: statistics.median(times) / ideal for name, times in seconds.items()}


# ---------------------------------------------------------------------------------------
# Your loader against torch's: two workloads for the benchmark's harness


def steady_epoch(data, quick: bool, busy: bool, num_workers: int, seconds: float = IO_SECONDS,
                 multiprocessing_context=None) -> dict:
    """An epoch once the workers run: 8 samples per batch, each taking ``seconds``, asleep
    (waiting, as for a disk) or computing (``busy``); persistent workers, started by a first
    epoch that is not timed; the second epoch is."""
    dataset = SlowDataset(160 if quick else 320, seconds=seconds, busy=busy)
    loader = data.DataLoader(dataset, batch_size=8, num_workers=num_workers,
                             persistent_workers=True,
                             multiprocessing_context=multiprocessing_context)
    for _ in loader:  # starts the workers
        pass
    start = time.perf_counter()
    for _ in loader:
        pass
    elapsed = time.perf_counter() - start
    del loader  # its workers stop with it
    # against the ideal: num_workers samples in flight at every moment
    return {"s": elapsed, "fraction_of_ideal": len(dataset) * seconds / num_workers / elapsed}


FORK = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
# no warm-up run: each run starts its workers with an epoch that is not timed
IO_BOUND = Workload("io-steady-w4", "epoch", steady_epoch,
                    {"busy": False, "num_workers": IO_WORKERS, "multiprocessing_context": FORK},
                    warm_up=False)
CPU_BOUND = Workload("cpu-steady-w2", "epoch", steady_epoch,
                     {"busy": True, "num_workers": 2, "seconds": 0.002,
                      "multiprocessing_context": FORK},
                     warm_up=False)
