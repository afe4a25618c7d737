"""What an exercise is, and the registry ``check`` looks exercises up in.

An exercise is declared once, in ``course/minidataloader_course/chNN.py``, with
:class:`Exercise` and :func:`register`. See this package's README.md for a walk-through.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import minidataloader

# The loader pieces of torch.utils.data: the names minidataloader exports, since it is their
# drop-in. Calling one of them from the reader's own code is delegation unless the exercise
# allows it; the base classes readers build on are allowed unless an exercise says otherwise.
LOADER_PIECES = tuple(minidataloader.__all__)
BASE_CLASSES = ("Dataset", "IterableDataset", "Sampler")


@dataclass
class Case:
    """One hidden test case: the inputs the implementation is run on.

    ``inputs`` are handed to the exercise's ``run``; the default ``run`` calls
    ``implementation(**inputs)``. ``description`` is what a failing verdict shows as "case"
    (default: ``name=value, ...``). ``hint`` is shown when this case fails, instead of the
    exercise's general hint. ``tier`` points the reader at the hint of the exercise (in the
    book and the workbook: Hint 1, 2, 3, ...) that helps with this case: the verdict says
    "open Hint <tier>". A test checks that the exercise has that many hints.
    """

    inputs: dict[str, Any]
    description: str | None = None
    hint: str | None = None
    tier: int | None = None

    def describe(self) -> str:
        if self.description is not None:
            return self.description
        from minidataloader_course.shared.compare import short

        return ", ".join(f"{name}={short(value, 60)}" for name, value in self.inputs.items())


def call(implementation, case: Case):
    """The default ``run``: call the implementation with the case's inputs."""
    return implementation(**case.inputs)


class TooManyItems(Exception):
    """Raised by :func:`take` when an iterator goes on past its limit."""

    def __init__(self, limit: int):
        super().__init__(f"it went on past {limit:,} items")
        self.limit = limit


def take(iterable: Iterable, limit: int = 10_000) -> list:
    """Consume an iterable into a list, stopping (with :class:`TooManyItems`) after ``limit``
    items: an endless iterator becomes a verdict instead of a hang."""
    items = []
    for item in iterable:
        if len(items) == limit:
            raise TooManyItems(limit)
        items.append(item)
    return items


@dataclass(frozen=True)
class Rule:
    """A rule an exercise's statement states, and the hidden cases that test it: their
    numbers, from 1, in the order ``cases()`` returns them (``note``: which of them test a
    special case of the rule).

    ``parity`` marks a rule that is torch's exact behaviour rather than the concept the
    exercise teaches, in a few words the verdict shows ("draw order", "chunks of 32"): a
    learner who has the concept and misses only such rules is told so. Empty for a concept
    rule. Milestones demand both."""

    text: str
    cases: tuple[int, ...]
    note: str = ""
    parity: str = ""


@dataclass(frozen=True)
class Mutant:
    """A plausible wrong answer to an exercise, declared in its chapter's ``mutants.py``:
    the solution's source with ``changes`` made (each ``(text of the solution, what it
    becomes)``, the text found exactly once), written where a learner writes it. The check must
    refuse it with a verdict that contains every one of ``says``: the words of the rule it
    breaks. ``breaks`` is that rule's number (from 1) in the exercise's ``rules``: the hidden
    case the verdict fails on must be one of that rule's cases, and every rule must be broken
    by at least one mutant. The tests run every one (tests/course/checker/test_mutants.py)."""

    exercise: str
    mistake: str  # what the learner got wrong
    changes: tuple[tuple[str, str], ...]
    says: tuple[str, ...]
    breaks: int

    @property
    def id(self) -> str:
        return f"{self.exercise}: {self.mistake}"


def mutant(exercise: str, mistake: str, changes, *says: str, breaks: int) -> Mutant:
    return Mutant(exercise, mistake, tuple(changes), says, breaks)


