"""Chapter 6's multi-process iterator, grown in four checked steps (issue 29, item 1):

- the steps are exercises of their own, in order, each a small addition to the one before;
- the last step is the class chapters 7 to 10 subclass, with the names they rely on;
- the staircase is real: each step's reference fails the next step's check;
- each step's statement specifies behaviour and the small interface, not the reference's
  internals;
- the bookkeeping tables are torch's (its own iterator, the arrivals scripted), and the
  references keep the same bookkeeping, step by step;
- the figure is drawn from torch's scripted run.

The checks themselves (the references written where a learner writes them, the mutants, every
kind of wrong code) are run for every step by tests/course/checker/.
"""

from __future__ import annotations

import difflib
import inspect
import pathlib
import textwrap

import jupytext
import pytest

from minidataloader_course.authoring import workbooks
from minidataloader_course.catalog import exercises, verdict_of
from minidataloader_course.chapters.ch05 import solution as ch05
from minidataloader_course.chapters.ch06 import bookkeeping, checks, solution, step1, step2, step3
from minidataloader_course.learner import (
    fill_with_solutions,
    package_regions,
    piece_steps,
    reference_source,
)

ROOT = pathlib.Path(__file__).resolve().parents[3]
CHAPTER = ROOT / "book" / "06_workers_and_queues.md"
PIECE = "dataloader.MultiProcessIterator"
STEPS = [step1.MultiProcessIterator, step2.MultiProcessIterator, step3.MultiProcessIterator,
         solution.MultiProcessIterator]


def code(source: str) -> list[str]:
    """The lines of code of a source, without blank lines, comments and trailing comments."""
    return [line.split("  #")[0].rstrip() for line in textwrap.dedent(source).splitlines()
            if line.strip() and not line.strip().startswith("#")]


def test_the_steps_are_the_pieces_exercises_in_order():
    assert [e.name for e in piece_steps(PIECE, "ch06")] == list(checks.STEP_NAMES)
    assert [e.reference for e in piece_steps(PIECE, "ch06")] == STEPS
    for before, after in zip(STEPS, STEPS[1:]):
        assert after.__bases__ == (before,) and after.__name__ == before.__name__


def test_each_step_adds_at_most_about_30_lines():
    """The first step is the class from nothing: of its lines, those of chapter 5's iterator
    (the index iterator, the base seed, iter and len) are the learner's already."""
    sources = [reference_source(exercises()[name]) for name in checks.STEP_NAMES]
    chapter5 = {line.strip() for line in code(inspect.getsource(ch05.SingleProcessIterator))}
    first_new = [line for line in code(sources[0]) if line.strip() not in chapter5]
    assert len(first_new) <= 45, len(first_new)
    for before, after in zip(sources, sources[1:]):
        added = [line for line in difflib.ndiff(code(before), code(after))
                 if line.startswith("+ ")]
        assert len(added) <= 30, added


def test_the_last_step_is_the_class_chapters_7_to_10_grow():
    """Chapters 7 to 10 subclass it and override its methods: its names stay."""
    final = solution.MultiProcessIterator
    for method in ("__init__", "__iter__", "__len__", "__next__", "_dispatch", "_get",
                   "_hand_out", "_shutdown"):
        assert callable(getattr(final, method)), method
    assembled = reference_source(exercises()["MultiProcessIterator"])
    attributes = set(workbooks.internals(assembled))
    assert {"sent", "next_number", "worker_of", "waiting", "tasks", "turn", "indices",
            "index_queues", "workers", "result_queue", "done_event", "base_seed", "loader",
            "num_workers"} <= attributes
    assert assembled.count("class MultiProcessIterator") == 1


@pytest.mark.parametrize("step", range(3), ids=lambda k: f"step {k + 1}")
def test_a_step_does_not_pass_the_next_steps_check(step):
    verdict = verdict_of(STEPS[step], name=checks.STEP_NAMES[step + 1])
    assert verdict.status == "failed", str(verdict)


def test_fill_gives_the_learner_who_finished_each_step(tmp_path):
    package = tmp_path / "myloader"
    for name in checks.STEP_NAMES:
        fill_with_solutions(package, through=name)
        written = package_regions(package)[PIECE][1]
        assert written == textwrap.dedent(reference_source(exercises()[name])).strip(), name
    fill_with_solutions(package, 6)
    assert package_regions(package)[PIECE][1] == textwrap.dedent(
        reference_source(exercises()["MultiProcessIterator"])).strip()


# The reference's names that a statement must leave to the learner's design (the task
# `(batch number, indices)` is no internal: the worker loop of the exercise before reads it)
INTERNALS = {"_dispatch", "_get", "_hand_out", "_shutdown", "worker_of", "waiting", "tasks",
             "turn", "next_number", "sent", "index_queues", "workers", "done_event",
             "base_seed"}


