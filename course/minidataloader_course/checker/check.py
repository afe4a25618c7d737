"""``check``: run the reader's code and the reference on the hidden cases, and judge."""

from __future__ import annotations

import copy
import enum
import io
import multiprocessing
import os
import pickle
import signal
import traceback
from dataclasses import dataclass

import torch

from minidataloader_course.checker import sandbox
from minidataloader_course.checker.framework import Case, Exercise, TooManyItems
from minidataloader_course.checker.sandbox import (
    CAN_FORK,
    OUTPUT_KEPT,
    ChildReport,
    DelegationStop,
    OutputFlood,
    install_tripwires,
    is_readers_code,
)
from minidataloader_course.checker.verdict import (
    FAILED,
    IF_IN_DOUBT,
    NOT_ATTEMPTED,
    PASSED,
    Verdict,
)
from minidataloader_course.shared.compare import (
    Raised,
    difference,
    seed_everything,
    short,
    untouched_rng,
)

INLINE_NOTE = (
    "checked in this process, without a time limit: this system has no os.fork (Windows). "
    "If a check never finishes, interrupt the kernel (the ■ button) and look for a loop that "
    "never ends.")
_inline_note_given = False
PARITY_NOTE = ("what is left is torch's exact behaviour, not the idea; the milestones compare "
               "your loader with torch, so they need it too")


class Outcome(str, enum.Enum):
    """What happened to the reader's code: on one case (found in the child), or to the whole
    run (found by the parent). Every outcome has its wording in WORDING."""

    RIGHT = "right"  # one case right
    WRONG = "wrong"  # a wrong value, or the wrong exception
    ENDLESS = "endless"  # an iterator that never stopped
    MUTATED = "mutated"  # the right value, but an input was changed in place
    UNFINISHED = "unfinished"  # this case still raised NotImplementedError
    DELEGATED = "delegated"  # called a forbidden piece
    SYSTEM_EXIT = "sys.exit"
    FLOOD = "flood"  # printed past OUTPUT_KEPT
    # of the whole run
    BUILT_ON = "built on"  # the implementation is, or subclasses, a forbidden piece
    TIMED_OUT = "timed out"
    KILLED = "killed"  # by a signal
    EXITED = "exited"  # os._exit, before the check was done
    NOT_ATTEMPTED = "not attempted"  # every case still raised NotImplementedError
    CONCEPT = "concept"  # every concept case right; only torch's exact cases wrong
    PASSED = "passed"


@dataclass(frozen=True)
class Wording:
    """How a verdict words an outcome. The texts are formatted with the outcome's details and
    name, total, limit, kept, allowed, case_hint (see ``_judge``)."""

    verdict: str  # PASSED, FAILED or NOT_ATTEMPTED
    summary: str
    problem: str = ""
    hint: str = ""
    shows_case: bool = True  # the case it happened on
    shows_values: bool = False  # expected and got
    # the failure may be the checker's or the machine's, not the reader's: the verdict says
    # what to do in doubt (IF_IN_DOUBT). A plain wrong answer does not
    doubtful: bool = False


_CASES_RIGHT = "{name}: {right} of {total} hidden cases right"
_BUILD_IT = ("write that part yourself, with plain Python and torch tensors (calling what your "
             "code is handed, such as a collate_fn, a dataset or a sampler, is fine){allowed}")
_ENDED = "the process running {name} ended before the check was done"

