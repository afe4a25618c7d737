"""The comparison helper must catch every kind of difference, or the suite proves nothing."""

import random
import warnings
from collections import OrderedDict, defaultdict

import numpy as np
import pytest
import torch

import minidataloader as mdl
from tests.support.differential import Point, same


def ours_differ(torch_value, our_value):
    return lambda lib: our_value if lib is mdl else torch_value


@pytest.mark.parametrize("torch_value, our_value", [
    (1, 2), (1, 1.0), (True, 1), ([1], (1,)), ({"a": 1}, OrderedDict(a=1)),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}), (torch.tensor([1]), torch.tensor([1.0])),
    (torch.tensor([1]), torch.tensor([[1]])), (torch.tensor([1]), torch.tensor([2])),
    (np.int16(1), np.int32(1)), (np.array([1]), np.array([2])), (Point(1, 2), (1, 2)),
    ("s", b"s"), (defaultdict(int), defaultdict(list)), ([1, 2], [1, 2, 3]),
    (torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)),
])
def test_values_that_differ_are_caught(torch_value, our_value):
    with pytest.raises(AssertionError):
        same(ours_differ(torch_value, our_value))


@pytest.mark.parametrize("draw", [lambda: torch.rand(1), lambda: random.random(),
                                  lambda: np.random.rand()])
def test_extra_random_draws_are_caught(draw):
    def scenario(lib):
        if lib is mdl:
            draw()

    with pytest.raises(AssertionError, match="state differs|RNG differs"):
        same(scenario)


def test_exceptions_and_warnings_are_compared():
    def raises(torch_type, our_type):
        def scenario(lib):
            raise (our_type if lib is mdl else torch_type)("x")
        return scenario

    same(raises(AssertionError, type("Sub", (AssertionError, ValueError), {})))
    for torch_type, our_type in [(ValueError, TypeError), (AssertionError, RuntimeError)]:
        with pytest.raises(AssertionError):
            same(raises(torch_type, our_type))
    with pytest.raises(AssertionError):
        same(lambda lib: 1 if lib is mdl else 1 / 0)
    with pytest.raises(AssertionError, match="warnings"):
        same(lambda lib: warnings.warn("x", stacklevel=1) if lib is mdl else None)
    with pytest.raises(AssertionError, match="warnings"):
        same(lambda lib: warnings.warn("x", UserWarning if lib is mdl else FutureWarning,
                                       stacklevel=1))
