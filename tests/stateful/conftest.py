"""Tests of minidataloader.stateful: every test here has a time limit (a hang fails), and
the scenarios (tests/support/stateful_scenarios.py) are importable by the restart subprocess and by spawned workers."""

from __future__ import annotations

import gc
import pathlib
import warnings

import pytest

HERE = pathlib.Path(__file__).resolve().parent


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in item.path.parents and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(60))


@pytest.fixture(autouse=True)
def quiet_and_collected():
    """More workers than this machine's CPUs warn (both libraries): expected here. Iterators
    left in reference cycles are shut down now, not in the middle of the next test."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*worker process", category=UserWarning)
        yield
    gc.collect()
