"""The tracing hook: how the loader reports what it is doing, for the book's visuals.

Every event site in the loader is one call::

    _tracing.emit("dispatch", batch=send_idx, worker=worker_id)

and with tracing off that call returns after one check of ``enabled``: the loader's code
reads as it would without the hook, and costs about a function call per event. A recorder
(see ``minidataloader_course.viz.trace``) switches tracing on with :func:`start` and gets every
event as a plain dict.

Events come from three places: the main loop, the pin-memory thread and the worker
processes. Each process has one *sink*, a function that takes one record: the recorder's
in the main process; in a worker, one that appends the record as a JSON line to a file of
the worker's own, in a folder the recorder chose (workers cannot append to the main
process's list). The loader hands each new worker that folder (:func:`worker_folder`), and
the worker's first act is :func:`attach_worker`. All timestamps come from
``time.monotonic_ns()``, one clock for every process of the machine, so events from
different processes line up.

Event names (fields in brackets; ``batch`` is the batch's position in sampler order):

    epoch_start [epoch]            epoch_end [epoch]
    worker_start [worker]          worker_exit [worker]
    dispatch [batch, worker]       fetch_start [batch, worker]   fetch_end [batch, worker]
    result_put [batch, worker]     received [batch, worker]
    reorder_enter [batch]          reorder_leave [batch]
    pin_start [batch]              pin_end [batch]
    yielded [batch]                resume [worker]

and from the stateful extra (minidataloader.stateful), in the main process:

    checkpoint [epochs_started, yielded]    state_dict() (yielded: None between epochs)
    restore [yielded, in_flight]            a resumed epoch's first pull: the batches that
                                            were in flight are dispatched again

Epochs are numbered per loader, from 0, counting the epochs started while tracing is on;
the numbers live here, not in the loader, which has no use for them.
"""

from __future__ import annotations

import json
import os
import threading
import time
import weakref

enabled = False
_sink = None  # this process's sink: a callable taking one record (a dict)
_worker_folder: str | None = None  # where workers started from now on write their events
_epochs_started = weakref.WeakKeyDictionary()  # loader -> epochs started while tracing
_epoch_of = weakref.WeakKeyDictionary()  # iterator -> the number of the epoch it runs


def emit(event: str, **fields) -> None:
    """Record one event; with tracing off, return at once."""
    if enabled:
        _record(event, fields)


def epoch_start(iterator, loader) -> None:
    """``iterator`` starts an epoch of ``loader``: number it, and record it."""
    if enabled:
        epoch = _epoch_of[iterator] = _epochs_started.get(loader, 0)
        _epochs_started[loader] = epoch + 1
        _record("epoch_start", {"epoch": epoch})


def epoch_end(iterator) -> None:
    if enabled:
        _record("epoch_end", {"epoch": _epoch_of.get(iterator)})


def _record(event: str, fields: dict) -> None:
    _sink({"t_ns": time.monotonic_ns(), "pid": os.getpid(),
           "thread": threading.current_thread().name, "event": event, **fields})


def start(sink, worker_folder: str | None = None) -> None:
    """Turn tracing on in this process. ``sink(record)`` receives every event of this
    process; ``worker_folder`` is where workers started from now on write theirs."""
    global enabled, _sink, _worker_folder
    _sink, _worker_folder, enabled = sink, worker_folder, True


def stop() -> None:
    global enabled, _sink, _worker_folder
    enabled, _sink, _worker_folder = False, None, None


def worker_folder() -> str | None:
    """What the loader hands each new worker: the trace folder, or None when off."""
    return _worker_folder if enabled else None


def attach_worker(folder: str | None) -> None:
    """Called first thing in every worker. A forked worker inherits the parent's state,
    so this always resets it: off, or on with a file of the worker's own."""
    stop()
    if folder is not None:  # (the file stays open as long as the worker lives)
        file = open(os.path.join(folder, f"worker-{os.getpid()}.jsonl"), "a", encoding="utf-8")

        def write(record: dict) -> None:
            file.write(json.dumps(record) + "\n")
            file.flush()  # a worker may be killed at any moment: keep what it said

        start(write)
