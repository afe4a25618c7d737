"""The exercise checker: every registered exercise against every kind of wrong code, plus the
framework's own promises (isolation, RNG, tripwires, the inline fallback, a real kernel).

The wrong code is built from each exercise's reference by wrapping or subclassing it, so an
exercise added in a later chapter is tested here without a line of new test code.
"""

from __future__ import annotations

import copy
import functools
import importlib
import inspect
import multiprocessing
import os
import pathlib
import random
import select
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch
from torch.utils.data import BatchSampler as ImportedBatchSampler
from torch.utils.data import TensorDataset
from torch.utils.data import random_split as ImportedRandomSplit

from minidataloader_course import Case, Exercise, check, exercises, register, take
from minidataloader_course.chapters.ch05.solution import MapFetcher
from minidataloader_course.checker import check as _check
from minidataloader_course.checker.sandbox import OUTPUT_KEPT, _CappedWriter, resolve, run_forked
from minidataloader_course.checker.verdict import ISSUES

EXERCISES = {name: ex for name, ex in exercises().items() if ex.chapter.startswith("ch")}
SLACK = 5.0  # seconds a verdict may arrive after the time limit: the reference solution runs
# first (worker processes included), and CI runs two test processes on two busy cores
HANG_LIMIT = 1.0  # the time limit code that never returns is checked with: the child is
# stopped the same way whatever the limit, and the exercises' own limits add up to minutes


# ---------------------------------------------------------------------------------------
# Wrong code, built from a reference


def perturb(value):
    """The same kind of value, but a wrong one."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "?"
    if isinstance(value, torch.Tensor):
        return value.logical_not() if value.dtype == torch.bool else value + 1
    if isinstance(value, np.ndarray):
        return value + 1
    if isinstance(value, list):
        return [perturb(v) for v in value] if value else [0]
    if isinstance(value, tuple):
        return tuple(perturb(v) for v in value) if value else (0,)
    if isinstance(value, dict):
        return {k: perturb(v) for k, v in value.items()} if value else {"wrong": 0}
    if inspect.isgenerator(value) or inspect.isgeneratorfunction(value):
        return (perturb(v) for v in value)
    if value is None:
        return 0
    return object()


def retype(value):
    """The same information in a value of another type."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return float(value)
    if isinstance(value, float):
        return str(value)
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return value.tolist()
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return list(value.items())
    if inspect.isgenerator(value):
        return (retype(v) for v in value)
    return "None" if value is None else repr(value)


def is_mutable(value) -> bool:
    return isinstance(value, (list, dict, set, bytearray, torch.Tensor, np.ndarray))


def mutate(value) -> None:
    """Change a mutable value in place."""
    if isinstance(value, list):
        value.append(None)
    elif isinstance(value, dict):
        value["changed"] = True
    elif isinstance(value, set):
        value.add(object())
    elif isinstance(value, bytearray):
        value.append(0)
    elif isinstance(value, torch.Tensor) and value.dtype == torch.bool:
        value.logical_not_()
    elif isinstance(value, (torch.Tensor, np.ndarray)):
        value += 1


def first_forbidden(exercise: Exercise) -> str:
    return next(name for name in exercise.forbidden_names() if resolve(name) is not None)


def call_forbidden(dotted: str) -> None:
    """What a reader who delegates does: look the piece up and call it. If no tripwire stops
    the call, the missing arguments raise TypeError, which is swallowed: the check must
    still catch the delegation."""
    module, _, attribute = dotted.rpartition(".")
    piece = getattr(importlib.import_module(module), attribute)
    try:
        piece()
    except Exception:
        pass


def _raise():
    raise ValueError("a deliberate mistake")


def _loop_forever():
    while True:
        pass


def _flood():
    for _ in range(10**6):
        print("x")


def _stub():
    raise NotImplementedError


# What each fault does before (or instead of) the reference's work.
FAULTS = {
    "raises": _raise,
    "infinite loop": _loop_forever,
    "sleep": lambda: time.sleep(1e9),
    "os._exit": lambda: os._exit(3),
    "sys.exit": lambda: sys.exit(2),
    "10**6 prints": _flood,
    "stub": _stub,
}
EXPECTED_TEXT = {
    "raises": "ValueError", "infinite loop": "took longer than", "sleep": "took longer than",
    "os._exit": "os._exit(3)", "sys.exit": "sys.exit(2)", "10**6 prints": "printed",
    "mutation": "changed its input", "delegation": "your code used",
    "wrong type": "", "wrong values": "", "infinite generator": "",
    "stub": "NotImplementedError",
}


