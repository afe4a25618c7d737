"""Chapter 9 (pin memory and the GPU): model solutions.

``pin_batch``, ``pin_loop`` (in ``pinning.py``) and ``MultiProcessIterator`` are pieces of the
learner's loader. The iterator grows in two steps: a thread that pins every batch on its way
to the training loop, for the loader's ``_pin_memory_fn`` (``pin_thread.py``), then the
decision ``pin_memory=True`` makes (here).
"""

import functools
import warnings

import torch

from minidataloader_course.chapters.ch09 import pin_thread
from minidataloader_course.chapters.ch09.pinning import pin_batch, pin_loop

__all__ = ["pin_batch", "pin_loop", "copy_and_step", "copy_compute_timeline",
           "MultiProcessIterator"]


def copy_and_step(batch_bytes, bandwidth_gbps, compute_ms, overlap):
    copy_ms = batch_bytes / (bandwidth_gbps * 1e9) * 1e3  # 1 GB = 1e9 bytes
    step_ms = max(copy_ms, compute_ms) if overlap else copy_ms + compute_ms
    # hidden: the copy adds nothing to the step; without overlap only an empty copy does not
    hidden = copy_ms <= compute_ms if overlap else copy_ms == 0
    return copy_ms, step_ms, hidden


def copy_compute_timeline(copy_ms, compute_ms, batches, overlap):
    timeline = []
    copy_start, compute_end = 0.0, 0.0
    for _ in range(batches):
        copy_end = copy_start + copy_ms
        compute_start = max(copy_end, compute_end)  # its batch, and a free GPU
        compute_end = compute_start + compute_ms
        timeline.append((copy_start, copy_end, compute_start, compute_end))
        # the next copy starts with this step (overlap), or after it
        copy_start = compute_start if overlap else compute_end
    return timeline


class MultiProcessIterator(pin_thread.MultiProcessIterator):
    def _pin_function(self, loader):
        pin_fn = getattr(loader, "_pin_memory_fn", None)  # the hook wins
        if pin_fn is None and loader.pin_memory:
            if torch.cuda.is_available():
                return functools.partial(pin_batch, pin_fn=torch.Tensor.pin_memory)
            # as torch: say so, and pin nothing
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=3)
        return pin_fn
