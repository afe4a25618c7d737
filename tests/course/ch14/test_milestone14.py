"""Milestone 14 on learners' packages: the reference pieces pass both suites, with fork and
with spawn (a training run of the learner's loader killed with SIGKILL mid-epoch and
resumed ends with torch's uninterrupted weights; a state that does not fit is refused);
broken packages get the right verdict, naming the piece, within their time limits; no
process is left behind. (The whole milestone, pieces first, runs in the chapter's workbook:
tests/book/test_notebooks.py.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap
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
from minidataloader_course.milestones import _check_pieces, _pieces_up_to, _run_suite

SLACK = 60.0  # seconds beyond a suite's time limits that a loaded machine may need
KILLED = "killed with SIGKILL in the middle of an epoch, resumed"
REFUSED = "a state that does not fit is refused"


pytestmark = pytest.mark.usefixtures("no_process_left")  # tests/course/conftest.py

def suite(name: str):
    return next(s for s in milestones()[14].suites if s.name == name)


def package_of(tmp_path, piece: str = "", old: str = "", new: str = ""):
    """The reference package of chapter 14, one piece changed (``old`` -> ``new``)."""
    package = tmp_path / "notebooks" / "myloader"
    fill_with_solutions(package, 14)
    if piece:
        source = reference_source(piece_exercises()[piece][-1])
        assert old in source, f"{piece}'s reference changed: update this test"
        write_piece(package, piece, source.replace(old, new), force=True)
    return package


def run(name: str, package):
    started = time.monotonic()
    step = _run_suite(suite(name), import_package(package), _pieces_up_to(14), package)
    # torch's side, the learner's, and a diagnosis that reruns the learner's at most twice
    assert time.monotonic() - started < 4 * suite(name).time_limit + SLACK
    return step


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", [REFUSED, KILLED])
def test_the_reference_package_passes(tmp_path, name):
    step = run(name, package_of(tmp_path))
    assert step.status == PASSED, step


SPAWNED = textwrap.dedent("""
    import multiprocessing, pathlib, sys
    if __name__ == "__main__":
        multiprocessing.set_start_method("spawn", force=True)
        from minidataloader_course.catalog import milestones
        from minidataloader_course.learner import import_package
        from minidataloader_course.milestones import _pieces_up_to, _run_suite
        package = pathlib.Path(sys.argv[1])
        suite = next(s for s in milestones()[14].suites if s.name == sys.argv[2])
        step = _run_suite(suite, import_package(package), _pieces_up_to(14), package)
        print(step.status, step.summary, step.rows)
""")


@pytest.mark.timeout(600)
def test_the_reference_package_passes_with_spawn(tmp_path):
    """Spawned workers import torch, the course and the learner's package: the pieces the
    workers run (InTheWorkers' methods) must pickle, and the package must be importable."""
    script = tmp_path / "spawned.py"
    script.write_text(SPAWNED)
    done = subprocess.run([sys.executable, str(script), str(package_of(tmp_path)), KILLED],
                          capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith(PASSED), done.stdout[-3000:]


@pytest.mark.timeout(600)
def test_batches_in_flight_sent_to_other_workers_are_named(tmp_path):
    """A ResumedBatches that leaves out the empty tasks for batch samplers of 6 batches
    passes its own check and ResumableEpochs' (no hidden case has 6 batches); resumed in
    the middle of the milestone's epochs of 6 batches, batch 9 goes to the wrong worker,
    the weights differ, and the diagnosis names the piece."""
    package = package_of(tmp_path, "resumable.ResumedBatches",
                         "        for _ in range(self.empty):\n",
                         "        for _ in range(0 if len(self.batch_sampler) == 6 else "
                         "self.empty):\n")
    step = run(KILLED, package)
    assert step.status == FAILED, step
    rows = dict(step.rows)
    assert "final weights" in rows["problem"], step
    assert "with the reference ResumedBatches in place of yours" in rows["the piece"], step


def test_forgetting_the_workers_states_is_named_by_the_pieces_own_check(tmp_path):
    package = package_of(tmp_path, "resumable.InTheWorkers",
                         "            set_random_states(self.states[worker_id])\n",
                         "            pass\n")
    pieces = {p: e for p, e in _pieces_up_to(14).items() if p == "resumable.InTheWorkers"}
    step = _check_pieces(import_package(package), pieces, set())
    assert step.status == FAILED, step
    failed = [label for label, row in step.rows if row.startswith("✘")]
    assert "InTheWorkers (resumable.py)" in failed, step


@pytest.mark.timeout(300)
def test_a_loader_that_takes_any_state_is_refused(tmp_path):
    package = package_of(tmp_path, "resumable.StatefulDataLoader",
                         "            if saved != value:\n", "            if False:\n")
    step = run(REFUSED, package)
    assert step.status == FAILED, step
    assert "accepted" in dict(step.rows)["got"] + dict(step.rows)["problem"], step


def test_the_milestones_of_chapters_14_and_15_run_from_a_terminal():
    done = subprocess.run([sys.executable, "-m", "minidataloader_course", "milestone", "--help"],
                          capture_output=True, text=True, timeout=120)
    listed = " ".join(done.stdout.split())
    assert "14 (your loader, killed with SIGKILL and resumed)" in listed
    assert "15 (the capstone: your loader on the recordings, fast and resumable)" in listed
