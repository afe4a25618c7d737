"""What runs in a worker process, and what it tells the main process (chapters 6 to 10)."""

import random
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker knows about itself: what get_worker_info() returns in a worker."""

    id: int
    num_workers: int
    seed: int
    dataset: object


# The worker loop sets this in each worker process; it stays None in the main process.
_worker_info = None


# >>> piece: get_worker_info (chapter 7)
def get_worker_info():
    raise NotImplementedError  # this worker's WorkerInfo, or None in the main process
# <<< piece: get_worker_info


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
