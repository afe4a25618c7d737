"""Chapter 6 (workers and queues): the exercises and their hidden cases.

The worker loop is the reader's first concurrent code. Most cases run it in a thread of the
checker's child process, with ``queue.Queue`` queues (the same ``get``/``put`` as
multiprocessing's), so that whatever it does -- raise, hang, call ``sys.exit`` -- comes back
as a verdict; one case runs it in a real forked worker process with multiprocessing queues.

The multi-process iterator is checked on real worker processes (fork), against torch's
iterator for a loader made of the same parts: what it yields, which process read each batch,
how far ahead the workers read, what is left running at the end. Chapters 7 to 10 check
their versions of both pieces with the machinery here.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import threading
import time
import warnings

import torch
import torch.utils.data as tud
from torch.utils.data import Dataset, IterableDataset

from minidataloader_course.chapters.ch06 import solution as solutions
from minidataloader_course.checker.framework import Case, Exercise, TooManyItems, register
from minidataloader_course.checker.questions import Choice, Prediction
from minidataloader_course.shared.processes import children

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


# ---------------------------------------------------------------------------------------
# 1. The worker loop (a piece of the learner's loader; chapters 7, 8 and 10 grow it)


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
LATE = ("worker_loop took longer than {seconds:g} s to return after the None sentinel: return "
        "from the function when index_queue.get() gives None (and do not wait for more tasks)")


def tasks_text(tasks) -> str:
    return ", ".join("None" if task is None else repr(task) if not isinstance(task, tuple)
                     else f"({task[0]}, {list(task[1]) if task[1] is not None else None})"
                     for task in tasks)


def describe_message(message):
    """A message from the result queue as plain data: an exception sent as a batch becomes
    the words "the exception ValueError: ..." (exceptions do not compare by value), and the
    messages of chapters 7 to 10 (the learner's own classes) are named."""
    if not (isinstance(message, tuple) and len(message) == 2):
        return message
    number, data = message
    kind = type(data).__name__
    if type(number).__name__ == "Resume":
        return f"an acknowledgement (Resume(), {data!r})"
    if kind == "StreamEnded":
        return number, f"StreamEnded(worker_id={data.worker_id})"
    if kind == "WorkerError":
        text = str(getattr(data, "message", ""))
        return number, (f"WorkerError of {getattr(data.exc_type, '__name__', data.exc_type)}, "
                        f"its message holding the worker's traceback: "
                        f"{'Traceback (most recent call last)' in text}")
    if isinstance(data, BaseException):
        return number, f"the exception {kind}: {data}"
    return message


def run_worker(implementation, arguments: tuple, tasks: list, in_a_process: bool,
               seconds: float = 1.0, done_after: float | None = None, late: str = LATE) -> dict:
    """Run the reader's ``worker_loop(*arguments[:1], index_queue, result_queue, done_event,
    *arguments[1:])`` on ``tasks``: in a thread with ``queue.Queue`` queues, or in a forked
    worker process with multiprocessing queues. ``done_event`` is set ``done_after`` seconds
    after the start (never if None); ``late`` says what it means when the loop has not
    returned ``seconds`` later. What came back, described."""
    if in_a_process:
        return _worker_in_a_process(implementation, arguments, tasks, seconds, done_after,
                                    late)
    index_queue, result_queue, done_event = queue.Queue(), queue.Queue(), threading.Event()
    for task in tasks:
        index_queue.put(task)
    if done_after == 0:
        done_event.set()  # set before the loop starts, not a moment after: no race
    thread, outcome = start_thread(implementation, (arguments[0], index_queue, result_queue,
                                                    done_event, *arguments[1:]), name="worker")
    if done_after:
        time.sleep(done_after)
        done_event.set()
    returned = finish_thread(thread, outcome, seconds, late.format(seconds=seconds))
    return {"sent back": [describe_message(m) for m in drain(result_queue)],
            "returned": returned, "tasks left unread": index_queue.qsize()}


def report_errors(implementation, errors, *args) -> None:
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


def _worker_in_a_process(implementation, arguments, tasks, seconds, done_after, late) -> dict:
    context = multiprocessing.get_context("fork")
    index_queue, result_queue, errors = context.Queue(), context.Queue(), context.Queue()
    done_event = context.Event()
    for task in tasks:
        index_queue.put(task)
    if done_after == 0:
        done_event.set()  # set before the worker starts, not a moment after: no race
    process = context.Process(target=report_errors, daemon=True, args=(
        implementation, errors, arguments[0], index_queue, result_queue, done_event,
        *arguments[1:]))
    process.start()
    messages = []
    start = time.monotonic()
    while True:  # read while it runs: a full pipe would keep it from exiting
        if done_after is not None and time.monotonic() - start >= done_after:
            done_event.set()
        try:
            messages.append(result_queue.get(timeout=0.02))
            continue
        except queue.Empty:
            if not process.is_alive() or time.monotonic() - start > seconds + (done_after or 0):
                break
    if process.is_alive():
        process.kill()
        process.join()
        raise TimeoutError("in a worker process, " + late.format(seconds=seconds))
    process.join()
    try:
        raise pickle.loads(errors.get(timeout=0.1))
    except queue.Empty:
        pass
    return {"sent back": [describe_message(m) for m in messages],
            "exit code of the worker process": process.exitcode}


def _worker_cases() -> list[Case]:
    def case(tasks, hint, dataset=SQUARES, in_a_process=False):
        where = "in a real worker process (fork), " if in_a_process else ""
        data = "squares 0, 1, 4, …, 81" if dataset is SQUARES else repr(dataset)
        return Case({"dataset": dataset, "tasks": tuple(tasks), "in_a_process": in_a_process},
                    description=f"{where}dataset: {data}; index queue: {tasks_text(tasks)}",
                    hint=hint)

    return [
        case([(0, (0, 1)), (1, (2, 3)), None],
             "make a MapFetcher(dataset, auto_collation, collate_fn, drop_last) once; then take "
             "a task, fetch its batch, put (batch_number, batch) on the result queue; stop at "
             "None"),
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
             "collating can fail too (here collate_fn raises TypeError on sample 3): keep the "
             "whole fetch inside the try, and send the exception as that batch",
             dataset=(0, 1, 4, Uncollatable())),
        case([(0, (0, 1, 2)), (1, (3, 4)), None],
             "the same loop must work in a worker process, with multiprocessing queues",
             in_a_process=True),
    ]


