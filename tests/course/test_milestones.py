"""Milestones on learners' packages: the reference pieces pass (milestone 5 in this process,
and from a terminal with spawn; every milestone runs in its workbook, with fork and with spawn,
in tests/book/test_notebooks.py; spawned workers that import the learner's package from a
terminal: milestone 14's, tests/course/ch14/test_milestone14.py), the stubs are "not
attempted yet", and broken packages get the right verdict, naming the piece, within their
time limits, with no process left behind."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time

import pytest

import minidataloader_course.milestones as milestones_module
from minidataloader_course import milestone
from minidataloader_course.catalog import milestones, verdict_of
from minidataloader_course.learner import (
    ensure_package,
    fill_with_solutions,
    import_package,
    piece_exercises,
    reference_source,
    stub_region,
    write_piece,
)
from minidataloader_course.milestones import _pieces_up_to as piece_exercises_up_to
from tests.support.mp_procs import wait_gone

SLACK = 10.0  # seconds beyond the time limits a loaded machine may need


pytestmark = pytest.mark.usefixtures("no_process_left")  # tests/course/conftest.py

def solved(tmp_path, chapter: int = 5) -> pathlib.Path:
    package = tmp_path / "notebooks" / "myloader"
    fill_with_solutions(package, chapter)
    return package


def broken(tmp_path, piece: str, old: str, new: str) -> pathlib.Path:
    """The reference package with one piece changed: ``old`` replaced by ``new``."""
    package = solved(tmp_path)
    source = reference_source(piece_exercises()[piece][-1])
    assert old in source, f"{piece}'s reference changed: update this test"
    write_piece(package, piece, source.replace(old, new), force=True)
    return package


def test_the_reference_pieces_pass_milestone_5(tmp_path):
    verdict = milestone(5, solved(tmp_path))
    assert verdict.passed, str(verdict)
    text = str(verdict)
    assert text.startswith("✔ passed: milestone 5")
    assert "all 11 pass their checks" in text and "136 configurations" in text
    assert "the diabetes network, loss for loss" in text
    assert "mdl-milestone" in verdict._repr_html_()


def test_milestone_5_from_a_terminal_with_spawn(tmp_path):
    package = solved(tmp_path)
    done = subprocess.run([sys.executable, "-m", "minidataloader_course", "milestone", "5",
                           str(package), "--start-method", "spawn"],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("✔ passed: milestone 5")


def test_the_stubs_are_not_attempted_yet(tmp_path):
    package = tmp_path / "myloader"
    ensure_package(package)
    verdict = milestone(5, package)
    assert verdict.status == "not attempted" and "none of its pieces" in verdict.summary
    assert str(verdict).startswith("not attempted yet: milestone 5")


def test_pieces_still_the_stubs_wait_without_a_check(tmp_path, monkeypatch):
    """A learner who finished chapter 5 runs milestone 7: the pieces of chapters 6 and 7 are
    still the stubs, word for word, and are listed as not written without a check's run."""
    package = solved(tmp_path, 5)
    checked = []

    def counted(target, name):
        checked.append(name)
        return verdict_of(target, name=name)

    monkeypatch.setattr(milestones_module, "verdict_of", counted)
    text = str(milestone(7, package))
    assert sorted(checked) == sorted(e.name for e in piece_exercises_up_to(5).values())
    assert "11 of 14 pass their checks" in text and text.count("not written yet") == 3
    assert "worker_loop (worker.py):" in text
    stub = stub_region("worker.worker_loop")
    write_piece(package, "worker.worker_loop", stub.replace("raise NotImplementedError",
                                                            "raise NotImplementedError()"),
                force=True)  # no longer the stub word for word: checked, and not attempted
    checked.clear()
    text = str(milestone(7, package))
    assert "worker_loop, streams" in checked
    assert "11 of 14 pass their checks" in text and text.count("not written yet") == 3


