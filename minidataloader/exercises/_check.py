"""``check``: run the reader's code and the reference on the hidden cases, and judge."""

from __future__ import annotations

import copy
import difflib
import signal
import traceback

from . import _sandbox as sandbox
from ._compare import Raised, difference, short
from ._framework import Case, Exercise, TooManyItems, exercises
from ._sandbox import (
    CAN_FORK,
    OUTPUT_KEPT,
    ChildReport,
    DelegationStop,
    OutputFlood,
    install_tripwires,
    is_readers_code,
    run_forked,
    run_inline,
    seed_everything,
    untouched_rng,
)
from ._verdict import FAILED, NOT_ATTEMPTED, PASSED, Verdict

INLINE_NOTE = (
    "checked in this process, without a time limit: this system has no os.fork (Windows). "
    "If a check never finishes, interrupt the kernel (the ■ button) and look for a loop that "
    "never ends.")
_inline_note_given = False


class ExerciseError(RuntimeError):
    """The exercise itself is broken (its reference failed): a bug in the book, not yours."""


def check(implementation, name: str | None = None) -> Verdict:
    """Check your function or class against the exercise of the same name.

    Your code runs on hidden cases in a separate process with a time limit, and its
    results are compared with the reference solution's. ``name`` picks the exercise when
    your function has another name. Returns a :class:`Verdict`: ✔ passed, ✘ failed (with
    the case, what was expected, what your code gave and a hint) or "not attempted yet".
    """
    name = name or getattr(implementation, "__name__", None)
    known = exercises()
    exercise = known.get(name) if isinstance(name, str) else None
    if exercise is None:
        return _unknown_exercise(name, known)
    with untouched_rng():  # even a careless case factory leaves the caller's RNGs alone
        cases = exercise.cases()
        expected = reference_results(exercise, cases)
        body = _reader_body(exercise, implementation, cases, expected)
        report = run_forked(body, exercise.time_limit) if CAN_FORK else run_inline(body)
    return _judge(exercise, cases, expected, report)


def reference_results(exercise: Exercise, cases: list[Case]) -> list:
    """What the reference gives on each case (a value, or :class:`Raised`)."""

    def body(send, printed):
        for index, case in enumerate(cases):
            seed_everything(exercise.seed + index)
            try:
                value = exercise.run(exercise.reference, case)
            except Exception as error:  # expected failures are outcomes too
                value = Raised(type(error), str(error))
            try:
                send(("case", index, value))
            except Exception as error:
                send(("error", index, f"its result cannot be sent back ({error})"))

    limit = max(10.0, 5 * exercise.time_limit)
    report = run_forked(body, limit) if CAN_FORK else run_inline(body)
    results = {index: value for kind, index, value in report.messages if kind == "case"}
    errors = [f"case {index}: {text}" for kind, index, text in report.messages if kind == "error"]
    if not report.finished or errors or len(results) != len(cases):
        how = (f"took longer than {limit:g} s" if report.timed_out else
               f"ended with exit code {report.exit_code}, signal {report.signal}"
               if not report.finished else "; ".join(errors))
        raise ExerciseError(f"the reference solution of exercise {exercise.name!r} failed: {how}"
                            f"\n{report.output}")
    return [results[index] for index in range(len(cases))]


def _reader_body(exercise: Exercise, implementation, cases: list[Case], expected: list):
    def body(send, printed):
        originals, fired, restore = install_tripwires(exercise.forbidden_names(), implementation)
        try:
            borrowed = _forbidden_base(implementation, originals)
            if borrowed:
                send(("delegated", borrowed))
                return
            for index, case in enumerate(cases):
                send(("start", index))
                outcome = _attempt(exercise, implementation, case, expected[index], fired,
                                   exercise.seed + index)
                send(("case", index, outcome))
                if outcome["status"] == "exit" or printed() > OUTPUT_KEPT:
                    return  # a flood of output is a verdict already: no need to wait for more
        finally:
            restore()

    return body


