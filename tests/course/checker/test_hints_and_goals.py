"""Hints that teach, and learning goals that are assessed (issue 15):

- every exercise of a finished chapter has tiered hints that teach (issue 29): Hint 1 a
  question, Hint 2 the idea, Hint 3 a skeleton with blanks (a ``~~~python`` block whose
  blanks are ``____``), and none of them holds a line of the solution;
- a hidden case that points at a hint tier (``Case(tier=...)``) points at one its exercise has;
- every learning goal of a finished chapter is assessed: an exercise, an item or a milestone
  declares it (``goals=``), and course/EXERCISES.md, the table made from the declarations,
  is up to date.

FINISHED lists the chapters whose hints and table are written: add yours when it is.
"""

from __future__ import annotations

import inspect
import pathlib
import re

import pytest

from minidataloader_course import exercises
from minidataloader_course.authoring import tables, workbooks
from minidataloader_course.catalog import mutants
from minidataloader_course.learner import reference_source

FINISHED = tuple(range(1, 16))  # every chapter
TIERS = ("Hint 1: a question", "Hint 2: the idea", "Hint 3: a skeleton")
BLANK = "____"
_SKELETON = re.compile(r"^~~~python[ \t]*\n(?P<code>.*?)^~~~[ \t]*$", re.MULTILINE | re.DOTALL)


def chapter(number: int) -> list[pathlib.Path]:
    """The pages of a chapter (chapter 10 has two)."""
    return workbooks.chapter_pages(number)


def exercise_sections(path: pathlib.Path) -> list[tuple[str, workbooks.ExerciseText]]:
    """(exercise name, its text) for every exercise of a chapter, found from its stub (the
    steps of a piece, each its own exercise, included)."""
    return [(name, text) for name, text, _ in workbooks.exercise_contexts(path)]


FINISHED_EXERCISES = [(number, name, text) for number in FINISHED
                      for page in chapter(number) for name, text in exercise_sections(page)]


def ids(entry) -> str:
    return f"ch{entry[0]:02d}-{entry[1]}"


@pytest.mark.parametrize("entry", FINISHED_EXERCISES, ids=ids)
def test_every_exercise_has_three_hint_tiers(entry):
    _, name, text = entry
    titles = [hint.title for hint in text.hints]
    assert titles == list(TIERS), (
        f"{name}: the hints must be {TIERS}, in order")


def sentences(text: str) -> list[str]:
    prose = re.sub(r"^~~~.*?^~~~[ \t]*$", " ", text, flags=re.MULTILINE | re.DOTALL)
    return [s for s in re.split(r"(?<=[.?!:])\s+", " ".join(prose.split())) if s]


@pytest.mark.parametrize("entry", FINISHED_EXERCISES, ids=ids)
def test_hint_tiers_teach(entry):
    """Hint 1 asks, Hint 3 hands over a skeleton with blanks, never complete code."""
    _, name, text = entry
    question, _, skeleton = (hint.body for hint in text.hints)
    assert sentences(question) and sentences(question)[-1].endswith("?"), (
        f"{name}: Hint 1 is a question about the learner's own code: end it with one")
    blocks = _SKELETON.findall(skeleton)
    assert blocks, (f"{name}: Hint 3 is a skeleton: a ~~~python block of the shape of the "
                    f"answer, with blanks written {BLANK}")
    assert all(BLANK in block for block in blocks), (
        f"{name}: every skeleton in Hint 3 leaves blanks ({BLANK}) for the learner to fill")


SHORTEST = 30  # characters: shorter code is a name or a call a hint may well mention


def code_lines(source: str) -> list[str]:
    """The solution's code worth hiding: each line (not a signature, docstring or comment),
    also without its ``return``/``yield`` and, for an assignment, its right-hand side."""
    pieces = []
    for line in source.splitlines():
        line = " ".join(line.split("  #")[0].split())
        if line.startswith(("def ", "class ", "#", '"""', "@")):
            continue
        bare = re.sub(r"^(return|yield from|yield|raise) ", "", line)
        value = re.split(r"(?<![=!<>])=(?!=)", bare, maxsplit=1)[-1].strip()
        pieces += [piece for piece in {line, bare, value} if len(piece) >= SHORTEST]
    return pieces


