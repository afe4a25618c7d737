"""minidataloader's course: checked exercises, your own loader, milestones.

In a workbook::

    from minidataloader_course import check, check_answer, milestone

    check(your_function)             # after each exercise
    check_answer("ch03-slug", "b")   # after a check-yourself item
    milestone(5)                     # your whole package against torch's DataLoader

``check`` finds the exercise by your function's (or class's) name, runs your code on hidden
cases in a separate process with a time limit, runs the reference (or torch) on the same
cases, and returns a :class:`Verdict`: ✔ passed, ✘ failed (the case, what was expected, what
your code gave, a hint) or "not attempted yet" (your code still raises NotImplementedError).
Jupyter displays the verdict; a script also gets it printed. ``exercise_names()`` lists the
exercises; ``draws()`` shows which random numbers a piece of code draws, from which
generator, in which order. ``with try_it(30):`` runs a try-it cell's code (your loader, with
its workers) with a time limit, and stops the processes it started. In a terminal:
``python -m minidataloader_course --help``.

For the book's authors: course/README.md says how to add an exercise.
"""

from minidataloader_course import catalog
from minidataloader_course.checker.check import ExerciseError
from minidataloader_course.checker.draws import compare_draws, compare_with_draws, draws
from minidataloader_course.checker.framework import (
    LOADER_PIECES,
    Case,
    Exercise,
    TooManyItems,
    call,
    register,
    take,
)
from minidataloader_course.checker.questions import Choice, Prediction
from minidataloader_course.checker.verdict import Verdict, shown
from minidataloader_course.milestones import milestone
from minidataloader_course.shared.compare import Raised, close, difference, short
from minidataloader_course.shared.try_it import try_it

# (the milestones are catalog.milestones(): here the name is the runner's subpackage)
exercises, questions = catalog.exercises, catalog.questions
exercise_names = catalog.names


def check(implementation, name: str | None = None) -> Verdict:
    """Check your function or class against the exercise of the same name.

    Your code runs on hidden cases in a separate process with a time limit, and its
    results are compared with the expected ones. ``name`` picks the exercise when your
    function has another name. Returns a :class:`Verdict`: ✔ passed, ✘ failed (with the case,
    what was expected, what your code gave and a hint) or "not attempted yet". Outside
    Jupyter (a script, a test) the verdict is also printed.
    """
    return shown(catalog.verdict_of(implementation, name))


def check_answer(name: str, answer) -> Verdict:
    """Check your answer to the check-yourself item ``name`` (the workbook writes this call
    under each item). ``answer`` is a letter for a multiple-choice item, your prediction
    for a predict-then-run item (the check runs the real thing first), or ``None`` while
    you have not answered. Returns a :class:`Verdict`, printed outside Jupyter."""
    return shown(catalog.answer_verdict(name, answer))


__all__ = [
    "check", "check_answer", "milestone", "exercise_names", "Verdict", "Exercise", "Case",
    "register", "exercises", "questions", "call", "take", "difference", "close",
    "short", "Raised", "TooManyItems", "ExerciseError", "LOADER_PIECES", "Choice",
    "Prediction", "draws", "compare_draws", "compare_with_draws", "try_it",
]