def iterates(reference) -> bool:
    """A generator function, or a class whose instances are iterated (a sampler, an
    IterableDataset): then an endless iterator is one more kind of wrong code."""
    return inspect.isgeneratorfunction(reference) or (
        isinstance(reference, type) and getattr(reference, "__iter__", None) is not None)


def has_mutable_input(exercise: Exercise) -> bool:
    return any(is_mutable(v) for case in exercise.cases() for v in case.inputs.values())


def wrong_code(exercise: Exercise, kind: str):
    """A wrong implementation of ``exercise`` of the given kind, built from its reference."""
    reference = exercise.reference
    if isinstance(reference, type):
        return _wrong_class(exercise, reference, kind)

    if kind in FAULTS:
        fault = FAULTS[kind]

        def wrong(*args, **kwargs):
            fault()
            return reference(*args, **kwargs)
    elif kind == "wrong values":
        def wrong(*args, **kwargs):
            return perturb(reference(*args, **kwargs))
    elif kind == "wrong type":
        def wrong(*args, **kwargs):
            return retype(reference(*args, **kwargs))
    elif kind == "mutation":
        def wrong(*args, **kwargs):
            pristine = copy.deepcopy((args, kwargs))
            for value in [*args, *kwargs.values()]:
                mutate(value)
            return reference(*pristine[0], **pristine[1])
    elif kind == "delegation":
        dotted = first_forbidden(exercise)

        def wrong(*args, **kwargs):
            call_forbidden(dotted)
            return reference(*args, **kwargs)
    elif kind == "infinite generator":
        def wrong(*args, **kwargs):
            items = list(reference(*args, **kwargs))
            yield from items
            while True:
                yield items[-1] if items else [0]
    else:
        raise ValueError(kind)
    return functools.wraps(reference)(wrong)


def _wrong_class(exercise: Exercise, reference: type, kind: str) -> type:
    body = {}
    if kind in FAULTS or kind in ("mutation", "delegation"):
        fault = FAULTS.get(kind)
        dotted = first_forbidden(exercise) if kind == "delegation" else None

        def __init__(self, *args, **kwargs):
            if kind == "mutation":
                pristine = copy.deepcopy((args, kwargs))
                for value in [*args, *kwargs.values()]:
                    mutate(value)
                args, kwargs = pristine
            elif kind == "delegation":
                call_forbidden(dotted)
            else:
                fault()
            super(cls, self).__init__(*args, **kwargs)

        body["__init__"] = __init__
    elif kind in ("wrong values", "wrong type"):
        change = perturb if kind == "wrong values" else retype
        # a class a later chapter grows holds only what changes: its earlier versions too
        versions = [cls for cls in reversed(reference.__mro__)
                    if cls.__module__.startswith("minidataloader_course.chapters")]
        for name, attribute in [item for cls in versions for item in vars(cls).items()]:
            if inspect.isfunction(attribute) and name not in ("__init__", "__init_subclass__"):
                body[name] = (lambda f: lambda self, *a, **k: change(f(self, *a, **k)))(
                    getattr(reference, name))
    elif kind == "infinite generator":
        def __iter__(self):
            last = None
            for last in super(cls, self).__iter__():
                yield last
            while True:
                yield last

        body["__iter__"] = __iter__
    else:
        raise ValueError(kind)
    cls = type(reference.__name__, (reference,), body)
    return cls


def kinds_for(exercise: Exercise, sleeps: bool) -> list[str]:
    """Every kind of wrong code for every exercise; a sleep only for the exercise of each
    chapter with the longest time limit (its code does the most: workers, threads): the
    child is stopped as it is for an endless loop, so one sleeping implementation per
    chapter shows that a hang in that chapter's kind of code is stopped too."""
    kinds = ["raises", "wrong type", "wrong values", "infinite loop", "os._exit",
             "sys.exit", "10**6 prints", "mutation", "delegation", "stub"]
    if sleeps:
        kinds.append("sleep")
    if iterates(exercise.reference):
        kinds.append("infinite generator")
    return kinds


SLOWEST_OF_EACH_CHAPTER = {
    chapter: max((ex.time_limit, name) for name, ex in EXERCISES.items()
                 if ex.chapter == chapter)[1]
    for chapter in {ex.chapter for ex in EXERCISES.values()}}
ROBUSTNESS = [(name, kind) for name, ex in EXERCISES.items()
              for kind in kinds_for(ex, SLOWEST_OF_EACH_CHAPTER[ex.chapter] == name)]


