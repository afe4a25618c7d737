"""Chapter 9's check of the pinned iterator without an accelerator: the case hides the
accelerator from torch and from the learner's code alike, on any machine, and torch's
iterator (the oracle, ``TorchIterator``, which hands torch's loader the loader's
``pin_memory``) then warns and yields the batches unpinned. Where there is a CUDA GPU, a
test shows that hiding it is what makes the case mean the same there."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.utils.data as tud

from minidataloader_course.chapters.ch09 import checks
from minidataloader_course.chapters.multiprocess_cases import TorchIterator

pytestmark = pytest.mark.timeout(120)
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _pinning_torch_loader() -> tuple[list, list]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = list(tud.DataLoader(torch.arange(4.0), batch_size=2, pin_memory=True))
    return batches, [w for w in caught if "pin_memory" in str(w.message)]


def test_inside_no_accelerator_torch_warns_and_pins_nothing_and_afterwards_all_is_as_it_was():
    real = [getattr(module, name) for module, name, _ in checks.HIDDEN]
    with checks.no_accelerator():
        assert not torch.cuda.is_available() and not torch.accelerator.is_available()
        assert torch.accelerator.current_accelerator() is None
        batches, about_pinning = _pinning_torch_loader()
    assert [w.category for w in about_pinning] == [UserWarning]
    assert [batch.tolist() for batch in batches] == [[0.0, 1.0], [2.0, 3.0]]
    assert not any(batch.is_pinned() for batch in batches)
    assert [getattr(module, name) for module, name, _ in checks.HIDDEN] == real


def _case_without_accelerator():
    cases = [case for case in checks._pinned_iterator_cases() if case.inputs.get("no accelerator")]
    assert len(cases) == 1
    return cases[0]


def test_the_oracle_of_the_case_warns_starts_no_thread_and_yields_every_batch_unpinned():
    seen = checks._use_pinning_iterator(TorchIterator, _case_without_accelerator())
    assert seen == {"warnings about pin_memory (their category)": ["UserWarning"],
                    "batches (their samples), pinned or not": [
                        ([0, 1], "not pinned"), ([2, 3], "not pinned"), ([4, 5], "not pinned")],
                    "threads the iterator started": 0,
                    "threads of the main process still running": 0,
                    "worker processes still running": 0}


@needs_cuda
def test_with_a_gpu_torch_pins_unless_it_is_hidden():
    batches, about_pinning = _pinning_torch_loader()
    assert not about_pinning and all(batch.is_pinned() for batch in batches)
    seen = checks._use_pinning_iterator(TorchIterator, _case_without_accelerator())
    assert seen["warnings about pin_memory (their category)"] == ["UserWarning"]
