"""Traces: what a DataLoader did, event by event, on one clock, as plain data.

:class:`TraceRecorder` switches the loader's tracing hook on (``minidataloader/_tracing.py``)
and collects every event, from the main loop, the pin-memory thread and each worker
process, plus what the training loop around the loader does::

    with TraceRecorder() as recorder:      # before iter(loader): workers started earlier
        for batch in loader:                #   were told not to report
            with recorder.step():           # the training step, on the same clock
                train(batch)
    trace = recorder.trace

Every timestamp is ``time.monotonic_ns()``, one clock for all the processes of a machine.
A :class:`Trace` is a list of records (dicts) plus an ``info`` dict: it goes to and from a
JSON file and a pandas DataFrame (one row per record) unchanged.

NOTE [ Which epoch an event belongs to ]
Batch numbers start again at 0 every epoch, so an event is only known with its epoch. The
main loop says when an epoch starts; workers and the pin thread do not know. The recorder
adds ``epoch`` (and ``lane``: where it happened) to every record:

    main loop     the epoch whose epoch_start came last
    a worker      its events split at each ``resume`` (persistent workers start an epoch);
                  a part belongs to the epoch under way when it starts its first fetch
                  (every task is dispatched, so after its epoch_start). A new epoch's
                  tasks follow the workers' resume acknowledgements, so parts never mix.
    pin thread    the epoch of the batch it took from the result queue: the earliest
                  result_put of that batch number not yet pinned (a FIFO queue)

Epochs must follow each other (one loader per recording, one iterator at a time).

NOTE [ Where a batch is, from the events ]
    dispatch ─► fetch_start ─► fetch_end, result_put ─► [pin_start ─► pin_end] ─► received
    in index queue w   fetching     in the result queue    pinning    pinned,    ─► (reorder
                                                                      waiting       buffer) ─► yielded
A batch that never reaches the next event (a `break`, a worker whose stream ended) stays
where it was until its epoch ends: nothing in the loader reports that it was dropped.

A stateful loader (minidataloader.stateful) adds moments rather than places: a
``checkpoint`` (``state_dict()``) and a ``restore`` (a resumed epoch's first pull), each a
:class:`Mark` with the batches in flight: at a checkpoint, those dispatched and not yet
yielded (what a resume fetches again), derived from the events; at a restore, those the
resume dispatches again, as the loader reported them.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import pathlib
import shutil
import tempfile
import threading
from collections import defaultdict
from dataclasses import dataclass, field

from minidataloader import _tracing

FORMAT, VERSION = "minidataloader.trace", 1
MAIN, PIN, COPY = "main loop", "pin thread", "H2D copy"
# Activities of the training loop that the recorder (not the loader) reports, as spans.
CONSUMER_SPANS = ("step", "stage", "copy")
_FIRST_COLUMNS = ("t_ns", "pid", "thread", "event", "lane", "epoch", "batch", "worker")


@dataclass(frozen=True)
class Span:
    """Batch ``batch`` of epoch ``epoch`` was in ``place`` from ``start_ns`` to ``end_ns``.

    Places: ``queued:W`` (index queue of worker W), ``fetch:W`` / ``fetch:main``,
    ``result`` (result queue), ``pinning``, ``pinned`` (pinned, waiting for the main loop),
    ``reorder`` (arrived early, waiting for its turn), ``wait`` (the main loop waits in
    ``next()`` for this batch), ``finish`` (the last ``next()``, which ends the epoch and
    stops the workers; batch None), and the training loop's ``stage``, ``copy`` and ``step``."""

    place: str
    epoch: int
    batch: int | None
    start_ns: int
    end_ns: int


@dataclass(frozen=True)
class Mark:
    """A moment a stateful loader reported in epoch ``epoch``: ``kind`` is ``checkpoint``
    or ``restore``; ``yielded``, the batches of the epoch yielded before it (None for a
    checkpoint between epochs); ``in_flight``, the batches in flight (see
    NOTE [ Where a batch is, from the events ])."""

    kind: str
    epoch: int
    t_ns: int
    yielded: int | None
    in_flight: tuple[int, ...]


