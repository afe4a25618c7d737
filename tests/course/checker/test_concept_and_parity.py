"""Concept cases and torch's exact cases (NOTE [ Concept cases and torch's exact cases ] in
checker/check.py): a learner who has the concept and misses only torch's detail is told
"✔ the concept; 2 of torch's exact cases left (draw order)", and still does not pass. Tested on
a toy exercise (tests/course/checker/parity_toy.py) with answers written where a learner
writes them: a module of their own outside the package, and a notebook cell (exec'ed code).
The expected values come from torch, the oracle; the rest of each verdict is its exact text.
"""

from __future__ import annotations

import contextlib
import io

import pytest

from minidataloader_course import check
from minidataloader_course.checker.check import parity_cases
from minidataloader_course.shared.compare import difference, short
from tests.course.checker import parity_toy
from tests.course.checker.answers import learner_module, mutated
from tests.course.checker.parity_toy import EVERY_INDEX_ONCE, TORCHS_ORDER, torch_permutation

RIGHT = parity_toy.SOLUTION
# (b) the concept, with Python's random: torch's draw order missed
ONLY_THE_CONCEPT = mutated(RIGHT, parity_toy.MUTANTS[0].changes)
# (c) torch's order, and one concept case wrong: n=1 gives nothing
NOT_THE_CONCEPT = mutated(RIGHT, [("    generator =", "    if n == 1:\n        return []\n"
                                                    "    generator =")])
# (d) both: the last index forgotten (a parity case fails first, then concept cases)
NEITHER = mutated(RIGHT, parity_toy.MUTANTS[1].changes)


@pytest.fixture(autouse=True)
def toy():
    with parity_toy.registered() as exercise:
        yield exercise


def written(how: str, source: str, folder):
    """The learner's ``toy_permutation``: saved as a module of their own outside the package,
    or run as a notebook cell runs it."""
    if how == "module":
        return learner_module(folder, source).toy_permutation
    namespace = {"__name__": "__main__"}
    exec(compile(source, "<ipython-input-7>", "exec"), namespace)  # noqa: S102 - a cell
    return namespace["toy_permutation"]


def verdict_of(answer):
    with contextlib.redirect_stdout(io.StringIO()):  # check() prints outside Jupyter
        return check(answer, name=parity_toy.NAME)


def test_parity_cases_are_those_of_parity_rules_only(toy):
    assert parity_cases(toy) == {0: ["draw order"], 4: ["draw order"]}  # case 4 is a concept case


HOW = ["module", "cell"]


@pytest.mark.parametrize("how", HOW)
def test_a_right_answer_passes(how, tmp_path):
    verdict = verdict_of(written(how, RIGHT, tmp_path))
    assert verdict.passed and not verdict.concept
    assert str(verdict) == "✔ passed: toy_permutation gave the right answer on all 5 hidden cases"


@pytest.mark.parametrize("how", HOW)
def test_only_torchs_exact_cases_wrong_is_the_concept_and_no_pass(how, tmp_path):
    verdict = verdict_of(written(how, ONLY_THE_CONCEPT, tmp_path))
    shuffled = list(range(6))
    __import__("random").Random(0).shuffle(shuffled)  # what the answer gives on case 1
    expected = torch_permutation(6, 0)
    assert shuffled != expected
    assert not verdict.passed and verdict.status == "failed" and verdict.concept
    assert verdict.case_number == 1 and not verdict.in_doubt
    assert str(verdict) == "\n".join([
        "✔ the concept; 2 of torch's exact cases left (draw order): toy_permutation is right on "
        "the other 3 hidden cases",
        "  case:     n=6, seed=0, look_at='order'",
        f"  expected: {short(expected)}",
        f"  got:      {short(shuffled)}",
        f"  problem:  {difference(expected, shuffled)}",
        f"  hint:     {TORCHS_ORDER}",
        "  note:     what is left is torch's exact behaviour, not the idea; the milestones "
        "compare your loader with torch, so they need it too"])
    page = verdict._repr_html_()
    assert "mdl-concept" in page and "✔ the concept; " in page and "✘" not in page
    assert "2 of torch&#x27;s exact cases left (draw order)" in page
    assert "torch.randperm(n) with a generator seeded with `seed`" in page


@pytest.mark.parametrize("how", HOW)
def test_a_concept_case_wrong_is_todays_failure(how, tmp_path):
    verdict = verdict_of(written(how, NOT_THE_CONCEPT, tmp_path))
    assert not verdict.passed and not verdict.concept and verdict.case_number == 3
    assert str(verdict) == "\n".join([
        "✘ failed: toy_permutation: 4 of 5 hidden cases right",
        "  case:     n=1, seed=3, look_at='indices'",
        "  expected: [0]",
        "  got:      []",
        f"  problem:  {difference([0], [])}",
        f"  hint:     {EVERY_INDEX_ONCE}"])
    page = verdict._repr_html_()
    assert "✘ failed: " in page and "mdl-concept" not in page and "the concept" not in page


@pytest.mark.parametrize("how", HOW)
def test_both_wrong_shows_the_first_concept_case_not_the_earlier_parity_case(how, tmp_path):
    verdict = verdict_of(written(how, NEITHER, tmp_path))
    got = sorted(torch_permutation(6, 0)[:-1])
    assert not verdict.passed and not verdict.concept
    assert verdict.case_number == 2, "case 1 (torch's order) failed first; the concept comes first"
    assert str(verdict) == "\n".join([
        "✘ failed: toy_permutation: 1 of 5 hidden cases right",
        "  case:     n=6, seed=0, look_at='indices'",
        f"  expected: {short(list(range(6)))}",
        f"  got:      {short(got)}",
        f"  problem:  {difference(list(range(6)), got)}",
        f"  hint:     {EVERY_INDEX_ONCE}"])


def test_a_parity_case_that_hangs_is_no_concept_verdict(tmp_path):
    """Only a wrong value on a parity case leaves the concept standing: code that never
    returns on one is stopped, and the verdict says so, as today."""
    source = mutated(RIGHT, [("    generator =", "    if n == 9:\n        while True:\n"
                                                  "            pass\n    generator =")])
    verdict = verdict_of(written("module", source, tmp_path))
    assert not verdict.passed and not verdict.concept
    assert str(verdict).startswith("✘ failed: toy_permutation took longer than 5 s"), str(verdict)


def test_without_parity_rules_nothing_changes(toy, tmp_path):
    toy.rules = (toy.rules[0], type(toy.rules[1])(toy.rules[1].text, toy.rules[1].cases))
    verdict = verdict_of(written("module", ONLY_THE_CONCEPT, tmp_path))
    assert not verdict.concept and verdict.case_number == 1
    assert str(verdict).startswith("✘ failed: toy_permutation: 3 of 5 hidden cases right")


def test_the_toys_parity_cases_can_fail():
    """torch's order, the oracle's, is not the sorted order: the parity cases test something."""
    assert torch_permutation(6, 0) != list(range(6))
    assert torch_permutation(9, 1) != list(range(9))
