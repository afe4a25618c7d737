"""What a worker process knows about itself (the worker loop arrives with multi-process
loading)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WorkerInfo:
    """Handed to code running inside a worker: which worker this is, of how many, the seed
    it was given, and its own copy of the dataset."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None  # set once, at the start of each worker process


def get_worker_info() -> WorkerInfo | None:
    """This worker's :class:`WorkerInfo`, or None in the main process."""
    return _worker_info
