"""Hints that teach, and learning goals that are assessed (issue 15):

- every exercise of a finished chapter has tiered hints: Hint 1 (a nudge), Hint 2 (the
  approach), Hint 3 (near-code), and none of them holds a line of the solution;
- a hidden case that points at a hint tier (``Case(tier=...)``) points at one its exercise has;
- every learning goal of a finished chapter is in the table "Learning goals, and what assesses
  them" of ``course/README.md``, with the exercises, check-yourself items or
  milestones that assess it, all of which exist.

FINISHED lists the chapters whose hints and table are written: add yours when it is.
"""

from __future__ import annotations

import inspect
import pathlib
import re

import jupytext
import pytest

from minidataloader_course import exercises, questions
from minidataloader_course.authoring import workbooks
from minidataloader_course.learner import reference_source
from minidataloader_course.milestones import milestones

FINISHED = tuple(range(1, 15))  # every chapter
README = pathlib.Path(workbooks.__file__).resolve().parents[2] / "README.md"
TIERS = ("Hint 1: a nudge", "Hint 2: the approach", "Hint 3: near-code")


def chapter(number: int) -> list[pathlib.Path]:
    """The pages of a chapter (chapter 10 has two)."""
    pages = [p for p in workbooks.chapters() if p.name.startswith(f"{number:02d}_")]
    assert pages, f"no chapter {number}"
    return pages


def exercise_sections(path: pathlib.Path) -> list[tuple[str, workbooks.ExerciseText]]:
    """(exercise name, its text) for every exercise of a chapter, found from its stub."""
    tag = f"ch{path.name[:2]}"
    _, sections = workbooks.read_sections(jupytext.read(path), path)
    found = []
    for section in sections:
        if section.exercise is None:
            continue
        stub = next(cell for _, cell in section.cells if "exercise" in cell.metadata.get(
            "tags", []))
        piece = workbooks._PIECE.match(stub.source.split("\n", 1)[0])
        if piece:
            exercise, _ = workbooks.piece_exercise(piece.group("piece"), tag, path.name)
        else:
            exercise = exercises()[workbooks.defined_name(stub.source, path.name)]
        found.append((exercise.name, section.exercise))
    return found


FINISHED_EXERCISES = [(number, name, text) for number in FINISHED
                      for page in chapter(number) for name, text in exercise_sections(page)]


def ids(entry) -> str:
    return f"ch{entry[0]:02d}-{entry[1]}"


@pytest.mark.parametrize("entry", FINISHED_EXERCISES, ids=ids)
def test_every_exercise_has_three_hint_tiers(entry):
    _, name, text = entry
    assert [hint.title for hint in text.hints] == list(TIERS), (
        f"{name}: the hints must be {TIERS}, in order")


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
# Learning goals


def learning_goals(path: pathlib.Path) -> list[str]:
    """The bullets of a chapter's "Learning goals" admonition, each on one line."""
    text = path.read_text()
    block = re.search(r"^```\{admonition\} Learning goals\n(.*?)^```$", text,
                      re.MULTILINE | re.DOTALL)
    assert block, f"{path.name} has no Learning goals admonition"
    bullets = re.split(r"^- ", block.group(1), flags=re.MULTILINE)[1:]
    return [" ".join(bullet.split()).rstrip(";.") for bullet in bullets]


def goal_table() -> dict[int, dict[str, str]]:
    """The README's table: chapter -> goal -> what assesses it."""
    text = README.read_text()
    section = text.split("## Learning goals, and what assesses them", 1)[1]
    section = section.split("\n# ", 1)[0]
    tables = {}
    for number, body in re.findall(r"^### Chapter (\d+)[^\n]*\n(.*?)(?=^### |\Z)", section,
                                   re.MULTILINE | re.DOTALL):
        rows = re.findall(r"^\| (.+?) \| (.+?) \|$", body, re.MULTILINE)
        tables[int(number)] = {" ".join(goal.split()): by for goal, by in rows
                               if goal not in ("learning goal", "---")}
    return tables


def test_the_goal_table_lists_every_goal_of_a_finished_chapter():
    tables = goal_table()
    for number in FINISHED:
        goals = [goal for page in chapter(number) for goal in learning_goals(page)]
        listed = tables.get(number, {})
        missing = [goal for goal in goals if goal not in listed]
        extra = [goal for goal in listed if goal not in goals]
        assert not missing and not extra, (
            f"chapter {number}: goals missing from the table {missing}; rows that are no goal "
            f"(any more) {extra}")


def test_what_assesses_a_goal_exists():
    known = set(exercises()) | set(questions())
    for number, rows in goal_table().items():
        for goal, by in rows.items():
            names = re.findall(r"`([^`]+)`", by)
            found_milestones = re.findall(r"milestone (\d+)", by)
            assert names or found_milestones, f"chapter {number}: nothing assesses {goal!r}"
            unknown = [name for name in names if name not in known]
            assert not unknown, f"chapter {number}, {goal!r}: no exercise or item {unknown}"
            assert all(int(m) in milestones() for m in found_milestones), (number, goal)


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