# ---------------------------------------------------------------------------------------
# Every exercise: the reference passes, wrong code fails in time


def test_the_book_has_exercises():
    assert len(EXERCISES) >= 5, sorted(EXERCISES)


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_every_rule_names_hidden_cases_that_exist(name):
    """The rules an exercise declares (course/EXERCISES.md is made from them): every one has a
    case, every case number is one of the exercise's, and every case tests some rule."""
    exercise = EXERCISES[name]
    count = len(exercise.cases())
    assert exercise.rules, f"{name} declares no rules"
    for rule in exercise.rules:
        assert rule.cases and all(1 <= n <= count for n in rule.cases), (
            f"{name}: rule {rule.text!r} names cases {rule.cases}; there are {count}")
    untested = set(range(1, count + 1)) - {n for rule in exercise.rules for n in rule.cases}
    assert not untested, f"{name}: cases {sorted(untested)} test no declared rule"


# Each reference passing is tested where a learner writes it, outside the package:
# tests/course/checker/test_learner_answers.py.


@pytest.mark.parametrize(("name", "kind"), ROBUSTNESS, ids=[f"{n}-{k}" for n, k in ROBUSTNESS])
def test_wrong_code_gets_a_verdict_in_time(name, kind, monkeypatch):
    exercise = EXERCISES[name]
    if kind == "mutation" and not has_mutable_input(exercise):
        pytest.skip(f"{name}'s inputs are all immutable: there is nothing to mutate")
    if kind in ("infinite loop", "sleep"):
        monkeypatch.setattr(exercise, "time_limit", min(exercise.time_limit, HANG_LIMIT))
    implementation = wrong_code(exercise, kind)
    start = time.monotonic()
    verdict = check(implementation, name=name)
    elapsed = time.monotonic() - start
    expected_status = "not attempted" if kind == "stub" else "failed"
    assert verdict.status == expected_status, f"{kind}: {verdict}"
    assert elapsed <= exercise.time_limit + SLACK, f"{kind}: verdict after {elapsed:.1f} s"
    text = str(verdict)
    assert EXPECTED_TEXT[kind] in text, f"{kind}: {text}"
    if expected_status == "failed":
        assert text.startswith("✘ failed"), text
        assert verdict.problem or verdict.got or verdict.hint, text
    else:
        assert text.startswith("not attempted yet"), text


# ---------------------------------------------------------------------------------------
# The expected results: computed once for an exercise and its cases, again when either changes


def _logging_reference(log: pathlib.Path):
    """A reference that notes each case it runs in ``log`` (it runs in a child process)."""
    def reference(n):
        with open(log, "a") as file:
            file.write(f"{n} ")
        return [n, 2 * n]

    return reference


def doubled(n):  # the reader's right answer, which notes nothing
    return [n, 2 * n]


def reference_runs(log: pathlib.Path) -> list[int]:
    return [int(n) for n in log.read_text().split()] if log.exists() else []


def test_a_second_check_on_the_same_cases_reuses_the_expected_results(tmp_path):
    """The cases hold a tensor, made afresh by each call of the factory: equal tensors can
    pickle to different bytes, and must still count as the same case."""
    log = tmp_path / "log"
    register(Exercise(reference=_logging_reference(log), name="test_reused", time_limit=5,
                      cases=lambda: [Case({"n": 3, "weights": torch.arange(3.0)}),
                                     Case({"n": 1, "weights": torch.ones(2, 2)})],
                      run=lambda function, case: function(case.inputs["n"])))
    assert check(doubled, name="test_reused").passed
    assert reference_runs(log) == [3, 1]
    assert check(doubled, name="test_reused").passed
    assert check(lambda n: [n, n], name="test_reused").status == "failed"
    assert reference_runs(log) == [3, 1], "the reference ran again for the same cases"

    register(Exercise(reference=_logging_reference(log), name="test_reused", time_limit=5,
                      cases=lambda: [Case({"n": 3}), Case({"n": 1})]))
    assert check(doubled, name="test_reused").passed
    assert reference_runs(log) == [3, 1, 3, 1], "a re-registered exercise reused old results"


def test_fresh_inputs_get_fresh_expected_results(tmp_path):
    log = tmp_path / "log"
    draws = iter([torch.tensor([5.0]), torch.tensor([7.0]), torch.tensor([7.0])])
    register(Exercise(reference=_logging_reference(log), name="test_fresh", time_limit=5,
                      cases=lambda: [Case({"n": int(next(draws))})]))
    assert check(doubled, name="test_fresh").passed
    assert check(doubled, name="test_fresh").passed  # 7, not the 5 of the first check
    assert check(doubled, name="test_fresh").passed
    assert reference_runs(log) == [5, 7]


