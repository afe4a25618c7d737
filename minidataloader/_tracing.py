"""The tracing hook: how the loader reports what it is doing, for the book's visuals.

Every event site in the loader reads::

    if _tracing.enabled:
        _tracing.emit("dispatch", batch=send_idx, worker=worker_id)

so with tracing off the whole cost is one attribute check. A recorder (see
``minidataloader.viz.trace``) switches tracing on with :func:`start` and gets every event
as a plain dict.

Events come from three places: the main loop, the pin-memory thread and the worker
processes. Workers cannot append to the main process's list, so each worker writes its
events, one JSON line each, to a file of its own in a folder the recorder chose
(:func:`worker_sink` gives the folder to the worker, :func:`attach_worker` opens the file).
All timestamps come from ``time.monotonic_ns()``, one clock for every process of the
machine, so events from different processes line up.

Event names (fields in brackets; ``batch`` is the batch's position in sampler order):

    epoch_start [epoch]            epoch_end [epoch]
    worker_start [worker]          worker_exit [worker]
    dispatch [batch, worker]       fetch_start [batch, worker]   fetch_end [batch, worker]
    result_put [batch, worker]     received [batch, worker]
    reorder_enter [batch]          reorder_leave [batch]
    pin_start [batch]              pin_end [batch]
    yielded [batch]                resume [worker]
"""

from __future__ import annotations

import json
import os
import threading
import time

EVENTS = (
    "epoch_start", "epoch_end", "worker_start", "worker_exit", "dispatch", "fetch_start",
    "fetch_end", "result_put", "received", "reorder_enter", "reorder_leave", "pin_start",
    "pin_end", "yielded", "resume",
)

enabled = False
_sink = None  # in the main process: a callable taking one event dict; in a worker: a file


def emit(event: str, **fields) -> None:
    """Record one event. Call only behind ``if _tracing.enabled:``."""
    record = {
        "t_ns": time.monotonic_ns(),
        "pid": os.getpid(),
        "thread": threading.current_thread().name,
        "event": event,
        **fields,
    }
    sink = _sink
    if sink is None:
        return
    if callable(sink):
        sink(record)
    else:
        sink.write(json.dumps(record) + "\n")
        sink.flush()  # a worker may be killed at any moment: keep what it said


def start(sink, worker_folder: str | None = None) -> None:
    """Turn tracing on in this process. ``sink(record)`` receives every main-process event;
    ``worker_folder`` is where workers started from now on write theirs."""
    global enabled, _sink, _worker_folder
    _sink, _worker_folder, enabled = sink, worker_folder, True


def stop() -> None:
    global enabled, _sink, _worker_folder
    enabled, _sink, _worker_folder = False, None, None


_worker_folder: str | None = None


def worker_sink() -> str | None:
    """What the loader hands each new worker: the trace folder, or None when off."""
    return _worker_folder if enabled else None


def attach_worker(folder: str | None) -> None:
    """Called first thing in every worker. A forked worker inherits the parent's state,
    so this always resets it: off, or on with a file of the worker's own."""
    global enabled, _sink, _worker_folder
    _worker_folder = None
    if folder is None:
        enabled, _sink = False, None
        return
    path = os.path.join(folder, f"worker-{os.getpid()}.jsonl")
    _sink = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the worker
    enabled = True
