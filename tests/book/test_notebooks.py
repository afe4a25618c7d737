"""The workbooks (notebooks/NN_*.ipynb), each run in a real kernel, in a folder of its own
with a learner's package (``myloader``) next to it:

- as shipped, the package made from the stubs: every check and milestone says "not attempted
  yet", every check-yourself item "not answered yet", and the notebook runs to its end;
- answered as a learner answers them, the package holding the reference pieces of the earlier
  chapters (a learner who did the workbooks in order): every check and milestone passes. A
  piece's stub cell gets the piece's reference source under its ``%%piece`` line (running it
  saves the piece into the package); any other stub gets the source of its solution from
  the chapter's ``solution.py``, with the imports and helpers it uses
  (tests/course/checker/answers.py): the code then lives in the notebook, as a learner's does; every
  check-yourself item gets its right answer (for a prediction, what the real run gives);
- the same with ``spawn`` as the start method (what macOS and Windows get): the learner's
  package must be importable by spawned workers.

Convention (made by ``minidataloader_course.authoring.workbooks`` from the chapters): a stub cell
carries the tag ``exercise`` and ``"minidataloader": {"solution": "chNN.name"}``, and
``"piece": "<module>.<Name>"`` when it writes a piece of the learner's package (its first
line is then ``%%piece <module>.<Name>``, or ``%piece ...`` to load the learner's version). An
item's answer cell carries the tag ``answer`` and ``"minidataloader": {"question": "chNN-slug"}``.
Book chapters are executed by the strict book build, not here.
"""

from __future__ import annotations

import importlib
import pathlib
import re
import shutil

import nbclient
import nbformat
import pytest

from minidataloader_course import exercises, questions
from minidataloader_course.learner import fill_with_solutions, reference_source, write_piece
from tests.course.checker.answers import solution_source

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
VERDICTS = ("✔ passed", "✘ failed", "not attempted yet", "not answered yet")
CHECK_CALL = re.compile(r"^\s*(check|milestone)\(", re.MULTILINE)
ANSWER_CALL = re.compile(r"^\s*check_answer\(", re.MULTILINE)
SPAWN = "import multiprocessing\nmultiprocessing.set_start_method('spawn', force=True)"


def ids(path: pathlib.Path) -> str:
    return path.name


def solution_of(cell) -> str:
    return cell.metadata.get("minidataloader", {}).get("solution", "")


def piece_of(cell) -> str:
    return cell.metadata.get("minidataloader", {}).get("piece", "")


def exercise_cells(notebook) -> list:
    return [c for c in notebook.cells if "exercise" in c.metadata.get("tags", [])]


def check_cells(notebook, call=CHECK_CALL) -> list:
    return [c for c in notebook.cells if c.cell_type == "code" and call.search(c.source)]


def answer_cells(notebook) -> list:
    return [c for c in notebook.cells if "answer" in c.metadata.get("tags", [])]


def answer_questions(notebook) -> None:
    """Write the right answer into every check-yourself item's answer cell."""
    for cell in answer_cells(notebook):
        item = questions()[cell.metadata["minidataloader"]["question"]]
        cell.source = f"answer = {item.right_answer()!r}"


def answer(cell, source: str) -> None:
    """Put ``source`` in a stub cell as a learner would: a piece's cell keeps (or gets) its
    ``%%piece`` line, so that running it saves the piece into the learner's package."""
    piece = piece_of(cell)
    cell.source = f"%%piece {piece}\n{source}" if piece else source


def reference_answer(cell) -> str:
    module, _, name = solution_of(cell).partition(".")
    if piece_of(cell):
        step = cell.metadata.get("minidataloader", {}).get("exercise")  # a piece's steps
        asking = [e for e in exercises().values()
                  if e.piece == piece_of(cell) and e.chapter == module
                  and step in (None, e.name)]
        return reference_source(asking[0])
    return solution_source(module, name)


