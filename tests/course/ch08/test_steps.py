"""Chapter 8's iterator grows in two steps (NOTE [ A piece grown in steps ]): first one
iterator serves every epoch of its workers, then it makes the resume handshake. Each step
has a check of its own: an iterator that stops at the first step passes it, and the second
refuses it, naming the handshake."""

from __future__ import annotations

import pytest

from minidataloader_course.catalog import verdict_of
from minidataloader_course.chapters.ch08 import persistent_iterator, solution
from minidataloader_course.learner import piece_steps

pytestmark = pytest.mark.timeout(240)

FIRST, SECOND = "MultiProcessIterator, persistent", "MultiProcessIterator, the handshake"


def test_the_iterator_grows_in_two_steps_that_chain():
    steps = piece_steps("dataloader.MultiProcessIterator", "ch08")
    assert [step.name for step in steps] == [FIRST, SECOND]
    assert solution.MultiProcessIterator.__bases__ == (persistent_iterator.MultiProcessIterator,)


def test_an_iterator_without_the_handshake_passes_the_first_step_and_not_the_second():
    assert verdict_of(persistent_iterator.MultiProcessIterator, name=FIRST).status == "passed"
    refused = verdict_of(persistent_iterator.MultiProcessIterator, name=SECOND)
    assert refused.status == "failed", str(refused)
    assert "resume_workers" in str(refused)


def test_the_finished_iterator_passes_both_steps():
    for step in (FIRST, SECOND):
        assert verdict_of(solution.MultiProcessIterator, name=step).status == "passed", step
