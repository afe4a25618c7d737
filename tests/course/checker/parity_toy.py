"""A toy exercise with concept rules and a parity rule (torch's exact behaviour), registered by
the tests that need it (``registered()``), with its solution as a learner would write it and
mutants of both kinds of rule.

``toy_permutation(n, seed)`` returns a random order of ``0..n-1``. The concept: every index
exactly once (cases that look at the sorted result). torch's detail: the order
``torch.randperm`` draws with a generator seeded with ``seed`` (cases that look at the order).
"""

from __future__ import annotations

import contextlib

import torch

from minidataloader_course.checker.framework import (
    EXERCISES,
    Case,
    Exercise,
    Mutant,
    Rule,
    register,
)

NAME = "toy_permutation"

# the solution, as a learner writes it in a cell or a module of their own
SOLUTION = '''\
import torch


def toy_permutation(n, seed):
    generator = torch.Generator().manual_seed(seed)
    return torch.randperm(n, generator=generator).tolist()
'''

EVERY_INDEX_ONCE = "every index once: your list sorted must be 0, 1, ..., n-1"
TORCHS_ORDER = "torch's order: torch.randperm(n) with a generator seeded with `seed`"


def torch_permutation(n, seed):
    """The oracle: torch's own draw."""
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()


def cases() -> list[Case]:
    # case 1 is a parity case before any concept case: a verdict must still put the concept first
    return [Case({"n": 6, "seed": 0, "look_at": "order"}, hint=TORCHS_ORDER),        # 1 parity
            Case({"n": 6, "seed": 0, "look_at": "indices"}, hint=EVERY_INDEX_ONCE),  # 2 concept
            Case({"n": 1, "seed": 3, "look_at": "indices"}, hint=EVERY_INDEX_ONCE),  # 3 concept
            Case({"n": 0, "seed": 0, "look_at": "order"}, hint=EVERY_INDEX_ONCE),    # 4 both
            Case({"n": 9, "seed": 1, "look_at": "order"}, hint=TORCHS_ORDER)]        # 5 parity


def run(implementation, case: Case):
    order = implementation(case.inputs["n"], case.inputs["seed"])
    return sorted(order) if case.inputs["look_at"] == "indices" else order


RULES = (Rule("every index from 0 to n-1 exactly once", (2, 3, 4)),
         # case 4 is in both rules: a concept case
         Rule("the order torch.randperm draws with a generator seeded with `seed`", (1, 4, 5),
              parity="draw order"))

MUTANTS = (
    Mutant(NAME, "shuffles with Python's random, not torch's generator",
           (("generator = torch.Generator().manual_seed(seed)\n    return "
             "torch.randperm(n, generator=generator).tolist()",
             "import random\n    order = list(range(n))\n    random.Random(seed).shuffle(order)\n"
             "    return order"),),
           ("the concept", "draw order"), breaks=2),
    Mutant(NAME, "forgets the last index", (("tolist()", "tolist()[:-1]"),),
           ("✘ failed", "every index once"), breaks=1),
)


@contextlib.contextmanager
def registered():
    """The toy exercise in the book's registry while the block runs."""
    exercise = register(Exercise(reference=torch_permutation, oracle=torch_permutation,
                                 name=NAME, cases=cases, run=run, rules=RULES, time_limit=5,
                                 chapter="toy"))
    try:
        yield exercise
    finally:
        EXERCISES.pop(NAME, None)
