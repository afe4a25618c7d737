"""Milestone 7 (chapters/ch07/milestone.py): its configurations start their workers with the
start method in use, and say so; a loader that ignores in_order=False's limit on the tasks a
worker holds is refused."""

from __future__ import annotations

import multiprocessing

import pytest

from minidataloader_course.catalog import milestones
from minidataloader_course.chapters.ch07 import milestone as seven
from tests.course.test_milestones import broken_in, timed_milestone

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def spawn_chosen():
    before = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("spawn", force=True)  # as --start-method spawn does
    yield
    multiprocessing.set_start_method(before, force=True)


def test_the_configurations_start_their_workers_as_chosen_and_say_how(spawn_chosen):
    made = seven.configurations()
    assert made and all(spec["arguments"]["multiprocessing_context"] == "spawn" for spec in made)
    assert all("multiprocessing_context='spawn'" in seven.describe(spec) for spec in made)
    assert not any("(fork)" in suite.name for suite in milestones()[7].suites)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="fork")
def test_without_a_choice_the_configurations_fork():
    if multiprocessing.get_start_method(allow_none=True) not in (None, "fork"):
        pytest.skip("this process chose another start method")
    made = seven.configurations()
    assert len(made) == seven.CONFIGURATIONS
    assert {spec["arguments"]["multiprocessing_context"] for spec in made} == {"fork"}


def test_ignoring_the_limit_on_the_tasks_a_worker_holds_is_refused(tmp_path):
    package = broken_in(tmp_path, 7, "MultiProcessIterator, streams",
                        "            if self.loader.in_order or self.tasks[worker_id] < share:\n"
                        "                break\n",
                        "            break\n")
    text = timed_milestone(7, package, 240)
    assert "MultiProcessIterator" in text, text
    assert "prefetch_factor" in text, text