def _use_worker_loop(implementation, case: Case) -> dict:
    tasks = list(case.inputs["tasks"])
    if None not in tasks:
        tasks.append(None)  # the check's own sentinel after the tasks
    # dataset, [queues and done_event], auto_collation, collate_fn, drop_last, base_seed,
    # init_fn, worker_id, num_workers
    arguments = (case.inputs["dataset"], True, gather, False, 0, None, 0, 1)
    return run_worker(implementation, arguments, tasks, case.inputs["in_a_process"])


register(Exercise(
    reference=solutions.worker_loop,
    cases=_worker_cases,
    run=_use_worker_loop,
    hint=("make the fetcher once; then loop forever: task = index_queue.get(); if it is None, "
          "return; otherwise fetch the batch and put (batch_number, batch) on result_queue"),
    forbidden=WORKER_PIECES,
    time_limit=5.0,
    piece="worker.worker_loop",
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


# ---------------------------------------------------------------------------------------
# 5. The multi-process iterator (a piece of the learner's loader; chapters 7 to 10 grow it)


class Numbers(Dataset):
    """Sample ``i`` is ``(i, the pid of the process that read it)``. Every read is counted in
    shared memory. Sample ``slow`` takes 0.3 s more; sample ``bad`` fails as ``fault`` says
    (raises ValueError or KeyError, kills its process, or sleeps a second); the samples in
    ``gated`` wait (at most a second) until the check has received batch 0, and count it
    when they had to wait."""

    def __init__(self, n: int, slow: int | None = None, bad: int | None = None,
                 gated: tuple = (), fault: str = "ValueError"):
        context = multiprocessing.get_context("fork")  # the cases' workers are forked
        self.n, self.slow, self.bad, self.gated, self.fault = n, slow, bad, gated, fault
        self.reads = context.Value("i", 0)
        self.epoch_started = context.Event()  # the check is in next(): a fault may happen
        self.first_batch_out = context.Event()
        self.read_too_early = context.Value("i", 0)

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        if not 0 <= index < self.n:
            raise IndexError(f"index {index} out of range for {self.n} samples")
        with self.reads.get_lock():
            self.reads.value += 1
        if index in self.gated and not self.first_batch_out.wait(1.0):
            with self.read_too_early.get_lock():
                self.read_too_early.value += 1
        if index == self.slow:
            time.sleep(0.3)
        if index == self.bad:
            self._fail(index)
        return index, os.getpid()

    def _fail(self, index):
        if self.fault == "ValueError":
            raise ValueError(f"sample {index} is corrupt")
        if self.fault == "KeyError":
            raise KeyError("label")
        if self.fault == "SIGKILL":
            # not before the check calls next(): torch notices a death with a signal
            # handler, which raises wherever the main process happens to be
            self.epoch_started.wait(2.0)
            os.kill(os.getpid(), signal.SIGKILL)  # as the out-of-memory killer does
        time.sleep(1.0)  # "sleep": a sample that takes too long

    def __repr__(self):
        faults = {"ValueError": "raises ValueError", "KeyError": "raises KeyError('label')",
                  "SIGKILL": "kills its worker (SIGKILL)", "sleep": "takes a second"}
        special = [f"sample {self.slow} slow (0.3 s)"] * (self.slow is not None)
        special += [f"sample {self.bad} {faults[self.fault]}"] * (self.bad is not None)
        special += [f"samples {list(self.gated)} wait for batch 0 to be handed out"] * bool(
            self.gated)
        return f"{self.n} samples (i, pid){''.join('; ' + s for s in special)}"


class Stream(IterableDataset):
    """The numbers ``0 .. n-1`` as samples ``(i, pid)``. With ``shares``, worker ``w`` reads
    ``shares[w]`` of every ``sum(shares)`` numbers (who it is, ``info()`` says: the
    learner's ``get_worker_info``, or torch's in torch's workers); without, every worker
    reads all of them."""

    def __init__(self, n: int, shares: tuple | None = None, info=None):
        self.n, self.shares, self.info = n, shares, info

    def __iter__(self):
        info = self.info() if self.info is not None else None
        items = range(self.n)
        if self.shares is not None and info is not None:
            items = [i for i in items if i % sum(self.shares) in _owned(self.shares, info.id)]
        return ((i, os.getpid()) for i in items)

    def __len__(self):
        return self.n

    def __repr__(self):
        how = ("every worker reads all of it" if self.shares is None else
               f"worker w reads {self.shares[0]}, {', '.join(map(str, self.shares[1:]))} of "
               f"every {sum(self.shares)} numbers")
        return f"a stream of the numbers 0..{self.n - 1} (i, pid): {how}"


def _owned(shares: tuple, worker_id: int) -> range:
    start = sum(shares[:worker_id])
    return range(start, start + shares[worker_id])


def worker_info_in(module: str | None):
    """What the learner's ``get_worker_info()`` says in this process: the ``_worker_info`` of
    the module whose worker loop runs here (None in the main process)."""
    return getattr(sys.modules.get(module or ""), "_worker_info", None)


def worker_module_of(implementation) -> str | None:
    """The module of the ``worker_loop`` an iterator starts (the learner's ``myloader.worker``),
    or of a worker loop itself: its workers set that module's ``_worker_info``."""
    if not isinstance(implementation, type):
        return getattr(implementation, "__module__", None)
    for cls in implementation.__mro__:
        loop = getattr(vars(cls).get("__init__"), "__globals__", {}).get("worker_loop")
        if loop is not None:
            return loop.__module__
    return None


def mark_pinned(batch):
    """The ``_pin_memory_fn`` of the cases: "pins" a batch by marking it (no accelerator)."""
    return ["pinned", batch]


def make_dataset(spec: tuple, implementation):
    kind, *arguments = spec
    if kind == "numbers":
        return Numbers(*arguments)
    if implementation is _TorchIterator:
        return Stream(*arguments, info=tud.get_worker_info)
    return Stream(*arguments, info=functools.partial(worker_info_in,
                                                     worker_module_of(implementation)))


def loader_arguments(arguments) -> dict:
    arguments = dict(arguments)
    if arguments.get("generator") is not None:
        arguments["generator"] = torch.Generator().manual_seed(arguments["generator"])
    if arguments.get("num_workers"):
        arguments.setdefault("multiprocessing_context", "fork")
    return arguments


def reference_loader(dataset, arguments: dict):
    """A finished loader of the learner's design (chapter 5's reference): it holds the
    attributes torch's loader has, and the parts the iterator uses."""
    from minidataloader_course.chapters.ch05 import solution as ch05

    return ch05.DataLoader(dataset, **arguments)


class _TorchIterator:
    """torch's iterator for a loader made of the same parts: the oracle of the iterator's
    exercises. ``_reset`` resets torch's own (persistent workers), and a ``_pin_memory_fn``
    is applied to each batch torch yields, as a pin thread would."""

    def __init__(self, loader):
        parts = {"collate_fn": loader.collate_fn, "generator": loader.generator,
                 "num_workers": loader.num_workers, "prefetch_factor": loader.prefetch_factor,
                 "persistent_workers": loader.persistent_workers, "timeout": loader.timeout,
                 "worker_init_fn": loader.worker_init_fn, "in_order": loader.in_order,
                 "multiprocessing_context": loader.multiprocessing_context}
        if isinstance(loader.dataset, IterableDataset):
            parts.update(batch_size=loader.batch_size, drop_last=loader.drop_last)
        elif loader.batch_sampler is not None:
            parts.update(batch_sampler=loader.batch_sampler)
        else:
            parts.update(batch_size=None, sampler=loader.sampler)
        with more_workers_than_cpus_is_fine():
            self.torch_loader = tud.DataLoader(loader.dataset, **parts)
            self.inner = iter(self.torch_loader)
        self.pin_fn = getattr(loader, "_pin_memory_fn", None)

    def __iter__(self):
        return self

    def __next__(self):
        batch = next(self.inner)
        return batch if self.pin_fn is None else self.pin_fn(batch)

    def __len__(self):
        return len(self.inner)

    def _reset(self, loader, first_iter=False):
        self.inner._reset(self.torch_loader)


@contextlib.contextmanager
def more_workers_than_cpus_is_fine():
    """Silence torch's warning about more workers than CPUs: the cases use up to 3 workers
    on any machine, and the warning is not the reader's doing."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*worker processes", category=UserWarning)
        yield


def when_idle(counter, settle: float = 0.2, limit: float = 3.0) -> int:
    """The counter's value once it has not changed for ``settle`` seconds: what the workers
    read before they ran out of tasks."""
    last, since, deadline = -1, time.monotonic(), time.monotonic() + limit
    while time.monotonic() < deadline:
        value = counter.value
        if value != last:
            last, since = value, time.monotonic()
        elif time.monotonic() - since >= settle:
            break
        time.sleep(0.02)
    return last


class Readers:
    """Names the processes that read samples by the order they first appear: a pid differs
    from run to run, "worker process 2" does not."""

    def __init__(self):
        self.names = {os.getpid(): "the main process"}

    def __call__(self, pid: int) -> str:
        if pid not in self.names:
            self.names[pid] = f"worker process {len(self.names)}"
        return self.names[pid]


def describe_batch(batch, readers: Readers):
    """A batch of ``(i, pid)`` samples as (its sample numbers, the processes that read it)."""
    if not (isinstance(batch, list) and len(batch) == 2):  # collate makes lists of them
        return batch  # whatever else came: compared as it is
    if isinstance(batch[0], str) and batch[0] == "pinned":
        return ["pinned", describe_batch(batch[1], readers)]
    if isinstance(batch[0], torch.Tensor) and batch[0].ndim:
        indices, pids = batch
        return indices.tolist(), sorted({readers(pid) for pid in pids.tolist()})
    if isinstance(batch[0], int):  # batch_size=None: one sample, converted
        return [batch[0]], [readers(batch[1])]
    return batch


def one_epoch(iterator, readers: Readers, limit: int, stop_after: int | None = None,
              after_first=None, errors: str = "go on") -> list:
    """The batches of an epoch, or of its first ``stop_after`` batches. An exception raised by
    ``next()`` is recorded in the batch's place; the epoch goes on after it (as in torch), or
    ends there (``errors="stop"``), or ends and tells what its message holds ("explain").
    ``after_first()`` runs once the first ``next()`` has returned (or raised)."""
    batches = []
    while stop_after is None or len(batches) < stop_after:
        start = time.monotonic()
        try:
            batch = describe_batch(next(iterator), readers)
        except StopIteration:
            break
        except Exception as error:
            # torch's error sits in a cycle with its traceback, which keeps its iterator (and
            # workers) alive until the garbage collector runs; whose __del__ then waits 5 s
            # per worker. Without the traceback, the iterator goes when its last user does.
            error.__traceback__ = None
            batch = f"next() raised {type(error).__name__}"
            if errors == "explain":
                text = str(error)
                batch += (f" after {'under' if time.monotonic() - start < 3 else 'over'} 3 s; "
                          f"its message holds the worker's traceback: "
                          f"{'Traceback (most recent call last)' in text}, "
                          f"says 'timed out': {'timed out' in text}")
        if after_first is not None and not batches:
            after_first()
        batches.append(batch)
        if isinstance(batch, str) and errors != "go on":
            break
        if len(batches) > limit:
            raise TooManyItems(limit)
    return batches


def _after_first(dataset, seen: dict, watch: set, epoch: int) -> None:
    """What the check does once the first batch of an epoch is out."""
    if isinstance(dataset, Numbers):
        dataset.first_batch_out.set()  # the gated samples may be read now
    if "prefetch" in watch and epoch == 0:
        seen["samples read after the first next()"] = when_idle(dataset.reads)


def global_draw() -> list[int]:
    return torch.randint(1000, (2,)).tolist()


def use_iterator(implementation, case: Case) -> dict:
    """What a user observes of an iterator made from a finished loader: see ``iterator_case``."""
    spec = case.inputs
    dataset = make_dataset(spec["dataset"], implementation)
    torch.manual_seed(0)
    loader = reference_loader(dataset, loader_arguments(spec["arguments"]))
    if spec.get("pin"):
        loader._pin_memory_fn = mark_pinned
    watch = set(spec["watch"])
    readers = Readers()
    running_before = set(children())  # an earlier case's workers may live on
    with more_workers_than_cpus_is_fine():
        iterator = implementation(loader)
    seen = {"the global RNG right after": global_draw(),
            "iter(iterator) is iterator": iter(iterator) is iterator,
            "len(iterator)": len(iterator) if "len" in watch else "(not compared)"}
    if "prefetch" in watch:
        seen["samples read before the first next()"] = when_idle(dataset.reads)
    limit = 3 * max(len(dataset), 1) + 3
    if isinstance(dataset, Numbers):
        dataset.epoch_started.set()
    for epoch, stop_after in enumerate(spec["epochs"]):
        if epoch:
            iterator._reset(loader)

        batches = one_epoch(iterator, readers, limit, stop_after,
                            functools.partial(_after_first, dataset, seen, watch, epoch),
                            errors="explain" if "errors" in watch else "go on")
        if "unordered" in watch:  # the order depends on timing; the content does not
            seen[f"epoch {epoch + 1}: the first batch is batch 0"] = batches[0][0][0] == 0
            batches = sorted(batch[0] for batch in batches)
        seen[f"epoch {epoch + 1}"] = batches
    if "gate" in watch:
        seen["samples of batch 1 read before batch 0 was handed out"] = (
            dataset.read_too_early.value)
    if spec["epochs"][-1] is None and "errors" not in watch:
        seen["next() after the last batch"] = one_epoch(iterator, readers, 2)
    if "del" in watch:  # after break, an error or the end: the iterator goes away
        del iterator
        gc.collect()  # torch's, after an error, sits in a cycle with the error's traceback
    seen["worker processes still running"] = len(set(children()) - running_before)
    return seen


def iterator_case(dataset: tuple, arguments: dict, hint: str, watch=("len",),
                  epochs=(None,), pin: bool = False) -> Case:
    """A case of the iterator's exercises. ``dataset``: ``("numbers", n, slow, bad, gated,
    fault)`` or ``("stream", n, shares)``; ``watch``: what to observe beyond the batches
    ("len", "prefetch", "gate", "unordered"; "errors": an epoch ends at its first exception,
    described; "del": the processes left once the iterator is deleted); ``epochs``: per
    epoch, None for all of it or the number of batches after which the loop breaks (epochs
    after the first start with ``_reset``)."""
    shown = [f"{name}={f'torch.Generator().manual_seed({value})' if name == 'generator' else value!r}"
             for name, value in arguments.items()]
    made = Numbers(*dataset[1:]) if dataset[0] == "numbers" else Stream(*dataset[1:])
    plan = ", ".join("a whole epoch" if stop is None else f"an epoch left after {stop} "
                     f"batch{'es' * (stop != 1)}" for stop in epochs)
    return Case({"dataset": dataset, "arguments": tuple(arguments.items()), "watch": watch,
                 "epochs": epochs, "pin": pin},
                description=f"a loader of {made!r}, {', '.join(shown)}"
                            f"{', with a _pin_memory_fn' if pin else ''}; {plan}",
                hint=hint)


ITERATOR_PIECES = WORKER_PIECES + ("minidataloader.dataloader._SingleProcessDataLoaderIter",
                                   "torch.utils.data.dataloader._SingleProcessDataLoaderIter")


def _iterator_cases() -> list[Case]:
    numbers = ("numbers", 10)
    return [
        iterator_case(numbers, {"batch_size": 3, "num_workers": 2},
                      "start num_workers processes running worker_loop, send batch k to worker "
                      "k % num_workers, and hand the batches out in order; at the end, raise "
                      "StopIteration, and stop the workers (None each, then join them)"),
        iterator_case(("numbers", 8, 0), {"batch_size": 2, "num_workers": 2},
                      "batch 0 is slow, and the batches after it arrive first: keep them in the "
                      "reorder buffer, and hand everything out in order"),
        iterator_case(("numbers", 30), {"batch_size": 3, "num_workers": 2,
                                        "prefetch_factor": 2},
                      "__init__ sends prefetch_factor * num_workers tasks (4 batches of 3: 12 "
                      "samples read before the first next()); each batch handed out sends one "
                      "more task, no more", watch=("prefetch",)),
        iterator_case(numbers, {"batch_size": 4, "num_workers": 3, "shuffle": True,
                                "generator": 1, "drop_last": True, "prefetch_factor": 1},
                      "the order is the batch sampler's: iterate loader.batch_sampler once per "
                      "epoch; draw the base seed first, from loader.generator, as in chapter 5"),
        iterator_case(numbers, {"batch_size": 3, "num_workers": 2, "shuffle": True},
                      "without a generator, the base seed is one int64 draw from the global "
                      "generator (chapter 5's draw, with generator=None), made in __init__, "
                      "before any index is taken from the sampler"),
        iterator_case(("numbers", 4), {"batch_size": None, "num_workers": 2},
                      "batch_size=None: the loader has no batch_sampler; iterate its sampler, "
                      "and tell worker_loop auto_collation=False"),
        iterator_case(("numbers", 8, None, None, (2, 3)), {"batch_size": 2, "num_workers": 2},
                      "hand batch 0 out as soon as it arrives: do not wait for the results of "
                      "other batches first", watch=("gate",)),
        iterator_case(("numbers", 12, 0), {"batch_size": 2, "num_workers": 2,
                                           "in_order": False},
                      "in_order=False: hand out whatever arrives first (here batch 0 is slow, "
                      "so it is not first); every batch still comes once",
                      watch=("unordered",)),
        iterator_case(("numbers", 16, None, 5), {"batch_size": 2, "num_workers": 2},
                      "a worker sends an exception in place of batch 2: raise it when batch 2's "
                      "turn comes, after sending the next task, so that the epoch can go on"),
        iterator_case(("numbers", 0), {"batch_size": 2, "num_workers": 2},
                      "an empty dataset: no task to send; the first next() raises StopIteration "
                      "and the workers are stopped"),
    ]


register(Exercise(
    reference=solutions.MultiProcessIterator,
    oracle=_TorchIterator,
    cases=_iterator_cases,
    run=use_iterator,
    hint=("__init__: the index iterator and the base seed as in chapter 5, then the queues and "
          "the workers, then prefetch_factor * num_workers tasks; __next__: the batch numbered "
          "next, from the reorder buffer or the result queue"),
    forbidden=ITERATOR_PIECES,
    time_limit=8.0,
    piece="dataloader.MultiProcessIterator",
))


# ---------------------------------------------------------------------------------------
# Check yourself

register(Choice(
    "ch06-why-processes", answer="b", why={
        "a": "threads share all the memory of their process, the dataset included; it is "
             "processes that each need their own copy",
        "c": "a thread starts far faster than a process (chapter 8 measures what a worker "
             "process costs to start)",
        "d": "workers do not use the GPU at all: they read and collate samples on the CPU",
    }))

register(Choice(
    "ch06-more-workers", answer="c", why={
        "a": "four workers can load four times as many batches per second, but the loop "
             "cannot take them faster than one per training step",
        "b": "50 / 20 would be the gain if the step waited for each batch to load; one "
             "worker loads in parallel with the step, and already keeps up",
    }))


def _reads_before_the_first_batch() -> int:
    """Samples torch's workers read after iter(loader), before any next()."""
    dataset = Numbers(100)
    with more_workers_than_cpus_is_fine():
        iterator = iter(tud.DataLoader(dataset, batch_size=8, num_workers=3,
                                       prefetch_factor=2, multiprocessing_context="fork"))
        deadline = time.monotonic() + 20
        while dataset.reads.value == 0 and time.monotonic() < deadline:
            time.sleep(0.02)  # the workers are starting
        reads = when_idle(dataset.reads, settle=0.5, limit=20)
        del iterator  # stops the workers
    return reads


register(Prediction(
    "ch06-samples-before-first-batch", measure=_reads_before_the_first_batch,
    why="iter(loader) sends prefetch_factor x num_workers tasks, each a whole batch: "
        "2 x 3 batches of 8 samples",
    mistakes={6: "6 is the number of tasks sent; each task is a batch of 8 samples",
              16: "every worker gets prefetch_factor batches, and there are 3 workers",
              24: "prefetch_factor counts batches per worker: 2 for each of the 3 workers",
              0: "the workers start reading when iter(loader) sends the first tasks, without "
                 "waiting for next()"},
))

register(Choice(
    "ch06-head-of-line", answer="b", why={
        "a": "that is what in_order=False does; with in_order=True batch 1 must wait until "
             "batch 0 has been handed out",
        "c": "a batch that arrives early is kept, in the reorder buffer, not dropped",
        "d": "batch 1 is loaded by another worker, at the same time as batch 0: it is ready "
             "long before batch 0, and only waits for its turn",
    }))

register(Choice(
    "ch06-notebook-class", answer="c", why={
        "a": "the dataset pickles fine (its class travels as the name __main__.Squares); it "
             "is the worker that cannot find that name when it unpickles",
        "b": "a spawned worker is a fresh interpreter, not a copy of the notebook's process: "
             "it cannot import the notebook's __main__",
        "d": "the loader does not fall back to the main process: the worker's failure ends "
             "the epoch with an error",
    }))

register(Choice(
    "ch06-main-guard", answer="b", why={
        "a": "the guard changes nothing about speed: it decides what a worker runs when it "
             "loads the script",
        "c": "the imports at the top of the script run in every spawned worker, guard or "
             "not: the worker imports torch anyway",
        "d": "a forked worker is a copy of the main process and never runs the script; the "
             "guard matters with spawn and forkserver",
    }))
