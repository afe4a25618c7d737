"""A workbook stands alone, and a hint names only what the learner has (issue 29, items 2
and 6).

- The generator refuses a workbook whose text points at what it does not hold: a backticked
  name "above" that no code cell before it defines (nor a stub, torch or Python), "the cell
  above that shows ...", "the loader above", "the table". Tested here on small made-up
  chapters; every real chapter passes it whenever its workbook is built (test_workbooks.py).
- No hint of an exercise names an attribute (``self.x``), method or helper that neither the
  statement, the workbook's cells before it, the stubs, the statements of earlier chapters'
  pieces (the learner's package has them), torch nor Python defines: a learner who designed
  their own code cannot use a hint about the reference's internals.
"""

from __future__ import annotations

import inspect
import re

import pytest

from minidataloader_course import exercises
from minidataloader_course.authoring import workbooks
from minidataloader_course.authoring.workbooks import ChapterError, unknown_in_hint
from minidataloader_course.learner import reference_source
from tests.book.test_workbooks import EXERCISE, STUB, make


def workbook_cell(text: str) -> str:
    return f'\n+++ {{"tags": ["workbook", "remove-cell"]}}\n\n{text}\n\n+++\n\nBook text.\n'


def workbook_code(source: str) -> str:
    return (f"\n```{{code-cell}} ipython3\n:tags: [workbook, remove-cell, skip-execution]\n\n"
            f"{source}\n```\n")


POINTING = workbook_cell("Compare your answer with `epoch_table` above.")
DEFINING = workbook_code("def epoch_table(sizes):\n    return {size: size // 3 for size in sizes}")


def test_a_name_called_above_that_the_workbook_lacks_is_refused_with_where_and_what():
    with pytest.raises(ChapterError) as refused:
        make(EXERCISE + STUB + POINTING)
    message = str(refused.value)
    assert "01_demo.md" in message
    assert "'Compare your answer with `epoch_table` above.'" in message
    assert "no code cell above it defines `epoch_table`" in message


def test_a_name_called_above_passes_once_a_cell_before_defines_it():
    make(EXERCISE + STUB + DEFINING + POINTING)
    imported = workbook_code("from statistics import median as epoch_table")
    make(EXERCISE + STUB + imported + POINTING)


@pytest.mark.parametrize("phrase", ["`epoch_table(sizes)` above", "`epoch_table` (a dict) above",
                                    "`epoch_table`, as above"])
def test_every_way_of_pointing_above_is_checked(phrase):
    pointing = workbook_cell(f"Compare your answer with {phrase}.")
    with pytest.raises(ChapterError, match="`epoch_table`"):
        make(EXERCISE + STUB + pointing)
    make(EXERCISE + STUB + DEFINING + pointing)


def test_a_definition_after_the_sentence_is_not_above_it():
    with pytest.raises(ChapterError, match="epoch_table"):
        make(EXERCISE + STUB + POINTING + DEFINING)
    make(EXERCISE + STUB + POINTING.replace("above", "below") + DEFINING)


def test_the_stubs_torch_and_python_need_no_cell():
    for name in ("SequentialSampler", "default_collate", "torch.randperm", "sorted"):
        make(EXERCISE + STUB + workbook_cell(f"Compare with `{name}` above."))


def test_a_name_in_a_statement_or_hint_is_checked_too():
    with pytest.raises(ChapterError, match="epoch_table"):
        make(EXERCISE.replace("Think of `//`.", "Start from `epoch_table` above.") + STUB)


@pytest.mark.parametrize(("sentence", "holder"), [
    ("In the loader above, how many batches are there?",
     workbook_code("loader = DataLoader(range(10), batch_size=4)")),
    ("Before you read the table, predict.",
     workbook_cell("| size | batches |\n|---|---|\n| 10 | 4 |")),
    ('The cell above that shows "three batches" computes it.',
     workbook_code('print("three batches")')),
])
def test_a_phrase_that_points_at_a_thing_needs_that_thing(sentence, holder):
    with pytest.raises(ChapterError, match=re.escape(sentence)):
        make(EXERCISE + STUB + workbook_cell(sentence))
    make(EXERCISE + STUB + holder + workbook_cell(sentence))


def test_a_cell_above_that_shows_something_else_is_not_the_one():
    sentence = 'The cell above that shows "three batches" computes it.'
    with pytest.raises(ChapterError, match="three batches"):
        make(EXERCISE + STUB + workbook_code('print("two batches")') + workbook_cell(sentence))


# ---------------------------------------------------------------------------------------
# Hints


def test_a_hint_naming_the_references_internals_is_caught():
    internals = {"_dispatch", "waiting"}
    assert unknown_in_hint("In `_dispatch`, skip the inactive workers.", set(), internals) == [
        "_dispatch"]
    assert unknown_in_hint("The number is not in `self.waiting`.", set(), internals) == [
        "self.waiting"]
    assert unknown_in_hint("call `self._shutdown()` at the end", set(), set()) == [
        "self._shutdown"]
    assert unknown_in_hint("`if self.pin_thread is\nnot None`, stop it", set(), set()) == [
        "self.pin_thread"]


def test_a_hint_naming_what_the_learner_has_passes():
    known = {"result_queue", "active", "resume_workers"}
    hint = ("Read `self.result_queue`, mark `self.active[w] = False`, call `resume_workers(...)`"
            ", `len(batch)`, `queue.Queue()`, `put` and `torch.randperm(n)`, then `__next__`.")
    assert unknown_in_hint(hint, known, {"resume_workers", "fill"}) == []
    # a name the hint's own code makes, or a local name of the reference, is the hint's to use
    assert unknown_in_hint("`remainder = size % batch`, then `remainder`", set(),
                           {"remainder"}) == []
    assert workbooks.internals("class A:\n    def f(self, n):\n        rest = n % 2\n"
                               "        self.seen = rest\n") == {"A", "f", "seen"}


def test_the_learner_has_what_earlier_chapters_pieces_asked_for():
    page = workbooks.chapter_pages(13)[0]
    _, _, known = next(entry for entry in workbooks.exercise_contexts(page)
                       if entry[0] == "WorkerSafeNoise")
    assert "_reset" in known  # chapter 8's statement asks the learner's iterator for it


EXERCISES = [(page, name, text, known) for number in range(1, 16)
             for page in workbooks.chapter_pages(number)
             for name, text, known in workbooks.exercise_contexts(page)]


@pytest.mark.parametrize("entry", EXERCISES, ids=lambda entry: f"{entry[0].stem[:2]}-{entry[1]}")
def test_no_hint_names_what_the_learner_lacks(entry):
    page, name, text, known = entry
    exercise = exercises()[name]
    source = reference_source(exercise) if exercise.piece else inspect.getsource(
        exercise.reference)
    internals = workbooks.internals(source)
    lacking = {hint.title: unknown_in_hint(hint.body, known, internals) for hint in text.hints}
    lacking = {title: names for title, names in lacking.items() if names}
    assert not lacking, (
        f"{page.name}, {name}: a hint names what neither the statement, the workbook's cells "
        f"before it, the stubs nor torch define: {lacking}. Speak of behaviour and of the "
        f"learner's own code (\"your shutdown\", \"the method of yours that sends the next "
        f"task\")")
