"""Chapter 9's measured item, ``ch09-copy-time``: without a GPU it compares a prediction with
the chapter's model, and says so; with one it compares with a fresh measurement, and says
so. The measuring code runs here with stand-ins for CUDA (a CPU tensor for the pinned one,
events that read the host's clock): what it does with them is what it does on a GPU. The
real measurement runs only on a machine with a CUDA GPU."""

from __future__ import annotations

import time

import pytest
import torch

from minidataloader_course import questions
from minidataloader_course.chapters.ch09 import copy_time

ITEM = questions()["ch09-copy-time"]
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


class FakeEvent:
    """A CUDA event's interface, on the host's clock; every one made is kept."""

    made: list[FakeEvent] = []

    def __init__(self, enable_timing=False):
        assert enable_timing, "a timed copy needs events made with enable_timing=True"
        self.at = None
        self.waited = False
        FakeEvent.made.append(self)

    def record(self):
        self.at = time.perf_counter()

    def synchronize(self):
        self.waited = True

    def elapsed_time(self, end):
        assert self.at is not None and end.at is not None and end.waited
        return (end.at - self.at) * 1e3


class FakeCuda:
    Event = FakeEvent

    def __init__(self):
        self.synchronized = 0

    def synchronize(self):
        self.synchronized += 1


def test_the_measurement_times_each_copy_with_a_pair_of_events_and_keeps_the_fastest():
    FakeEvent.made.clear()
    cuda = FakeCuda()
    pinned = []

    def stand_in_pinned(nbytes):  # NOT pinned: the host's memory, as a stand-in
        pinned.append(torch.empty(nbytes, dtype=torch.uint8))
        return pinned[-1]

    ms = copy_time.measured_copy_ms(1 << 20, device="cpu", repeats=4, cuda=cuda,
                                    pinned=stand_in_pinned)
    assert len(pinned) == 1 and pinned[0].numel() == 1 << 20
    assert cuda.synchronized == 1  # the warm-up copy is waited for, and not timed
    assert len(FakeEvent.made) == 8  # a start and an end per copy
    times = [start.elapsed_time(end) for start, end in zip(FakeEvent.made[::2],
                                                           FakeEvent.made[1::2])]
    assert ms == min(times) and ms > 0


def test_without_a_gpu_the_item_compares_with_the_model_and_says_so(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    expected = round(copy_time.modelled_copy_ms(), 2)
    assert expected == round(copy_time.BATCH_BYTES / copy_time.PCIE4_X16 * 1e3, 2)
    assert ITEM.right_answer() == expected == ITEM.book_answer() == 4.89
    right = ITEM.judge(expected * 1.1)
    assert right.passed and "the model gives" in right.summary
    assert right.note.startswith("modelled") and "not a measurement" in right.note
    wrong = ITEM.judge(expected * 1.3)
    assert wrong.status == "failed" and wrong.note.startswith("modelled")


def test_with_a_gpu_the_item_compares_with_a_fresh_measurement_and_says_so(monkeypatch):
    measured = iter([2.0, 2.1, 1.9])  # three fresh measurements, one per judgement
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: "a stand-in GPU")
    monkeypatch.setattr(copy_time, "measured_copy_ms", lambda *args, **kwargs: next(measured))
    right = ITEM.judge(2.05)
    assert right.passed and "the measurement gives 2.0 ms" in right.summary
    assert right.note.startswith("measured") and "a stand-in GPU" in right.note
    assert ITEM.judge(4.89).status == "failed"  # the model's value is not this GPU's
    assert ITEM.right_answer() == 1.9


@pytest.mark.parametrize(("got", "words"), [
    (0.00489, "in seconds"), (39.1, "8 times"), (-1, "positive"), ("4.89", "the string"),
    (7.0, "outside the 15%")])
def test_a_wrong_prediction_is_told_what_is_likely_wrong(monkeypatch, got, words):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    verdict = ITEM.judge(got)
    assert verdict.status == "failed" and words in verdict.problem, str(verdict)


@needs_cuda
def test_on_a_gpu_a_real_copy_is_measured():
    ms = copy_time.measured_copy_ms()
    gbps = copy_time.BATCH_BYTES / (ms / 1e3) / 1e9
    assert 1 < gbps < 1000, gbps  # a copy engine's bandwidth, not a timing of the call