def earlier_pages(path: pathlib.Path) -> list[pathlib.Path]:
    """The workbooks of the pages of the same chapter that come before ``path`` in the book
    (chapter 10 has two pages): in the order of ``_toc.yml``."""
    pages = [line.split("book/", 1)[1].strip() for line in (ROOT / "_toc.yml").read_text()
             .splitlines() if "file: book/" in line]
    same = [page for page in pages if page[:2] == path.name[:2]]
    return [ROOT / "notebooks" / f"{page}.ipynb" for page in same[:same.index(path.stem)]]


def workbook_folder(path: pathlib.Path, tmp_path: pathlib.Path, solved_up_to: int | None):
    """A copy of the workbook in a folder of its own, with the learner's package beside it:
    made from the stubs by the workbook's first cell, or, for ``solved_up_to``, holding the
    reference pieces of the chapters up to that one, and of the earlier pages of this one."""
    shutil.copy(path, tmp_path / path.name)
    if solved_up_to is not None:
        fill_with_solutions(tmp_path / "myloader", solved_up_to)
        for page in earlier_pages(path):
            for cell in exercise_cells(nbformat.read(page, as_version=4)):
                if piece_of(cell):
                    write_piece(tmp_path / "myloader", piece_of(cell), reference_answer(cell),
                                force=True)
    return tmp_path / path.name


def execute(notebook, folder: pathlib.Path, spawn: bool = False):
    if spawn:
        notebook.cells.insert(0, nbformat.v4.new_code_cell(SPAWN))
    client = nbclient.NotebookClient(notebook, timeout=180, kernel_name="python3",
                                     resources={"metadata": {"path": str(folder)}})
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


def assert_every_check_says(verdict: str, notebook, path: pathlib.Path,
                            call=CHECK_CALL) -> None:
    checks = check_cells(notebook, call)
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
        reference = getattr(importlib.import_module(
            f"minidataloader_course.chapters.{module}.solution"), name)
        assert reference in [e.reference for e in known.values()], solution
        if piece_of(cell):
            assert cell.source.split("\n")[0] in (f"%%piece {piece_of(cell)}",
                                                  f"%piece {piece_of(cell)}")
        else:
            assert name in known, f"{path.name}: no exercise called {name!r}"
        assert "raise NotImplementedError" in cell.source or cell.source.startswith("%piece ")
    assert len(check_cells(notebook)) >= len(stubs), f"{path.name}: an exercise has no check"
    known_questions = questions()
    for cell in answer_cells(notebook):
        name = cell.metadata.get("minidataloader", {}).get("question", "")
        assert name in known_questions and name.startswith(chapter), (path.name, name)
        assert cell.source.startswith("answer = None  #"), cell.source
    assert len(check_cells(notebook, ANSWER_CALL)) == len(answer_cells(notebook))


@pytest.mark.parametrize("path", WORKBOOKS, ids=ids)
def test_workbook_as_shipped_reports_not_attempted(path, tmp_path):
    copy = workbook_folder(path, tmp_path, solved_up_to=None)
    notebook = execute(nbformat.read(copy, as_version=4), tmp_path)
    assert_every_check_says("not attempted yet", notebook, path)
    if answer_cells(notebook):
        assert_every_check_says("not answered yet", notebook, path, ANSWER_CALL)


@pytest.mark.parametrize("spawn", [False, True], ids=["fork", "spawn"])
@pytest.mark.parametrize("path", WORKBOOKS, ids=ids)
def test_workbook_answered_as_a_learner_passes(path, spawn, tmp_path):
    copy = workbook_folder(path, tmp_path, solved_up_to=int(path.name[:2]) - 1)
    notebook = nbformat.read(copy, as_version=4)
    for cell in exercise_cells(notebook):
        answer(cell, reference_answer(cell))
    answer_questions(notebook)
    executed = execute(notebook, tmp_path, spawn)
    assert_every_check_says("✔ passed", executed, path)
    if answer_cells(executed):
        assert_every_check_says("✔ passed", executed, path, ANSWER_CALL)