def test_the_statements_leave_the_design_to_the_learner():
    texts = {name: text for name, text, _ in workbooks.exercise_contexts(CHAPTER)}
    for name in checks.STEP_NAMES:
        named = workbooks.text_names(texts[name].statement)
        assert not named & INTERNALS, (name, named & INTERNALS)
        assert f"`{PIECE.split('.')[1]}`" in texts[name].statement


def test_the_workbook_asks_each_step_in_its_cell():
    notebook = workbooks.build_workbook(CHAPTER)
    stubs = [c for c in notebook.cells if c.metadata.get("minidataloader", {}).get("piece") == PIECE]
    assert [c.metadata["minidataloader"]["exercise"] for c in stubs] == list(checks.STEP_NAMES)
    assert stubs[0].source.startswith(f"%%piece {PIECE}\n") and all(
        c.source == f"%piece {PIECE}" for c in stubs[1:])
    chapter = jupytext.read(CHAPTER)
    assert sum("Check yourself: " in c.source for c in chapter.cells
               if c.cell_type == "markdown") >= 4


# ---------------------------------------------------------------------------------------
# The bookkeeping tables: torch's, and the references keep the same bookkeeping


def reference_bookkeeping(cls, num_workers, prefetch_factor, batches, arrivals, in_order):
    """``torch_bookkeeping``'s run with a reference step in place of torch's iterator: its
    results come from the same script, and its state is read in the same words."""
    loader = ch05.DataLoader(range(batches), batch_size=1, num_workers=num_workers,
                             prefetch_factor=prefetch_factor, in_order=in_order,
                             multiprocessing_context="fork")
    iterator = cls(loader)
    queue = bookkeeping.ScriptedArrivals(arrivals, lambda: iterator.sent)
    iterator.result_queue, real = queue, iterator.result_queue  # what every step reads

    def state(handed_out=None):
        worker_of = getattr(iterator, "worker_of", {n: 0 for n in range(
            getattr(iterator, "next_number", 0), iterator.sent)})
        waiting = getattr(iterator, "waiting", {})
        return {"handed out": handed_out, "sent": iterator.sent,
                "due": getattr(iterator, "next_number", None),
                "buffer": sorted(waiting),
                "in flight": [sorted(n for n, w in worker_of.items() if w == worker)
                              for worker in range(num_workers)]}

    rows = [state()]
    try:
        while True:
            try:
                batch = next(iterator)
            except StopIteration:
                rows.append(state("StopIteration"))
                return rows
            rows.append(state(int(batch.split()[1])))
    finally:
        iterator.result_queue = real
        iterator._shutdown()


@pytest.mark.parametrize(("step", "run", "columns"), [
    (0, bookkeeping.ONE_WORKER, ("sent", "due", "in flight")),
    (1, bookkeeping.ROUND_ROBIN, ("sent", "in flight")),
    (2, bookkeeping.REORDER, ("sent", "due", "buffer", "in flight")),
    (3, bookkeeping.REORDER, ("sent", "due", "buffer", "in flight")),
    (3, bookkeeping.OUT_OF_ORDER, ("handed out", "sent", "in flight")),
    (3, bookkeeping.FIGURE, ("handed out", "sent", "due", "buffer", "in flight")),
], ids=["step 1", "step 2", "step 3", "step 4 in order", "step 4 out of order", "figure"])
def test_the_references_keep_torchs_bookkeeping(step, run, columns):
    theirs = bookkeeping.torch_bookkeeping(*run)
    ours = reference_bookkeeping(STEPS[step], *run)
    assert [{c: row[c] for c in columns} for row in ours] == [
        {c: row[c] for c in columns} for row in theirs]


def test_the_tables_are_read_from_torchs_run():
    """What the items ask is a slice of torch's states, and the script drove torch."""
    rows = bookkeeping.torch_bookkeeping(*bookkeeping.REORDER)
    assert [row["handed out"] for row in rows[1:]] == [0, 1, 2, 3, 4, 5, "StopIteration"]
    assert sum((row["received"] for row in rows), []) == bookkeeping.REORDER[3]
    assert bookkeeping.reorder_table() == [(r["sent"], r["due"], r["buffer"]) for r in rows[1:6]]
    assert rows[1]["buffer"] == [1, 3]  # read before batch 0 came: it waited
    unordered = bookkeeping.torch_bookkeeping(*bookkeeping.OUT_OF_ORDER)
    assert [row["handed out"] for row in unordered[1:5]] == [1, 3, 4, 0]  # as they came


def test_the_figure_is_drawn_from_torchs_run():
    rows = bookkeeping.torch_bookkeeping(*bookkeeping.FIGURE)[:4]
    committed = (ROOT / "book" / "figures" / "ch06_bookkeeping.svg").read_text()
    assert committed == bookkeeping.figure_svg(rows), (
        "book/figures/ch06_bookkeeping.svg is stale: write bookkeeping.figure_svg(...) there")
