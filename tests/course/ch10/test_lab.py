"""Chapter 10's debugging lab (``chapters/ch10/lab.py``): the buggy iterator shows each of
its three bugs to the tools the workbook hands the learner (a trace, ``try_it``'s report),
every run of it is safe (stopped in time, no process left), and the repaired iterator
shows none of them. That the check refuses each bug alone is tested with every mutant
(tests/course/checker/test_mutants.py); that the repair is torch's behaviour, by its check."""

from __future__ import annotations

import time

import pytest

import minidataloader as mdl
from minidataloader_course import try_it
from minidataloader_course.chapters.ch10.failing import SlowSample
from minidataloader_course.chapters.ch10.lab import BuggyIterator
from minidataloader_course.chapters.ch10.solution import RepairedIterator
from minidataloader_course.shared.processes import children
from minidataloader_course.viz import TraceRecorder, queue_flow_figure

pytestmark = pytest.mark.timeout(120)
LIMIT = 4.0  # seconds: the epoch itself takes well under one


def traced(iterator_class, stop_after=None):
    """As the workbook's ``traced``: one epoch (or ``stop_after`` batches, then a break)
    under try_it and a TraceRecorder. What it yielded, the trace, try_it's report (or None),
    the pids try_it had to stop, and how long it took."""
    loader = mdl.DataLoader(SlowSample(8, at=2, seconds=0.3), batch_size=2, num_workers=2,
                            multiprocessing_context="fork")
    yielded, report, start = [], None, time.monotonic()
    with TraceRecorder() as recorder:
        guard = try_it(LIMIT, "the iterator")
        try:
            with guard:
                for batch in iterator_class(loader):
                    yielded.append(batch["index"].tolist())
                    if len(yielded) == stop_after:
                        break
        except TimeoutError as stopped:
            report = str(stopped)
    return yielded, recorder.trace, report, guard.stopped, time.monotonic() - start


def events(trace, name):
    return [record for record in trace.records if record["event"] == name]


def test_the_buggy_epoch_yields_out_of_order_and_then_hangs_until_try_it_stops_it():
    before = set(children())
    yielded, trace, report, stopped, seconds = traced(BuggyIterator)
    assert sorted(yielded) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert yielded != sorted(yielded)  # the wrong reorder: batch 2 came early, and went out
    assert [r["batch"] for r in events(trace, "yielded")] == [0, 2, 1, 3]
    # the stuck workers: the epoch ended, no worker was told to leave, the join waits
    assert events(trace, "epoch_end") and not events(trace, "worker_exit")
    assert report is not None and "a join() on a process that does not end" in report
    assert len(stopped) == 2 and seconds < LIMIT + 10
    assert set(children()) <= before  # nothing left running
    assert "mdl-queueflow" in str(queue_flow_figure(trace))  # the view draws the unfinished run


def test_after_a_break_the_buggy_iterator_leaks_its_workers_and_try_it_stops_them():
    before = set(children())
    yielded, trace, report, stopped, _ = traced(BuggyIterator, stop_after=2)
    assert report is None and len(yielded) == 2  # nothing hung: the leak is silent
    assert not events(trace, "worker_exit") and not events(trace, "epoch_end")
    assert len(stopped) == 2  # the leaked workers, which try_it stopped and reported
    assert set(children()) <= before


@pytest.mark.parametrize("stop_after", [None, 2])
def test_the_repaired_iterator_shows_none_of_the_bugs(stop_after):
    before = set(children())
    yielded, trace, report, stopped, _ = traced(RepairedIterator, stop_after)
    assert report is None and stopped == []
    assert yielded == [[0, 1], [2, 3], [4, 5], [6, 7]][:stop_after]
    assert sorted(r["worker"] for r in events(trace, "worker_exit")) == [0, 1]
    assert set(children()) <= before
