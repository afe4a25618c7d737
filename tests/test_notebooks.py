"""The workbooks (notebooks/NN_*.ipynb), each run twice in a real kernel: as shipped, where
every check must say "not attempted yet", and answered as a learner answers them, where every
check must pass.

Convention: a cell holding an exercise's stub carries the tag ``exercise`` and the metadata
``"minidataloader": {"solution": "chNN.name"}``; to answer it, the test pastes the source of
``name`` from ``minidataloader/exercises/solutions/chNN.py`` into the cell, with the imports
and helpers it uses (tests/exercises/answers.py): the code then lives in the notebook, as a
learner's does. Book chapters are executed by the strict book build, not here.
"""

from __future__ import annotations

import importlib
import pathlib
import re
import sys

import nbclient
import nbformat
import pytest

from minidataloader.exercises import exercises

sys.path.insert(0, str(pathlib.Path(__file__).parent / "exercises"))
from answers import solution_source  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORKBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
VERDICTS = ("✔ passed", "✘ failed", "not attempted yet")
CHECK_CALL = re.compile(r"^\s*check\(", re.MULTILINE)


def ids(path: pathlib.Path) -> str:
    return path.name


def solution_of(cell) -> str:
    return cell.metadata.get("minidataloader", {}).get("solution", "")


def exercise_cells(notebook) -> list:
    return [c for c in notebook.cells if "exercise" in c.metadata.get("tags", [])]


def check_cells(notebook) -> list:
    return [c for c in notebook.cells if c.cell_type == "code" and CHECK_CALL.search(c.source)]


def execute(notebook, path: pathlib.Path):
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    return notebook


def verdicts_of(cell) -> list[str]:
    """The verdicts a cell displayed (the plain-text face of each Verdict)."""
    found = []
    for output in cell.get("outputs", []):
        text = output.get("data", {}).get("text/plain", "") if "data" in output else ""
        if text.startswith(VERDICTS):
            found.append(text)
    return found


def assert_every_check_says(verdict: str, notebook, path: pathlib.Path) -> None:
    checks = check_cells(notebook)
    assert checks, f"{path.name} has no check cells"
    for cell in checks:
        found = verdicts_of(cell)
        assert len(found) == 1, f"{path.name}: cell {cell.source!r} showed {found}"
        assert found[0].startswith(verdict), found[0]


def test_there_are_workbooks():
    assert WORKBOOKS, "no notebooks/NN_*.ipynb found"


@pytest.mark.parametrize("path", WORKBOOKS, ids=ids)
def test_workbook_ships_clean_and_follows_the_convention(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{path.name}: outputs not stripped in cell {cell.source[:60]!r}")
    assert "widgets" not in notebook.metadata, f"{path.name}: widget state saved"
    stubs = exercise_cells(notebook)
    assert stubs, f"{path.name}: no cell tagged 'exercise'"
    chapter = f"ch{path.name[:2]}"
    known = exercises()
    for cell in stubs:
        solution = solution_of(cell)
        module, _, name = solution.partition(".")
        assert module == chapter, f"{path.name}: {solution!r} should be {chapter}.<name>"
        assert name in known, f"{path.name}: no exercise called {name!r}"
        reference = getattr(importlib.import_module(
            f"minidataloader.exercises.solutions.{module}"), name)
        assert reference is known[name].reference
        assert "raise NotImplementedError" in cell.source
    assert len(check_cells(notebook)) >= len(stubs), f"{path.name}: an exercise has no check"


@pytest.mark.parametrize("path", WORKBOOKS, ids=ids)
def test_workbook_as_shipped_reports_not_attempted(path):
    notebook = execute(nbformat.read(path, as_version=4), path)
    assert_every_check_says("not attempted yet", notebook, path)


@pytest.mark.parametrize("path", WORKBOOKS, ids=ids)
def test_workbook_answered_with_the_solutions_source_passes(path):
    notebook = nbformat.read(path, as_version=4)
    for cell in exercise_cells(notebook):
        module, _, name = solution_of(cell).partition(".")
        cell.source = solution_source(module, name)
    assert_every_check_says("✔ passed", execute(notebook, path), path)
