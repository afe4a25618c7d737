"""What the course's tests share: a test that starts processes may use ``no_process_left``
(``pytestmark = pytest.mark.usefixtures("no_process_left")``) to fail when one outlives it."""

from __future__ import annotations

import pytest

from tests.support.mp_procs import children


@pytest.fixture
def no_process_left():
    before = set(children())  # e.g. multiprocessing's resource tracker, started earlier
    yield
    left = set(children()) - before
    assert not left, f"processes left behind: {left}"