def test_another_start_method_gets_fresh_expected_results(tmp_path):
    log = tmp_path / "log"
    register(Exercise(reference=_logging_reference(log), name="test_start_method", time_limit=5,
                      cases=lambda: [Case({"n": 4})]))
    before = multiprocessing.get_start_method(allow_none=True)
    try:
        assert check(doubled, name="test_start_method").passed
        multiprocessing.set_start_method("spawn" if before != "spawn" else "fork", force=True)
        assert check(doubled, name="test_start_method").passed
    finally:
        multiprocessing.set_start_method(before, force=True)
    assert reference_runs(log) == [4, 4]


def test_cases_that_cannot_be_pickled_get_fresh_expected_results(tmp_path):
    log = tmp_path / "log"
    register(Exercise(reference=_logging_reference(log), name="test_unpicklable", time_limit=5,
                      cases=lambda: [Case({"n": 6,
                                           "lock": multiprocessing.get_context("fork").Lock()})],
                      run=lambda function, case: function(case.inputs["n"])))
    assert check(doubled, name="test_unpicklable").passed
    assert check(doubled, name="test_unpicklable").passed
    assert reference_runs(log) == [6, 6]


# ---------------------------------------------------------------------------------------
# Isolation: the caller's state


def _state():
    return random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state()


def test_callers_rng_state_is_untouched_and_both_sides_see_the_same_seeds():
    def reference(n):
        return [random.random(), float(np.random.rand()), torch.rand(n).tolist()]

    register(Exercise(reference=reference, cases=lambda: [Case({"n": 3}), Case({"n": 1})],
                      name="test_random_draws", time_limit=5))

    def test_random_draws(n):  # the reader's copy: passes only if seeded identically
        torch.rand(1000)  # and consumes the state differently afterwards: irrelevant
        return None

    random.seed(5)
    np.random.seed(5)
    torch.manual_seed(5)
    before = _state()
    assert check(reference, name="test_random_draws").passed
    wrong = check(test_random_draws)
    assert wrong.status == "failed"
    after = _state()
    assert before[0] == after[0]
    assert np.array_equal(before[1], after[1])
    assert torch.equal(before[2], after[2])


def test_the_callers_inputs_and_torch_are_untouched():
    exercise = EXERCISES["TabularDataset"]
    verdict = check(wrong_code(exercise, "mutation"), name="TabularDataset")
    assert "changed its input `table`" in verdict.problem
    assert check(exercise.reference).passed  # fresh cases: the mutation did not persist
    assert torch.utils.data.DataLoader.__module__ == "torch.utils.data.dataloader"
    assert isinstance(torch.utils.data.BatchSampler, type)  # no tripwire left in the parent


