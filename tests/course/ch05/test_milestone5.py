"""Milestone 5 (chapters/ch05/milestone.py) tells a loader refused when it is built from one
refused when its epoch starts: torch builds a loader with a timeout and no workers, and only
``iter(loader)`` raises ``AssertionError``."""

from __future__ import annotations

import types

import pytest
import torch.utils.data

from minidataloader_course.chapters.ch05 import milestone as five
from minidataloader_course.chapters.ch05 import solution

TIMEOUT = {"dataset": "map", "size": 5, "arguments": {"timeout": 5}}


def test_torch_builds_a_loader_with_a_timeout_and_refuses_its_epoch():
    loader = torch.utils.data.DataLoader(range(5), timeout=5)
    with pytest.raises(AssertionError):
        iter(loader)


def test_the_timeout_without_workers_is_among_the_configurations():
    assert TIMEOUT in five.configurations()


def test_a_loader_that_refuses_the_timeout_when_built_is_told_apart_from_torch():
    class EagerLoader(solution.DataLoader):
        def __init__(self, dataset, **arguments):
            if arguments.get("timeout", 0) and not arguments.get("num_workers", 0):
                raise AssertionError("timeout needs workers")
            super().__init__(dataset, **arguments)

    eager = types.SimpleNamespace(DataLoader=EagerLoader)
    assert five.built_then_two_epochs(eager, TIMEOUT) == {"refused when built": "AssertionError"}
    for data in (torch.utils.data, types.SimpleNamespace(DataLoader=solution.DataLoader)):
        with pytest.raises(AssertionError):  # built, then refused by its epoch
            five.built_then_two_epochs(data, TIMEOUT)