WORDING = {
    Outcome.PASSED: Wording(PASSED, "{name} gave the right answer on all {total} hidden cases",
                            shows_case=False),
    Outcome.NOT_ATTEMPTED: Wording(
        NOT_ATTEMPTED, "{name} still raises NotImplementedError", shows_case=False,
        hint="replace `raise NotImplementedError` with your code, run that cell, then run this "
             "check again"),
    Outcome.WRONG: Wording(FAILED, _CASES_RIGHT, "{problem}", "{case_hint}", shows_values=True),
    Outcome.ENDLESS: Wording(FAILED, _CASES_RIGHT, "{problem}", "{case_hint}", shows_values=True),
    Outcome.CONCEPT: Wording(
        FAILED, "{left} of torch's exact cases left ({parity}): {name} is right on the other "
                "{right} hidden cases", "{problem}", "{case_hint}", shows_values=True),
    Outcome.MUTATED: Wording(
        FAILED, _CASES_RIGHT, "{problem}",
        "whoever called your code still holds that object and may use it again: it must not "
        "change"),
    Outcome.UNFINISHED: Wording(
        FAILED, _CASES_RIGHT, "{problem}",
        "part of your code still raises NotImplementedError: finish that part"),
    Outcome.DELEGATED: Wording(
        FAILED, "your code used {piece}: this exercise asks you to build it yourself",
        hint=_BUILD_IT),
    Outcome.BUILT_ON: Wording(
        FAILED, "your code is built on {piece}: this exercise asks you to build it yourself",
        hint=_BUILD_IT, shows_case=False),
    Outcome.SYSTEM_EXIT: Wording(
        FAILED, "{name} called sys.exit({code}), so the check stopped",
        "sys.exit raises SystemExit, which ends the whole program (here, the process running "
        "your code)", "return your result instead of exiting"),
    Outcome.FLOOD: Wording(
        FAILED, "{name} printed too much, so it was stopped",
        "it printed more than the {kept:,} characters a check allows",
        "remove the print inside your loop (or print less), then check again"),
    Outcome.TIMED_OUT: Wording(
        FAILED, "{name} took longer than {limit:g} s and was stopped",
        hint="look for a loop that never ends (a `while` whose condition stays true, an "
             "iterator that never stops, a wait for a message that never comes) or a long "
             "sleep; these cases need far less time than that{about_the_case}",
        doubtful=True),
    Outcome.KILLED: Wording(
        FAILED, _ENDED, "it was killed by signal {signal} ({description})",
        "a crash like this comes from C code (in torch, numpy or a library) given something it "
        "cannot handle, or from running out of memory", doubtful=True),
    Outcome.EXITED: Wording(
        FAILED, _ENDED, "it exited with status {exit_code}, as os._exit({exit_code}) does",
        "return your result instead of ending the process: os._exit and sys.exit stop "
        "everything, the checker included", doubtful=True),
}


class ExerciseError(RuntimeError):
    """The exercise itself is broken (its reference failed): a bug in the book, not yours."""


def verdict(exercise: Exercise, implementation) -> Verdict:
    """Run ``implementation`` on the exercise's hidden cases, in a child process with a time
    limit, and judge what it gave against what the reference (or torch) gives. Reader-facing:
    ``check`` in ``minidataloader_course``, which finds the exercise by name."""
    with untouched_rng():  # even a careless case factory leaves the caller's RNGs alone
        cases = exercise.cases()
        expected = reference_results(exercise, cases)
        body = _reader_body(exercise, implementation, cases, expected)
        report = sandbox.run(body, exercise.time_limit)
    return _judge(exercise, cases, expected, report)


# NOTE [ Expected results are computed once ]
# A check runs the reference (or torch) on the cases in one child, the reader's code in
# another. The reference's results depend only on the exercise, the cases (each run seeded
# alike) and the start method its workers get, so a second check of the same exercise on the
# same cases (the reader's next attempt, a milestone re-checking its pieces) reuses them. The
# cases are compared by their pickled bytes: a factory that draws fresh inputs, or inputs that
# cannot be pickled (a dataset holding an Event), always get a fresh run.
# What it saves, measured (2026-12-03, 2 cores, the CPU time of the whole test run): the
# robustness and mutant tests of chapters 6-10's multi-process exercises take 51 and 47 CPU s
# with it, 103 without (wall: 200 s against 400 s); those of chapters 1-3, 53 against 60.
# The workers an oracle starts are what a rerun would pay again.
_expected: dict[str, tuple[Exercise, bytes, list]] = {}


class _Fingerprinter(pickle.Pickler):
    """Pickles a tensor as its dtype, shape and bytes: torch's own pickling of two equal
    tensors can differ byte for byte."""

    def reducer_override(self, obj):
        if isinstance(obj, torch.Tensor):
            data = obj.detach().cpu().contiguous().flatten().view(torch.uint8).numpy().tobytes()
            return tuple, ((str(obj.dtype), tuple(obj.shape), obj.requires_grad, data),)
        return NotImplemented


def _fingerprint(cases: list[Case]) -> bytes | None:
    written = io.BytesIO()
    try:
        _Fingerprinter(written).dump((multiprocessing.get_start_method(allow_none=True), cases))
    except Exception:  # noqa: BLE001 - whatever cannot be pickled is simply not reused
        return None
    return written.getvalue()


