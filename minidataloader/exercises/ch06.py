"""Chapter 6 (workers and queues): the exercises and their hidden cases.

The worker loop is the reader's first concurrent code. Most cases run it in a thread of the
checker's child process, with ``queue.Queue`` queues (the same ``get``/``put`` as
multiprocessing's), so that whatever it does -- raise, hang, call ``sys.exit`` -- comes back
as a verdict; one case runs it in a real forked worker process with multiprocessing queues.
"""

from __future__ import annotations

import multiprocessing
import pickle
import queue
import threading
import time

from ._framework import Case, Exercise, TooManyItems, register
from .solutions import ch06 as solutions

WORKER_PIECES = ("minidataloader.worker._worker_loop",
                 "torch.utils.data._utils.worker._worker_loop",
                 "minidataloader.dataloader._MultiProcessingDataLoaderIter",
                 "torch.utils.data.dataloader._MultiProcessingDataLoaderIter")


# ---------------------------------------------------------------------------------------
# Running the reader's loop in a thread


def start_thread(function, args: tuple, name: str):
    """Start ``function(*args)`` in a daemon thread; returns the thread and a dict that will
    hold what the function returned (``"returned"``) or raised (``"raised"``). A plain
    thread would swallow SystemExit and print other errors; here they are kept."""
    outcome: dict = {}

    def body():
        try:
            outcome["returned"] = function(*args)
        except BaseException as error:  # noqa: BLE001 - handed to the caller by finish_thread
            outcome["raised"] = error

    thread = threading.Thread(target=body, name=name, daemon=True)
    thread.start()
    return thread, outcome


def finish_thread(thread, outcome: dict, seconds: float, too_slow: str):
    """Wait for the thread; return what the function returned, raise what it raised, or
    raise TimeoutError(too_slow) if it is still running after ``seconds``."""
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(too_slow)
    if "raised" in outcome:
        raise outcome["raised"]
    return outcome["returned"]


def drain(queue_) -> list:
    """Everything waiting in a queue.Queue, in order."""
    items = []
    while True:
        try:
            items.append(queue_.get_nowait())
        except queue.Empty:
            return items


def describe_message(message):
    """A message from the result queue as plain data: an exception sent as a batch becomes
    the words "the exception ValueError: ..." (exceptions do not compare by value)."""
    if isinstance(message, tuple) and len(message) == 2 and isinstance(message[1], BaseException):
        error = message[1]
        return message[0], f"the exception {type(error).__name__}: {error}"
    return message


# ---------------------------------------------------------------------------------------
# 1. The worker loop


class CorruptAt:
    """A dataset of ``n`` squares whose sample ``bad`` raises ValueError, as a broken file."""

    def __init__(self, n: int, bad: int):
        self.n, self.bad = n, bad

    def __getitem__(self, index):
        if index == self.bad:
            raise ValueError(f"sample {index} is corrupt")
        return index * index

    def __len__(self):
        return self.n

    def __repr__(self):
        return f"squares 0..{self.n - 1} whose sample {self.bad} raises ValueError"


class Uncollatable:
    """A sample the cases' collate_fn refuses."""

    def __repr__(self):
        return "Uncollatable()"


def gather(samples):
    """The collate_fn of the cases: the samples of a batch as a tuple."""
    if any(isinstance(sample, Uncollatable) for sample in samples):
        raise TypeError("collate_fn cannot batch an Uncollatable sample")
    return tuple(samples)


SQUARES = tuple(i * i for i in range(10))
LATE = ("worker_loop took longer than 1 s to return after the None sentinel: return from "
        "the function when index_queue.get() gives None (and do not wait for more tasks)")


def _tasks_text(tasks) -> str:
    return ", ".join("None" if task is None else f"({task[0]}, {list(task[1])})"
                     for task in tasks)