def _forbidden_base(implementation, originals: dict) -> str | None:
    """The forbidden piece the implementation is, or is built on (a subclass of it)."""
    if id(implementation) in originals:
        return originals[id(implementation)][1]
    for base in getattr(implementation, "__mro__", ())[1:]:
        if id(base) in originals:
            return originals[id(base)][1]
    return None


def _attempt(exercise: Exercise, implementation, case: Case, expected, fired: list,
             seed: int) -> dict:
    """Run one case of the reader's code and compare; returns a dict of plain strings."""
    try:
        pristine = copy.deepcopy(case.inputs)
    except Exception:  # inputs that cannot be copied are not checked for mutation
        pristine = None
    seed_everything(seed)
    fired.clear()
    where = ""
    try:
        got = exercise.run(implementation, case)
    except DelegationStop:
        got = None
    except SystemExit as stop:
        return {"status": "exit", "code": repr(stop.code)}
    except OutputFlood:
        return {"status": "flood"}
    except TooManyItems as error:
        return {"status": "endless", "got": f"an iterator with more than {error.limit:,} items",
                "problem": "it never stopped yielding: does your loop ever end?"}
    except KeyboardInterrupt:
        if not sandbox.in_child:
            raise  # inline (no fork): the reader interrupted the kernel
        got = Raised(KeyboardInterrupt, "")
    except BaseException as error:  # noqa: BLE001 - whatever the reader's code raised
        got = Raised(type(error), str(error))
        where = _readers_line(error)
    if fired:
        return {"status": "delegated", "problem": fired[0]}
    if isinstance(got, Raised) and issubclass(got.type, NotImplementedError) and not (
            isinstance(expected, Raised) and issubclass(got.type, expected.type)):
        return {"status": "not attempted", "got": "raised NotImplementedError",
                "problem": "this part still raises NotImplementedError"}
    try:
        problem = (exercise.compare or difference)(expected, got)
    except Exception as error:
        problem = f"could not compare the result with the expected one ({type(error).__name__}: {error})"
    if problem:
        if isinstance(got, Raised):
            problem = f"{got.type.__name__}: {got.message}" if not isinstance(expected, Raised) \
                else problem
            return {"status": "wrong", "got": f"raised {got.type.__name__}",
                    "problem": problem + (f", at {where}" if where else "")}
        return {"status": "wrong", "got": short(got), "problem": problem}
    changed = _changed_inputs(pristine, case.inputs)
    if changed:
        return {"status": "mutated", "problem": changed}
    return {"status": "ok"}