@dataclass
class Trace:
    """A recorded run: ``records`` sorted by time, each a dict with ``t_ns``, ``pid``,
    ``thread``, ``event``, ``lane``, ``epoch`` and the event's fields; ``info`` says what
    was recorded (the recorder's process, and whatever the caller added)."""

    records: list[dict]
    info: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ plain data

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, "version": VERSION, "info": self.info,
                           "records": self.records}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Trace:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("this is not a minidataloader trace (no \"format\": "
                             f"\"{FORMAT}\"); make one with Trace.save() or Trace.to_json()")
        if data.get("version") != VERSION:
            raise ValueError(f"trace format version {data.get('version')!r}, but this "
                             f"minidataloader reads version {VERSION}: record it again")
        return cls(data["records"], data["info"])

    def save(self, path) -> None:
        pathlib.Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path) -> Trace:
        return cls.from_json(pathlib.Path(path).read_text(encoding="utf-8"))

    def to_dataframe(self):
        """One row per record; a field an event lacks is missing (``<NA>``), integer
        columns stay integers (pandas' ``Int64``). ``df.attrs["info"]`` holds ``info``."""
        import pandas as pd  # imported here: `import minidataloader_course.viz` stays light

        names = list(_FIRST_COLUMNS)
        names += sorted({name for record in self.records for name in record} - set(names))
        df = pd.DataFrame({name: pd.array([record.get(name) for record in self.records],
                                          dtype=_dtype(name, self.records))
                           for name in names})
        df.attrs["info"] = json.loads(json.dumps(self.info))  # a copy, plain data
        return df

    @classmethod
    def from_dataframe(cls, df) -> Trace:
        import pandas as pd

        def missing(value):
            return value is None or value is pd.NA or (isinstance(value, float) and value != value)

        records = []
        for row in df.to_dict("records"):
            records.append({name: value.item() if hasattr(value, "item") else value
                            for name, value in row.items() if not missing(value)})
        return cls(records, dict(df.attrs.get("info", {})))

    # ------------------------------------------------------------------ what happened

    def epochs(self) -> list[int]:
        """The epochs the trace holds, in order."""
        numbers = [r["epoch"] for r in self.records if r["event"] == "epoch_start"]
        if len(set(numbers)) != len(numbers):
            raise ValueError(f"this trace holds epochs numbered {numbers}: one number twice "
                             "means two loaders in one recording; record each loader with "
                             "a TraceRecorder of its own")
        return numbers

    def _epoch(self, epoch: int | None) -> int:
        epochs = self.epochs()
        if not epochs:
            raise ValueError("the trace holds no epoch: start the TraceRecorder before "
                             "iter(loader)")
        if epoch is None:
            return epochs[0]
        if epoch not in epochs:
            raise ValueError(f"the trace holds epochs {epochs}, not {epoch}")
        return epoch

    def spans(self, epoch: int | None = None) -> list[Span]:
        """Where each batch of ``epoch`` (by default the first) was, and when; see
        NOTE [ Where a batch is, from the events ]. Sorted by start time."""
        epoch = self._epoch(epoch)
        records = [r for r in self.records if r.get("epoch") == epoch]
        end = next((r["t_ns"] for r in records if r["event"] == "epoch_end"), records[-1]["t_ns"])
        end = max(end, records[-1]["t_ns"])  # the last step may end after epoch_end
        seen: dict[tuple[str, int | None], dict] = {}
        for r in records:
            seen.setdefault((r["event"], r.get("batch")), r)

        def at(event, batch):
            record = seen.get((event, batch))
            return None if record is None else record["t_ns"]

        spans = []

        def add(place, batch, start, *stops):
            if start is not None:
                stop = next((t for t in stops if t is not None), end)
                spans.append(Span(place, epoch, batch, start, stop))

        for (event, batch), record in seen.items():
            if event == "dispatch":
                add(f"queued:{record['worker']}", batch, record["t_ns"], at("fetch_start", batch))
            elif event == "fetch_start":
                worker = "main" if record.get("worker") is None else record["worker"]
                add(f"fetch:{worker}", batch, record["t_ns"], at("fetch_end", batch))
            elif event == "result_put":
                add("result", batch, record["t_ns"], at("pin_start", batch), at("received", batch))
            elif event == "pin_start":
                add("pinning", batch, record["t_ns"], at("pin_end", batch))
            elif event == "pin_end":
                add("pinned", batch, record["t_ns"], at("received", batch))
            elif event == "reorder_enter":
                add("reorder", batch, record["t_ns"], at("reorder_leave", batch))
            elif event.endswith("_start") and event[:-6] in CONSUMER_SPANS:
                add(event[:-6], batch, record["t_ns"], at(event[:-6] + "_end", batch))
        spans += self._waits(records, epoch)
        spans.sort(key=lambda s: (s.start_ns, s.place, -1 if s.batch is None else s.batch))
        return spans

    def marks(self, epoch: int | None = None) -> list[Mark]:
        """The checkpoints and restores of ``epoch`` (by default the first), in time order."""
        epoch = self._epoch(epoch)
        found, dispatched, yielded = [], [], set()
        for r in self.records:
            if r.get("epoch") != epoch or r["lane"] != MAIN:
                continue
            if r["event"] == "dispatch":
                dispatched.append(r["batch"])
            elif r["event"] == "yielded":
                yielded.add(r["batch"])
            elif r["event"] == "checkpoint":
                flying = tuple(b for b in dispatched if b not in yielded)
                found.append(Mark("checkpoint", epoch, r["t_ns"], r.get("yielded"), flying))
            elif r["event"] == "restore":
                found.append(Mark("restore", epoch, r["t_ns"], r["yielded"],
                                  tuple(r["in_flight"])))
        return found

    @staticmethod
    def _waits(records: list[dict], epoch: int) -> list[Span]:
        """The main loop's time in ``next()``: from the end of what the training loop did
        with the previous batch (reported by the recorder's spans) to the next batch, and
        to the end of the epoch. Without such reports only the first wait is known."""
        waits, free_since = [], None
        for r in records:
            if r["lane"] != MAIN:
                continue
            if r["event"] == "epoch_start":
                free_since = r["t_ns"]
            elif r["event"].endswith("_end") and r["event"][:-4] in CONSUMER_SPANS:
                free_since = r["t_ns"]
            elif r["event"] in ("yielded", "epoch_end"):
                if free_since is not None:
                    place = "wait" if r["event"] == "yielded" else "finish"
                    waits.append(Span(place, epoch, r.get("batch"), free_since, r["t_ns"]))
                free_since = None
        return waits

    def queues_at(self, t_ns: int, epoch: int | None = None) -> dict[str, list[int]]:
        """What is where at time ``t_ns``: place -> batches, in the order they got there
        (a queue's head first). Places as in :class:`Span`; empty places are left out."""
        here: dict[str, list[int]] = defaultdict(list)
        for span in self.spans(epoch):
            if span.start_ns <= t_ns < span.end_ns:
                here[span.place].append(span.batch)
        return dict(here)

    def summary(self, epoch: int | None = None) -> dict:
        """The epoch in numbers: ``duration_s`` (from epoch_start to the last thing the
        epoch did), ``batches`` yielded, ``batches_per_s``, ``first_batch_s`` (the wait
        for the first batch, worker start-up included), ``waiting_s`` (the main loop's time
        in ``next()``, None unless the training steps were recorded), ``waiting_share``,
        ``steady_batches_per_s`` (from the first batch on: start-up left out), and the
        largest number of batches at once in the reorder buffer and result queue."""
        epoch = self._epoch(epoch)
        records = [r for r in self.records if r.get("epoch") == epoch]
        start = next(r["t_ns"] for r in records if r["event"] == "epoch_start")
        duration = (records[-1]["t_ns"] - start) / 1e9
        batches = sum(r["event"] == "yielded" for r in records)
        spans = self.spans(epoch)
        waits = [s for s in spans if s.place == "wait"]
        stepped = any(r["event"] == "step_end" for r in records)
        first = next((r["t_ns"] for r in records if r["event"] == "yielded"), None)
        after_first = (records[-1]["t_ns"] - first) / 1e9 if first is not None else 0
        waiting = sum(s.end_ns - s.start_ns for s in waits) / 1e9 if stepped else None
        return {
            "epoch": epoch, "duration_s": duration, "batches": batches,
            "batches_per_s": batches / duration if duration > 0 else None,
            "steady_batches_per_s": (batches - 1) / after_first if batches > 1 and after_first > 0
            else None,
            "first_batch_s": (waits[0].end_ns - waits[0].start_ns) / 1e9 if waits else None,
            "waiting_s": waiting,
            "waiting_share": waiting / duration if waiting is not None and duration > 0 else None,
            "max_reorder": most_at_once((s.start_ns, s.end_ns) for s in spans
                                        if s.place == "reorder"),
            "max_result_queue": most_at_once((s.start_ns, s.end_ns) for s in spans
                                             if s.place == "result"),
        }


