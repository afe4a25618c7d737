"""RandomSampler's check tells the concept from torch's exact draws (the comment above
`_random_cases` in chapters/ch03/checks.py): a sampler of the learner's own design, right in
every way but torch's draws, passes every concept case and fails first on a case that only
parity rules name; a sampler that gets the concept wrong fails on a concept case."""

from __future__ import annotations

import contextlib
import io

import pytest

from minidataloader_course import check, exercises
from tests.course.checker.answers import learners_piece

# Right in concept: a new permutation per pass, independent draws with replacement, the
# generator if given, else the global one. Not torch's draws: no seed of its own, no unused
# head, one randint call, and everything drawn at iter().
OWN_DESIGN = '''
class RandomSampler(Sampler):
    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self.num_samples = len(data_source) if num_samples is None else num_samples
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples must be a positive int")

    def __len__(self):
        return self.num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.replacement:
            drawn = torch.randint(n, (self.num_samples,), generator=self.generator)
            return iter(drawn.tolist())
        order = []
        while len(order) < self.num_samples:
            order += torch.randperm(n, generator=self.generator).tolist()
        return iter(order[:self.num_samples])
'''

# Wrong in concept: every epoch the same order.
SAME_ORDER = OWN_DESIGN.replace("generator=self.generator).tolist()",
                                "generator=torch.Generator()).tolist()")


def verdict_of(tmp_path, source):
    exercise = exercises()["RandomSampler"]
    with learners_piece(tmp_path, exercise, source) as piece, \
            contextlib.redirect_stdout(io.StringIO()):
        return exercise, check(piece, name="RandomSampler")


def rules_of_case(exercise, number):
    return [rule for rule in exercise.rules if number in rule.cases]


def test_a_sampler_of_ones_own_design_has_the_concept_and_misses_only_torchs_draws(tmp_path):
    exercise, verdict = verdict_of(tmp_path, OWN_DESIGN)
    assert verdict.status == "failed", str(verdict)
    rules = rules_of_case(exercise, verdict.case_number)
    assert rules and all(rule.parity for rule in rules), (
        f"the first case it fails, {verdict.case_number}, is a concept case:\n{verdict}")
    concept_cases = {case for rule in exercise.rules if not rule.parity for case in rule.cases}
    assert verdict.case_number > max(concept_cases), str(verdict)  # cases run in order


@pytest.mark.parametrize("source", [SAME_ORDER], ids=["the same order every epoch"])
def test_a_sampler_wrong_in_concept_fails_a_concept_case(tmp_path, source):
    exercise, verdict = verdict_of(tmp_path, source)
    assert verdict.status == "failed", str(verdict)
    assert any(not rule.parity for rule in rules_of_case(exercise, verdict.case_number)), (
        str(verdict))


def test_every_case_is_a_concept_case_or_a_parity_case_never_both():
    exercise = exercises()["RandomSampler"]
    concept = {case for rule in exercise.rules if not rule.parity for case in rule.cases}
    parity = {case for rule in exercise.rules if rule.parity for case in rule.cases}
    assert concept and parity and not concept & parity
    assert concept | parity == set(range(1, len(exercise.cases()) + 1))
