"""What runs in a worker process, and what it tells the main process (chapters 6 to 10).

A worker takes tasks ``(batch_number, indices)`` from its own index queue and puts
``(batch_number, batch)`` on the result queue that all the workers share. Its index queue
also brings ``None`` (leave the loop) and, with persistent workers, ``Resume()`` (a new
epoch). Besides batches, a worker sends ``StreamEnded`` (its copy of an IterableDataset has
run out), ``Resume`` back, and errors. The classes below are those messages; the loop that
sends them is yours.
"""

import os
import queue
import random
import traceback
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import IterableDataset

from .fetch import IterableFetcher, MapFetcher


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker knows about itself: what get_worker_info() returns in a worker."""

    id: int
    num_workers: int
    seed: int
    dataset: object


# The worker loop sets this in each worker process (chapter 7); it stays None in the main
# process.
_worker_info = None


def get_worker_info():
    """This worker's WorkerInfo, or None in the main process."""
    return _worker_info


@dataclass(frozen=True)
class StreamEnded:
    """Sent in place of a batch by a worker whose copy of an IterableDataset has run out
    (chapter 7): it has nothing more to give this epoch."""

    worker_id: int


class Resume:
    """Put on every index queue when a new epoch starts with persistent workers; each worker
    sends it back, after everything it sent before (chapter 8)."""

    def __repr__(self):
        return "Resume()"


class WorkerError(Exception):
    """An exception raised in a worker, as it travels to the main process (chapter 10): its
    type, and a message that holds the worker's traceback as text (a traceback object
    cannot travel, and the exception itself may not)."""

    def __init__(self, exc_type, message):
        super().__init__(exc_type, message)
        self.exc_type = exc_type
        self.message = message


# >>> piece: generate_state (chapter 7)
def generate_state(base_seed, worker_id):
    raise NotImplementedError  # the four 32-bit words numpy's global generator is seeded with
# <<< piece: generate_state


# >>> piece: worker_loop (chapter 6; chapters 7, 8 and 10 grow it)
def worker_loop(dataset, index_queue, result_queue, done_event, auto_collation, collate_fn,
                drop_last, base_seed, init_fn, worker_id, num_workers):
    raise NotImplementedError  # take tasks, fetch batches, send results, until told to stop
# <<< piece: worker_loop


# >>> piece: rebuild_exception (chapter 10)
def rebuild_exception(exc_type, message):
    raise NotImplementedError  # the exception the main process raises for a worker's error
# <<< piece: rebuild_exception