@pytest.mark.timeout(120)
def test_parallel_torch_in_the_readers_code_after_the_kernel_used_its_threads():
    # A kernel that trained a model has OpenMP threads; the forked checker has none of them.
    code = textwrap.dedent("""
        import torch
        from minidataloader_course.checker.sandbox import run_forked
        torch.set_num_threads(2)
        (torch.ones(2**23) * 2).sum()  # the kernel's thread pool starts here
        report = run_forked(lambda send, printed: send(("sum", float(torch.ones(2**22).sum()))), 20)
        print(report.timed_out, report.messages)
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=100)
    assert run.stdout.split() == ["False", "[('sum',", "4194304.0)]"], run.stdout + run.stderr


def a_select_that_sees_nothing_in_time(monkeypatch) -> None:
    """A parent kept off the CPU: each select that waits waits out its timeout and sees
    nothing, though the child's messages arrive meanwhile; a select that does not wait works."""
    real_select = select.select

    def select_that_sees_nothing_in_time(readers, writers, errors, timeout=None):
        if timeout:
            time.sleep(timeout)
            return [], [], []
        return real_select(readers, writers, errors, timeout)

    monkeypatch.setattr(select, "select", select_that_sees_nothing_in_time)


def test_what_a_child_sent_just_before_it_ended_is_read(monkeypatch):
    """On a loaded machine the child can send its last messages and "done", and end, between
    a select of the parent that saw nothing yet and its waitpid: the pipe is read once more."""
    a_select_that_sees_nothing_in_time(monkeypatch)
    report = run_forked(lambda send, printed: send(("case", 0, "the last outcome")), 20)
    assert report.finished and not report.timed_out, report
    assert report.messages == [("case", 0, "the last outcome")]


def test_the_time_limit_counts_from_the_readers_code_not_from_the_fork(monkeypatch):
    """Forking a big kernel and the child's first steps are the checker's, and on a busy
    machine they can take much of a short limit: they must not be counted against it."""
    real_set_num_threads = torch.set_num_threads

    def slow_start(threads):  # the child's setup calls it before the body runs
        time.sleep(1.5)
        real_set_num_threads(threads)

    monkeypatch.setattr(torch, "set_num_threads", slow_start)
    report = run_forked(lambda send, printed: send(("case", 0, "quick")), 1.0)
    assert report.finished and not report.timed_out, report
    assert report.messages == [("case", 0, "quick")]
    assert report.elapsed > 1.5

    def never_ends(send, printed):  # the limit still holds once the body runs
        send(("start", 0))
        time.sleep(60)

    report = run_forked(never_ends, 1.0)
    assert report.timed_out and report.ready and 1.5 < report.elapsed < 10, report


def test_a_child_stuck_before_the_readers_code_is_started_once_more(monkeypatch, tmp_path):
    """A child that never got as far as the reader's code (say, a lock another thread of the
    kernel held at the fork) says nothing about that code: it is killed and run once more."""
    real_set_num_threads = torch.set_num_threads
    first_start = tmp_path / "first start"

    def stuck_the_first_time(threads):
        if not first_start.exists():
            first_start.touch()
            time.sleep(60)
        real_set_num_threads(threads)

    monkeypatch.setattr("minidataloader_course.checker.sandbox._STARTUP", 0.5)
    monkeypatch.setattr(torch, "set_num_threads", stuck_the_first_time)
    report = run_forked(lambda send, printed: send(("case", 0, "ran")), 1.0)
    assert report.finished and report.ready and not report.timed_out, report
    assert report.messages == [("case", 0, "ran")]

    def stuck_always(threads):
        time.sleep(60)

    monkeypatch.setattr(torch, "set_num_threads", stuck_always)
    start = time.monotonic()
    report = run_forked(lambda send, printed: send(("case", 0, "ran")), 1.0)
    assert report.timed_out and not report.ready and not report.messages, report
    assert time.monotonic() - start < 5  # twice the startup allowance, not more


def test_a_parent_kept_off_the_cpu_past_the_deadline_still_reads_done(monkeypatch):
    """The child finished in time, but the parent wakes only after the deadline: what waits
    in the pipe is read before the child is called late."""
    def finishes_then_lingers(send, printed):
        send(("case", 0, "in time"))
        send(("done", 0))
        time.sleep(60)  # alive at the deadline, so waitpid cannot tell the parent it ended

    a_select_that_sees_nothing_in_time(monkeypatch)
    monkeypatch.setattr("minidataloader_course.checker.sandbox._STARTUP", 0.3)
    report = run_forked(finishes_then_lingers, 0.3)
    assert report.finished and not report.timed_out, report
    assert report.messages == [("case", 0, "in time")]


def test_processes_started_by_the_readers_code_are_ended(tmp_path):
    pid_file = tmp_path / "grandchild"

    def iterations_per_epoch(dataset_size, batch_size, drop_last=False):
        pid = os.fork()
        if pid == 0:  # a grandchild that holds the result pipe open and outlives its parent
            time.sleep(1e9)
        pid_file.write_text(str(pid))
        os._exit(0)

    start = time.monotonic()
    verdict = check(iterations_per_epoch)
    assert time.monotonic() - start < EXERCISES["iterations_per_epoch"].time_limit + SLACK
    assert "exited with status 0" in verdict.problem
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"process {grandchild}, started by the reader's code, is still running")


# ---------------------------------------------------------------------------------------
# Delegation: however the reader reaches torch's pieces


def test_delegation_through_a_name_imported_by_the_reader():
    def batch_indices(dataset_size, batch_size, drop_last=False):
        yield from ImportedBatchSampler(range(dataset_size), batch_size, drop_last)

    verdict = check(batch_indices)
    assert "your code used torch.utils.data.BatchSampler" in verdict.summary, str(verdict)


def test_delegation_through_a_closure_and_a_default_argument():
    sampler = torch.utils.data.BatchSampler

    def batch_indices(dataset_size, batch_size, drop_last=False):
        yield from sampler(range(dataset_size), batch_size, drop_last)

    assert "BatchSampler" in check(batch_indices).summary

    def batch_indices(dataset_size, batch_size, drop_last=False, make=ImportedBatchSampler):  # noqa: F811
        yield from make(range(dataset_size), batch_size, drop_last)

    assert "BatchSampler" in check(batch_indices).summary


