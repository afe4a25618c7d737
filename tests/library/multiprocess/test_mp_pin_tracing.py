"""The pin-memory thread, run with an injected pin function (so that a machine without an
accelerator runs it too), real pinning where an accelerator is present, and the tracing
hook: free when off (workers included), complete and in order when on."""

from __future__ import annotations

import collections
import json
import threading
import time

import pytest
import torch
from torch.utils.data._utils.pin_memory import pin_memory as torch_pin_memory

import minidataloader as mdl
from minidataloader import _tracing
from minidataloader.pin_memory import pin_memory
from tests.support.differential import Frozen, Point, assert_identical, epochs, same
from tests.support.mp_datasets import Squares, stream

ACCELERATOR = torch.accelerator.is_available()


class Pinnable:
    """Stands in for a tensor: pinning it (its pin_memory() method) marks it."""

    def __init__(self, value, pinned=False):
        self.value, self.pinned = value, pinned

    def pin_memory(self):
        return Pinnable(self.value, pinned=True)

    def __eq__(self, other):
        return (self.value, self.pinned) == (other.value, other.pinned)


def test_pin_memory_recurses_like_torch():
    def build():
        leaf = Pinnable
        return {
            "tensor-like": leaf(1), "str": "s", "bytes": b"b", "int": 3, "none": None,
            "tuple": (leaf(2), "x"), "list": [leaf(3), [leaf(4)]], "point": Point(leaf(5), 6),
            "ordered": collections.OrderedDict(a=leaf(7)),
            "default": collections.defaultdict(list, b=[leaf(8)]),
            "frozen": Frozen({"c": leaf(9)}), "range": range(3),
        }

    ours, theirs = pin_memory(build()), torch_pin_memory(build())
    assert_identical(theirs, ours)
    assert ours["tensor-like"].pinned and ours["list"][1][0].pinned
    assert type(ours["frozen"]) is Frozen and ours["frozen"]["c"].pinned
    assert ours["default"].default_factory is list
    if ACCELERATOR:  # a real tensor is pinned, by both
        assert torch_pin_memory(torch.ones(1)).is_pinned() and pin_memory(torch.ones(1)).is_pinned()
    else:  # nothing to pin for: torch's own error, both sides
        with pytest.raises(RuntimeError):
            torch_pin_memory(torch.ones(1))
        with pytest.raises(RuntimeError):
            pin_memory(torch.ones(1))


@pytest.mark.skipif(ACCELERATOR, reason="this machine has an accelerator: see the next test")
def test_pin_memory_without_an_accelerator_warns_and_does_not_pin():
    def scenario(lib):
        loader = lib.DataLoader(Squares(7), batch_size=2, num_workers=2, pin_memory=True)
        return epochs(loader, 1)

    ref = same(scenario)
    assert ref.error is None and UserWarning in ref.warnings


@pytest.mark.skipif(not ACCELERATOR, reason="needs an accelerator")
def test_pin_memory_with_an_accelerator_pins_as_torch_does():
    def scenario(lib):
        loader = lib.DataLoader(Squares(7), batch_size=2, num_workers=2, pin_memory=True)
        return [[all(t.is_pinned() for t in batch.values()) for batch in epoch]
                for epoch in epochs(loader, 1)]

    ref = same(scenario)
    assert ref.error is None and UserWarning not in ref.warnings
    assert ref.value == [[True] * 4]


class PinRecorder:
    """An injected pin function: wraps each batch and notes the thread that pinned it."""

    def __init__(self):
        self.threads = []

    def __call__(self, batch):
        self.threads.append(threading.current_thread())
        return {"pinned": batch}


@pytest.mark.parametrize("persistent", [False, True])
def test_the_pin_thread_pins_every_batch_and_stops(persistent):
    recorder = PinRecorder()
    loader = mdl.DataLoader(Squares(9), batch_size=2, num_workers=2,
                            persistent_workers=persistent)
    plain = mdl.DataLoader(Squares(9), batch_size=2, num_workers=2)
    loader._pin_memory_fn = recorder
    for _ in range(3):
        it = iter(loader)
        pinned = list(it)
        assert_identical([{"pinned": batch} for batch in plain], pinned)
        thread = it._group.pin_thread
        assert thread is not threading.main_thread() and thread.is_alive() == persistent
    assert len(recorder.threads) == 3 * 5
    assert all(t is not threading.main_thread() for t in recorder.threads)
    if persistent:
        del loader, it
        thread.join(timeout=10)
        assert not thread.is_alive()


def test_the_injected_pin_function_serves_num_workers_0_too():
    loader = mdl.DataLoader(range(3), batch_size=2)
    loader._pin_memory_fn = PinRecorder()
    assert_identical([{"pinned": torch.tensor([0, 1])}, {"pinned": torch.tensor([2])}],
                     list(loader))
    assert loader._pin_memory_fn.threads == [threading.main_thread()] * 2