def plain(text: str) -> str:
    return " ".join(text.replace("`", "").split())


@pytest.mark.parametrize("entry", FINISHED_EXERCISES, ids=ids)
def test_no_hint_holds_a_line_of_the_solution(entry):
    _, name, text = entry
    exercise = exercises()[name]
    source = reference_source(exercise) if exercise.piece else inspect.getsource(
        exercise.reference)
    hints = plain(" ".join(hint.body for hint in text.hints))
    given = [line for line in code_lines(source) if line in hints]
    assert not given, f"{name}: a hint gives lines of the solution away: {given}"


def hint_counts() -> dict[str, int]:
    counts = {}
    for path in workbooks.chapters():
        for name, text in exercise_sections(path):
            counts[name] = len(text.hints)
    return counts


def test_a_case_points_only_at_a_hint_its_exercise_has():
    counts = hint_counts()
    for name, exercise in exercises().items():
        if not exercise.chapter.startswith("ch"):
            continue  # registered by another test
        tiers = [case.tier for case in exercise.cases() if case.tier]
        assert all(1 <= tier <= counts.get(name, 0) for tier in tiers), (
            f"{name}: its cases point at hints {tiers}, its chapter has {counts.get(name, 0)}")


# ---------------------------------------------------------------------------------------
# Learning goals: every goal assessed, by things that exist (declared with ``goals=``)


@pytest.mark.parametrize("number", FINISHED)
def test_every_learning_goal_is_assessed(number):
    goals = tables.learning_goals(number)
    found = tables.assessments(number)
    unassessed = [goal for index, goal in enumerate(goals, 1) if index not in found]
    assert not unassessed, f"chapter {number}: nothing declares these goals: {unassessed}"
    beyond = sorted(index for index in found if not 1 <= index <= len(goals))
    assert not beyond, f"chapter {number} has {len(goals)} goals; declared: goals {beyond}"


def test_the_goal_table_is_made_from_the_declarations():
    assert tables.TABLES.read_text() == tables.tables(), (
        "course/EXERCISES.md is stale: run `make workbooks`")


def test_the_rule_table_names_the_mistakes_that_break_each_rule():
    rows = tables.tables().splitlines()
    known = exercises()
    for mutant in mutants():
        rule = known[mutant.exercise].rules[mutant.breaks - 1]
        assert any(f"| {tables.rule_text(rule)} |" in row and mutant.mistake.replace("|", "\\|") in
                   row.rsplit(" | ", 1)[-1] for row in rows), (
            f"{mutant.id}: not in the row of rule {mutant.breaks} ({rule.text!r})")


def test_the_rule_table_marks_torchs_detail():
    from minidataloader_course.checker.framework import Rule

    assert tables.rule_text(Rule("the order torch draws", (1,), parity="draw order")) == (
        "the order torch draws *(torch's detail: draw order)*")
    assert tables.rule_text(Rule("every index once", (1,))) == "every index once"


def verdict_hints(exercise) -> str:
    """What a failing verdict may show: the exercise's own hint and its cases' hints."""
    return plain(" ".join([exercise.hint or ""] + [case.hint or "" for case in exercise.cases()]))


@pytest.mark.parametrize("name", sorted(name for name, exercise in exercises().items()
                                        if exercise.chapter.startswith("ch")))
def test_no_verdict_hint_holds_a_line_of_the_solution(name):
    exercise = exercises()[name]
    source = reference_source(exercise) if exercise.piece else inspect.getsource(
        exercise.reference)
    given = [line for line in code_lines(source) if line in verdict_hints(exercise)]
    assert not given, f"{name}: a verdict's hint gives lines of the solution away: {given}"
