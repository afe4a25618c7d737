"""The workbooks run anywhere: the two distributions built as wheels and installed into a fresh
virtual environment outside the repository (torch as the book pins it), a folder made there
by ``python -m minidataloader_course init``, and in it:

- two workbooks executed as shipped: they run to the end, every check says "not attempted
  yet" and every item "not answered yet";
- the same two answered with the book's solutions (pieces filled by
  ``python -m minidataloader_course fill``, as a reader who skips ahead does): every check,
  item and milestone passes;
- milestone 5 from a terminal there, with the reference pieces.

Nothing of the repository is on the path there: the data, the workbooks and the stubs come
from the installed course."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import nbformat
import pytest

from tests.book.test_notebooks import (
    ANSWER_CALL,
    answer,
    answer_cells,
    answer_questions,
    assert_every_check_says,
    exercise_cells,
    reference_answer,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKBOOKS = ("01_epochs_batches_iterations.ipynb", "05_single_process_loader.ipynb")
# runs a notebook in place with the fresh environment's own kernel
EXECUTE = """
import sys, nbclient, nbformat
path = sys.argv[1]
notebook = nbformat.read(path, as_version=4)
nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                        resources={"metadata": {"path": sys.argv[2]}}).execute()
nbformat.write(notebook, path)
"""


def run(command: list, cwd: pathlib.Path, timeout: float = 600) -> str:
    # nothing of the repository: not on the path, not the working folder
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def make_environment(base: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """Both wheels built and installed into a fresh environment in ``base``: (its python, a
    folder made there by ``init``)."""
    wheels = base / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", wheels, ROOT, ROOT / "course"], cwd=base)
    built = sorted(wheels.glob("*.whl"))
    assert [w.name.split("-")[0] for w in built] == ["minidataloader", "minidataloader_course"]
    run([sys.executable, "-m", "venv", base / "venv"], cwd=base)
    python = base / "venv" / "bin" / "python"
    # torch and everything else as the book pins them; nbclient and ipykernel to run the
    # workbooks there
    run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--constraint", ROOT / "requirements.txt", "torch==2.13.0", *built, "nbclient",
         "ipykernel"], cwd=base, timeout=900)
    folder = base / "ws"
    said = run([python, "-m", "minidataloader_course", "init", folder], cwd=base)
    assert "myloader/: made from the stubs" in said, said
    return python, folder


def execute_there(python: pathlib.Path, notebook, folder: pathlib.Path, name: str):
    path = folder / name
    nbformat.write(notebook, path)
    script = folder.parent / "execute.py"
    script.write_text(EXECUTE)
    run([python, script, path, folder], cwd=folder)
    return nbformat.read(path, as_version=4)


# One test, not several: the environment takes minutes to make, and the test processes would
# each make their own.
@pytest.mark.timeout(1800)
def test_the_workbooks_and_a_milestone_run_from_the_installed_wheels(tmp_path):
    python, folder = make_environment(tmp_path)

    where = run([python, "-c", "import minidataloader, minidataloader_course as c; "
                 "print(minidataloader.__file__); print(c.__file__)"], cwd=folder)
    assert str(ROOT) not in where, where
    assert sorted(p.name for p in folder.glob("*.ipynb")) == sorted(
        p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

    # init again: a workbook the learner changed is kept (no one answers its question)
    mine = folder / WORKBOOKS[0]
    shipped = mine.read_text()
    mine.write_text(shipped.replace("raise NotImplementedError", "return 0", 1))
    said = run([python, "-m", "minidataloader_course", "init", folder], cwd=folder)
    assert f"{mine.name}: kept yours" in said and "return 0" in mine.read_text(), said
    mine.write_text(shipped)

    for name in WORKBOOKS:  # as shipped
        executed = execute_there(python, nbformat.read(folder / name, as_version=4), folder,
                                 f"shipped_{name}")
        assert_every_check_says("not attempted yet", executed, folder / name)
        if answer_cells(executed):
            assert_every_check_says("not answered yet", executed, folder / name, ANSWER_CALL)

    for name in WORKBOOKS:  # answered with the book's solutions, the earlier pieces filled
        run([python, "-m", "minidataloader_course", "fill", int(name[:2]) - 1, "--path",
             folder / "myloader", "--yes"], cwd=folder)
        notebook = nbformat.read(folder / name, as_version=4)
        for cell in exercise_cells(notebook):
            answer(cell, reference_answer(cell))
        answer_questions(notebook)
        executed = execute_there(python, notebook, folder, f"answered_{name}")
        assert_every_check_says("✔ passed", executed, folder / name)
        if answer_cells(executed):
            assert_every_check_says("✔ passed", executed, folder / name, ANSWER_CALL)

    run([python, "-m", "minidataloader_course", "fill", 5, "--path", folder / "myloader",
         "--yes"], cwd=folder)
    said = run([python, "-m", "minidataloader_course", "milestone", 5, folder / "myloader"],
               cwd=folder)
    assert "✔ passed" in said, said