def test_the_advice_names_the_piece_that_fails_on_its_own(tmp_path, monkeypatch):
    """generate_state is wrong, the worker loop that uses it right, and listed before it: the
    worker loop's check fails too. The advice is measured (each failing piece checked again
    with the reference versions of the others), not read off the order of the list."""
    package = solved(tmp_path, 7)
    source = reference_source(piece_exercises()["worker.generate_state"][-1])
    words = "[worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]"
    assert words in source, "generate_state's reference changed: update this test"
    write_piece(package, "worker.generate_state",
                source.replace(words, "[base_seed & 0xFFFFFFFF, base_seed >> 32, worker_id, 0]"),
                force=True)
    imported = []
    monkeypatch.setattr(milestones_module, "import_package",
                        lambda path: imported.append(import_package(path)) or imported[-1])
    verdict = milestone(7, package)
    text = str(verdict)
    pieces = verdict.steps[0]
    failed = [label for label, row in pieces.rows if row.startswith("✘")]
    assert failed == ["worker_loop (worker.py)", "generate_state (worker.py)"], text
    advice = dict(pieces.rows)["start"]
    assert advice.startswith("generate_state (worker.py): it fails its check even with the "
                             "reference versions of your other pieces"), text
    assert "worker_loop (worker.py) passes its check with the reference versions" in advice
    assert "start with the first" not in text and "in doubt" not in text
    for name, module in list(sys.modules.items()):  # every swap undone: the learner's own
        if name.startswith(imported[0].__name__ + "."):
            assert not [key for key, value in vars(module).items() if _made_by_a_swap(value)], name


def _made_by_a_swap(value) -> bool:
    functions = [value, *(vars(value).values() if isinstance(value, type) else ())]
    return any(getattr(f, "__code__", None) is not None
               and f.__code__.co_filename.startswith("<the reference") for f in functions)


def timed(package, limit: float):
    start = time.monotonic()
    verdict = milestone(5, package)
    assert time.monotonic() - start < limit, f"verdict after {time.monotonic() - start:.0f} s"
    assert verdict.status == "failed", str(verdict)
    return str(verdict)


def test_a_sampler_off_by_one_is_named(tmp_path):
    package = broken(tmp_path, "sampler.SequentialSampler", "range(len(self.data_source))",
                     "range(1, len(self.data_source) + 1)")
    text = timed(package, 30 + SLACK)
    assert "SequentialSampler (sampler.py)" in text and "expected 0, got 1" in text
    assert "in doubt" not in text  # a plain mistake: nothing to rerun or report


def test_a_loader_that_delegates_to_torch_is_refused(tmp_path):
    package = broken(tmp_path, "dataloader.DataLoader", "return SingleProcessIterator(self)",
                     "import torch.utils.data\n"
                     "            return iter(torch.utils.data.DataLoader(\n"
                     "                self.dataset, batch_sampler=self.batch_sampler,\n"
                     "                collate_fn=self.collate_fn))")
    text = timed(package, 30 + SLACK)
    assert "DataLoader (dataloader.py)" in text
    assert "your code used torch.utils.data.DataLoader" in text


def test_an_iterator_that_never_stops_is_stopped(tmp_path):
    package = broken(tmp_path, "dataloader.SingleProcessIterator",
                     "return self.fetcher.fetch(next(self.indices))",
                     "while True:\n            pass")
    text = timed(package, 60 + SLACK)
    assert "SingleProcessIterator (dataloader.py)" in text and "took longer than" in text
    assert "in doubt: sure your code is right? Run the check again" in text  # a time limit


