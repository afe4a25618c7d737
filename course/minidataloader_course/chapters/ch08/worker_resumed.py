"""Chapter 8, the worker loop that answers the resume handshake (a piece of the learner's
loader, re-exported by ``solution``): in a module of its own so that the iterator's steps
(``persistent_iterator`` and ``solution``) start their workers with it.
"""

import random

import numpy as np
import torch
from torch.utils.data import IterableDataset

from minidataloader_course.chapters.ch05.solution import IterableFetcher, MapFetcher
from minidataloader_course.chapters.ch07.solution import generate_state
from minidataloader_course.learner.stubs.worker import Resume, StreamEnded, WorkerInfo

_worker_info = None  # as in the learner's worker.py


def worker_loop(dataset, index_queue, result_queue, done_event, auto_collation, collate_fn,
                drop_last, base_seed, init_fn, worker_id, num_workers):
    global _worker_info
    torch.set_num_threads(1)
    seed = base_seed + worker_id
    random.seed(seed)
    torch.manual_seed(seed)
    np.random.seed(generate_state(base_seed, worker_id))
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                              dataset=dataset)
    if init_fn is not None:
        init_fn(worker_id)
    fetcher_class = IterableFetcher if isinstance(dataset, IterableDataset) else MapFetcher
    fetcher = fetcher_class(dataset, auto_collation, collate_fn, drop_last)
    ended = False
    while True:
        task = index_queue.get()
        if task is None:
            return
        if isinstance(task, Resume):  # a new epoch: all I sent before has been sent
            result_queue.put((task, worker_id))
            fetcher = fetcher_class(dataset, auto_collation, collate_fn, drop_last)
            ended = False  # a stream starts again
            continue
        if ended:
            continue
        batch_number, indices = task
        try:
            batch = fetcher.fetch(indices)
        except StopIteration:
            batch, ended = StreamEnded(worker_id), True
        except Exception as error:
            batch = error
        result_queue.put((batch_number, batch))