def _readers_line(error: BaseException) -> str:
    """Where in the reader's code an exception came from, e.g. "line 3 of f: return a / b"."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if is_readers_code(f.filename)]
    if not frames:
        return ""
    frame = frames[-1]
    code = f": {frame.line.strip()}" if frame.line else ""
    return f"line {frame.lineno} of {frame.name}{code}"


def _changed_inputs(pristine: dict | None, inputs: dict) -> str:
    if pristine is None:
        return ""
    for key, before in pristine.items():
        try:
            changed = difference(before, inputs[key])
        except Exception:
            continue
        if changed:
            return (f"your code changed its input `{key}` in place (before: {short(before, 70)}; "
                    f"after: {short(inputs[key], 70)}). Leave the inputs as they are: work on a "
                    f"copy, or build a new object")
    return ""


def _judge(exercise: Exercise, cases: list[Case], expected: list, report: ChildReport) -> Verdict:
    global _inline_note_given
    name = exercise.name
    verdict = Verdict(exercise=name, status=FAILED, summary="", output=report.output,
                      printed=report.printed)
    if not CAN_FORK and not _inline_note_given:
        verdict.note, _inline_note_given = INLINE_NOTE, True
    started = [index for kind, index, *_ in report.messages if kind == "start"]
    current = cases[started[-1]].describe() if started else ""
    outcomes = {index: outcome for kind, index, outcome in
                (m for m in report.messages if m[0] == "case")}
    delegated = [m[1] for m in report.messages if m[0] == "delegated"]

    if delegated:
        return _delegation(verdict, exercise, delegated[0], built_on=True)
    if report.timed_out:
        verdict.summary = f"{name} took longer than {exercise.time_limit:g} s and was stopped"
        verdict.case = current
        verdict.hint = ("look for a loop that never ends (a `while` whose condition stays true, "
                        "an iterator that never stops) or a long sleep; these cases need far less "
                        "time than that")
        return verdict
    if not report.finished:
        verdict.summary = f"the process running {name} ended before the check was done"
        verdict.case = current
        if report.signal is not None:
            signame = signal.Signals(report.signal).name
            description = signal.strsignal(report.signal) or signame
            verdict.problem = f"it was killed by signal {signame} ({description})"
            verdict.hint = ("a crash like this comes from C code (in torch, numpy or a library) "
                            "given something it cannot handle, or from running out of memory")
        else:
            verdict.problem = (f"it exited with status {report.exit_code}, as os._exit("
                               f"{report.exit_code}) does")
            verdict.hint = ("return your result instead of ending the process: os._exit and "
                            "sys.exit stop everything, the checker included")
        return verdict

    statuses = [outcomes[i]["status"] for i in sorted(outcomes)]
    if statuses and all(status == "not attempted" for status in statuses):
        verdict.status = NOT_ATTEMPTED
        verdict.summary = f"{name} still raises NotImplementedError"
        verdict.hint = ("replace `raise NotImplementedError` with your code, run that cell, "
                        "then run this check again")
        return verdict
    exits = [outcome for outcome in outcomes.values() if outcome["status"] == "exit"]
    if exits:
        verdict.summary = f"{name} called sys.exit({exits[0]['code']}), so the check stopped"
        verdict.case = current
        verdict.problem = ("sys.exit raises SystemExit, which ends the whole program (here, the "
                           "process running your code)")
        verdict.hint = "return your result instead of exiting"
        return verdict
    if report.printed > OUTPUT_KEPT:
        verdict.summary = f"{name} printed too much, so it was stopped"
        verdict.case = current
        verdict.problem = f"it printed more than the {OUTPUT_KEPT:,} characters a check allows"
        verdict.hint = "remove the print inside your loop (or print less), then check again"
        return verdict
    failures = [i for i in sorted(outcomes) if outcomes[i]["status"] != "ok"]
    if failures:
        index = failures[0]
        outcome = outcomes[index]
        if outcome["status"] == "delegated":
            return _delegation(verdict, exercise, outcome["problem"], built_on=False)
        right = statuses.count("ok")
        verdict.summary = f"{name}: {right} of {len(cases)} hidden cases right"
        verdict.case = cases[index].describe()
        verdict.problem = outcome["problem"]
        if outcome["status"] in ("wrong", "endless"):
            verdict.expected = short(expected[index])
            verdict.got = outcome["got"]
            verdict.hint = cases[index].hint or exercise.hint
        elif outcome["status"] == "mutated":
            verdict.hint = "the loader reads the same data again every epoch: it must not change"
        elif outcome["status"] == "not attempted":
            verdict.hint = "part of your code still raises NotImplementedError: finish that part"
        return verdict
    verdict.status = PASSED
    verdict.summary = f"{name} gave the right answer on all {len(cases)} hidden cases"
    return verdict


def _delegation(verdict: Verdict, exercise: Exercise, dotted: str, built_on: bool) -> Verdict:
    how = "is built on" if built_on else "used"
    verdict.summary = f"your code {how} {dotted}: this exercise asks you to build it yourself"
    allowed = ", ".join(exercise.allowed)
    verdict.hint = (f"write it with plain Python (and torch tensors){'; you may use ' + allowed if allowed else ''}")
    return verdict


def _unknown_exercise(name, known: dict) -> Verdict:
    if not isinstance(name, str):
        return Verdict(exercise="?", status=FAILED,
                       summary="check(...) needs your function or class, e.g. check(my_function)")
    close = difflib.get_close_matches(name, known, n=1)
    guess = f"did you mean {close[0]!r}? " if close else ""
    return Verdict(exercise=name, status=FAILED,
                   summary=f"there is no exercise called {name!r}",
                   hint=(f"{guess}If you renamed the function, give the exercise's name: "
                         f"check(my_function, name={(close or ['<exercise name>'])[0]!r})"))
