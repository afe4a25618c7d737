"""Pinned (page-locked) memory: host memory the operating system may not swap out, so an
accelerator can copy from it directly, and asynchronously (``.to(device, non_blocking=True)``).

``pin_memory(batch)`` copies every tensor of a batch into pinned memory. With workers, a
thread of the main process does it for each batch as it arrives (``_pin_memory_loop``),
while the training loop works on the previous one; without, the main loop does it.

NOTE [ Whether batches are pinned ]
Every iterator decides it once, when it is built, with ``_pin_memory_plan(loader)``:

    loader.pin_memory   accelerator     loader._pin_memory_fn   batches are pinned by
    False               any             unset                   nobody
    True                none            unset                   nobody (UserWarning)
    True                mps             unset                   nobody (UserWarning)
    True                cuda, xpu, ...  unset                   pin_memory(), for it
    any                 any             a function f            f

``loader._pin_memory_fn`` is the one hook into the loader: set it to a function of one
batch, and the iterator takes the pinning path -- the pin-memory thread with workers, the
main loop without -- calling that function where it would pin. It lets a machine without an
accelerator run that path and show it (the tests, chapter 9, the queue-flow view); the
batches are then whatever the function returns, not pinned.
"""

from __future__ import annotations

import functools
import queue
import warnings
from collections.abc import Callable, Mapping, Sequence

import torch

from . import _tracing
from .collate import _same_container
from .worker import _STATUS_CHECK_INTERVAL, _ExceptionWrapper, _is_batch


def _pin_memory_plan(loader) -> tuple[Callable | None, int | None]:
    """How an iterator of ``loader`` pins (see NOTE [ Whether batches are pinned ]): the
    function that pins one batch, or None; and the index of the accelerator device the pin
    thread must use (a thread starts on device 0), None when there is no pin thread or no
    accelerator."""
    if loader.pin_memory and loader.pin_memory_device:
        warnings.warn(f"pin_memory_device is deprecated and ignored "
                      f"(pin_memory_device={loader.pin_memory_device!r}): batches are "
                      "pinned for the current accelerator", stacklevel=3)
    accelerator = (torch.accelerator.current_accelerator()
                   if loader.pin_memory and torch.accelerator.is_available() else None)
    if loader.pin_memory and accelerator is None:
        warnings.warn("pin_memory=True, but no accelerator was found, so there is nothing "
                      "to pin memory for; set pin_memory=False", stacklevel=3)
    elif accelerator is not None and accelerator.type == "mps":
        warnings.warn("pin_memory=True is not supported on MPS; batches stay in ordinary "
                      "memory", stacklevel=3)
        accelerator = None
    pin_fn = getattr(loader, "_pin_memory_fn", None)
    if pin_fn is None and accelerator is not None:
        pin_fn = functools.partial(pin_memory, device=accelerator.type)
    on_device = pin_fn is not None and loader.num_workers > 0 and torch.accelerator.is_available()
    return pin_fn, torch.accelerator.current_device_index() if on_device else None


def _pin(pin_fn, data, batch: int):
    """``pin_fn(data)``, reported to the trace as the pinning of ``batch``."""
    _tracing.emit("pin_start", batch=batch)
    data = pin_fn(data)
    _tracing.emit("pin_end", batch=batch)
    return data


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


def _pin_memory_loop(result_queue, data_queue, device_index, done_event, pin_fn) -> None:
    """The pin-memory thread: from the workers' result queue, through ``pin_fn``, to the
    queue the main loop reads. Stops when the main process sets ``done_event``; see
    NOTE [ The pipeline and its shutdown ] in dataloader.py."""
    torch.set_num_threads(1)  # per thread: the copies must not take every core
    if device_index is not None:
        torch.accelerator.set_device_index(device_index)
    while not done_event.is_set():
        try:
            idx, data = result_queue.get(timeout=_STATUS_CHECK_INTERVAL)
        except queue.Empty:
            continue
        # only batches are pinned; the other messages pass through (see NOTE [ Messages
        # on the result queue ] in worker.py)
        if _is_batch(idx, data) and not done_event.is_set():
            try:
                data = _pin(pin_fn, data, idx)
            except Exception:
                data = _ExceptionWrapper("in the pin-memory thread")
        if not done_event.is_set():
            data_queue.put((idx, data))  # a queue.Queue without a bound: never blocks
        del idx, data  # hold no batch while waiting for the next
