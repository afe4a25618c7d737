"""The front page tells the truth: its table of what the learner writes holds the pieces and
the number of exercises each chapter really asks for, the milestones that exist, and a total
of its own time estimates."""

from __future__ import annotations

import collections
import pathlib
import re

from minidataloader_course import exercises
from minidataloader_course.authoring.estimates import minutes_of
from minidataloader_course.authoring.workbooks import chapters
from minidataloader_course.chapters.ch05.milestone import CONFIGURATIONS, REFUSED
from minidataloader_course.learner import piece_exercises, split_piece
from minidataloader_course.catalog import milestones

INTRO = pathlib.Path(__file__).resolve().parents[2] / "intro.md"


def rows() -> dict[int, list[str]]:
    """The table under "What you write": chapter -> its cells."""
    section = INTRO.read_text().split("## What you write", 1)[1].split("\n## ", 1)[0]
    found = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells and cells[0].isdigit():
            found[int(cells[0])] = cells
    return found


def test_the_table_has_every_chapter():
    assert sorted(rows()) == sorted({int(page.name[:2]) for page in chapters()})


def test_the_exercise_counts_are_the_checks():
    counts = collections.Counter(e.chapter for e in exercises().values()
                                 if e.chapter.startswith("ch"))
    stated = {f"ch{number:02d}": int(cells[3]) for number, cells in rows().items()}
    assert stated == dict(counts)


def test_the_pieces_are_the_ones_each_chapter_asks_for():
    asked = collections.defaultdict(set)
    for piece, asking in piece_exercises().items():
        for exercise in asking:
            asked[int(exercise.chapter[2:])].add(split_piece(piece)[1])
    names_of = collections.defaultdict(set)
    for exercise in exercises().values():
        if exercise.chapter.startswith("ch"):
            names_of[int(exercise.chapter[2:])].add(exercise.name)
    for number, cells in rows().items():
        named = set(re.findall(r"`([^`]+)`", cells[2]))
        assert asked[number] <= named, (number, asked[number] - named)
        assert named <= asked[number] | names_of[number], (number, named)


def test_the_milestones_are_the_ones_that_exist():
    stated = {int(cells[4]) for cells in rows().values() if cells[4]}
    assert stated == set(milestones())
    text = " ".join(INTRO.read_text().split())
    assert {int(n) for n in re.findall(r"\*\*Milestone (\d+)\*\*", text)} == set(milestones())
    assert f"over {CONFIGURATIONS + len(REFUSED)} configurations" in text


def test_the_total_time_is_the_sum_of_the_estimates():
    hours = sum(minutes_of(cells[5]) for cells in rows().values()) / 60
    assert f"about {round(hours)} hours in all" in " ".join(INTRO.read_text().split())
