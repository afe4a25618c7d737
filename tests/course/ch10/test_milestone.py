"""Milestone 10's suites on a killed persistent worker and on Ctrl-C, run on their own
(the pieces' checks are tests/course/test_milestones.py's): the reference package gives
torch's observations, and a worker loop that lets its KeyboardInterrupt escape is refused."""

from __future__ import annotations

import time

import pytest

from minidataloader_course.catalog import milestones
from minidataloader_course.checker.verdict import FAILED, PASSED
from minidataloader_course.learner import (
    fill_with_solutions,
    import_package,
    piece_exercises,
    reference_source,
    write_piece,
)
from minidataloader_course.milestones import _pieces_up_to, _run_suite

SLACK = 30.0  # seconds beyond a suite's time limit (torch's side, then the learner's)


pytestmark = pytest.mark.usefixtures("no_process_left")  # tests/course/conftest.py

def suite(name: str):
    return next(s for s in milestones()[10].suites if s.name == name)


def package_of(tmp_path, old: str = "", new: str = ""):
    """The reference package of chapter 10, its worker loop changed (``old`` -> ``new``)."""
    package = tmp_path / "notebooks" / "myloader"
    fill_with_solutions(package, 10)
    if old:
        source = reference_source(piece_exercises()["worker.worker_loop"][-1])
        assert old in source, "worker_loop's reference changed: update this test"
        write_piece(package, "worker.worker_loop", source.replace(old, new), force=True)
    return package


def run(name: str, package):
    started = time.monotonic()
    step = _run_suite(suite(name), import_package(package), _pieces_up_to(10), package)
    assert time.monotonic() - started < 2 * suite(name).time_limit + SLACK
    return step


@pytest.mark.parametrize("name", ["persistent workers killed between two epochs",
                                  "Ctrl-C in the middle of an epoch"])
def test_the_reference_package_behaves_as_torch(tmp_path, name):
    step = run(name, package_of(tmp_path))
    assert step.status == PASSED, step


def test_a_worker_loop_without_keyboard_interrupt_handling_is_refused(tmp_path):
    package = package_of(
        tmp_path,
        "    except KeyboardInterrupt:  # Ctrl-C reached every process: the main process "
        "reports it\n        pass\n",
        "    finally:\n        pass\n")
    step = run("Ctrl-C in the middle of an epoch", package)
    assert step.status == FAILED
    text = str(step.rows)
    assert "tracebacks on stderr" in text, step