def test_a_piece_wrong_beyond_its_hidden_cases_is_found_by_swapping(tmp_path):
    """A RandomSampler that draws one extra permutation for datasets of 37 samples passes its
    own check (no hidden case has 37 samples); the random configurations catch it, and the
    swap of pieces names it."""
    package = broken(tmp_path, "sampler.RandomSampler", "        n = len(self.data_source)\n",
                     "        n = len(self.data_source)\n"
                     "        if n == 37:\n"
                     "            torch.randperm(n, generator=self.generator)\n")
    text = timed(package, 60 + SLACK)
    assert "all 11 pass their checks" in text
    assert "✘ 136 configurations" in text and "37 samples" in text
    assert "with the reference RandomSampler in place of yours" in text
    assert "· the diabetes network, loss for loss: after the step above passes" in text


def test_a_package_that_does_not_import(tmp_path):
    package = solved(tmp_path)
    (package / "fetch.py").write_text((package / "fetch.py").read_text() + "\ndef broken(:\n")
    verdict = milestone(5, package)
    assert verdict.status == "failed" and "does not import: SyntaxError" in verdict.summary


def test_an_iterator_that_leaves_processes_behind_leaves_none_after_the_milestone(tmp_path):
    """Milestone 5 does not judge processes (milestone 10 does), but whatever the learner's
    loader starts is gone when the verdict arrives."""
    started = tmp_path / "started"
    package = broken(tmp_path, "dataloader.SingleProcessIterator",
                     "        self.loader = loader\n",
                     "        self.loader = loader\n"
                     "        import multiprocessing, os, time\n"
                     "        if not hasattr(SingleProcessIterator, 'helper'):  # once a process\n"
                     "            def linger():\n"
                     f"                with open({str(started)!r}, 'a') as file:\n"
                     "                    file.write(f'{os.getpid()}\\n')\n"
                     "                time.sleep(1000)\n"
                     "            SingleProcessIterator.helper = multiprocessing.get_context(\n"
                     "                'fork').Process(target=linger)\n"
                     "            SingleProcessIterator.helper.start()\n")
    milestone(5, package)
    pids = [int(line) for line in started.read_text().split()]
    assert pids, "the broken iterator started no process: this test tests nothing"
    wait_gone(pids, within=5.0)  # a killed process takes a moment to go


def test_the_milestones_are_declared(tmp_path):
    assert set(milestones()) == {5, 7, 10, 11, 13, 14, 15}
    assert milestone(6, solved(tmp_path)).summary.startswith("there is no milestone 6")


# ---------------------------------------------------------------------------------------
# Milestones 7 and 10: the learner's loader with worker processes


def broken_in(tmp_path, chapter: int, exercise: str, old: str, new: str) -> pathlib.Path:
    """The package of a learner who finished ``chapter``, with one piece changed."""
    package = solved(tmp_path, chapter)
    asked = next(e for e in piece_exercises()[piece_of(exercise)] if e.name == exercise)
    source = reference_source(asked)
    assert old in source, f"{exercise}'s reference changed: update this test"
    write_piece(package, asked.piece, source.replace(old, new), force=True)
    return package


def piece_of(exercise: str) -> str:
    return next(piece for piece, asking in piece_exercises().items()
                if exercise in [e.name for e in asking])


def timed_milestone(number: int, package, limit: float) -> str:
    start = time.monotonic()
    verdict = milestone(number, package)
    assert time.monotonic() - start < limit, f"verdict after {time.monotonic() - start:.0f} s"
    assert verdict.status == "failed", str(verdict)
    return str(verdict)


def test_a_worker_loop_that_never_stops_is_named(tmp_path):
    package = broken_in(tmp_path, 7, "worker_loop, streams",
                        "        if task is None:\n            return\n",
                        "        if task is None:\n            continue\n")
    text = timed_milestone(7, package, 90 + SLACK)
    assert "worker_loop (worker.py)" in text and "None sentinel" in text


def test_an_iterator_that_leaves_processes_behind_is_named(tmp_path):
    package = broken_in(tmp_path, 10, "MultiProcessIterator, guarded",
                        "    def __del__(self):", "    def _never_called(self):")
    text = timed_milestone(10, package, 120 + SLACK)
    assert "MultiProcessIterator (dataloader.py)" in text and "__del__" in text


