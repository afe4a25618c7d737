"""Pinned (page-locked) memory: host memory the operating system may not swap out, so an
accelerator can copy from it directly, and asynchronously (``.to(device, non_blocking=True)``).

``pin_memory(batch)`` copies every tensor of a batch into pinned memory. With workers, a
thread of the main process does it for each batch as it arrives (``_pin_memory_loop``),
while the training loop works on the previous one.
"""

from __future__ import annotations

import queue
from collections.abc import Mapping, Sequence

import torch

from . import _tracing
from .collate import _same_container
from .worker import _STATUS_CHECK_INTERVAL, _ExceptionWrapper, _IterableDatasetStopIteration


def pin_memory(data, device=None):
    """``data`` with every tensor copied into pinned memory, inside the same containers as
    collate builds. Any object with a ``pin_memory()`` method is pinned by that method, so
    a custom batch type can take part. (``device`` is accepted and ignored, as in torch:
    memory is pinned for the current accelerator.)"""
    if isinstance(data, torch.Tensor) or hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, Mapping):
        return _same_container(data, {key: pin_memory(value, device)
                                      for key, value in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple
        return type(data)(*(pin_memory(item, device) for item in data))
    if isinstance(data, Sequence):
        return _same_container(data, [pin_memory(item, device) for item in data])
    return data


def _pin_memory_loop(in_queue, out_queue, device_index, done_event, pin_fn) -> None:
    """The pin-memory thread: from the workers' result queue, through ``pin_fn``, to the
    queue the main loop reads. Stops when the main process sets ``done_event``; see
    NOTE [ The pipeline and its shutdown ] in dataloader.py."""
    torch.set_num_threads(1)  # per thread: the copies must not take every core
    if device_index is not None:
        torch.accelerator.set_device_index(device_index)
    while not done_event.is_set():
        try:
            idx, data = in_queue.get(timeout=_STATUS_CHECK_INTERVAL)
        except queue.Empty:
            continue
        # batches are pinned; acknowledgements, end-of-stream marks and errors pass through
        is_batch = isinstance(idx, int) and not isinstance(
            data, (_ExceptionWrapper, _IterableDatasetStopIteration))
        if is_batch and not done_event.is_set():
            if _tracing.enabled:
                _tracing.emit("pin_start", batch=idx)
            try:
                data = pin_fn(data)
            except Exception:
                data = _ExceptionWrapper("in the pin-memory thread")
            if _tracing.enabled:
                _tracing.emit("pin_end", batch=idx)
        if not done_event.is_set():
            out_queue.put((idx, data))  # a queue.Queue without a bound: never blocks
        del idx, data  # hold no batch while waiting for the next
