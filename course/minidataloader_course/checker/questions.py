"""Check-yourself items: questions whose answers are checked, with the verdicts of exercises.

Two kinds, registered in a chapter's ``chNN.py`` with the same ``register`` as exercises:

- :class:`Choice`: multiple choice. The learner answers with a letter; a wrong letter's
  verdict says why that option is wrong (``why``), without giving the right one away.
- :class:`Prediction`: predict, then run. The learner writes what they expect (a number, a
  list, a word); the check runs the real thing (``measure``, which runs torch where torch is
  the rule) and compares. A wrong prediction's verdict shows the real value, and why
  (``mistakes`` for the wrong predictions a learner is likely to make, ``why`` otherwise).

The chapter holds the question and a collapsed "Answer" (see README.md, "Check yourself");
the workbook gets both, an answer cell (``answer = None``) and ``check_answer(name, answer)``
(``minidataloader_course.catalog`` finds the item by its name).
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from minidataloader_course.checker.verdict import FAILED, NOT_ANSWERED, PASSED, Verdict
from minidataloader_course.shared.compare import difference, short, untouched_rng

NAME = re.compile(r"^ch\d\d-[a-z0-9]+(-[a-z0-9]+)*$")
_WRONG_AGAIN = ("think again, change your answer, and run both cells again; the collapsed "
                "Answer below explains it")
_MORE = "the collapsed Answer below says more"


@dataclass
class Choice:
    """A multiple-choice item. ``name`` is the chapter's label of the item, ``chNN-slug``
    (the chapter's admonition has ``:name: chNN-slug``); ``answer`` the right option's
    letter; ``why`` every wrong option's letter, with why it is wrong (the verdict shows it
    to a learner who chose it). The options are ``answer`` and the letters of ``why``."""

    name: str
    answer: str
    why: dict[str, str]
    goals: tuple[int, ...] = ()  # the chapter's learning goals it assesses (from 1)
    chapter: str = field(default="", repr=False)

    def __post_init__(self):
        _check_name(self.name)
        letters = [self.answer, *self.why]
        if any(not re.fullmatch(r"[a-z]", letter) for letter in letters):
            raise ValueError(f"item {self.name!r}: options are single letters a, b, c, ...; "
                             f"got {letters}")
        if self.answer in self.why:
            raise ValueError(f"item {self.name!r}: the answer {self.answer!r} is also in why")
        if sorted(letters) != [chr(ord("a") + k) for k in range(len(letters))]:
            raise ValueError(f"item {self.name!r}: the options must be a, b, c, ... without "
                             f"gaps; got {sorted(letters)}")
        if len(letters) < 2 or not all(text.strip() for text in self.why.values()):
            raise ValueError(f"item {self.name!r}: at least two options, and a reason for "
                             f"every wrong one")

    @property
    def options(self) -> list[str]:
        return sorted([self.answer, *self.why])

    def prompt(self) -> str:
        """What the workbook's answer cell asks for."""
        letters = [f'"{letter}"' for letter in self.options]
        return f"your choice: {', '.join(letters[:-1])} or {letters[-1]}"

    def right_answer(self) -> str:
        return self.answer

    def judge(self, answer) -> Verdict:
        if answer is None:
            return _not_answered(self.name)
        letter = str(answer).strip().strip(".)").lower() if isinstance(answer, str) else None
        if letter not in self.options:
            return Verdict(self.name, FAILED, f"{self.name}: answer with one of the letters "
                           f"{', '.join(self.options)}", got=short(answer, 60),
                           hint=f'write the letter as a string, e.g. answer = "{self.options[0]}"',
                           in_doubt="")
        if letter == self.answer:
            return Verdict(self.name, PASSED, f"{self.name}: {letter} is right", got=letter,
                           hint=_MORE)
        return Verdict(self.name, FAILED, f"{self.name}: not {letter}", got=letter,
                       problem=self.why[letter], hint=_WRONG_AGAIN, in_doubt="")