def test_a_break_stops_the_pin_thread_too():
    loader = mdl.DataLoader(Squares(40), batch_size=2, num_workers=2)
    loader._pin_memory_fn = PinRecorder()
    it = iter(loader)
    next(it)
    thread, workers = it._group.pin_thread, it._group.workers
    del it
    thread.join(timeout=10)
    assert not thread.is_alive() and not any(worker.is_alive() for worker in workers)


def test_an_error_in_the_pin_function_reaches_the_main_loop():
    def failing(batch):
        raise ValueError("cannot pin this")

    loader = mdl.DataLoader(Squares(4), batch_size=2, num_workers=1)
    loader._pin_memory_fn = failing
    with pytest.raises(ValueError, match="pin-memory thread"):
        next(iter(loader))


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_dead_pin_thread_is_noticed():
    def dying(batch):
        raise SystemExit  # not an Exception: it ends the thread

    loader = mdl.DataLoader(Squares(4), batch_size=2, num_workers=1)
    loader._pin_memory_fn = dying
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="pin-memory thread exited"):
        next(iter(loader))
    assert time.monotonic() - start < 15


def loaders(lib):
    """A few multi-process loaders exercising every event site."""
    slow = lib.DataLoader(Squares(8, delay=1.0, slow=0), batch_size=2, num_workers=2)
    persistent = lib.DataLoader(stream(lib, 7), batch_size=2, num_workers=2,
                                persistent_workers=True)
    unordered = lib.DataLoader(Squares(8), batch_size=2, num_workers=2, in_order=False)
    pinned = lib.DataLoader(Squares(5), batch_size=2, num_workers=2)
    pinned._pin_memory_fn = PinRecorder()
    return [slow, persistent, unordered, pinned]


def test_tracing_off_never_calls_the_recorder(monkeypatch):
    def explode(*args, **kwargs):
        raise AssertionError("the recorder was called with tracing off")

    monkeypatch.setattr(_tracing, "_record", explode)  # forked workers inherit it
    assert not _tracing.enabled
    for loader in loaders(mdl) + [mdl.DataLoader(range(5), batch_size=2)]:
        for _ in range(2):
            assert list(loader)


ORDER = ["dispatch", "fetch_start", "fetch_end", "result_put", "pin_start", "pin_end",
         "received", "yielded"]
# Every event the hook documents (minidataloader/_tracing.py), which the visuals read.
EVENTS = {"epoch_start", "epoch_end", "worker_start", "worker_exit", "dispatch", "fetch_start",
          "fetch_end", "result_put", "received", "reorder_enter", "reorder_leave", "pin_start",
          "pin_end", "yielded", "resume"}


def test_tracing_records_every_batch_in_order(tmp_path):
    events = []
    _tracing.start(events.append, str(tmp_path))
    try:
        runs = []
        for loader in loaders(mdl):
            for _ in range(2):
                start = len(events)
                runs.append((loader, list(loader), start))
        runs[2][0]._iterator._shutdown_workers()  # the persistent workers exit now
    finally:
        _tracing.stop()
    worker_events = [json.loads(line) for path in tmp_path.glob("worker-*.jsonl")
                     for line in path.read_text().splitlines()]
    everything = sorted(events + worker_events, key=lambda event: event["t_ns"])
    assert {event["event"] for event in everything} == EVENTS

    # Follow each yielded batch back through the pipeline. Batch numbers restart every
    # epoch, so events are matched to epochs by time: each epoch starts with epoch_start.
    starts = [event for event in events if event["event"] == "epoch_start"]
    ends = [event for event in events if event["event"] == "epoch_end"]
    assert len(starts) == len(ends) == len(runs)
    for (loader, batches, _), start, end in zip(runs, starts, ends):
        window = [event for event in everything if start["t_ns"] <= event["t_ns"] <= end["t_ns"]]
        yielded = [event["batch"] for event in window if event["event"] == "yielded"]
        assert len(yielded) == len(batches)
        pinned = hasattr(loader, "_pin_memory_fn")
        for batch in yielded:
            trail = [event for event in window if event.get("batch") == batch
                     and event["event"] in ORDER]
            expected = [name for name in ORDER if pinned or not name.startswith("pin")]
            assert [event["event"] for event in trail] == expected, (batch, trail)
            assert len({event["worker"] for event in trail if "worker" in event}) == 1
    # the slow first batch was overtaken: it waited in the reorder buffer, then left it
    assert any(event["event"] == "reorder_enter" for event in everything)
    assert sum(event["event"] == "reorder_enter" for event in everything) == sum(
        event["event"] == "reorder_leave" for event in everything)
    assert sum(event["event"] == "resume" for event in everything) == 2  # 2 workers, epoch 2
    starts = [event for event in everything if event["event"] == "worker_start"]
    exits = [event for event in everything if event["event"] == "worker_exit"]
    assert len(starts) == len(exits) == 2 * 7  # persistent workers start (and exit) once
