"""Chapter 7's worker loop grows in two steps (NOTE [ A piece grown in steps ]): first the
worker learns who it is, then it ends its stream. Each step has a check of its own: a loop
that stops at the first step passes it, and the second refuses it with its rule's words."""

from __future__ import annotations

import pytest

from minidataloader_course.catalog import verdict_of
from minidataloader_course.chapters.ch07 import solution, worker_seeded
from minidataloader_course.learner import piece_steps

pytestmark = pytest.mark.timeout(180)


def test_the_worker_loop_grows_in_two_steps_in_the_chapters_order():
    steps = piece_steps("worker.worker_loop", "ch07")
    assert [step.name for step in steps] == ["worker_loop, seeded", "worker_loop, streams"]
    assert [step.reference for step in steps] == [worker_seeded.worker_loop, solution.worker_loop]


def test_a_loop_that_stops_at_the_first_step_passes_it_and_not_the_second():
    assert verdict_of(worker_seeded.worker_loop, name="worker_loop, seeded").status == "passed"
    refused = verdict_of(worker_seeded.worker_loop, name="worker_loop, streams")
    assert refused.status == "failed", str(refused)
    assert "StreamEnded(worker_id)) in place of the batch" in str(refused)


def test_the_finished_loop_passes_both_steps():
    for step in ("worker_loop, seeded", "worker_loop, streams"):
        assert verdict_of(solution.worker_loop, name=step).status == "passed", step
