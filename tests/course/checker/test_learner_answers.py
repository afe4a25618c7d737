"""Every exercise answered where a learner answers it: the reference solution's source taken out
of the package into a module of the learner's own, or, for a piece of the learner's loader,
written into their own package (``myloader``, outside this one) and written by a ``%%piece``
cell in a kernel; each must pass (tests/book/test_notebooks.py answers every workbook in its
kernel). Then delegation, from every side a learner can reach a forbidden piece, told apart
from calling what the case hands over.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import textwrap

import pytest

from minidataloader_course import Case, Exercise, check, exercises, register
from minidataloader_course.learner import reference_source
from tests.course.checker.answers import answered, learner_module, solution_source

EXERCISES = {name: ex for name, ex in exercises().items() if ex.chapter.startswith("ch")}


def quiet_check(implementation, **options):
    with contextlib.redirect_stdout(io.StringIO()):  # check() prints outside Jupyter
        return check(implementation, **options)


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_the_reference_written_outside_the_package_passes(name, tmp_path):
    """Also the proof that each reference agrees with torch where torch is the oracle."""
    exercise = EXERCISES[name]
    with answered(tmp_path, exercise) as answer:
        if exercise.piece:
            assert answer.__module__.startswith("myloader."), answer.__module__
        verdict = quiet_check(answer, name=name)
    assert verdict.passed, str(verdict)


PIECE_CELLS = [
    "%load_ext minidataloader_course.learner",
    # the notebook also imports the piece the case hands over: only a call of it counts
    "from torch.utils.data import default_collate\nfrom minidataloader_course import check",
    f"%%piece fetch.MapFetcher\n{reference_source(EXERCISES['MapFetcher'])}",
    "print(MapFetcher.__module__)\ncheck(MapFetcher)",
    # a piece's file is its namespace: the cell imports what the piece calls
    "%%piece fetch.MapFetcher\nfrom torch.utils.data import default_collate\n\n\n"
    + reference_source(EXERCISES["MapFetcher"]).replace("return self.collate_fn(samples)",
                                                        "return default_collate(samples)"),
    "check(MapFetcher)",
]


def test_a_piece_written_by_a_piece_cell_in_a_kernel(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in PIECE_CELLS])
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()

    def shown(cell) -> str:
        return "\n".join(o.get("data", {}).get("text/plain", "") + o.get("text", "")
                         for o in cell.outputs)

    assert "def fetch" in (tmp_path / "myloader" / "fetch.py").read_text()
    assert "myloader.fetch" in shown(notebook.cells[3])
    assert "✔ passed: MapFetcher" in shown(notebook.cells[3]), shown(notebook.cells[3])
    assert "your code used torch.utils.data.default_collate" in shown(notebook.cells[5]), \
        shown(notebook.cells[5])


# ---------------------------------------------------------------------------------------
# Delegation: the learner's own call of a piece, not a call of what the case hands over

FETCHER = solution_source("ch05", "MapFetcher")
COLLATE_CALL = "return self.collate_fn(samples)"


def fetcher_calling(tmp_path, call: str, header: str = ""):
    """The reference MapFetcher with its collate_fn call replaced by ``call``, and ``header``
    added at the top of the learner's module."""
    assert FETCHER.count(COLLATE_CALL) == 1
    source = header + "\n" + FETCHER.replace(COLLATE_CALL, call)
    return learner_module(tmp_path, source).MapFetcher


def test_calling_the_collate_fn_the_case_hands_over_is_not_delegation(tmp_path):
    # one case hands over torch's own default_collate, which the learner's module imports
    # too (as the workbook does): only the learner's own call counts
    assert any(case.inputs["collate_fn"] == "default_collate"
               for case in EXERCISES["MapFetcher"].cases())
    implementation = fetcher_calling(
        tmp_path, COLLATE_CALL, "from torch.utils.data import DataLoader, default_collate\n"
                                "import minidataloader\n")
    assert quiet_check(implementation).passed


