"""The checker, tested with wrong answers: every reference solution with a mistake a beginner
plausibly makes (each chapter's ``mutants.py``), written where a learner writes it (a module outside the
package; a piece of the loader in the learner's own package, the other pieces right). Every
one must be refused, with a verdict that names the broken rule. The session ends with the
fraction refused (tests/conftest.py prints it)."""

from __future__ import annotations

import contextlib
import io

import pytest

from minidataloader_course import check, exercises
from minidataloader_course.catalog import mutants
from tests.course.checker.answers import answered

MUTANTS = mutants()
EXERCISES = {name: ex for name, ex in exercises().items() if ex.chapter.startswith("ch")}


def test_every_exercise_has_wrong_variants():
    assert set(EXERCISES) == {mutant.exercise for mutant in MUTANTS}
    assert len({mutant.id for mutant in MUTANTS}) == len(MUTANTS), "two mutants share a name"


@pytest.mark.parametrize("mutant", MUTANTS, ids=[mutant.id for mutant in MUTANTS])
def test_a_wrong_variant_is_refused_and_the_verdict_names_the_rule(mutant, tmp_path):
    exercise = EXERCISES[mutant.exercise]
    with answered(tmp_path, exercise, mutant.changes) as answer, \
            contextlib.redirect_stdout(io.StringIO()):  # check() prints outside Jupyter
        verdict = check(answer, name=exercise.name)
    text = str(verdict)
    assert verdict.status == "failed", f"the mistake ({mutant.mistake}) was not refused:\n{text}"
    missing = [words for words in mutant.says if words not in text]
    assert not missing, f"the verdict does not say {missing}:\n{text}"
