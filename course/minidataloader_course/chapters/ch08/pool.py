"""A toy worker pool: the loader's pipeline in miniature, with threads (chapter 8).

Each worker has an index queue; all share one result queue. A task is ``(batch, label,
seconds)``: the worker "fetches" for ``seconds`` and sends ``(batch, label)``. Only the
batch number matters to the pool's user, as in the real loader, where batch numbers start
again at 0 every epoch; the label (``"epoch 0, batch 3"``) says what really came back.

A :class:`Resume` in an index queue (or any task that is not a tuple: the learner's own
``Resume`` too) asks the worker to acknowledge: it answers ``(Resume(), worker_id)`` on the
result queue, after everything it sent before.
"""

from __future__ import annotations

import queue
import threading
import time


class Resume:
    """Sent to each worker when an epoch starts; the worker sends it back."""

    def __repr__(self):
        return "Resume()"


def toy_worker(worker_id, index_queue, result_queue):
    while True:
        task = index_queue.get()
        if task is None:  # the pool is closing
            return
        if not isinstance(task, tuple):  # a Resume (whoever's class it is): acknowledge,
            result_queue.put((task, worker_id))  # after all it sent before
            continue
        batch, label, seconds = task
        time.sleep(seconds)  # fetching
        result_queue.put((batch, label))


class ToyPool:
    """``num_workers`` threads running :func:`toy_worker`; batch ``b`` goes to worker
    ``b % num_workers``, as the loader's round robin sends it."""

    def __init__(self, num_workers: int):
        self.index_queues = [queue.Queue() for _ in range(num_workers)]
        self.result_queue = queue.Queue()
        self.workers = [threading.Thread(target=toy_worker, args=(w, q, self.result_queue),
                                         daemon=True)
                        for w, q in enumerate(self.index_queues)]
        for worker in self.workers:
            worker.start()

    def dispatch(self, epoch: int, batch: int, seconds: float = 0.0) -> None:
        worker = batch % len(self.index_queues)
        self.index_queues[worker].put((batch, f"epoch {epoch}, batch {batch}", seconds))

    def receive(self, timeout: float = 5.0):
        """The next message on the result queue (``queue.Empty`` after ``timeout``)."""
        return self.result_queue.get(timeout=timeout)

    def stop_worker(self, worker_id: int) -> None:
        """Worker ``worker_id`` ends once it has done its tasks, as a worker process that
        died would: it answers nothing more, and ``is_alive()`` says so."""
        self.index_queues[worker_id].put(None)
        self.workers[worker_id].join(timeout=5.0)

    def close(self) -> None:
        for index_queue in self.index_queues:
            index_queue.put(None)
        for worker in self.workers:
            worker.join(timeout=5.0)


def interrupted_epoch(pool: ToyPool, tasks: int = 6, slow: float = 0.2) -> list:
    """Epoch 0 of ``pool`` left with a ``break``: ``tasks`` batches dispatched (the last one
    slow to fetch), the first result received, the rest still in flight. Returns what was
    received."""
    for batch in range(tasks):
        pool.dispatch(0, batch, slow if batch == tasks - 1 else 0.0)
    return [pool.receive()]


def resume_without_waiting(pool: ToyPool) -> None:
    """The wrong way to start the next epoch: ask for acknowledgements, wait for none."""
    for index_queue in pool.index_queues:
        index_queue.put(Resume())