def _worker_cases() -> list[Case]:
    def case(tasks, hint, dataset=SQUARES, in_a_process=False):
        where = "in a real worker process (fork), " if in_a_process else ""
        data = "squares 0, 1, 4, …, 81" if dataset is SQUARES else repr(dataset)
        return Case({"dataset": dataset, "tasks": tuple(tasks), "in_a_process": in_a_process},
                    description=f"{where}dataset: {data}; index queue: {_tasks_text(tasks)}",
                    hint=hint)

    return [
        case([(0, (0, 1)), (1, (2, 3)), None],
             "take a task, fetch dataset[i] for each index, collate the samples with "
             "collate_fn, put (batch_number, batch) on the result queue; stop at None"),
        case([None], "None first: the loop ends at once and sends nothing"),
        case([(0, (1,)), None, (1, (2,))],
             "stop at the None sentinel: the task after it must stay unread in the queue"),
        case([(7, (9,)), (3, (0, 1, 2))],
             "send each batch with the batch number of its task (7, then 3), not a count of "
             "your own; the check puts None after these tasks"),
        case([(0, (0, 1)), (1, (2, 3)), (2, (4,)), None],
             "a sample that raises must not end the worker: catch the exception, put "
             "(batch_number, the exception) on the result queue, and go on with the next task",
             dataset=CorruptAt(6, 2)),
        case([(0, (0, 1)), (1, (2, 3)), None],
             "collating can fail too (here collate_fn raises TypeError on sample 3): keep "
             "collate_fn inside the try, and send the exception as that batch",
             dataset=(0, 1, 4, Uncollatable())),
        case([(0, (0, 1, 2)), (1, (3, 4)), None],
             "the same loop must work in a worker process, with multiprocessing queues",
             in_a_process=True),
    ]


def _use_worker_loop(implementation, case: Case) -> dict:
    dataset, tasks = case.inputs["dataset"], list(case.inputs["tasks"])
    if None not in tasks:
        tasks.append(None)  # the check's own sentinel after the tasks
    if case.inputs["in_a_process"]:
        return _worker_in_a_process(implementation, dataset, tasks)
    index_queue, result_queue = queue.Queue(), queue.Queue()
    for task in tasks:
        index_queue.put(task)
    thread, outcome = start_thread(implementation, (dataset, gather, index_queue, result_queue),
                                   name="worker")
    returned = finish_thread(thread, outcome, 1.0, LATE)
    return {"sent back": [describe_message(m) for m in drain(result_queue)],
            "returned": returned, "tasks left unread": index_queue.qsize()}


def _report_errors(implementation, errors, *args) -> None:
    """The worker process's target: the reader's loop, with whatever it raises sent back
    (pickled here, so that a failure to pickle is seen here too)."""
    try:
        implementation(*args)
    except BaseException as error:  # noqa: BLE001 - re-raised in the checking process
        try:
            payload = pickle.dumps(error)
        except Exception:
            payload = pickle.dumps(RuntimeError(f"{type(error).__name__}: {error}"))
        errors.put(payload)


def _worker_in_a_process(implementation, dataset, tasks) -> dict:
    context = multiprocessing.get_context("fork")
    index_queue, result_queue, errors = context.Queue(), context.Queue(), context.Queue()
    for task in tasks:
        index_queue.put(task)
    process = context.Process(target=_report_errors, daemon=True, args=(
        implementation, errors, dataset, gather, index_queue, result_queue))
    process.start()
    messages = []
    deadline = time.monotonic() + 2.0
    while True:  # read while it runs: a full pipe would keep it from exiting
        try:
            messages.append(result_queue.get(timeout=0.05))
            continue
        except queue.Empty:
            if not process.is_alive() or time.monotonic() > deadline:
                break
    if process.is_alive():
        process.kill()
        process.join()
        raise TimeoutError("in a worker process, " + LATE)
    process.join()
    try:
        raise pickle.loads(errors.get(timeout=0.1))
    except queue.Empty:
        pass
    return {"sent back": [describe_message(m) for m in messages],
            "exit code of the worker process": process.exitcode}


register(Exercise(
    reference=solutions.worker_loop,
    cases=_worker_cases,
    run=_use_worker_loop,
    hint=("loop forever: task = index_queue.get(); if it is None, return; otherwise "
          "fetch, collate and put (batch_number, batch) on result_queue"),
    forbidden=WORKER_PIECES,
    time_limit=5.0,
))


# ---------------------------------------------------------------------------------------
# 2. Which worker, and when


def _schedule_hint(num_batches: int, num_workers: int, prefetch_factor: int) -> str:
    in_flight = num_workers * prefetch_factor
    if num_batches <= in_flight:
        return (f"{prefetch_factor} x {num_workers} = {in_flight} tasks are sent by iter(), "
                f"and the epoch has only {num_batches} batches: all are sent by iter() (None)")
    return (f"iter() sends the first {prefetch_factor} x {num_workers} = {in_flight} batches; "
            f"after that, batch k is sent when batch k - {in_flight} is handed out; workers "
            f"take turns: batch k goes to worker k % {num_workers}")


