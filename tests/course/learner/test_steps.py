"""A piece grown in steps inside one chapter (NOTE [ A piece grown in steps ] in
``learner/package.py``): each step an exercise of its own, the steps' references a chain of
subclasses, one ``%%piece`` cell per step in the chapter, and a learner's package filled up
to a chapter or up to one step.

A chapter 98 of two steps is made here, in a folder of its own, and registered for the test
only; chapter 6's real steps are tested in ``tests/course/ch06/``.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
import types

import pytest

from minidataloader_course.authoring import workbooks
from minidataloader_course.catalog import exercises, verdict_of
from minidataloader_course.checker import framework
from minidataloader_course.checker.framework import Case, Exercise, Rule, register
from minidataloader_course.learner import (
    ensure_package,
    fill_with_solutions,
    import_package,
    package_regions,
    piece_exercises,
    piece_steps,
    reference_source,
)
from minidataloader_course.milestones import piece_object

PIECE = "dataloader.MultiProcessIterator"
FIRST, SECOND = "MultiProcessIterator, step one", "MultiProcessIterator, step two"
CHAPTER = "minidataloader_course.chapters.ch98"

STEP1 = '''
class MultiProcessIterator:
    def __init__(self, loader=None):
        self.loader = loader

    def first(self):
        return 1

    def __len__(self):
        return 0
'''
STEP2 = '''
from minidataloader_course.chapters.ch98 import step1


class MultiProcessIterator(step1.MultiProcessIterator):
    def first(self):
        return "one"

    def second(self):
        return 2
'''
UNCHAINED = '''
class MultiProcessIterator:
    def second(self):
        return 2
'''


def _first(implementation, case):
    return implementation().first()


def _both(implementation, case):
    made = implementation()
    return made.first(), made.second()


@pytest.fixture
def chapter98(tmp_path, monkeypatch):
    """Chapter 98's step modules, importable as ``minidataloader_course.chapters.ch98``, and
    its two steps registered (for this test only)."""
    exercises()  # the book's own, loaded before the registry is swapped
    folder = tmp_path / "ch98"
    folder.mkdir()
    (folder / "step1.py").write_text(STEP1)
    (folder / "step2.py").write_text(STEP2)
    (folder / "unchained.py").write_text(UNCHAINED)
    package = types.ModuleType(CHAPTER)
    package.__path__ = [str(folder)]
    monkeypatch.setitem(sys.modules, CHAPTER, package)
    monkeypatch.setattr(framework, "EXERCISES", dict(framework.EXERCISES))
    step1 = importlib.import_module(f"{CHAPTER}.step1")
    step2 = importlib.import_module(f"{CHAPTER}.step2")
    register(Exercise(reference=step1.MultiProcessIterator, name=FIRST, piece=PIECE,
                      cases=lambda: [Case({}, hint="first() gives 1")], run=_first,
                      rules=(Rule("first() gives 1", (1,)),)))
    register(Exercise(reference=step2.MultiProcessIterator, name=SECOND, piece=PIECE,
                      cases=lambda: [Case({}, hint="first() gives 'one', second() 2")],
                      run=_both, rules=(Rule("first() gives 'one', second() 2", (1,)),)))
    yield step1, step2
    for name in [n for n in sys.modules if n.startswith(CHAPTER + ".")]:
        monkeypatch.delitem(sys.modules, name)


@pytest.fixture
def package(tmp_path, monkeypatch):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    path = folder / "myloader"
    ensure_package(path)
    yield path
    for name in [n for n in sys.modules if n == "myloader" or n.startswith("myloader.")]:
        del sys.modules[name]
    if str(folder) in sys.path:
        sys.path.remove(str(folder))


def test_the_steps_are_exercises_in_their_order(chapter98):
    assert [e.name for e in piece_steps(PIECE, "ch98")] == [FIRST, SECOND]
    assert [e.name for e in piece_exercises()[PIECE]][-2:] == [FIRST, SECOND]
    assert {e.chapter for e in piece_steps(PIECE, "ch98")} == {"ch98"}


def test_a_steps_reference_is_one_class_grown_from_the_step_before(chapter98):
    first, second = (textwrap.dedent(reference_source(exercises()[name]))
                     for name in (FIRST, SECOND))
    assert "def second" not in first and "return 1" in first
    assert second.count("class MultiProcessIterator") == 1
    assert "return 'one'" in second.replace('"', "'") and "return 1" not in second
    assert second.index("def first") < second.index("def second") < second.index("__len__")


def test_steps_that_do_not_chain_are_refused(chapter98):
    unchained = importlib.import_module(f"{CHAPTER}.unchained")
    register(Exercise(reference=unchained.MultiProcessIterator, name="unchained", piece=PIECE,
                      cases=lambda: [Case({})], run=_both))
    with pytest.raises(ValueError, match="subclasses that step's"):
        piece_exercises()


def _piece_code(package) -> str:
    return package_regions(package)[PIECE][1]


def test_fill_gives_a_learner_who_finished_the_chapter_or_one_step(chapter98, package):
    fill_with_solutions(package, 98)
    assert _piece_code(package) == textwrap.dedent(reference_source(exercises()[SECOND])).strip()
    fill_with_solutions(package, through=FIRST)
    assert "def second" not in _piece_code(package) and "return 1" in _piece_code(package)
    learner = piece_object(import_package(package), PIECE)
    assert verdict_of(learner, name=FIRST).status == "passed"
    assert verdict_of(learner, name=SECOND).status == "failed"
    fill_with_solutions(package, through=SECOND)
    learner = piece_object(import_package(package), PIECE)
    assert verdict_of(learner, name=SECOND).status == "passed"
    fill_with_solutions(package, 97)  # the book's own latest, before chapter 98
    assert "def second" not in _piece_code(package)
    with pytest.raises(KeyError, match="no exercise called"):
        fill_with_solutions(package, through="MultiProcessIterator, step three")


def chapter_text(cells: int) -> str:
    """A chapter 98 whose exercise asks for the iterator ``cells`` times."""
    parts = ["---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
             "    format_version: 0.13\nkernelspec:\n  display_name: Python 3\n"
             "  language: python\n  name: python3\n---\n\n# 98. Steps\n\nA chapter of steps.\n"]
    for step in range(1, cells + 1):
        parts.append(textwrap.dedent(f'''
            ````{{exercise}} Step {step}
            :label: ch98-step-{step}

            Grow `MultiProcessIterator`, step {step}.
            ````

            ```{{code-cell}} ipython3
            :tags: [workbook, exercise, remove-cell, skip-execution]

            %%piece {PIECE}
            ```
            '''))
    return "".join(parts)


@pytest.mark.parametrize("asked_before", [False, True], ids=["first asked", "grown"])
def test_the_workbook_has_a_cell_and_a_check_per_step(chapter98, tmp_path, asked_before):
    if not asked_before:  # as if chapter 98 were the first to ask for the piece
        for name, exercise in list(framework.EXERCISES.items()):
            if exercise.piece == PIECE and exercise.chapter != "ch98":
                del framework.EXERCISES[name]
    path = tmp_path / "book" / "98_steps.md"
    path.parent.mkdir()
    path.write_text(chapter_text(2))
    notebook = workbooks.build_workbook(path)
    stubs = [c for c in notebook.cells if "exercise" in c.metadata.get("tags", [])]
    if asked_before:  # the learner grows the version an earlier chapter asked for
        assert stubs[0].source == f"%piece {PIECE}"
    else:
        assert stubs[0].source.startswith(f"%%piece {PIECE}\nclass MultiProcessIterator")
        assert "NotImplementedError" in stubs[0].source
    assert stubs[1].source == f"%piece {PIECE}"  # step 2 grows the learner's step 1
    assert [c.metadata["minidataloader"]["exercise"] for c in stubs] == [FIRST, SECOND]
    checks = [c.source for c in notebook.cells if c.source.startswith("check(")]
    assert checks == [f"check(MultiProcessIterator, name={FIRST!r})",
                      f"check(MultiProcessIterator, name={SECOND!r})"]
    assert [name for name, _, _ in workbooks.exercise_contexts(path)] == [FIRST, SECOND]


@pytest.mark.parametrize("cells, says", [(1, "one cell per step"), (3, "number 3")])
def test_a_chapter_needs_one_cell_per_step(chapter98, tmp_path, cells, says):
    path = tmp_path / "book" / "98_steps.md"
    path.parent.mkdir()
    path.write_text(chapter_text(cells))
    with pytest.raises(workbooks.ChapterError, match=says):
        workbooks.build_workbook(path)