def test_delegation_to_the_finished_piece_of_the_package():
    from minidataloader_course.viz.arithmetic import epoch_arithmetic

    def iterations_per_epoch(dataset_size, batch_size, drop_last=False):
        return epoch_arithmetic(dataset_size, batch_size, drop_last).iterations_per_epoch

    verdict = check(iterations_per_epoch)
    assert "minidataloader_course.viz.arithmetic.epoch_arithmetic" in verdict.summary, str(verdict)


def test_delegation_caught_even_when_the_reader_swallows_every_exception():
    def iterations_per_epoch(dataset_size, batch_size, drop_last=False):
        try:
            return len(torch.utils.data.DataLoader(range(dataset_size), batch_size=batch_size,
                                                   drop_last=drop_last))
        except BaseException:  # noqa: BLE001 - the point of the test
            return dataset_size // batch_size + (dataset_size % batch_size > 0 and not drop_last)

    assert "torch.utils.data.DataLoader" in check(iterations_per_epoch).summary


def test_an_allowed_piece_uses_forbidden_ones_as_it_likes():
    # torch's random_split builds Subsets, and Subset.__init__ compares
    # type(self).__getitem__ with Subset.__getitem__: library code gets the originals
    def split_sizes(n):
        parts = torch.utils.data.random_split(range(n), [0.5, 0.5],
                                              generator=torch.Generator().manual_seed(0))
        return [sorted(part) for part in parts]

    register(Exercise(reference=split_sizes, cases=lambda: [Case({"n": 10})],
                      allowed=("random_split",)))
    assert "Subset" in " ".join(exercises()["split_sizes"].forbidden_names())

    def learners_split_sizes(n):
        return [sorted(part) for part in ImportedRandomSplit(
            range(n), [0.5, 0.5], generator=torch.Generator().manual_seed(0))]

    verdict = check(learners_split_sizes, name="split_sizes")
    assert verdict.passed, str(verdict)


def test_building_on_a_forbidden_class_is_delegation_and_allowed_bases_are_fine():
    class TabularDataset(TensorDataset):
        def __init__(self, table):
            super().__init__(table[:, :-1], table[:, -1:])

    verdict = check(TabularDataset)
    assert "is built on torch.utils.data.TensorDataset" in verdict.summary, str(verdict)
    assert "Dataset" in verdict.hint
    assert "is built on" in check(TensorDataset, name="TabularDataset").summary
    # the reference subclasses the allowed Dataset, and the checker itself may use DataLoader
    assert check(EXERCISES["TabularDataset"].reference).passed


# ---------------------------------------------------------------------------------------
# What a reader sees


def test_not_implemented_by_a_library_is_a_wrong_answer_not_an_unfinished_one():
    class SequentialSampler(torch.utils.data.Sampler):  # no __iter__: torch's Sampler raises
        def __init__(self, data_source):
            self.data_source = data_source

        def __len__(self):
            return len(self.data_source)

    verdict = check(SequentialSampler)
    assert verdict.status == "failed" and verdict.got == "raised NotImplementedError", str(verdict)
    assert "still raises" not in str(verdict) and "each epoch yields" in verdict.hint


def test_a_failure_shows_case_expected_got_and_a_hint():
    def last_batch_size(dataset_size, batch_size, drop_last=False):
        return dataset_size % batch_size  # forgets divisible sizes and drop_last

    verdict = check(last_batch_size)
    assert verdict.status == "failed"
    assert verdict.case == "dataset_size=12800, batch_size=128, drop_last=False"
    assert (verdict.expected, verdict.got) == ("128", "0")
    assert "divides" in verdict.hint
    text = str(verdict)
    for line in ("✘ failed: last_batch_size: ", "case:", "expected: 128", "got:      0", "hint:"):
        assert line in text, text


def test_an_exception_names_the_line_of_the_readers_code():
    def iterations_per_epoch(dataset_size, batch_size, drop_last=False):
        return [dataset_size][batch_size]

    verdict = check(iterations_per_epoch)
    assert verdict.got == "raised IndexError"
    assert "return [dataset_size][batch_size]" in verdict.problem


def test_prints_are_shown_and_a_little_printing_is_fine():
    reference = EXERCISES["iterations_per_epoch"].reference

    def iterations_per_epoch(dataset_size, batch_size, drop_last=False):
        print(f"n={dataset_size} <b>")
        os.write(1, b"raw bytes on fd 1\n")  # output that bypasses sys.stdout is captured too
        return reference(dataset_size, batch_size, drop_last)

    verdict = check(iterations_per_epoch)
    assert verdict.passed, str(verdict)
    assert "n=12800 <b>" in verdict.output and "raw bytes on fd 1" in verdict.output
    assert "n=12800 &lt;b&gt;" in verdict._repr_html_()


