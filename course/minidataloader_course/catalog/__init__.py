"""The book's catalogue: every chapter's exercises, check-yourself items, milestones and
plausible wrong answers, found
by importing each chapter's folder, and what looks them up by name (``check``,
``check_answer``).

The chapters register what they declare with the checker (``checker.framework.register``,
``checker.milestones.register_milestone``); the checker knows no chapter, and nothing in a
chapter imports this catalogue: the layers stay one-way (ARCHITECTURE.md).
"""

from __future__ import annotations

import difflib
import importlib
import pathlib
import re

from minidataloader_course import chapters
from minidataloader_course.checker import framework
from minidataloader_course.checker.check import verdict
from minidataloader_course.checker.framework import Exercise, Mutant
from minidataloader_course.checker.milestones import MILESTONES, Milestone
from minidataloader_course.checker.verdict import FAILED, Verdict

_CHAPTER = re.compile(r"ch\d\d$")
_loaded = False


def chapter_folders() -> list[pathlib.Path]:
    """The chapters' folders, ``chapters/ch01`` to ``chapters/ch14``, in order."""
    here = pathlib.Path(chapters.__file__).parent
    return sorted(path for path in here.iterdir() if _CHAPTER.match(path.name))


def _load() -> None:
    global _loaded
    if _loaded:
        return
    for folder in chapter_folders():
        for module in ("checks", "milestone"):
            if (folder / f"{module}.py").exists():
                importlib.import_module(f"{chapters.__name__}.{folder.name}.{module}")
    _loaded = True


def exercises() -> dict[str, Exercise]:
    """Every registered exercise, by name."""
    _load()
    return dict(framework.EXERCISES)


def questions() -> dict:
    """Every registered check-yourself item (``Choice``, ``Prediction``), by name."""
    _load()
    return dict(framework.QUESTIONS)


def mutants() -> list[Mutant]:
    """Every chapter's plausible wrong answers (its ``mutants.py``), in chapter order."""
    found = []
    for folder in chapter_folders():
        if (folder / "mutants.py").exists():
            found += importlib.import_module(f"{chapters.__name__}.{folder.name}.mutants").MUTANTS
    return found


def milestones() -> dict[int, Milestone]:
    """Every milestone, by number."""
    _load()
    return dict(sorted(MILESTONES.items()))


def names() -> list[str]:
    """The names ``check`` knows: every exercise's, in chapter order."""
    return [name for name, _ in sorted(exercises().items(), key=lambda item: item[1].chapter)]


def verdict_of(implementation, name: str | None = None) -> Verdict:
    """``check`` without printing: the exercise named ``name`` (by default, the function's or
    class's own name) run on ``implementation``."""
    name = name or getattr(implementation, "__name__", None)
    known = exercises()
    exercise = known.get(name) if isinstance(name, str) else None
    if exercise is None:
        return _unknown(name, known, "exercise")
    return verdict(exercise, implementation)


def answer_verdict(name: str, answer) -> Verdict:
    """``check_answer`` without printing."""
    known = questions()
    item = known.get(name) if isinstance(name, str) else None
    if item is None:
        return _unknown(name, known, "check-yourself item")
    return item.judge(answer)


def _unknown(name, known: dict, what: str) -> Verdict:
    if not isinstance(name, str):
        return Verdict(exercise="?", status=FAILED,
                       summary="check(...) needs your function or class, e.g. check(my_function)")
    close = difflib.get_close_matches(name, known, n=1)
    guess = f"did you mean {close[0]!r}? " if close else ""
    if what != "exercise":
        return Verdict(name, FAILED, f"there is no {what} called {name!r}", hint=guess.strip(),
                       in_doubt="")
    return Verdict(exercise=name, status=FAILED, summary=f"there is no exercise called {name!r}",
                   hint=(f"{guess}If you renamed the function, give the exercise's name: "
                         f"check(my_function, name={(close or ['<exercise name>'])[0]!r})"))
