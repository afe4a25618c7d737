"""Milestones: the learner's own package (``notebooks/myloader/``), checked as a whole
against torch's ``DataLoader``.

    milestone(5)                                          in a workbook
    python -m minidataloader_course milestone 5 notebooks/myloader   in a terminal

NOTE [ How a milestone runs ]
A milestone is the pieces of its chapters, then suites on the assembled loader:

1. Each piece the chapters up to N ask for is checked on its own with ``check`` (its hidden
   cases, in a child process, with a time limit and the tripwires). A piece that fails, or is
   not written yet, stops the milestone there: the verdict names it.
2. Each :class:`Suite` observes torch's loader and the learner's on the same cases, through
   the machinery of ``check``: the observations of ``torch.utils.data`` come from one forked
   child, the learner's from another, with the tripwires in place and the suite's time limit
   (a hang, a crash, ``os._exit``, a flood of output, a call to torch's own pieces all become
   verdicts, and the child's process group, workers included, is killed at the end).
3. When a suite's case differs, the case runs again with the reference version of one piece
   at a time in place of the learner's (leaves first); the first piece whose replacement
   makes the case right is named (a suite of long measurements names the piece to look
   at instead, ``Suite.look_at``: the swaps would take minutes). The references are the
   exercises' own (the chapters' ``solution.py``), made from their source in the learner's
   module, so that the swapped piece uses the learner's other pieces, as the learner's
   would.

The package is imported afresh from its folder, so a milestone checks what the files say now,
not what a notebook defined earlier.
"""

from __future__ import annotations

import html
import importlib
import pathlib
import sys
from dataclasses import dataclass, field

import torch.utils.data

from minidataloader_course.catalog import milestones, verdict_of
from minidataloader_course.checker import check as _check
from minidataloader_course.checker import sandbox
from minidataloader_course.checker.framework import Case, Exercise
from minidataloader_course.checker.milestones import LOADER_INTERNALS, Suite
from minidataloader_course.checker.sandbox import CAN_FORK
from minidataloader_course.checker.verdict import (
    _COLOURS,
    _MARK,
    FAILED,
    IF_IN_DOUBT,
    NOT_ATTEMPTED,
    PASSED,
    Verdict,
    shown,
)
from minidataloader_course.learner import (
    STUB,
    find_package,
    import_package,
    piece_exercises,
    reference_source,
    split_piece,
)
from minidataloader_course.learner import status as piece_states
from minidataloader_course.shared.compare import Raised, difference, seed_everything

# ---------------------------------------------------------------------------------------
# The verdict


@dataclass
class Step:
    name: str
    status: str  # PASSED, FAILED, NOT_ATTEMPTED, or "not run"
    summary: str
    rows: list[tuple[str, str]] = field(default_factory=list)
    doubtful: bool = False  # its failure may be the checker's or the machine's (a time-out)


@dataclass
class MilestoneVerdict:
    """What ``milestone(n)`` returns: a line per step, and for the step that failed, the case,
    what was expected, what the loader gave, and the piece to look at. The "in doubt"
    advice (rerun, report) comes once, and only when a step's failure may be the checker's
    or the machine's (a time limit ran out, a child ended unexpectedly)."""

    number: int
    title: str
    status: str
    summary: str
    steps: list[Step] = field(default_factory=list)
    package: str = ""

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    @property
    def in_doubt(self) -> str:
        doubtful = self.status == FAILED and any(step.doubtful for step in self.steps)
        return IF_IN_DOUBT if doubtful else ""

    def __str__(self) -> str:
        lines = [f"{_MARK[self.status]}: milestone {self.number}, {self.title}: {self.summary}"]
        if self.package:
            lines.append(f"  package: {self.package}")
        for step in self.steps:
            lines.append(f"  {_STEP_MARK[step.status]} {step.name}: {step.summary}")
            for label, text in step.rows:
                indent = " " * (len(label) - len(label.lstrip()) + 6)
                label = label.strip() + ":"
                lines.append(f"{indent}{label:<10}{text}" if len(label) < 10
                             else f"{indent}{label}\n{indent}  {text}")
        if self.in_doubt:
            lines.append(f"  in doubt: {self.in_doubt}")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        border, background, heading = _COLOURS[self.status]
        e = html.escape
        steps = []
        for step in self.steps:
            rows = "".join(
                f'<tr><td style="padding:1px 10px 1px 18px;vertical-align:top;text-align:left;color:#555">'
                f'{e(label)}</td><td style="padding:1px 0;text-align:left;white-space:pre-wrap;'
                f'font-family:monospace">{e(text)}</td></tr>' for label, text in step.rows)
            steps.append(f'<div style="margin-top:3px">{e(_STEP_MARK[step.status])} '
                         f'<b>{e(step.name)}</b>: {e(step.summary)}</div>'
                         + (f'<table style="border:none">{rows}</table>' if rows else ""))
        package = (f'<div style="color:#555">package: <code>{e(self.package)}</code></div>'
                   if self.package else "")
        doubt = (f'<div style="color:#555;margin-top:3px">in doubt: {e(self.in_doubt)}</div>'
                 if self.in_doubt else "")
        return (f'<div class="mdl-verdict mdl-milestone mdl-{self.status.replace(" ", "-")}" '
                f'style="border-left:5px solid {border};background:{background};'
                f'padding:6px 10px;margin:4px 0;font-size:0.92em;line-height:1.4">'
                f'<div style="color:{heading};font-weight:bold">{e(_MARK[self.status])}: '
                f'milestone {self.number}, {e(self.title)}: '
                f'<span style="font-weight:normal">{e(self.summary)}</span></div>'
                f'{package}{"".join(steps)}{doubt}</div>')