ROUTES = {
    "a name imported at the top": ("from torch.utils.data import default_collate",
                                   "return default_collate(samples)"),
    "an import inside the method": ("", "from torch.utils.data import default_collate\n"
                                        "        return default_collate(samples)"),
    "a module alias": ("import torch.utils.data as tud", "return tud.default_collate(samples)"),
    "the defining module": ("from torch.utils.data.dataloader import default_collate",
                            "return default_collate(samples)"),
    "the full path": ("import torch", "return torch.utils.data.default_collate(samples)"),
    "minidataloader": ("import minidataloader", "return minidataloader.default_collate(samples)"),
    "minidataloader's module": ("from minidataloader.collate import default_collate",
                                "return default_collate(samples)"),
    "getattr": ("import importlib",
                "return getattr(importlib.import_module('torch.utils.data'), "
                "'default_collate')(samples)"),
    "a default argument": ("from torch.utils.data import default_collate as dc",
                           "return (lambda s, f=dc: f(s))(samples)"),
}


@pytest.mark.parametrize("route", ROUTES)
def test_calling_a_forbidden_piece_is_delegation_however_it_was_reached(route, tmp_path):
    header, call = ROUTES[route]
    verdict = quiet_check(fetcher_calling(tmp_path, call, header))
    assert verdict.status == "failed", str(verdict)
    assert "default_collate: this exercise asks you to build it yourself" in verdict.summary, \
        str(verdict)


def test_delegation_through_a_module_of_the_learners_own(tmp_path):
    (tmp_path / "learners_helpers.py").write_text(textwrap.dedent("""
        from torch.utils.data import default_collate

        def combine(samples):
            return default_collate(samples)
    """))
    sys.path.insert(0, str(tmp_path))
    try:
        implementation = fetcher_calling(tmp_path, "return learners_helpers.combine(samples)",
                                          "import learners_helpers")
        verdict = quiet_check(implementation)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("learners_helpers", None)
    assert "your code used torch.utils.data.default_collate" in verdict.summary, str(verdict)


def test_subclassing_a_forbidden_class_inside_the_code_is_delegation(tmp_path):
    source = textwrap.dedent("""
        import torch.utils.data as tud

        def TabularDataset(table):
            class Mine(tud.TensorDataset):
                pass
            return Mine(table[:, :-1], table[:, -1:])
    """)
    verdict = quiet_check(learner_module(tmp_path, source).TabularDataset)
    assert "your code used torch.utils.data.TensorDataset" in verdict.summary, str(verdict)


def test_a_forbidden_method_of_a_class_is_delegation_and_the_checker_may_use_it(tmp_path):
    source = textwrap.dedent("""
        from minidataloader_course import Case

        def describe_inputs(inputs):
            return Case(inputs).describe()
    """)

    def describe_inputs(inputs):
        return ", ".join(f"{name}={value!r}" for name, value in inputs.items())

    register(Exercise(reference=describe_inputs, name="describe_inputs",
                      cases=lambda: [Case({"inputs": {"a": 1}})],
                      forbidden=("minidataloader_course.checker.framework.Case.describe",)))
    verdict = quiet_check(learner_module(tmp_path, source).describe_inputs)
    assert "your code used minidataloader_course.checker.framework.Case.describe" in verdict.summary
    assert quiet_check(describe_inputs).passed
    assert Case({"a": 1}).describe() == "a=1"  # put back as it was


# ---------------------------------------------------------------------------------------
# What a learner sees outside Jupyter


def test_check_prints_its_verdict_in_a_script_and_returns_it(tmp_path):
    script = textwrap.dedent("""
        from minidataloader_course import check

        def iterations_per_epoch(dataset_size, batch_size, drop_last=False):
            return 0

        verdict = check(iterations_per_epoch)
        print("returned:", verdict.status)
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert run.stdout.count("✘ failed: iterations_per_epoch") == 1, run.stdout + run.stderr
    assert "in doubt:" not in run.stdout  # a plain mistake: nothing to report
    assert run.stdout.rstrip().endswith("returned: failed")