register(Exercise(
    reference=solutions.dispatch_schedule,
    cases=lambda: [Case({"num_batches": n, "num_workers": w, "prefetch_factor": p},
                        hint=_schedule_hint(n, w, p))
                   for n, w, p in [(10, 2, 2), (10, 1, 2), (10, 4, 1), (3, 2, 2), (12, 3, 2),
                                   (0, 2, 2), (9, 2, 3), (5, 1, 1), (8, 4, 2)]],
    hint="the worker is batch % num_workers; the trigger is None for the first "
         "prefetch_factor * num_workers batches, then batch - prefetch_factor * num_workers",
    forbidden=WORKER_PIECES,
))


# ---------------------------------------------------------------------------------------
# 3. Samples loaded before the loop takes a batch


def _ahead_hint(n: int, b: int, workers: int, factor, drop_last: bool) -> str:
    if workers == 0:
        return "num_workers=0: nothing is loaded until next() asks for the first batch"
    hint = (f"prefetch_factor counts batches per worker: iter() sends {factor} x {workers} = "
            f"{factor * workers} batches of up to {b} samples")
    full, leftover = divmod(n, b)
    batches = full + (1 if leftover and not drop_last else 0)
    if batches < factor * workers:
        hint += f", but the epoch has only {batches} batch{'es' * (batches != 1)}"
        if leftover:
            hint += (f" (the last one, {leftover} samples, is dropped)" if drop_last
                     else f" (the last one holds {leftover} samples)")
    return hint


AHEAD = [(64, 4, 2, 2, False), (64, 4, 2, 3, False), (10, 4, 2, 2, False), (10, 4, 2, 2, True),
         (100, 32, 4, 2, False), (1000, 32, 0, None, False), (768, 32, 2, 2, False),
         (5, 10, 1, 2, False), (5, 10, 1, 2, True), (50, 8, 3, 1, False), (0, 4, 2, 2, False)]

register(Exercise(
    reference=solutions.samples_loaded_ahead,
    cases=lambda: [Case({"dataset_size": n, "batch_size": b, "num_workers": w,
                         "prefetch_factor": p, "drop_last": d}, hint=_ahead_hint(n, b, w, p, d))
                   for n, b, w, p, d in AHEAD],
    hint="add up the sizes of the first prefetch_factor * num_workers batches of the epoch",
    forbidden=WORKER_PIECES,
))


# ---------------------------------------------------------------------------------------
# 4. The reorder buffer


def _arrival_cases() -> list[Case]:
    def case(order, hint, in_order=True):
        arrivals = tuple((n, f"batch {n}") for n in order)
        return Case({"arrivals": arrivals, "in_order": in_order}, hint=hint,
                    description=f"batches arrive in the order {list(order)}, in_order={in_order}")

    return [
        case([0, 1, 2, 3], "already in order: yield each one as it arrives"),
        case([1, 0, 2], "batch 1 arrives first: keep it until batch 0 is there, then yield "
                        "both, 0 then 1"),
        case([2, 1, 0, 3], "nothing can go out before batch 0; then 0, 1 and 2 go out at once"),
        case([0, 3, 1, 2, 5, 4], "yield each batch as soon as its turn comes: 0 at once, 1 "
                                 "when it arrives, then 2 together with the waiting 3"),
        case([4, 3, 2, 1, 0], "all reversed: the buffer holds 4 batches before 0 arrives"),
        case([], "no batch at all: yield nothing"),
        case([2, 0, 1], "in_order=False: yield every batch the moment it arrives", in_order=False),
        case([0], "one batch"),
    ]


def _use_reorder(implementation, case: Case) -> list:
    """What the training loop sees: each batch, and how many arrivals had been read when it
    came out (a buffer that waits for more than it needs is too late)."""
    arrivals = case.inputs["arrivals"]
    read = 0

    def feed():
        nonlocal read
        for arrival in arrivals:
            read += 1
            yield arrival

    limit = len(arrivals) + 10
    seen = []
    for batch in implementation(feed(), in_order=case.inputs["in_order"]):
        if len(seen) == limit:
            raise TooManyItems(limit)
        seen.append({"batch": batch, "arrivals read": read})
    return seen


register(Exercise(
    reference=solutions.reorder_batches,
    cases=_arrival_cases,
    run=_use_reorder,
    hint=("keep a dict batch number -> batch and the number you must yield next; after each "
          "arrival, yield from the dict while it holds that number"),
    forbidden=WORKER_PIECES,
))