_STEP_MARK = {PASSED: "✔", FAILED: "✘", NOT_ATTEMPTED: "…", "not run": "·"}


# ---------------------------------------------------------------------------------------
# Running one


def milestone(number: int, package: str | pathlib.Path | None = None) -> MilestoneVerdict:
    """Check your package as a whole against torch's DataLoader.

    ``package`` is the folder of your package; by default the ``myloader`` next to the
    notebook (``notebooks/myloader``). Returns a verdict: ✔ passed, ✘ failed (the step, the
    case, what was expected, what your loader gave, the piece to look at), or not attempted
    yet (no piece written). Outside Jupyter (a script, a test) the verdict is also printed."""
    return shown(run_milestone(number, package))


def run_milestone(number: int, package: str | pathlib.Path | None = None) -> MilestoneVerdict:
    known = milestones()
    if number not in known:
        return MilestoneVerdict(number, "?", FAILED, f"there is no milestone {number}; the "
                                f"milestones are {', '.join(map(str, known))}")
    stone = known[number]
    path = pathlib.Path(package) if package is not None else find_package()
    path = path.resolve()
    verdict = MilestoneVerdict(number, stone.title, FAILED, "", package=str(path))
    if not (path / "__init__.py").exists():
        verdict.summary = (f"there is no package at {path}: run a workbook's first cell, or "
                           f"python -m minidataloader_course create --path {path}")
        return verdict
    try:
        loaded = import_package(path)
    except Exception as error:  # the learner's files do not import: say where
        verdict.summary = f"your package does not import: {type(error).__name__}: {error}"
        return verdict

    pieces = _pieces_up_to(number)
    untouched = {piece for piece, state in piece_states(path).items() if state == STUB}
    step = _check_pieces(loaded, pieces, untouched)
    verdict.steps.append(step)
    if step.status != PASSED:
        verdict.status = step.status
        verdict.summary = ("none of its pieces is written yet" if step.status == NOT_ATTEMPTED
                           else "a piece does not pass its own check yet")
        verdict.steps += [Step(s.name, "not run", "after the pieces pass") for s in stone.suites]
        return verdict
    for index, suite in enumerate(stone.suites):
        step = _run_suite(suite, loaded, pieces, path)
        verdict.steps.append(step)
        if step.status != PASSED:
            verdict.summary = f"{suite.name} differs from torch"
            verdict.steps += [Step(s.name, "not run", "after the step above passes")
                              for s in stone.suites[index + 1:]]
            return verdict
    verdict.status = PASSED
    verdict.summary = "your loader behaves as torch's, on every case"
    return verdict


def _pieces_up_to(number: int) -> dict[str, Exercise]:
    """For each piece asked for up to chapter ``number``: the latest exercise that asks."""
    chosen = {}
    for piece, asking in piece_exercises().items():
        done = [e for e in asking if int(e.chapter[2:]) <= number]
        if done:
            chosen[piece] = done[-1]
    return chosen


def piece_object(package, piece: str):
    """The learner's object for a piece: the function or class (for a method piece, its
    class)."""
    module, name = split_piece(piece)
    return getattr(importlib.import_module(f"{package.__name__}.{module}"), name.split(".")[0])


