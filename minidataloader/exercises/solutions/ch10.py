"""Chapter 10 (when things go wrong): model solutions."""

import math
import queue
import signal
import time


class KeyErrorMessage(str):
    """A message that KeyError prints as it is: KeyError's str() is the repr() of its
    argument, and a str's repr() would show a traceback as one line full of \\n."""

    def __repr__(self):
        return self


def rebuild_exception(exc_type, message):
    if exc_type is KeyError:
        return KeyError(KeyErrorMessage(message))
    try:
        return exc_type(message)
    except Exception:  # its constructor wants something else than one string
        return RuntimeError(message)


def get_result(result_queue, workers, timeout):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return result_queue.get(timeout=0.1)  # short: check on the workers often
        except queue.Empty:
            pass
        for worker_id, worker in enumerate(workers):
            if not worker.is_alive():
                code = worker.exitcode
                how = (f"was killed by {signal.Signals(-code).name}" if code < 0
                       else f"exited with exit code {code}")
                raise RuntimeError(f"worker {worker_id} (pid {worker.pid}) {how}")
        if time.monotonic() >= deadline:
            raise RuntimeError(f"timed out: no result within {timeout} seconds")


def shutdown_workers(workers, index_queues, result_queue, done_event, timeout):
    done_event.set()  # 1. skip the tasks still queued
    for index_queue in index_queues:
        index_queue.put(None)  # 2. leave your loop
    deadline = time.monotonic() + timeout
    while any(w.is_alive() for w in workers) and time.monotonic() < deadline:
        try:  # 3. read what they still send: a worker cannot exit before it is read
            result_queue.get(timeout=0.05)
        except queue.Empty:
            pass
    terminated = []
    for worker_id, worker in enumerate(workers):
        if worker.is_alive():  # 4. stuck: end it
            worker.terminate()
            terminated.append(worker_id)
            worker.join(1)
            if worker.is_alive():  # it ignores SIGTERM: SIGKILL cannot be ignored
                worker.kill()
        worker.join()
    for q in [result_queue, *index_queues]:  # 5. nobody reads them any more
        q.cancel_join_thread()
        q.close()
    return terminated


def shared_memory_needed(sample_shape, element_size, batch_size, num_workers,
                         prefetch_factor, batches_held=1):
    if num_workers == 0:
        return 0  # batches are made in the main process: nothing crosses processes
    batch_bytes = batch_size * math.prod(sample_shape) * element_size
    in_flight = num_workers * prefetch_factor  # fetched ahead, waiting in shared memory
    return (in_flight + batches_held) * batch_bytes


CLUES = [  # checked in this order: the first category with a clue in the message wins
    ("cuda in fork", ["Cannot re-initialize CUDA in forked subprocess"]),
    ("exception", ["in DataLoader worker process", "raised in DataLoader worker"]),
    ("open files", ["Too many open files", "items of ancdata"]),
    ("timeout", ["timed out"]),
    ("shared memory", ["Bus error", "SIGBUS", "bus error"]),
    ("killed", ["signal: Killed", "SIGKILL"]),
    ("crashed", ["killed by signal", "killed by SIG", "segmentation fault"]),
    ("exited", ["exited"]),
]


def classify_failure(message):
    for category, clues in CLUES:
        if any(clue in message for clue in clues):
            return category
    return "unknown"