def test_a_reorder_buffer_that_reads_everything_first_is_named(tmp_path):
    """It gives torch's batches, and passes its chapter 7 check: the milestone's
    "batch 0 as soon as it arrives" finds it, and the swap of pieces names it."""
    package = broken_in(
        tmp_path, 7, "MultiProcessIterator, streams",
        "    def _hand_out(self, number, data):\n",
        "    def _hand_out(self, number, data):\n"
        "        while len(self.waiting) < self.sent - self.next_number - 1 and not isinstance(\n"
        "                self.loader.dataset, IterableDataset):  # the others first (streams: no)\n"
        "            early, early_data = self._get()\n"
        "            self.waiting[early] = early_data\n")
    text = timed_milestone(7, package, 150 + SLACK)
    assert "✘ batch 0 as soon as it arrives" in text
    assert "with the reference MultiProcessIterator in place of yours" in text


def test_a_loader_with_workers_that_delegates_to_torch_is_refused(tmp_path):
    package = broken_in(tmp_path, 7, "DataLoader",
                        "        return MultiProcessIterator(self)",
                        "        import torch.utils.data\n"
                        "        return iter(torch.utils.data.DataLoader(\n"
                        "            self.dataset, batch_sampler=self.batch_sampler,\n"
                        "            num_workers=self.num_workers, collate_fn=self.collate_fn))")
    text = timed_milestone(7, package, 90 + SLACK)
    assert "your code used torch.utils.data.DataLoader" in text
    assert "look at your DataLoader, in myloader/dataloader.py" in text


# ---------------------------------------------------------------------------------------
# Milestone 13: the capstone's training runs, persistent workers and the pinning path


def test_persistent_workers_reseeded_every_epoch_are_named(tmp_path):
    """A _reset that draws a new base seed: the pieces' own checks pass, but the run's
    global generator is one draw ahead from the second epoch on."""
    package = broken_in(tmp_path, 13, "MultiProcessIterator, guarded",
                        "        self.indices = iter(self.index_sampler)\n",
                        "        self.indices = iter(self.index_sampler)\n"
                        "        if not first_iter:\n"
                        "            self.base_seed = torch.empty((), dtype=torch.int64).random_(\n"
                        "                generator=loader.generator).item()\n")
    text = timed_milestone(13, package, 120 + SLACK)
    assert "all 20 pass their checks" in text and "✘ Run 1: the diabetes network" in text
    assert "the loss of every step[20]" in text  # the first step of the second epoch
    assert "with the reference MultiProcessIterator in place of yours" in text


def test_a_pin_path_that_is_skipped_is_named(tmp_path):
    package = broken_in(tmp_path, 13, "MultiProcessIterator, guarded",
                        'pin_fn = getattr(loader, "_pin_memory_fn", None)', "pin_fn = None")
    text = timed_milestone(13, package, 120 + SLACK)
    assert "batches given to the pin function: expected 60, got 0" in text
    assert "look at your MultiProcessIterator, in myloader/dataloader.py" in text


def test_a_loader_that_delegates_pinned_runs_to_torch_is_refused(tmp_path):
    """Delegation only where the pieces' checks do not go (a pinned loader): the runs'
    tripwires catch it."""
    package = broken_in(tmp_path, 13, "DataLoader, persistent",
                        "        if not self.persistent_workers:\n",
                        "        if self.pin_memory:\n"
                        "            import torch.utils.data\n"
                        "            return iter(torch.utils.data.DataLoader(\n"
                        "                self.dataset, batch_sampler=self.batch_sampler,\n"
                        "                num_workers=self.num_workers, collate_fn=self.collate_fn))\n"
                        "        if not self.persistent_workers:\n")
    text = timed_milestone(13, package, 120 + SLACK)
    assert "all 20 pass their checks" in text
    assert "your code used torch.utils.data.DataLoader" in text
