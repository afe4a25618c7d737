"""Chapter 9's two pinning pieces, ``pin_batch`` and ``pin_loop``: the recursion that pins a
batch container by container, and the loop of the pin thread. Beside the solutions (which
export them) so that the iterator's steps can use them."""

import copy
import queue
from collections.abc import Mapping, Sequence

import torch

from minidataloader_course.learner.stubs.worker import StreamEnded


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


def pin_loop(in_queue, out_queue, done_event, pin_fn):
    while not done_event.is_set():
        try:
            number, data = in_queue.get(timeout=0.1)  # wake up to check
        except queue.Empty:
            continue
        # only batches are pinned: errors, ended streams, acknowledgements pass as they are
        if isinstance(number, int) and not isinstance(data, (Exception, StreamEnded)):
            try:
                data = pin_fn(data)
            except Exception as error:
                data = error  # raised when the loop reaches this batch
        out_queue.put((number, data))
