"""Milestone 13's suite on ``pin_memory=True`` with no stand-in, run on its own (the pieces'
checks and the training runs are tests/course/test_milestones.py's): the reference package
does what torch does on this machine, and a loader that stays silent where torch warns is
refused."""

from __future__ import annotations

import time

import pytest
import torch

from minidataloader_course.catalog import milestones
from minidataloader_course.checker.verdict import FAILED, PASSED
from minidataloader_course.learner import fill_with_solutions, import_package
from minidataloader_course.milestones import _pieces_up_to, _run_suite

NAME = "pin_memory=True on this machine, as it is"
WARNING = "warnings.warn(\"'pin_memory' argument is set as true"


pytestmark = pytest.mark.usefixtures("no_process_left")  # tests/course/conftest.py

def run(tmp_path, silent: bool = False):
    package = tmp_path / "notebooks" / "myloader"
    fill_with_solutions(package, 13)
    if silent:
        source = (package / "dataloader.py").read_text()
        assert WARNING in source, "the pinned iterator's reference changed: update this test"
        (package / "dataloader.py").write_text(source.replace(WARNING, "(lambda *a, **k: None)(\""))
    suite = next(s for s in milestones()[13].suites if s.name == NAME)
    started = time.monotonic()
    step = _run_suite(suite, import_package(package), _pieces_up_to(13), package)
    assert time.monotonic() - started < 2 * suite.time_limit + 30
    return step


def test_the_reference_package_pins_or_warns_as_torch(tmp_path):
    step = run(tmp_path)
    assert step.status == PASSED, step


@pytest.mark.skipif(torch.cuda.is_available(), reason="with an accelerator torch does not warn")
def test_a_loader_that_does_not_warn_without_an_accelerator_is_refused(tmp_path):
    step = run(tmp_path, silent=True)
    assert step.status == FAILED
    assert "warnings about pin_memory" in str(step.rows), step
