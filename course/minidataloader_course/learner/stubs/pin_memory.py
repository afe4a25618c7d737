"""Pinning batches in page-locked memory, in a thread of the main process (chapter 9)."""

import copy
import queue
from collections.abc import Mapping, Sequence

import torch

from .worker import StreamEnded


# >>> piece: pin_batch (chapter 9)
def pin_batch(data, pin_fn):
    raise NotImplementedError  # data with every tensor replaced by pin_fn(tensor)
# <<< piece: pin_batch


# >>> piece: pin_loop (chapter 9)
def pin_loop(in_queue, out_queue, done_event, pin_fn):
    raise NotImplementedError  # pin each batch, in order, until done_event is set
# <<< piece: pin_loop
