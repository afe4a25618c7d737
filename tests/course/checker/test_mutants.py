"""The checker, tested with wrong answers: every reference solution with a mistake a beginner
plausibly makes (each chapter's ``mutants.py``), written where a learner writes it (a module outside the
package; a piece of the loader in the learner's own package, the other pieces right). Every
one must be refused, on a hidden case of the rule it declares broken, with a verdict that names
that rule; and every rule an exercise states has its cases and a mutant that breaks it. The
session ends with the fraction refused (tests/conftest.py prints it)."""

from __future__ import annotations

import contextlib
import io

import pytest

from minidataloader_course import check, exercises
from minidataloader_course.catalog import mutants
from tests.course.checker import parity_toy
from tests.course.checker.answers import answered, learner_module, mutated

MUTANTS = mutants()
EXERCISES = {name: ex for name, ex in exercises().items() if ex.chapter.startswith("ch")}


def test_every_exercise_has_wrong_variants():
    assert set(EXERCISES) == {mutant.exercise for mutant in MUTANTS}
    assert len({mutant.id for mutant in MUTANTS}) == len(MUTANTS), "two mutants share a name"


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_every_rule_has_hidden_cases_and_a_mutant_that_breaks_it(name):
    exercise = EXERCISES[name]
    total = len(exercise.cases())
    assert exercise.rules, f"{name} declares no rules"
    problems = []
    for number, rule in enumerate(exercise.rules, 1):
        if not rule.cases or not all(1 <= case <= total for case in rule.cases):
            problems.append(f"rule {number} ({rule.text!r}) names cases {rule.cases}, of 1..{total}")
    broken = {mutant.breaks for mutant in MUTANTS if mutant.exercise == name}
    problems += [f"no mutant breaks rule {number} ({rule.text!r}): add one to the chapter's "
                 f"mutants.py with breaks={number}"
                 for number, rule in enumerate(exercise.rules, 1) if number not in broken]
    problems += [f"a mutant breaks rule {number}, and {name} has {len(exercise.rules)} rules"
                 for number in sorted(broken) if not 1 <= number <= len(exercise.rules)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("mutant", MUTANTS, ids=[mutant.id for mutant in MUTANTS])
def test_a_wrong_variant_is_refused_and_the_verdict_names_the_rule(mutant, tmp_path):
    exercise = EXERCISES[mutant.exercise]
    with answered(tmp_path, exercise, mutant.changes) as answer, \
            contextlib.redirect_stdout(io.StringIO()):  # check() prints outside Jupyter
        verdict = check(answer, name=exercise.name)
    assert_refused_on_its_rule(mutant, exercise, verdict)


def assert_refused_on_its_rule(mutant, exercise, verdict):
    text = str(verdict)
    assert verdict.status == "failed", f"the mistake ({mutant.mistake}) was not refused:\n{text}"
    missing = [words for words in mutant.says if words not in text]
    assert not missing, f"the verdict does not say {missing}:\n{text}"
    rule = exercise.rules[mutant.breaks - 1]
    assert verdict.case_number in rule.cases, (
        f"the mutant breaks rule {mutant.breaks} ({rule.text!r}, cases {rule.cases}), and the "
        f"verdict fails on case {verdict.case_number}:\n{text}")


@pytest.mark.parametrize("mutant", parity_toy.MUTANTS, ids=lambda mutant: mutant.mistake)
def test_mutants_of_parity_rules_and_concept_rules_are_refused_on_their_rule(mutant, tmp_path):
    """The same promise with rules marked ``parity`` (no chapter's exercise may have one yet):
    a toy exercise, its solution written in a module of the learner's own."""
    with parity_toy.registered() as exercise, contextlib.redirect_stdout(io.StringIO()):
        source = mutated(parity_toy.SOLUTION, mutant.changes)
        verdict = check(getattr(learner_module(tmp_path, source), exercise.name),
                        name=exercise.name)
    assert_refused_on_its_rule(mutant, exercise, verdict)
    assert verdict.concept == bool(exercise.rules[mutant.breaks - 1].parity), str(verdict)
