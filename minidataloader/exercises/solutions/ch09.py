"""Chapter 9 (pin memory and the GPU): model solutions."""

import copy
import queue
from collections.abc import Mapping, Sequence

import torch


def pin_batch(data, pin_fn):
    if isinstance(data, torch.Tensor):
        return pin_fn(data)
    if hasattr(data, "pin_memory"):  # a batch type that pins itself
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, Mapping):
        pinned = copy.copy(data)  # the same type: a dict, an OrderedDict, a defaultdict
        pinned.update({key: pin_batch(item, pin_fn) for key, item in data.items()})
        return pinned
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple
        return type(data)(*(pin_batch(item, pin_fn) for item in data))
    if isinstance(data, Sequence):
        return type(data)(pin_batch(item, pin_fn) for item in data)
    return data  # numbers, None, ...: nothing to pin


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


def pin_loop(in_queue, out_queue, done_event, pin_fn):
    while not done_event.is_set():
        try:
            number, data = in_queue.get(timeout=0.1)  # wake up to check
        except queue.Empty:
            continue
        if not isinstance(data, Exception):  # workers' errors pass through
            try:
                data = pin_fn(data)
            except Exception as error:
                data = error  # raised when the loop reaches this batch
        out_queue.put((number, data))
