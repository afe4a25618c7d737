"""Milestone 15 on learners' packages: the reference pieces pass its three suites (torch's
batches for the learner's settings, an exact resume, the throughput target); a package whose
settings cannot meet the target gets that verdict, within its time limit; no process is
left behind. (The whole milestone, pieces first, runs in the chapter's workbook:
tests/book/test_notebooks.py.)"""

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

SLACK = 60.0


pytestmark = pytest.mark.usefixtures("no_process_left")  # tests/course/conftest.py

SUITES = [suite.name for suite in milestones()[15].suites]


def package_of(tmp_path, old: str = "", new: str = ""):
    package = tmp_path / "notebooks" / "myloader"
    fill_with_solutions(package, 15)
    if old:
        source = reference_source(piece_exercises()["capstone.capstone_loader"][-1])
        assert old in source, "capstone_loader's reference changed: update this test"
        write_piece(package, "capstone.capstone_loader", source.replace(old, new), force=True)
    return package


def run(name: str, package):
    suite = next(s for s in milestones()[15].suites if s.name == name)
    started = time.monotonic()
    step = _run_suite(suite, import_package(package), _pieces_up_to(15), package)
    assert time.monotonic() - started < 4 * suite.time_limit + SLACK
    return step


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", SUITES)
def test_the_reference_package_passes(tmp_path, name):
    step = run(name, package_of(tmp_path))
    assert step.status == PASSED, step


@pytest.mark.timeout(600)
def test_settings_that_cannot_meet_the_target_get_that_verdict(tmp_path):
    """One worker reads one batch at a time: about as fast as no worker at all, whatever
    the machine; the verdict says how far from the target it was."""
    package = package_of(tmp_path, "num_workers=8", "num_workers=1")
    step = run(SUITES[2], package)
    assert step.status == FAILED, step
    rows = dict(step.rows)
    assert " times (" in rows["got"] and "samples/s" in rows["got"], step
    assert "with the reference capstone_loader in place of yours" in rows["the piece"], step