def most_at_once(intervals) -> int:
    """The largest number of ``(start, end)`` intervals that hold one instant (end excluded)."""
    intervals = list(intervals)
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    most = count = 0
    for _, change in edges:  # at equal times the end (-1) sorts first: no false overlap
        count += change
        most = max(most, count)
    return most


def _dtype(name: str, records: list[dict]):
    values = [record[name] for record in records if record.get(name) is not None]
    if values and all(isinstance(v, bool) for v in values):
        return "boolean"
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "Int64"
    return object


# --------------------------------------------------------------------------- recording

class TraceRecorder:
    """Records every loader event while active (a context manager), and ``trace`` after.

    Inside, ``with recorder.step():`` around the training step reports the step on the
    same clock (for the batch the loader yielded last); :meth:`span` reports any other
    activity of the training loop, :meth:`add` an event whose time was measured elsewhere
    (say by a CUDA event). ``info`` is stored with the trace as it is (JSON-able values).

    Workers report from the moment they start: only workers started inside the ``with``
    are traced. One recorder at a time.
    """

    def __init__(self, **info) -> None:
        self.info = info
        self.trace: Trace | None = None
        self._records: list[dict] = []
        self._folder: str | None = None
        self._epoch = self._batch = None

    def __enter__(self) -> TraceRecorder:
        if _tracing.enabled:
            raise RuntimeError("tracing is already on: another TraceRecorder is recording. "
                               "Record one thing at a time (leave the other `with` first)")
        self._folder = tempfile.mkdtemp(prefix="minidataloader-trace-")
        _tracing.start(self._receive, self._folder)
        return self

    def _receive(self, record: dict) -> None:
        # Called from the main thread and the pin thread: list.append is atomic.
        if record["event"] == "epoch_start":
            self._epoch, self._batch = record["epoch"], None
        elif record["event"] == "yielded":
            self._batch = record["batch"]
        self._records.append(record)

    def __exit__(self, *exc) -> None:
        _tracing.stop()
        records = self._records
        for path in sorted(pathlib.Path(self._folder).glob("worker-*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                with contextlib.suppress(ValueError):  # a worker killed mid-line
                    records.append(json.loads(line))
        shutil.rmtree(self._folder, ignore_errors=True)
        self.trace = Trace(_annotate(records, os.getpid()),
                           {"clock": "time.monotonic_ns", "main_pid": os.getpid(), **self.info})

    @contextlib.contextmanager
    def span(self, name: str, **fields):
        """Report ``name_start``/``name_end`` around the block, for the batch yielded last."""
        batch, epoch = self._batch, self._epoch
        if _tracing.enabled:
            _tracing.emit(f"{name}_start", batch=batch, epoch=epoch, **fields)
        try:
            yield
        finally:
            if _tracing.enabled:
                _tracing.emit(f"{name}_end", batch=batch, epoch=epoch, **fields)

    def step(self):
        """``with recorder.step():`` around the training step on the batch just yielded."""
        return self.span("step")

    def add(self, event: str, t_ns: int, **fields) -> None:
        """An event that happened at ``t_ns`` (``time.monotonic_ns()`` clock) somewhere the
        hook does not see, for the batch yielded last (unless ``batch=`` says otherwise)."""
        thread = fields.pop("thread", threading.current_thread().name)
        record = {"t_ns": int(t_ns), "pid": os.getpid(), "thread": thread,
                  "event": event, "batch": self._batch, "epoch": self._epoch, **fields}
        self._records.append(record)

    @property
    def last_batch(self) -> int | None:
        """The number of the batch the loader yielded last (None before the first)."""
        return self._batch


def _annotate(records: list[dict], main_pid: int) -> list[dict]:
    """Sort by time and give every record its ``epoch`` and ``lane``; see
    NOTE [ Which epoch an event belongs to ]."""
    records = sorted(records, key=lambda r: r["t_ns"])  # stable: one thread keeps its order
    starts = [(r["t_ns"], r["epoch"]) for r in records
              if r["pid"] == main_pid and r["event"] == "epoch_start"]
    times = [t for t, _ in starts]

    def under_way(t):
        i = bisect.bisect_right(times, t) - 1
        return starts[max(i, 0)][1] if starts else None

    by_worker = defaultdict(list)
    for r in records:
        if r["pid"] != main_pid:
            by_worker[r["pid"]].append(r)
    for worker_records in by_worker.values():
        parts, part = [], []
        for r in worker_records:
            if r["event"] == "resume" and part:
                parts.append(part)
                part = []
            part.append(r)
        parts.append(part)
        for part in parts:
            fetches = [r for r in part if r["event"] == "fetch_start"]
            epoch = under_way((fetches[0] if fetches else part[-1])["t_ns"])
            for r in part:
                r.setdefault("epoch", epoch)
                r["lane"] = f"worker {r['worker']}"
    unpinned = defaultdict(list)  # batch -> result_puts not yet taken by the pin thread
    pinning: dict = {}  # the pin thread's current pin_start
    for r in records:
        if r["pid"] != main_pid:
            if r["event"] == "result_put":
                unpinned[r["batch"]].append(r)
            continue
        if r["event"] in ("pin_start", "pin_end"):
            r["lane"] = PIN
            if r["event"] == "pin_start":
                source = unpinned[r["batch"]].pop(0) if unpinned[r["batch"]] else None
                r.setdefault("epoch", source["epoch"] if source else under_way(r["t_ns"]))
                pinning = r
            else:
                r.setdefault("epoch", pinning["epoch"] if pinning.get("batch") == r["batch"]
                             else under_way(r["t_ns"]))
            continue
        r.setdefault("lane", COPY if r["event"].startswith("copy_") else MAIN)
        if r.get("epoch") is None:
            r["epoch"] = under_way(r["t_ns"])
    return records
