"""Multi-process tests: every test here has a time limit (the `timeout` mark, applied to
the whole folder below, plus bounded joins and subprocess timeouts inside), so a hang fails.

The helpers live in the tests.support package: the differential helper, and the datasets
that run in workers (mp_datasets.py), importable by spawned workers too, because spawn hands
the parent's sys.path over (pytest put the repository root on it: tests/ is a package)."""

from __future__ import annotations

import gc
import pathlib

import pytest

HERE = pathlib.Path(__file__).resolve().parent


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
