"""Chapter 9's measured check-yourself item: the learner predicts how long one batch takes
to copy from pinned memory to the GPU; the check compares the prediction with a fresh
measurement on this machine's GPU, or, on a machine without one, with the chapter's model,
and its verdict says which of the two it was.

The batch is the chapter's example: 256 images of 3 x 224 x 224 float32 values. The model
copies its bytes at the ceiling of a PCIe 4.0 link with 16 lanes.
"""

from __future__ import annotations

import math

import torch

from minidataloader_course.checker.questions import Prediction, type_mix_up
from minidataloader_course.checker.verdict import FAILED, PASSED, Verdict
from minidataloader_course.shared.compare import short

BATCH_SHAPE = (256, 3, 224, 224)
BATCH_BYTES = math.prod(BATCH_SHAPE) * 4  # float32
# PCIe 4.0: 16 billion transfers a second per lane, 128 bits of data in every 130
PCIE4_X16 = 16e9 * 16 * (128 / 130) / 8  # bytes per second
TOLERANCE = 0.15  # a prediction within 15% of the copy's time is right


def modelled_copy_ms(nbytes: int = BATCH_BYTES, bandwidth: float = PCIE4_X16) -> float:
    """The model's copy: ``nbytes`` at ``bandwidth`` bytes per second, in milliseconds."""
    return nbytes / bandwidth * 1e3


def _pinned(nbytes: int) -> torch.Tensor:
    return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)


def measured_copy_ms(nbytes: int = BATCH_BYTES, device: str = "cuda", repeats: int = 5,
                     cuda=torch.cuda, pinned=_pinned) -> float:
    """The fastest of ``repeats`` copies of ``nbytes`` from pinned host memory to ``device``,
    in milliseconds, each timed by the device's own events (the copy is asynchronous: a
    clock on the host would time the call, not the copy). ``cuda`` and ``pinned`` are
    parameters so that a test without a GPU can run this code with stand-ins."""
    source = pinned(nbytes)
    target = torch.empty(nbytes, dtype=torch.uint8, device=device)
    target.copy_(source, non_blocking=True)  # a first copy, not timed: the driver warms up
    cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        start.record()
        target.copy_(source, non_blocking=True)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))  # milliseconds
    return min(times)


def copy_ms_here() -> tuple[float, str]:
    """What the item compares with, and how it was had: measured on this machine's GPU, or
    modelled where there is none."""
    if torch.cuda.is_available():
        ms = measured_copy_ms()
        name = torch.cuda.get_device_name()
        return round(ms, 2), (f"measured: a fresh copy of the batch from pinned memory to "
                              f"this machine's GPU ({name}), the fastest of 5")
    return round(modelled_copy_ms(), 2), (
        f"modelled: this machine has no GPU, so the check compares with the chapter's model, "
        f"{BATCH_BYTES / 1e6:.1f} MB at PCIe 4.0 x16's {PCIE4_X16 / 1e9:.1f} GB/s (not a "
        f"measurement)")


def within_tolerance(expected: float, got) -> str | None:
    """None when ``got`` is within TOLERANCE of ``expected``; else what is wrong, with the
    likely mistake when the ratio betrays one."""
    if not isinstance(got, (int, float)) or isinstance(got, bool):
        return f"give a number of milliseconds, not {short(got, 40)}"
    if got > 0 and abs(got - expected) <= TOLERANCE * expected:
        return None
    ratio = got / expected if expected else math.inf
    if got <= 0:
        return "a copy takes some time: give a positive number of milliseconds"
    if 0.5e-3 < ratio < 2e-3:
        return "that is the time in seconds: the check asks for milliseconds (x 1000)"
    if 6 < ratio < 10:
        return ("about 8 times too long: a bandwidth in GB/s counts bytes, and the batch's "
                "size is in bytes too (no bits to count)")
    return (f"your prediction is {ratio:.2f} times the copy's time, outside the "
            f"{TOLERANCE:.0%} the check allows: the batch's bytes over the bandwidth, in ms")


class CopyTimePrediction(Prediction):
    """A prediction checked against a fresh measurement where a GPU is present, against the
    chapter's model otherwise, within a tolerance; the verdict says which it compared with
    (its ``note``). ``measure`` returns (the value, how it was had)."""

    def right_answer(self):
        return super().right_answer()[0]

    def book_answer(self) -> float:
        """What the chapter's Answer gives: the model's value (on a GPU the check measures)."""
        return round(modelled_copy_ms(), 2)

    def judge(self, answer) -> Verdict:
        if answer is None:
            return super().judge(None)
        expected, how = super().right_answer()
        problem = (self.compare or within_tolerance)(expected, answer)
        source = "the measurement" if how.startswith("measured") else "the model"
        if problem is None:
            return Verdict(self.name, PASSED, f"{self.name}: right, {source} gives "
                           f"{expected} ms (your {short(answer, 20)} is within "
                           f"{TOLERANCE:.0%})", got=short(answer, 60),
                           hint="the collapsed Answer below says more", note=how)
        mix_up = type_mix_up(expected, answer)
        return Verdict(self.name, FAILED, f"{self.name}: you predicted {short(answer, 40)} ms, "
                       f"{source} gives {expected} ms", expected=f"{expected} ms",
                       got=short(answer, 60), problem=mix_up or problem or self.why,
                       hint="think again, change your answer, and run both cells again",
                       note=how, in_doubt="")