def test_the_verdicts_cells_are_left_aligned_whatever_the_notebooks_css():
    # JupyterLab's stylesheet right-aligns table cells: a long hint then wraps far from its label
    import re

    failed = check(wrong_code(EXERCISES["last_batch_size"], "wrong values"), name="last_batch_size")
    cells = re.findall(r"<td[^>]*>", failed._repr_html_())
    assert cells and all("text-align:left" in cell for cell in cells), cells


def test_the_flood_limit_is_what_the_verdict_says():
    assert f"{OUTPUT_KEPT:,}" in check(wrong_code(EXERCISES["last_batch_size"], "10**6 prints"),
                                       name="last_batch_size").problem


def test_a_doubting_reader_is_told_where_to_report_when_the_machine_may_be_at_fault():
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((pathlib.Path(__file__).resolve().parents[3] / "_config.yml").read_text())
    assert ISSUES == config["repository"]["url"].rstrip("/") + "/issues"
    exercise = EXERCISES["iterations_per_epoch"]
    for kind in ("sleep", "os._exit"):  # a time limit ran out; the child ended unexpectedly
        failed = check(wrong_code(exercise, kind), name="iterations_per_epoch")
        assert failed.status == "failed" and failed.in_doubt, str(failed)
        assert "in doubt:" in str(failed) and "run the check again" in str(failed).lower()
        assert ISSUES in str(failed) and ISSUES in failed._repr_html_()
    assert "in doubt" not in str(check(exercise.reference))


@pytest.mark.parametrize("kind", ["wrong values", "wrong type", "raises",
                                  "delegation", "sys.exit", "10**6 prints"])
def test_a_plain_mistake_gets_no_in_doubt_paragraph(kind):
    """A wrong answer is the learner's to fix: "report it" would only cast doubt on a right
    verdict."""
    failed = check(wrong_code(EXERCISES["last_batch_size"], kind), name="last_batch_size")
    assert failed.status == "failed" and not failed.in_doubt, str(failed)
    assert "in doubt" not in str(failed) and ISSUES not in failed._repr_html_()


def test_a_comparison_that_fails_is_the_checkers_doubt():
    def failing_compare(expected, got):
        raise TypeError("unorderable")

    register(Exercise(reference=lambda n: n, name="test_uncomparable", compare=failing_compare,
                      cases=lambda: [Case({"n": 1})], time_limit=5))
    failed = check(lambda n: n, name="test_uncomparable")
    assert "could not compare" in failed.problem and failed.in_doubt, str(failed)
    assert "in doubt:" in str(failed)


def test_verdict_html_is_self_contained_and_coloured():
    for verdict in (check(EXERCISES["iterations_per_epoch"].reference),
                    check(wrong_code(EXERCISES["iterations_per_epoch"], "wrong values"),
                          name="iterations_per_epoch")):
        page = verdict._repr_html_()
        assert page.startswith('<div class="mdl-verdict mdl-') and "border-left" in page
        # the only address is the one a doubting reader reports to: text, nothing loads
        assert "http" not in page.replace(ISSUES, "") and "<script" not in page
        assert "src=" not in page


def test_unknown_names_get_a_suggestion():
    def iterations_per_epok(dataset_size, batch_size, drop_last=False):
        return 0

    verdict = check(iterations_per_epok)
    assert verdict.status == "failed" and "iterations_per_epoch" in verdict.hint
    assert "needs your function" in check(42).summary
    assert check(iterations_per_epok, name="iterations_per_epoch").status == "failed"


def test_take_stops_endless_iterators():
    assert take(iter(range(3)), limit=3) == [0, 1, 2]
    with pytest.raises(Exception, match="past 3 items"):
        take(iter(int, 1), limit=3)


def test_exercise_names_are_unique_across_the_book():
    reference = EXERCISES["iterations_per_epoch"].reference

    def clash():
        pass

    clash.__module__ = "minidataloader_course.chapters.ch99.solution"
    clash.__name__ = "iterations_per_epoch"
    with pytest.raises(ValueError, match="unique across the book"):
        register(Exercise(reference=clash, cases=list))
    assert exercises()["iterations_per_epoch"].reference is reference


# ---------------------------------------------------------------------------------------
# Without fork (Windows): inline, no time limit, said once


