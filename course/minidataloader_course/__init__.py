"""Checked exercises: ``from minidataloader_course import check``, then
``check(your_function)`` after each exercise of a chapter or workbook.

``check`` finds the exercise by your function's (or class's) name, runs your code on hidden
cases in a separate process with a time limit, runs the reference solution on the same
cases, and returns a :class:`Verdict`: ✔ passed, ✘ failed (the case, what was expected,
what your code gave, a hint) or "not attempted yet" (your code still raises
NotImplementedError). Jupyter displays the verdict; a script also gets it printed.

For book authors: each chapter declares its exercises in ``chNN.py`` and their model
solutions in ``solutions/chNN.py``; README.md in this folder explains how to add one, and
lists every exercise's rules with the hidden cases that test them.

Check-yourself items (``Choice``, ``Prediction``) are registered the same way and answered
with ``check_answer("chNN-slug", answer)``; ``draws()`` shows which random numbers a piece of
code draws, from which generator, in which order.
"""

from minidataloader_course.checker.check import ExerciseError, check
from minidataloader_course.checker.compare import Raised, close, difference, short
from minidataloader_course.checker.draws import compare_draws, compare_with_draws, draws
from minidataloader_course.checker.framework import (
    LOADER_PIECES,
    Case,
    Exercise,
    TooManyItems,
    call,
    exercises,
    register,
    take,
)
from minidataloader_course.checker.questions import Choice, Prediction, check_answer, questions
from minidataloader_course.checker.verdict import Verdict
from minidataloader_course.milestones import milestone

__all__ = [
    "check", "milestone", "Verdict", "Exercise", "Case", "register", "exercises", "call", "take",
    "difference", "close", "short", "Raised", "TooManyItems", "ExerciseError", "LOADER_PIECES",
    "Choice", "Prediction", "check_answer", "questions", "draws", "compare_draws",
    "compare_with_draws",
]