def _check_pieces(package, pieces: dict[str, Exercise], untouched: set[str]) -> Step:
    """Check each piece; ``untouched`` are those whose code is still the shipped stub's, word
    for word: they raise NotImplementedError, so they wait without a check's run."""
    step = Step("your pieces, one by one", PASSED, "")
    verdicts: dict[str, Verdict | None] = {}
    for piece, exercise in pieces.items():
        try:
            target = piece_object(package, piece)
        except AttributeError:
            step.status, step.summary = FAILED, f"your package has no {piece}"
            return step
        verdicts[piece] = None if piece in untouched else verdict_of(target, name=exercise.name)
    waiting = [p for p, v in verdicts.items() if v is None or v.status == NOT_ATTEMPTED]
    failing = [p for p, v in verdicts.items() if p not in waiting and not v.passed]
    if len(waiting) == len(verdicts):
        step.status, step.summary = NOT_ATTEMPTED, "no piece written yet"
        return step
    if not waiting and not failing:
        step.summary = f"all {len(verdicts)} pass their checks"
        return step
    step.status = FAILED
    step.summary = (f"{len(verdicts) - len(waiting) - len(failing)} of {len(verdicts)} pass "
                    f"their checks")
    if failing and len(failing) + len(waiting) > 1:
        step.rows.append(("start", _where_to_start(package, pieces, failing, waiting)))
    for piece in failing:
        found = verdicts[piece]
        step.doubtful = step.doubtful or bool(found.in_doubt)
        step.rows.append((_where(piece), f"✘ {found.summary}"))
        step.rows += [(f"  {label}", text) for label, text in _rows(found)]
    for piece in waiting:
        step.rows.append((_where(piece), "not written yet (it still raises "
                                         "NotImplementedError): its workbook cell saves it"))
    return step


# NOTE [ Which failing piece to start with ]
# A piece's check runs the learner's piece with the learner's other pieces: a piece can fail
# because of one it uses, listed before it or after it (the DataLoader of chapter 5 is listed
# before the worker loop that chapter 7's DataLoader uses). So the runner measures instead of
# guessing from the order: each failing piece is checked again with the reference of every
# other piece in the learner's modules (as _diagnose swaps one), and the advice names the
# earliest that still fails, the one at fault by itself. One more check per failing piece,
# paid only when more than one piece fails or waits.


def _where_to_start(package, pieces: dict[str, Exercise], failing: list[str],
                    waiting: list[str]) -> str:
    alone = [piece for piece in failing if not _passes_with_reference_others(package, pieces, piece)]
    helped = [piece for piece in failing if piece not in alone]
    one = len(helped) == 1
    passes = (f"{_names(helped)} pass{'es its check' if one else ' their checks'} with the "
              f"reference versions of your other pieces in place of yours")
    uses = "it uses" if one else "they use"
    if alone:
        advice = (f"{_where(alone[0])}: it fails its check even with the reference versions of "
                  f"your other pieces in place of yours")
        return advice + (f"; {passes}, so {'it fails' if one else 'they fail'} because of a "
                         f"piece {uses}" if helped else "")
    if waiting:
        return f"the pieces not written yet: {passes}, so a piece {uses} is missing"
    return (f"the pieces that {_names(helped)} {'uses' if one else 'use'}: {passes}, so one of "
            f"the pieces {uses} is wrong where its own check does not look")


def _passes_with_reference_others(package, pieces: dict[str, Exercise], piece: str) -> bool:
    """Whether the learner's ``piece`` passes its check with the reference of every other
    piece in place of the learner's (see NOTE [ Which failing piece to start with ])."""
    undo = []
    try:
        learners = {other: piece_object(package, other) for other in pieces if other != piece}
        references = {other: _reference_in(package, other, pieces[other]) for other in learners}
        for other in learners:  # the references look each other up in the modules: swapped too
            undo += _swapped(package, learners[other], references[other])
        return verdict_of(piece_object(package, piece), name=pieces[piece].name).passed
    except Exception:  # noqa: BLE001 - a reference that cannot be made measures nothing
        return False
    finally:
        for module, key, value in reversed(undo):
            setattr(module, key, value)


def _names(found: list[str]) -> str:
    names = [_where(piece) for piece in found]
    return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]


def _where(piece: str) -> str:
    module, name = split_piece(piece)
    return f"{name} ({module}.py)"


_suite_exercises: dict[int, tuple[Suite, Exercise]] = {}


def _as_exercise(suite: Suite) -> Exercise:
    """A suite in the shape ``check``'s machinery runs: torch.utils.data is the reference,
    the learner's package the implementation. One exercise per suite, so that torch's
    results are computed once (``_check.reference_results``)."""
    made = _suite_exercises.get(id(suite))
    if made is None or made[0] is not suite:
        exercise = Exercise(reference=torch.utils.data,
                            cases=lambda: [Case({"spec": spec}, description=suite.describe(spec))
                                           for spec in suite.cases()],
                            run=lambda data, case: suite.observe(data, case.inputs["spec"]),
                            time_limit=suite.time_limit, hint=suite.hint,
                            forbidden=LOADER_INTERNALS, allowed=suite.allowed, name=suite.name,
                            chapter="milestone")
        made = _suite_exercises[id(suite)] = (suite, exercise)
    return made[1]


