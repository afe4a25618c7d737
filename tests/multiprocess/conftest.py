"""Multi-process tests: every test here has a time limit (the `timeout` mark, applied to
the whole folder below, plus bounded joins and subprocess timeouts inside), so a hang fails.

The differential helper of tests/package is reused; worker-side datasets live in
mp_datasets.py (importable, so spawned workers find them: spawn hands sys.path over)."""

from __future__ import annotations

import gc
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "package"))  # differential.py


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in item.path.parents and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(60))


@pytest.fixture(autouse=True)
def collect_garbage_iterators():
    """Iterators caught in reference cycles (both libraries' scenarios make some) are shut
    down by the garbage collector whenever it runs; make that happen between tests, not in
    the middle of the next one, and before forked workers inherit them."""
    yield
    gc.collect()