def reference_results(exercise: Exercise, cases: list[Case]) -> list:
    """The expected result of each case (a value, or :class:`Raised`): what the oracle gives
    (torch, where torch's behaviour is the rule), else the reference."""
    fingerprint = _fingerprint(cases)
    known = _expected.get(exercise.name)
    if fingerprint is not None and known and known[0] is exercise and known[1] == fingerprint:
        return known[2]
    results = _computed_results(exercise, cases)
    if fingerprint is not None:
        _expected[exercise.name] = (exercise, fingerprint, results)
    return results


def _computed_results(exercise: Exercise, cases: list[Case]) -> list:
    source = exercise.reference if exercise.oracle is None else exercise.oracle

    def body(send, printed):
        for index, case in enumerate(cases):
            seed_everything(exercise.seed + index)
            try:
                value = exercise.run(source, case)
            except Exception as error:  # expected failures are outcomes too
                value = Raised(type(error), str(error))
            try:
                send(("case", index, value))
            except Exception as error:
                send(("error", index, f"its result cannot be sent back ({error})"))

    limit = max(10.0, 5 * exercise.time_limit)
    report = sandbox.run(body, limit)
    results = {index: value for kind, index, value in report.messages if kind == "case"}
    errors = [f"case {index}: {text}" for kind, index, text in report.messages if kind == "error"]
    if not report.finished or errors or len(results) != len(cases):
        how = (f"took longer than {limit:g} s" if report.timed_out else
               f"ended with exit code {report.exit_code}, signal {report.signal}"
               if not report.finished else "; ".join(errors))
        raise ExerciseError(f"the expected results of exercise {exercise.name!r} could not be "
                            f"computed: {how}"
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
                if outcome["outcome"] is Outcome.SYSTEM_EXIT or printed() > OUTPUT_KEPT:
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
    """Run one case of the reader's code and compare: the case's Outcome, with plain strings
    (nothing of the reader's crosses to the parent)."""
    try:
        pristine = copy.deepcopy(case.inputs)
    except Exception:  # inputs that cannot be copied are not checked for mutation
        pristine = None
    seed_everything(seed)
    fired.clear()
    where, by_a_library = "", False
    try:
        got = exercise.run(implementation, case)
    except DelegationStop:
        got = None
    except SystemExit as stop:
        return {"outcome": Outcome.SYSTEM_EXIT, "code": repr(stop.code)}
    except OutputFlood:
        return {"outcome": Outcome.FLOOD}
    except TooManyItems as error:
        return {"outcome": Outcome.ENDLESS,
                "got": f"an iterator with more than {error.limit:,} items",
                "problem": "it never stopped yielding: does your loop ever end?"}
    except KeyboardInterrupt:
        if not sandbox.in_child:
            raise  # inline (no fork): the reader interrupted the kernel
        got = Raised(KeyboardInterrupt, "")
    except BaseException as error:  # noqa: BLE001 - whatever the reader's code raised
        got = Raised(type(error), str(error))
        where, by_a_library = _readers_line(error), _raised_by_a_library(error)
    if fired:
        return {"outcome": Outcome.DELEGATED, "piece": fired[0]}
    # a stub raises NotImplementedError (a RuntimeError): only an exercise whose answer is
    # NotImplementedError itself can take it for an answer. One that a library raises (torch's
    # Dataset.__getitem__, asked for a sample of a stream) is a wrong answer like any other.
    if isinstance(got, Raised) and issubclass(got.type, NotImplementedError) and not (
            by_a_library or isinstance(expected, Raised)
            and issubclass(expected.type, NotImplementedError)):
        return {"outcome": Outcome.UNFINISHED, "got": "raised NotImplementedError",
                "problem": "this part still raises NotImplementedError"}
    changed = _changed_inputs(pristine, case.inputs)
    if changed:  # the cause of whatever else went wrong
        return {"outcome": Outcome.MUTATED, "problem": changed}
    internal = False  # the comparison itself failed: the checker's failure as much as the reader's
    try:
        problem = (exercise.compare or difference)(expected, got)
    except Exception as error:
        problem = f"could not compare the result with the expected one ({type(error).__name__}: {error})"
        internal = True
    if problem:
        if isinstance(got, Raised):
            if not isinstance(expected, Raised):
                problem, internal = f"{got.type.__name__}: {got.message}", False
            return {"outcome": Outcome.WRONG, "got": f"raised {got.type.__name__}",
                    "problem": problem + (f", at {where}" if where else ""), "internal": internal}
        return {"outcome": Outcome.WRONG, "got": short(got), "problem": problem,
                "internal": internal}
    return {"outcome": Outcome.RIGHT}


_EXERCISES = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep  # the course


def _raised_by_a_library(error: BaseException) -> bool:
    """Whether a library the reader's code called (torch, the standard library) raised the
    exception: neither the reader's code nor the checker's, which passes on what the reader's
    code raised in a thread or a worker process."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return False
    filename = frames[-1].filename
    return not is_readers_code(filename) and not os.path.realpath(filename).startswith(_EXERCISES)


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
            was, now = _excerpts(before, inputs[key])
            return (f"your code changed its input `{key}` in place ({_as_change(changed)}; "
                    f"before: {was}; after: {now}). Leave the inputs as they are: work on a "
                    f"copy, or build a new object")
    return ""


def _as_change(sentence: str) -> str:
    """The comparer's sentence, of the input before (expected) and after (got)."""
    return sentence.replace("expected", "it was").replace(", got", ", it became")


_AROUND = 30  # characters shown on each side of the first difference


def _excerpts(before, after) -> tuple[str, str]:
    """``before`` and ``after`` written out, each cut around the first character where they
    differ: two short excerpts of a long list must not look the same."""
    try:
        was, now = repr(before), repr(after)
    except Exception:  # a reader's __repr__ may raise
        return short(before, 70), short(after, 70)
    first = next((i for i, (a, b) in enumerate(zip(was, now)) if a != b), min(len(was), len(now)))
    start = max(0, first - _AROUND)

    def cut(text: str) -> str:
        end = first + _AROUND
        return ("…" * (start > 0) + " ".join(text[start:end].split())
                + "…" * (end < len(text)))

    return cut(was), cut(now)


def _judge(exercise: Exercise, cases: list[Case], expected: list, report: ChildReport) -> Verdict:
    global _inline_note_given
    outcome, index, details = _what_happened(exercise, cases, report)
    wording = WORDING[outcome]
    allowed = ", ".join(exercise.allowed)
    fields = {"name": exercise.name, "total": len(cases), "limit": exercise.time_limit,
              "kept": OUTPUT_KEPT, "allowed": f"; you may use {allowed}" if allowed else "",
              "case_hint": _case_hint(exercise, cases[index]) if index is not None else "",
              **details}
    fields["about_the_case"] = f". This case: {fields['case_hint']}" if fields["case_hint"] else ""
    verdict = Verdict(exercise=exercise.name, status=wording.verdict,
                      summary=wording.summary.format(**fields),
                      problem=wording.problem.format(**fields), hint=wording.hint.format(**fields),
                      output=report.output, printed=report.printed,
                      in_doubt=IF_IN_DOUBT if wording.doubtful or details.get("internal") else "")
    verdict.concept = outcome is Outcome.CONCEPT
    if verdict.concept:
        verdict.note = PARITY_NOTE
    if index is not None:
        verdict.case_number = index + 1
    if wording.shows_case and index is not None:
        verdict.case = cases[index].describe()
    if wording.shows_values:
        verdict.expected, verdict.got = short(expected[index]), details["got"]
    if not CAN_FORK and not _inline_note_given:
        verdict.note = f"{verdict.note}. {INLINE_NOTE}" if verdict.note else INLINE_NOTE
        _inline_note_given = True
    return verdict


def _case_hint(exercise: Exercise, case: Case) -> str:
    """The case's hint (or the exercise's), and the hint tier of the exercise it points at."""
    hint = case.hint or exercise.hint
    if not case.tier:
        return hint
    return (f"{hint} (stuck? open Hint {case.tier} under the exercise)" if hint else
            f"Stuck? Open Hint {case.tier} under the exercise")


# NOTE [ Concept cases and torch's exact cases ]
# A rule with ``parity`` is torch's exact behaviour (a draw order, an exact message) rather
# than the concept an exercise teaches. A case that tests any concept rule is a concept case;
# one that tests parity rules only is a parity case (a case in no rule counts as a concept
# case). The verdict tells a learner who has the concept and misses only torch's detail so:
# "✔ the concept; 2 of torch's exact cases left (draw order)", then the first such case with
# expected, got and hint. It is still no pass (status "failed"): milestones compare the
# learner's loader with torch and need both.
# To say it, the check must know every case's outcome, and it does: the child runs every case
# under the one time limit of the exercise and stops early only on sys.exit or a flood of
# output (``_reader_body``), so no case runs that did not run before, the time limit means
# what it meant, and the expected results (NOTE [ Expected results are computed once ]),
# computed for every case, are the same. What changes is which failure the verdict shows:
#   - a concept case went wrong: the first such case, today's ✘ verdict of that case, even
#     when a parity case before it went wrong too (the concept first);
#   - only parity cases went wrong, each with a wrong value (or an endless iterator), and
#     every case was run to the end: "✔ the concept", with the first of them;
#   - anything else (a parity case that timed out, crashed, printed too much, mutated its
#     input, delegated; a run cut short before every concept case was seen): today's verdict,
#     of the first case that went wrong.


def parity_cases(exercise: Exercise) -> dict[int, list[str]]:
    """The parity cases of the exercise (indices, from 0), each with the parity words of the
    rules it tests: cases that test parity rules only (NOTE [ Concept cases and torch's exact
    cases ])."""
    concept = {number for rule in exercise.rules if not rule.parity for number in rule.cases}
    found: dict[int, list[str]] = {}
    for rule in exercise.rules:
        for number in rule.cases:
            if rule.parity and number not in concept:
                words = found.setdefault(number - 1, [])
                if rule.parity not in words:
                    words.append(rule.parity)
    return found


_PARITY_OUTCOMES = (Outcome.WRONG, Outcome.ENDLESS)  # a wrong answer, nothing worse


def _what_happened(exercise: Exercise, cases: list[Case],
                   report: ChildReport) -> tuple[Outcome, int | None, dict]:
    """The first thing that went wrong (or PASSED), the index of the case it happened on (or
    None), and the details its wording needs. A case that went wrong before the run timed
    out or crashed is the first thing that went wrong; a concept case's failure comes before
    a parity case's (NOTE [ Concept cases and torch's exact cases ])."""
    built_on = [message[1] for message in report.messages if message[0] == "delegated"]
    if built_on:
        return Outcome.BUILT_ON, None, {"piece": built_on[0]}
    outcomes = dict(sorted((index, outcome) for kind, index, outcome in
                           (message for message in report.messages if message[0] == "case")))
    kinds = [outcome["outcome"] for outcome in outcomes.values()]
    if report.finished and kinds and all(kind is Outcome.UNFINISHED for kind in kinds):
        return Outcome.NOT_ATTEMPTED, None, {}
    parity = parity_cases(exercise)
    wrong = [index for index, outcome in outcomes.items() if outcome["outcome"] is not Outcome.RIGHT]
    if wrong:
        index = next((i for i in wrong if i not in parity), wrong[0])
        details = {**outcomes[index], "right": kinds.count(Outcome.RIGHT)}
        everything_seen = (report.finished and report.printed <= OUTPUT_KEPT
                           and len(outcomes) == len(cases))
        if (index in parity and everything_seen and len(parity) < len(cases)
                and all(outcomes[i]["outcome"] in _PARITY_OUTCOMES
                        and not outcomes[i].get("internal") for i in wrong)):
            words = [w for i in wrong for w in parity[i]]
            details.update(left=len(wrong), parity=", ".join(dict.fromkeys(words)))
            return Outcome.CONCEPT, index, details
        return details.pop("outcome"), index, details
    started = [index for kind, index, *_ in report.messages if kind == "start"]
    current = started[-1] if started else None
    if report.printed > OUTPUT_KEPT:
        return Outcome.FLOOD, current, {}
    if report.timed_out:
        return Outcome.TIMED_OUT, current, {}
    if not report.finished:
        if report.signal is not None:
            name = signal.Signals(report.signal).name
            return Outcome.KILLED, current, {
                "signal": name, "description": signal.strsignal(report.signal) or name}
        return Outcome.EXITED, current, {"exit_code": report.exit_code}
    return Outcome.PASSED, None, {}