def test_inline_mode_without_fork(monkeypatch):
    monkeypatch.setattr(_check, "CAN_FORK", False)
    monkeypatch.setattr(_check, "_inline_note_given", False)
    torch.manual_seed(7)
    before = torch.get_rng_state()
    first = check(EXERCISES["batch_indices"].reference)
    assert first.passed, str(first)
    assert "without a time limit" in first.note
    wrong = check(wrong_code(EXERCISES["batch_indices"], "wrong values"), name="batch_indices")
    assert wrong.status == "failed" and wrong.note == ""  # the note is given once
    delegated = check(wrong_code(EXERCISES["batch_indices"], "delegation"), name="batch_indices")
    assert "your code used" in delegated.summary
    printed = check(wrong_code(EXERCISES["batch_indices"], "10**6 prints"), name="batch_indices")
    assert "printed" in printed.problem
    assert not isinstance(sys.stdout, _CappedWriter) and not isinstance(sys.stderr, _CappedWriter)
    assert torch.equal(before, torch.get_rng_state())
    assert isinstance(torch.utils.data.BatchSampler, type)  # tripwires removed again


# ---------------------------------------------------------------------------------------
# In a real Jupyter kernel: the kernel survives whatever the reader's code does


KERNEL_CELLS = [
    "import os, sys\nfrom minidataloader_course import check",
    "def iterations_per_epoch(dataset_size, batch_size, drop_last=False):\n    os._exit(3)\n"
    "check(iterations_per_epoch)",
    "def iterations_per_epoch(dataset_size, batch_size, drop_last=False):\n    sys.exit(2)\n"
    "check(iterations_per_epoch)",
    "def iterations_per_epoch(dataset_size, batch_size, drop_last=False):\n"
    "    for _ in range(10**6):\n        print('x')\n    return 0\ncheck(iterations_per_epoch)",
    "def iterations_per_epoch(dataset_size, batch_size, drop_last=False):\n    while True:\n"
    "        pass\ncheck(iterations_per_epoch)",
    "from minidataloader_course.chapters.ch01.solution import iterations_per_epoch\n"
    "print('kernel alive', os.getpid())\ncheck(iterations_per_epoch)",
    # the fetcher calls the collate_fn a case hands over (torch's default_collate), while
    # the notebook also imported that piece: passed; calling the piece itself: delegation
    "from torch.utils.data import default_collate\n" + inspect.getsource(MapFetcher)
    + "check(MapFetcher)",
    inspect.getsource(MapFetcher).replace(
        "return self.collate_fn(samples)", "return default_collate(samples)")
    + "check(MapFetcher)",
]
KERNEL_EXPECTED = [None, "os._exit(3)", "sys.exit(2)", "printed", "took longer than", "✔ passed",
                   "✔ passed", "your code used torch.utils.data.default_collate"]


def test_a_real_kernel_survives_the_readers_code(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(textwrap.dedent(c)) for c in KERNEL_CELLS])
    client = nbclient.NotebookClient(notebook, timeout=60, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    kernel_pids = set()
    for cell, expected in zip(notebook.cells, KERNEL_EXPECTED):
        texts = [o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in cell.outputs]
        text = "\n".join(texts)
        if expected is None:
            continue
        assert expected in text, f"cell {cell.source!r} printed {text!r}"
        printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        assert "✔" not in printed and "✘" not in printed, "in Jupyter the verdict is only displayed"
        if expected != "✔ passed":
            assert "✘ failed" in text
        kernel_pids.update(line.split()[-1] for line in text.splitlines()
                           if line.startswith("kernel alive"))
    assert len(kernel_pids) == 1  # the last cell ran in the same, still living, kernel


def test_an_input_changed_near_the_end_of_a_long_list_shows_where():
    """Cut to the same length from their start, a long list before and after a change near
    its end look the same: the verdict says where they differ, and shows that place."""
    def first_half(order):
        return order[:len(order) // 2]

    register(Exercise(reference=first_half, name="test_long_input", time_limit=5,
                      cases=lambda: [Case({"order": list(range(500))})]))

    def test_long_input(order):
        order[-2] = -1
        return order[:len(order) // 2]

    failed = check(test_long_input)
    assert failed.status == "failed" and "changed its input `order` in place" in failed.problem
    assert "[498]: it was 498, it became -1" in failed.problem, failed.problem
    before = failed.problem.split("before: ")[1].split("; after: ")[0]
    after = failed.problem.split("; after: ")[1].split(")")[0]
    assert before != after and "498" in before and "-1" in after, failed.problem
