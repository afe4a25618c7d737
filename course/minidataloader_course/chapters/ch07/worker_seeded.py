"""Chapter 7, the worker loop's first step (NOTE [ A piece grown in steps ]): a worker seeds
its generators and learns who it is before its first task. The second step, the end of a
stream, is ``solution.worker_loop``.
"""

import random

import numpy as np
import torch
from torch.utils.data import IterableDataset

from minidataloader_course.chapters.ch05.solution import IterableFetcher, MapFetcher
from minidataloader_course.chapters.ch07.solution import generate_state
from minidataloader_course.learner.stubs.worker import WorkerInfo

# as in the learner's worker.py: set by the worker loop, None in the main process
_worker_info = None


def worker_loop(dataset, index_queue, result_queue, done_event, auto_collation, collate_fn,
                drop_last, base_seed, init_fn, worker_id, num_workers):
    global _worker_info
    torch.set_num_threads(1)
    seed = base_seed + worker_id  # every worker a seed of its own
    random.seed(seed)
    torch.manual_seed(seed)
    np.random.seed(generate_state(base_seed, worker_id))  # numpy takes no 64-bit seed
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                              dataset=dataset)
    if init_fn is not None:
        init_fn(worker_id)  # after the seeds and the info: it may use both
    fetcher_class = IterableFetcher if isinstance(dataset, IterableDataset) else MapFetcher
    fetcher = fetcher_class(dataset, auto_collation, collate_fn, drop_last)
    while True:
        task = index_queue.get()
        if task is None:
            return
        batch_number, indices = task
        try:
            batch = fetcher.fetch(indices)
        except Exception as error:
            batch = error
        result_queue.put((batch_number, batch))
