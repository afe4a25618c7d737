"""A piece written in a notebook cell, not through ``%%piece``: its module is ``__main__``
(not necessarily ``sys.modules["__main__"]``), whose globals hold only what the cells
defined. The checker finds the message classes (``StreamEnded``, ``Resume``) that the piece
knows, a class of the learner's own included, or else the course's; it never fails with
AttributeError."""

from __future__ import annotations

import contextlib
import io
import sys
import textwrap
import types

import pytest

from minidataloader_course import check, exercises
from minidataloader_course.learner import reference_source

pytestmark = pytest.mark.timeout(120)


def in_a_notebook_cell(source: str) -> types.ModuleType:
    """``source`` run as a notebook runs a cell: in a module named ``__main__`` that is not
    the ``__main__`` this process imported."""
    module = types.ModuleType("__main__")
    exec(compile(source, "<cell>", "exec"), vars(module))  # noqa: S102 - the learner's cell
    return module


def quiet_check(implementation, name):
    with contextlib.redirect_stdout(io.StringIO()):
        return check(implementation, name=name)


def test_a_pin_loop_that_names_no_stream_ended_is_accepted():
    source = "import queue\n\n" + reference_source(exercises()["pin_loop"]).replace(
        "not isinstance(data, (Exception, StreamEnded))",
        'not isinstance(data, Exception) and type(data).__name__ != "StreamEnded"')
    cell = in_a_notebook_cell(source)
    assert "StreamEnded" not in vars(cell)
    verdict = quiet_check(cell.pin_loop, "pin_loop")
    assert verdict.passed, str(verdict)


HEADER = textwrap.dedent("""
    import random

    import numpy as np
    import torch
    from torch.utils.data import IterableDataset

    from minidataloader_course.chapters.ch05.solution import IterableFetcher, MapFetcher
    from minidataloader_course.chapters.ch07.solution import generate_state
    from minidataloader_course.learner.stubs.worker import StreamEnded, WorkerInfo

    _worker_info = None
""")


def test_a_worker_loop_with_a_resume_class_of_its_own_is_accepted(monkeypatch):
    own = "\n\nclass Resume:\n    pass\n\n\n"
    source = HEADER + own + reference_source(exercises()["worker_loop, resumed"])
    cell = in_a_notebook_cell(source)
    # in a kernel, the cells' module is __main__: the worker pickles its own Resume from there
    monkeypatch.setitem(sys.modules, "__main__", cell)
    verdict = quiet_check(cell.worker_loop, "worker_loop, resumed")
    assert verdict.passed, str(verdict)


def test_a_worker_loop_that_names_no_resume_is_accepted():
    source = HEADER + "\n\n" + reference_source(exercises()["worker_loop, resumed"]).replace(
        "if isinstance(task, Resume):", 'if type(task).__name__ == "Resume":')
    cell = in_a_notebook_cell(source)
    assert "Resume" not in vars(cell)
    verdict = quiet_check(cell.worker_loop, "worker_loop, resumed")
    assert verdict.passed, str(verdict)
