"""Milestone 11's suites, run on their own (the pieces' checks are the other milestones'
business, and the workbook runs the whole milestone with fork and with spawn,
tests/book/test_notebooks.py): the reference package gives torch's batches and is within
noise of torch's throughput on the I/O-bound workload, even on a busy machine (the workload
waits, and the runs alternate); a loader that keeps one task in flight, waiting for each
batch before it sends the next task, is refused within the suite's time limit, with the
measurement and the piece to look at; no process is left behind."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from minidataloader_course.catalog import milestones
from minidataloader_course.chapters.ch11.milestone import TARGET, WITHIN_NOISE, throughput
from minidataloader_course.checker.verdict import FAILED, PASSED
from minidataloader_course.learner import (
    fill_with_solutions,
    import_package,
    piece_exercises,
    reference_source,
    write_piece,
)
from minidataloader_course.milestones import _pieces_up_to, _run_suite

pytestmark = [pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                 reason="the suites fork their workers where fork exists"),
              pytest.mark.usefixtures("no_process_left")]  # tests/course/conftest.py

THROUGHPUT = "throughput on the I/O-bound workload, against torch's"
BATCHES = "the I/O-bound workload's batches"
# the reference keeps prefetch_factor * num_workers tasks in flight from the start of an
# epoch; this one sends a single task, and the next only when a batch is handed out
WINDOW = "        for _ in range(loader.prefetch_factor * self.num_workers):\n"
ONE_TASK = "        for _ in range(1):  # one task at a time: wait for it, then send the next\n"


def suite(name):
    return next(s for s in milestones()[11].suites if s.name == name)


def package(tmp_path, window: bool = True):
    folder = tmp_path / "notebooks" / "myloader"
    fill_with_solutions(folder, 11)
    if not window:
        exercise = piece_exercises()["dataloader.MultiProcessIterator"][-1]
        source = reference_source(exercise)
        assert WINDOW in source, "the iterator's reference changed: update this test"
        write_piece(folder, exercise.piece, source.replace(WINDOW, ONE_TASK), force=True)
    return folder


def run(folder, name):
    found = suite(name)
    started = time.monotonic()
    step = _run_suite(found, import_package(folder), _pieces_up_to(11), folder)
    assert time.monotonic() - started < 2 * found.time_limit + 30
    return step


def test_milestone_11_is_declared_with_its_goal():
    stone = milestones()[11]
    assert [s.name for s in stone.suites] == [BATCHES, THROUGHPUT]
    assert stone.goals == {"ch11": (1,)}


@pytest.mark.timeout(400)
def test_the_reference_package_gives_torchs_batches_as_fast_as_torch(tmp_path):
    folder = package(tmp_path)
    for name in (BATCHES, THROUGHPUT):
        step = run(folder, name)
        assert step.status == PASSED, step


@pytest.mark.timeout(400)
def test_a_loader_that_waits_for_each_batch_is_refused(tmp_path):
    folder = package(tmp_path, window=False)
    assert run(folder, BATCHES).status == PASSED  # right batches: only its speed is wrong
    step = run(folder, THROUGHPUT)
    assert step.status == FAILED, step
    rows = dict(step.rows)
    text = " ".join(rows.values())
    assert "of torch's speed: epochs of" in rows["got"], step  # the measurement
    assert rows["the piece"].startswith("look at your MultiProcessIterator (dataloader.py)")
    assert "keep prefetch_factor * num_workers tasks in flight" in text, step


def test_torchs_side_is_the_target_itself():
    import torch.utils.data

    assert throughput(torch.utils.data, {}) == {
        "throughput on the I/O-bound workload": WITHIN_NOISE}
    assert 0 < TARGET < 1