def _run_suite(suite: Suite, package, pieces: dict[str, Exercise], path) -> Step:
    exercise = _as_exercise(suite)
    cases = exercise.cases()
    expected = _check.reference_results(exercise, cases)
    body = _check._reader_body(exercise, package, cases, expected)
    report = sandbox.run(body, suite.time_limit)
    found = _check._judge(exercise, cases, expected, report)
    if found.passed:
        return Step(suite.name, PASSED, f"the same as torch on all {len(cases)} cases"
                    if len(cases) > 1 else "the same as torch")
    step = Step(suite.name, FAILED, found.summary.replace(f"{suite.name}: ", ""),
                rows=_rows(found), doubtful=bool(found.in_doubt))
    failed = _first_failing(report)
    if failed is not None and suite.look_at:
        step.rows.append(("the piece", f"look at your {suite.look_at}"))
    elif failed is not None and not report.timed_out:
        step.rows.append(("the piece", _diagnose(exercise, cases[failed], expected[failed],
                                                 failed, package, pieces, suite.suspects)))
    return step


def _rows(verdict: Verdict) -> list[tuple[str, str]]:
    """A check's rows, but for the "in doubt" advice: the milestone gives it once."""
    return [(label, text) for label, text in verdict._rows() if label != "in doubt"]


def _first_failing(report) -> int | None:
    for message in report.messages:
        if message[0] == "case" and message[2]["outcome"] is not _check.Outcome.RIGHT:
            return message[1]
    return None


def _swapped(package, learners, reference):
    """Put ``reference`` in every place of the package that holds ``learners``; returns
    how to undo it."""
    undo = []
    for name, module in list(sys.modules.items()):
        if name == package.__name__ or name.startswith(package.__name__ + "."):
            for key, value in list(vars(module).items()):
                if value is learners:
                    setattr(module, key, reference)
                    undo.append((module, key, value))
    return undo


def _reference_in(package, piece: str, exercise: Exercise):
    """The reference of ``piece``, made from its source in the learner's module, as a cell
    would write it there: it uses the learner's other pieces, so that swapping it in changes
    that piece alone. Its globals are the module's own (a copy would keep what it assigns
    there, such as a worker's ``_worker_info``, from the learner's code that reads it); the
    module is left as it was, the swap is :func:`_swapped`'s. (A method piece, or without
    fork: the reference object itself. Workers started with spawn import the learner's
    files, so a swap reaches only forked ones.)"""
    module, name = split_piece(piece)
    if "." in name or not CAN_FORK:
        return exercise.reference
    namespace = vars(importlib.import_module(f"{package.__name__}.{module}"))
    before = dict(namespace)
    try:
        exec(compile(reference_source(exercise), f"<the reference {piece}>", "exec"), namespace)
        return namespace[name]
    finally:
        for key in [key for key in namespace if key not in before]:
            del namespace[key]
        namespace.update(before)


def _diagnose(exercise: Exercise, case: Case, expected, index: int, package,
              pieces: dict[str, Exercise], suspects: tuple[str, ...] = ()) -> str:
    """Run the failing case again with one reference piece at a time in place of the
    learner's; name the first whose replacement makes it right. The suite's ``suspects``
    go first."""
    order = [p for p in suspects if p in pieces] + [p for p in pieces if p not in suspects]

    def body(send, printed):
        for piece in order:  # the suspects, then in chapter order, as registered: leaves first
            reference = _reference_in(package, piece, pieces[piece])
            undo = _swapped(package, piece_object(package, piece), reference)
            seed_everything(exercise.seed + index)
            try:
                got = exercise.run(package, case)
            except Exception as error:  # an exception is an outcome, as in a check
                got = Raised(type(error), str(error))
            except BaseException:  # noqa: BLE001 - a hang stopped, an exit: not this piece
                got = None
            finally:
                for module, key, value in undo:
                    setattr(module, key, value)
            right = got is not None and difference(expected, got) is None
            if right:
                send(("fixed by", piece))
                return
        send(("none",))

    # every piece may rerun the case: more time than the case's own
    report = sandbox.run(body, 2 * exercise.time_limit)
    fixed = [m[1] for m in report.messages if m[0] == "fixed by"]
    if fixed:
        module, name = split_piece(fixed[0])
        return (f"with the reference {name} in place of yours, this case gives torch's result: "
                f"look at your {name}, in myloader/{module}.py (its own check passes: this "
                f"case goes where its hidden cases do not)")
    return ("no single piece explains it: look at how your DataLoader and your iterator put "
            "the pieces together (what each one is given, and in which order)")
