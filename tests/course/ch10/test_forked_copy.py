"""The guarded iterator's "only the owner" case: a forked process frees its copy of the
iterator (its ``__del__`` runs there, not here); torch's iterator, the oracle, is observed
without it; and where fork is missing the case is not run, for learner and oracle alike."""

from __future__ import annotations

import multiprocessing

import pytest

from minidataloader_course.chapters import multiprocess_cases
from minidataloader_course.chapters.multiprocess_cases import (
    HAS_FORK,
    TorchIterator,
    free_a_forked_copy,
)
from minidataloader_course.shared.processes import children


class Copied:
    """Counts, in shared memory, the calls of its ``__del__`` in processes other than the
    one that made it."""

    def __init__(self):
        context = multiprocessing.get_context("fork")
        self.maker = multiprocessing.current_process().pid
        self.elsewhere = context.Value("i", 0)

    def __del__(self):
        if multiprocessing.current_process().pid != self.maker:
            with self.elsewhere.get_lock():
                self.elsewhere.value += 1


@pytest.mark.skipif(not HAS_FORK, reason="fork is missing here")
def test_the_forked_process_runs_the_copy_s_del_and_the_owner_keeps_its_processes():
    copy = Copied()
    assert free_a_forked_copy(copy, Copied, set(children())) == 0
    assert copy.elsewhere.value == 1


@pytest.mark.skipif(not HAS_FORK, reason="fork is missing here")
def test_torch_s_iterator_is_observed_without_the_copy_s_del():
    copy = Copied()
    assert free_a_forked_copy(copy, TorchIterator, set(children())) == 0
    assert copy.elsewhere.value == 0


def test_without_fork_nothing_is_forked(monkeypatch):
    def no_fork(*args, **kwargs):
        raise AssertionError("the case forked where fork is missing")

    monkeypatch.setattr(multiprocess_cases, "HAS_FORK", False)
    monkeypatch.setattr(multiprocess_cases.multiprocessing, "get_context", no_fork)
    text = "(not run: this platform cannot fork)"
    assert free_a_forked_copy(object(), object, set()) == text
    assert free_a_forked_copy(object(), TorchIterator, set()) == text
