"""The hidden cases' machinery for the loader's multi-process pieces, shared by chapters 6 to
14: running a learner's worker loop (in a thread of the checker's child, or in a real forked
worker), building a loader of the learner's design around a learner's iterator, and observing
an epoch of it against torch's iterator for a loader made of the same parts.

The worker loop is the reader's first concurrent code. Most cases run it in a thread, with
``queue.Queue`` queues (the same ``get``/``put`` as multiprocessing's), so that whatever it
does (raise, hang, call ``sys.exit``) comes back as a verdict; some run it in a real forked
worker process with multiprocessing queues. The iterators are checked on real worker
processes (fork): what they yield, which process read each batch, how far ahead the workers
read, what is left running at the end.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import multiprocessing
import os
import pickle
import queue
import random
import signal
import sys
import threading
import time
import warnings

import torch
import torch.utils.data as tud
import torch.utils.data._utils.worker as torch_worker
from torch.utils.data import Dataset, IterableDataset

from minidataloader_course.checker.framework import Case, TooManyItems
from minidataloader_course.shared.processes import children

WORKER_PIECES = ("minidataloader.worker._worker_loop",
                 "torch.utils.data._utils.worker._worker_loop",
                 "minidataloader.dataloader._MultiProcessingDataLoaderIter",
                 "torch.utils.data.dataloader._MultiProcessingDataLoaderIter")


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


@contextlib.contextmanager
def as_in_a_torch_worker(worker_id: int, num_workers: int, base_seed: int, dataset):
    """This process made, for the block, what torch's ``_worker_loop`` makes of a worker
    before its ``worker_init_fn`` runs: ``random`` and torch seeded with ``base_seed +
    worker_id``, numpy's global generator from ``_generate_state(base_seed, worker_id)``,
    then the ``WorkerInfo``. A ``worker_init_fn`` called here sees what it sees in a real
    worker (``torch.initial_seed()`` included); the random states and the info are put back
    afterwards, for the check's own process is no worker."""
    import numpy as np

    states = random.getstate(), torch.get_rng_state(), np.random.get_state()
    seed = base_seed + worker_id
    random.seed(seed)
    torch.manual_seed(seed)
    np.random.seed(torch_worker._generate_state(base_seed, worker_id))
    torch_worker._worker_info = torch_worker.WorkerInfo(
        id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    try:
        yield
    finally:
        torch_worker._worker_info = None
        random.setstate(states[0])
        torch.set_rng_state(states[1])
        np.random.set_state(states[2])


def drain(queue_) -> list:
    """Everything waiting in a queue.Queue, in order."""
    items = []
    while True:
        try:
            items.append(queue_.get_nowait())
        except queue.Empty:
            return items


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
        return worker_in_a_process(implementation, arguments, tasks, seconds, done_after,
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


def worker_in_a_process(implementation, arguments, tasks, seconds, done_after, late) -> dict:
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


def _namespaces(implementation):
    """Where the names a learner's piece uses are found: its functions' globals (a notebook
    cell's ``__main__``, which need not be ``sys.modules["__main__"]``), then the module it
    says it comes from."""
    functions = [implementation]
    if isinstance(implementation, type):
        functions = [f for cls in implementation.__mro__ for f in vars(cls).values()
                     if callable(f)]
    for function in functions:
        names = getattr(function, "__globals__", None)
        if names is not None:
            yield names
    module = getattr(implementation, "__module__", None)
    if module in sys.modules:
        yield vars(sys.modules[module])


def message_class(implementation, name: str) -> type:
    """The class ``name`` (``Resume``, ``StreamEnded``) that the learner's piece knows: its
    own, wherever the piece was written (a ``%%piece`` cell, a module, a notebook cell),
    else the course's (that of the stub's
    ``worker.py``). The messages are compared by their class's name (``describe_message``),
    so a class of the learner's own counts as theirs."""
    for names in _namespaces(implementation):
        found = names.get(name)
        if isinstance(found, type) and found.__name__ == name:
            return found
    from minidataloader_course.learner.stubs import worker

    return getattr(worker, name)


def mark_pinned(batch):
    """The ``_pin_memory_fn`` of the cases: "pins" a batch by marking it (no accelerator)."""
    return ["pinned", batch]


def make_dataset(spec: tuple, implementation):
    kind, *arguments = spec
    if kind == "numbers":
        return Numbers(*arguments)
    if implementation is TorchIterator:
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


class TorchIterator:
    """torch's iterator for a loader made of the same parts: the oracle of the iterator's
    exercises. ``_reset`` resets torch's own (persistent workers). A ``_pin_memory_fn`` is
    applied to each batch torch yields, as a pin thread would; without one, torch's loader
    gets the loader's ``pin_memory`` and decides what to do with it (on a machine without an
    accelerator: warn, and pin nothing)."""

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
        self.pin_fn = getattr(loader, "_pin_memory_fn", None)
        if self.pin_fn is None:
            parts["pin_memory"] = getattr(loader, "pin_memory", False)
        with more_workers_than_cpus_is_fine():
            self.torch_loader = tud.DataLoader(loader.dataset, **parts)
            self.inner = iter(self.torch_loader)

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


def after_first_batch(dataset, seen: dict, watch: set, epoch: int) -> None:
    """What the check does once the first batch of an epoch is out."""
    if isinstance(dataset, Numbers):
        dataset.first_batch_out.set()  # the gated samples may be read now
    if "prefetch" in watch and epoch == 0:
        seen["samples read after the first next()"] = when_idle(dataset.reads)


def read_with(batches: list, sample: int) -> list[int] | str:
    """The samples read by the process that read ``sample``, from described batches."""
    readers = [tuple(batch[1]) for batch in batches
               if isinstance(batch, tuple) and sample in batch[0]]
    if not readers:
        return f"(sample {sample} never came)"
    return sorted(i for batch in batches if isinstance(batch, tuple) and tuple(batch[1]) ==
                  readers[0] for i in batch[0])


def global_draw() -> list[int]:
    return torch.randint(1000, (2,)).tolist()


def _free_the_copy(iterator) -> None:
    """The forked process's target: what Python runs there when its copy of the iterator is
    freed (say, by a garbage collection that finds it in a cycle): the copy's ``__del__``.
    What that raises stays here: the case observes what it did to the owner's workers."""
    finalizer = getattr(type(iterator), "__del__", None)
    if finalizer is None:
        return
    with contextlib.suppress(Exception):  # e.g. Process.is_alive: "can only test a child"
        finalizer(iterator)


def free_a_forked_copy(iterator, implementation, running_before: set) -> int | str:
    """A process forked while the iterator is alive (as a worker is) frees its copy of it;
    then, how many worker processes the owner still has. torch's copies are never freed
    (its workers leave through ``os._exit``, which frees nothing), so torch's iterator is
    observed without the copy's ``__del__``: its epoch is what a guarded one must give."""
    if not HAS_FORK:
        return "(not run: this platform cannot fork)"
    if implementation is not TorchIterator:
        holder = multiprocessing.get_context("fork").Process(
            target=_free_the_copy, args=(iterator,), daemon=True)
        holder.start()
        holder.join(5.0)
        if holder.is_alive():  # a __del__ that hangs there: not what the case observes
            holder.kill()
            holder.join()
    return len(set(children()) - running_before)


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
    if "forked copy" in watch:
        seen["worker processes running after a forked process freed its copy"] = (
            free_a_forked_copy(iterator, implementation, running_before))
    limit = 3 * max(len(dataset), 1) + 3
    if isinstance(dataset, Numbers):
        dataset.epoch_started.set()
    for epoch, stop_after in enumerate(spec["epochs"]):
        if epoch:
            iterator._reset(loader)

        batches = one_epoch(iterator, readers, limit, stop_after,
                            functools.partial(after_first_batch, dataset, seen, watch, epoch),
                            errors="explain" if "errors" in watch else "go on")
        if "held" in watch:  # sample 0 holds its worker up: who got the tasks meanwhile
            seen[f"epoch {epoch + 1}: samples read by the worker that read sample 0"] = (
                read_with(batches, 0))
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
    ("len", "prefetch", "gate", "unordered"; "held": the samples read by sample 0's worker; "errors": an epoch ends at its first exception,
    described; "del": the processes left once the iterator is deleted; "forked copy": before
    the epoch, a forked process frees its copy of the iterator); ``epochs``: per
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


WORKER_INFO = ("Dataset", "IterableDataset", "Sampler", "get_worker_info")


HAS_FORK = "fork" in multiprocessing.get_all_start_methods()


def workers_for_a_check(num_workers: int) -> dict:
    """DataLoader arguments for ``num_workers`` forked workers (none without fork)."""
    if num_workers == 0 or not HAS_FORK:
        return {"num_workers": 0}
    return {"num_workers": num_workers, "multiprocessing_context": "fork"}
