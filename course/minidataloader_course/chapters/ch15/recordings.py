"""Chapter 15's dataset and its trace: recordings of varying length on a slow disk, and a
trace of an epoch of *any* loader over them, for the queue-flow view.

- :func:`make_recordings` writes the recordings into a folder: ``n`` files of float32
  samples, 16 to 128 values each, with a label; the same files for the same seed, on any
  machine (nothing is downloaded).
- :class:`Recordings` reads them back. Every read waits ``read_ms`` first, as a slow or
  remote disk does: the epoch is I/O-bound, its cost is sleeps, so that more workers help
  on any machine, however few CPUs it has.
- :func:`trace_epoch` runs one epoch of a loader over :class:`Recordings` and returns its
  :class:`~minidataloader_course.viz.trace.Trace`. The package's loader reports its events
  through a hook (``TraceRecorder``); a loader of your own has no such hook, so here the
  dataset reports instead. NOTE [ A trace of any loader ] says how.
- :func:`samples_per_second` measures an epoch's throughput.

NOTE [ A trace of any loader ]
Two sources, one clock (``time.monotonic_ns()``, the same for every process of a machine):

    each process that reads    the dataset appends one line per sample to a file of its
    (a worker, or the main)    own in the log folder: its pid, the sample, when the read
                               started and ended
    the training loop          trace_epoch notes when the epoch starts, when each batch
                               comes out of the loader (with its samples' numbers: every
                               batch carries them, "index") and each training step

A batch's samples tell which batch a read belonged to; the process that read them, which
lane. The reads of one batch make its fetch (from the first read's start to the last
read's end); the batch then waits, collated and sent, until the loop receives it. Workers
are numbered by the first batch each read, which round robin deals to worker 0, 1, ...
in turn. What no dataset can see is left out: when a batch was dispatched, and the reorder
buffer; the view draws what is there.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import tempfile
import time

import numpy as np
import torch
from torch.utils.data import Dataset

from minidataloader_course.viz.trace import MAIN, Trace

READ_MS = 10.0  # each read waits this long, as a slow disk does
SHORTEST, LONGEST = 16, 128  # values per recording
CLASSES = 4


def make_recordings(folder, n: int = 128, seed: int = 15) -> pathlib.Path:
    """Write ``n`` recordings into ``folder/recordings`` (made if need be; rewritten only if
    what is there differs) and return that folder. Recording ``i`` is a file of float32
    values (little-endian), 16 to 128 of them; ``index.json`` holds the lengths and
    labels. The same seed gives the same files, byte for byte."""
    where = pathlib.Path(folder) / "recordings"
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(SHORTEST, LONGEST + 1, (n,), generator=generator).tolist()
    labels = torch.randint(0, CLASSES, (n,), generator=generator).tolist()
    index = {"n": n, "seed": seed, "lengths": lengths, "labels": labels}
    index_file = where / "index.json"
    if index_file.exists() and json.loads(index_file.read_text()) == index:
        return where
    where.mkdir(parents=True, exist_ok=True)
    for i, length in enumerate(lengths):
        label = labels[i]
        values = (torch.randn(length, generator=generator) * 0.5
                  + torch.linspace(0, label, length)).numpy().astype("<f4")
        values.tofile(where / f"{i:05d}.f32")
    index_file.write_text(json.dumps(index))  # last: a folder with it is complete
    return where


class Recordings(Dataset):
    """The recordings in ``folder`` (made by :func:`make_recordings`). Sample ``i`` is a
    dict: ``"signal"``, a 1-D float32 tensor of its length; ``"label"``, an int from 0 to
    3; ``"index"``, ``i``. Each read waits ``read_ms`` first (a slow disk). With ``log``, a
    folder, each process that reads appends what it read, and when, to a file of its own
    there (see NOTE [ A trace of any loader ])."""

    def __init__(self, folder, read_ms: float = READ_MS, log=None) -> None:
        self.folder = pathlib.Path(folder)
        index = json.loads((self.folder / "index.json").read_text())
        self.lengths, self.labels = index["lengths"], index["labels"]
        self.read_ms = read_ms
        self.log = None if log is None else str(log)

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, i):
        if not 0 <= i < len(self.lengths):
            raise IndexError(f"recording {i} out of range: there are {len(self.lengths)}")
        start = time.monotonic_ns()
        if self.read_ms:
            time.sleep(self.read_ms / 1e3)  # the disk
        signal = torch.from_numpy(np.fromfile(self.folder / f"{i:05d}.f32", dtype="<f4"))
        if self.log is not None:
            line = json.dumps({"pid": os.getpid(), "index": i, "start_ns": start,
                               "end_ns": time.monotonic_ns()})
            with open(os.path.join(self.log, f"reads-{os.getpid()}.jsonl"), "a") as file:
                file.write(line + "\n")
        return {"signal": signal, "label": self.labels[i], "index": i}

    def __repr__(self) -> str:
        return (f"Recordings({len(self)} recordings of {SHORTEST} to {LONGEST} values, "
                f"{self.read_ms:g} ms per read)")


def _indices(batch) -> list[int]:
    """The samples of a batch (its ``"index"``), whatever the collate function made of it."""
    found = batch["index"] if isinstance(batch, dict) else batch
    return [int(i) for i in (found.tolist() if hasattr(found, "tolist") else found)]


def trace_epoch(loader, step_ms: float = 0.0, **info) -> Trace:
    """One epoch of ``loader`` (any loader, over a :class:`Recordings`; its batches carry
    their ``"index"``), with a training step of ``step_ms``, as a Trace for the
    queue-flow view (``queue_flow_html``). See NOTE [ A trace of any loader ]."""
    dataset = loader.dataset
    if not isinstance(dataset, Recordings):
        raise TypeError(f"trace_epoch traces a loader over Recordings, not over "
                        f"{type(dataset).__name__}: the recordings report their reads")
    folder = tempfile.mkdtemp(prefix="capstone-reads-")
    dataset.log, main = folder, os.getpid()  # before iter(): the workers get it
    records = [{"t_ns": time.monotonic_ns(), "pid": main, "thread": "MainThread",
                "event": "epoch_start", "lane": MAIN, "epoch": 0}]
    batch_of = {}
    try:
        for number, batch in enumerate(loader):
            now = time.monotonic_ns()
            for index in _indices(batch):
                batch_of[index] = number
            records += [_main("received", now, number), _main("yielded", now, number),
                        _main("step_start", now, number)]
            if step_ms:
                time.sleep(step_ms / 1e3)
            records.append(_main("step_end", time.monotonic_ns(), number))
        records.append(_main("epoch_end", time.monotonic_ns(), None))
        reads = [json.loads(line) for path in sorted(pathlib.Path(folder).glob("*.jsonl"))
                 for line in path.read_text().splitlines() if line.strip()]
    finally:
        dataset.log = None
        shutil.rmtree(folder, ignore_errors=True)
    records += _fetches(reads, batch_of, main)
    records.sort(key=lambda record: record["t_ns"])
    config = {"num_workers": loader.num_workers, "batch_size": loader.batch_size,
              "prefetch_factor": getattr(loader, "prefetch_factor", None) or 0,
              "in_order": getattr(loader, "in_order", True), "pin_memory": False,
              "load_ms": dataset.read_ms, "step_ms": step_ms, "slow_batch": None}
    return Trace(records, {"clock": "time.monotonic_ns", "main_pid": main,
                           "traced": "by the dataset (any loader)", "config": config, **info})


def _main(event: str, t_ns: int, batch) -> dict:
    return {"t_ns": t_ns, "pid": os.getpid(), "thread": "MainThread", "event": event,
            "lane": MAIN, "epoch": 0, "batch": batch}


def _fetches(reads: list[dict], batch_of: dict, main: int) -> list[dict]:
    """A fetch per batch from its samples' reads, in the lane of the process that read
    them (see NOTE [ A trace of any loader ])."""
    by_batch: dict[int, list[dict]] = {}
    for read in reads:
        if read["index"] in batch_of:  # read for a batch the epoch yielded
            by_batch.setdefault(batch_of[read["index"]], []).append(read)
    first_batch: dict[int, int] = {}
    for batch, batch_reads in sorted(by_batch.items()):
        for read in batch_reads:
            first_batch.setdefault(read["pid"], batch)
    workers = {pid: number for number, pid in enumerate(
        sorted((pid for pid in first_batch if pid != main), key=first_batch.get))}
    records = []
    for batch, batch_reads in by_batch.items():
        pid = batch_reads[0]["pid"]
        worker = workers.get(pid)
        lane = MAIN if worker is None else f"worker {worker}"
        start = min(read["start_ns"] for read in batch_reads)
        end = max(read["end_ns"] for read in batch_reads)
        common = {"pid": pid, "thread": "MainThread", "lane": lane, "epoch": 0,
                  "batch": batch, "worker": worker}
        records += [dict(common, t_ns=start, event="fetch_start"),
                    dict(common, t_ns=end, event="fetch_end")]
        if worker is not None:
            records.append(dict(common, t_ns=end, event="result_put"))
    return records


def samples_per_second(loader, epochs: int = 1) -> float:
    """The best of ``epochs`` epochs of ``loader``: samples per second, from ``iter()`` to
    the end of the epoch."""
    best = 0.0
    for _ in range(epochs):
        start, count = time.perf_counter(), 0
        for batch in loader:
            count += len(_indices(batch))
        best = max(best, count / (time.perf_counter() - start))
    return best
