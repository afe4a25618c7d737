"""Tests of minidataloader.stateful: every test here has a time limit and the garbage
collector runs between tests (tests/conftest.py); the scenarios
(scenarios.py) are importable by the restart subprocess and by spawned
workers."""

from __future__ import annotations

import warnings

import pytest


@pytest.fixture(autouse=True)
def quiet():
    """More workers than this machine's CPUs warn (both libraries): expected here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*worker process", category=UserWarning)
        yield
