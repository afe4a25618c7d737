"""Chapter 6: the worker's side, a model solution: ``worker_loop``, the loop each worker
process runs (a piece of the learner's own loader, in their ``myloader/worker.py``; chapters 7,
8 and 10 grow it). It lives in a module of its own because the iterator's steps
(``step1.py`` ...) start it, and ``solution.py`` exports both.
"""

import torch
from torch.utils.data import IterableDataset

from minidataloader_course.chapters.ch05.solution import IterableFetcher, MapFetcher


def worker_loop(dataset, index_queue, result_queue, done_event, auto_collation, collate_fn,
                drop_last, base_seed, init_fn, worker_id, num_workers):
    torch.set_num_threads(1)  # every worker a core at most: they share the machine
    fetcher_class = IterableFetcher if isinstance(dataset, IterableDataset) else MapFetcher
    fetcher = fetcher_class(dataset, auto_collation, collate_fn, drop_last)
    while True:
        task = index_queue.get()  # wait for the next task
        if task is None:  # the sentinel: no more work
            return
        batch_number, indices = task
        try:
            batch = fetcher.fetch(indices)
        except Exception as error:  # a bad sample must not kill the worker:
            batch = error  # send the error back, and go on
        result_queue.put((batch_number, batch))