@dataclass
class Prediction:
    """A predict-then-run item. ``measure()`` runs the real thing and returns the right
    answer as plain data (a number, a string, a list, ...): torch's own behaviour where
    torch is the rule. ``why`` is shown with a wrong prediction, unless ``mistakes`` has
    that prediction (the likely wrong ones, each with its own explanation). ``compare``
    is ``(expected, got) -> None or a sentence``; by default numbers are compared by value
    (``2.0`` is ``2``), everything else with ``difference``. ``prompt`` is what the answer
    cell asks for."""

    name: str
    measure: Callable[[], Any]
    why: str
    mistakes: dict = field(default_factory=dict)
    compare: Callable[[Any, Any], str | None] | None = None
    prompt_text: str = "a number"
    goals: tuple[int, ...] = ()  # the chapter's learning goals it assesses (from 1)
    chapter: str = field(default="", repr=False)

    def __post_init__(self):
        _check_name(self.name)
        if not self.why.strip():
            raise ValueError(f"item {self.name!r}: give why, the explanation of a wrong "
                             f"prediction")

    def prompt(self) -> str:
        return f"your prediction: {self.prompt_text}"

    def right_answer(self):
        with untouched_rng():  # the real run must not change the learner's random numbers
            return self.measure()

    def judge(self, answer) -> Verdict:
        if answer is None:
            return _not_answered(self.name)
        expected = self.right_answer()
        problem = (self.compare or same_value)(expected, answer)
        if not problem:
            return Verdict(self.name, PASSED, f"{self.name}: right, the real run gives "
                           f"{short(expected, 60)}", got=short(answer, 60), hint=_MORE)
        mix_up = type_mix_up(expected, answer)
        if mix_up:
            return Verdict(self.name, FAILED, f"{self.name}: {mix_up}", expected=short(expected),
                           got=short(answer), problem="the value is right, its type is not",
                           hint="write the answer as the real run gives it, then run both "
                                "cells again", in_doubt="")
        known = tuple(answer) if isinstance(answer, list) else answer
        try:
            reason = self.mistakes.get(known)
        except TypeError:  # an unhashable answer is no known mistake
            reason = None
        return Verdict(self.name, FAILED, f"{self.name}: you predicted {short(answer, 40)}, "
                       f"the real run gives {short(expected, 40)}", expected=short(expected),
                       got=short(answer), problem=reason or self.why, hint=_WRONG_AGAIN,
                       in_doubt="")


Question = Choice | Prediction


def same_value(expected, got) -> str | None:
    """A prediction is judged by its value, not its type: numbers by value (``2.0`` is
    ``2``), a list and a tuple by their items, anything else as ``difference`` compares."""
    numbers = (int, float)
    if isinstance(expected, numbers) and isinstance(got, numbers) and not isinstance(
            expected, bool) and not isinstance(got, bool):
        return None if math.isclose(expected, got, rel_tol=1e-9, abs_tol=0.0) else \
            f"expected {expected!r}, got {got!r}"
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
        if len(expected) != len(got):
            return f"expected {len(expected)} items, got {len(got)}"
        for index, (e, g) in enumerate(zip(expected, got)):
            problem = same_value(e, g)
            if problem:
                return f"item [{index}]: {problem}"
        return None
    return difference(expected, got)


_WORDS = {bool: "the boolean", int: "the number", float: "the number", str: "the string",
          list: "the list", tuple: "the tuple", set: "the set", frozenset: "the set",
          dict: "the dict"}


def _words(value) -> str:
    return f"{_WORDS.get(type(value), 'the ' + type(value).__name__)} {short(value, 40)}"


def type_mix_up(expected, answer) -> str | None:
    """When ``answer`` is the right value in another type ("769" for 769, the list [1, 2]
    for the set {1, 2}, 1 for True): a sentence that says so; else None. A verdict that only
    shows both values ("you predicted '769', the real run gives 769") hides the problem."""
    if same_value(expected, answer) is None:
        return None
    if isinstance(answer, str) and not isinstance(expected, str):
        try:
            converted = ast.literal_eval(answer.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    elif isinstance(expected, str) and not isinstance(answer, str):
        converted = str(answer)
    elif isinstance(expected, (list, tuple, set, frozenset)) and isinstance(
            answer, (list, tuple, set, frozenset)):
        converted = type(expected)(answer)
    elif isinstance(expected, (bool, int, float)) and isinstance(answer, (bool, int, float)):
        converted = expected if answer == expected else answer  # True == 1, never 2.5 for 2
    else:
        return None
    try:
        right = same_value(expected, converted) is None
    except Exception:  # noqa: BLE001 - values that cannot be compared are no mix-up
        return None
    return f"the answer is {_words(answer)}; give {_words(expected)}" if right else None


def _check_name(name: str) -> None:
    if not NAME.match(name):
        raise ValueError(f"item name {name!r}: write it as the chapter's label, chNN-slug "
                         f"(e.g. 'ch08-copy-on-read')")


def _not_answered(name: str) -> Verdict:
    return Verdict(name, NOT_ANSWERED, f"{name}: replace None with your answer in the cell "
                   f"above, run it, then run this cell")