@dataclass
class Exercise:
    """One checked exercise.

    reference   the model solution, defined in its chapter's ``solution.py`` (the only
                place solutions live: the book shows them and the workbook tests paste them).
    cases       a factory returning the hidden :class:`Case` list; called on every check,
                so each run gets fresh inputs.
    run         ``run(implementation, case)`` -> plain comparable data (numbers, lists,
                tuples, dicts, tensors, arrays). It runs for the reference and for the
                reader's code alike. An exception escaping it counts as the outcome and is
                compared by type, so "should raise ValueError" needs no special code.
                Consume iterators with :func:`take`.
    compare     ``compare(expected, got)`` -> None if right, else a sentence saying what
                is wrong. Default: :func:`difference` (strict about types); :func:`close`
                for floating-point results.
    time_limit  seconds for all the cases together (the reader's code is stopped after it).
    hint        shown with a failure (a case's own hint wins).
    forbidden   extra dotted names that count as delegation, e.g. the package's finished
                piece: ``"minidataloader_course.viz.arithmetic.epoch_arithmetic"``.
    allowed     names from LOADER_PIECES (or dotted names) the reader may use. By default
                every piece except the base classes ``Dataset``, ``IterableDataset`` and
                ``Sampler`` is forbidden, in torch and in minidataloader.
    name        what ``check`` looks the exercise up by; default: the reference's name.
    seed        case *i* runs with the global RNGs seeded with ``seed + i``.
    oracle      where the expected values come from when torch's behaviour is the rule:
                a callable with the reference's interface that runs torch (e.g.
                ``torch.utils.data.default_collate``). Default: the reference. The tests
                check that the reference passes, so the reference then agrees with torch.
    piece       for a piece of the learner's own loader: ``"<module>.<Name>"``, where it goes
                in the learner's package (``notebooks/myloader/<module>.py``); see
                ``minidataloader_course.learner``. Several chapters may ask for the same
                piece (each one grows it); the latest one's reference is the finished piece.
    rules       the rules the statement states, each with the hidden cases that test it
                (:class:`Rule`); course/EXERCISES.md is made from them.
    goals       the chapter's learning goals it assesses, numbered from 1 in the order of the
                chapter's "Learning goals" box.
    expected_from  where the expected values come from, in a few words, for EXERCISES.md
                (default: "torch" with an oracle, else "reference").
    """

    reference: Any
    cases: Callable[[], list[Case]]
    run: Callable[[Any, Case], Any] = call
    compare: Callable[[Any, Any], str | None] | None = None
    time_limit: float = 2.0
    hint: str = ""
    forbidden: tuple[str, ...] = ()
    allowed: tuple[str, ...] = BASE_CLASSES
    name: str = ""
    seed: int = 0
    oracle: Any = None  # these two last: positional arguments keep their meaning
    piece: str = ""
    rules: tuple[Rule, ...] = ()
    goals: tuple[int, ...] = ()
    expected_from: str = ""
    chapter: str = field(default="", repr=False)

    def __post_init__(self):
        self.name = self.name or self.reference.__name__
        self.expected_from = self.expected_from or ("reference" if self.oracle is None
                                                    else "torch")
        unknown = [n for n in self.allowed if "." not in n and n not in LOADER_PIECES]
        if unknown:
            raise ValueError(f"exercise {self.name!r}: allowed names {unknown} are not loader "
                             f"pieces; use dotted names for anything else")

    def forbidden_names(self) -> list[str]:
        """Every dotted name that counts as delegation for this exercise."""
        allowed = {n if "." in n else f"{package}.{n}" for n in self.allowed
                   for package in ("torch.utils.data", "minidataloader")}
        names = [f"{package}.{piece}" for package in ("torch.utils.data", "minidataloader")
                 for piece in LOADER_PIECES]
        return [n for n in names + list(self.forbidden) if n not in allowed]


# What the chapters register; ``minidataloader_course.catalog`` imports every chapter and
# reads these (the checker itself knows no chapter).
EXERCISES: dict[str, Exercise] = {}
QUESTIONS: dict[str, Any] = {}  # the check-yourself items (questions.py), by name
_CHAPTER_MODULE = re.compile(r"ch\d\d$")


def register(item):
    """Add an exercise, or a check-yourself item (``Choice``, ``Prediction``), to the book's
    registry. Names are unique across the whole book."""
    if not isinstance(item, Exercise):
        return _register_question(item)
    item.chapter = item.chapter or _chapter_of(item.reference.__module__)
    existing = EXERCISES.get(item.name)
    if existing is not None and existing.chapter != item.chapter:
        raise ValueError(f"two exercises are called {item.name!r} ({existing.chapter} and "
                         f"{item.chapter}): exercise names must be unique across the book")
    EXERCISES[item.name] = item  # re-registering from the same chapter replaces it
    return item


def _register_question(item):
    if not callable(getattr(item, "judge", None)):
        raise TypeError(f"register() takes an Exercise, a Choice or a Prediction, not "
                        f"{type(item).__name__}")
    item.chapter = item.name[:4]
    existing = QUESTIONS.get(item.name)
    if existing is not None and type(existing) is not type(item):
        raise ValueError(f"two check-yourself items are called {item.name!r}")
    QUESTIONS[item.name] = item
    return item


def _chapter_of(module: str) -> str:
    """``chNN`` for a module of a chapter's folder (``...chapters.ch03.solution``), else the
    module's last name (a reader's own module, say)."""
    parts = module.split(".")
    return next((part for part in parts if _CHAPTER_MODULE.match(part)), parts[-1])
