"""Chapter 10 (when things go wrong): the exercises and their hidden cases.

Two exercises run the reader's code against real processes: small pools of workers forked
inside the checker's own child process, which the checker ends (with everything they
started) when the time limit runs out.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import queue
import random
import signal
import time

from minidataloader_course.chapters.ch10 import errors, watchdog
from minidataloader_course.chapters.ch10 import messages as ch10_messages
from minidataloader_course.chapters.ch10 import solution as solutions
from minidataloader_course.chapters.multiprocess_cases import (
    ITERATOR_PIECES,
    LATE,
    WORKER_PIECES,
    CorruptAt,
    TorchIterator,
    iterator_case,
    report_errors,
    run_worker,
    tasks_text,
    use_iterator,
)
from minidataloader_course.checker.framework import Case, Exercise, Rule, register
from minidataloader_course.checker.questions import Choice, Prediction
from minidataloader_course.shared.processes import running
from minidataloader_course.shared.synthetic import TwoArgumentError

FINISHED_PIECES = (
    "minidataloader.worker._ExceptionWrapper",
    "minidataloader.dataloader._WorkerGroup",
    "minidataloader.dataloader._describe_death",
)

# ---------------------------------------------------------------------------------------
# Rebuilding a worker's exception


class NeedsAKeyword(Exception):
    """An exception whose constructor takes its details as keyword arguments only."""

    def __init__(self, *, path):
        super().__init__(f"cannot read {path}")


class NeedsACode(Exception):
    """An exception whose constructor wants a number: one string makes it raise ValueError."""

    def __init__(self, code):
        super().__init__(f"error code {int(code)}")


def _json_error() -> type:
    return json.JSONDecodeError


TRACEBACK = ("Traceback (most recent call last):\n"
             '  File "/home/me/project/data.py", line 41, in __getitem__\n'
             "    {code}\n{last}\n")


def _rebuild_cases() -> list[Case]:
    def case(exc_type, last, code, hint):
        message = (f"{exc_type.__name__} raised in DataLoader worker 1 (pid 4242); its traceback "
                   "there:\n" + TRACEBACK.format(code=code, last=last))
        return Case({"exc_type": exc_type, "message": message},
                    description=f"exc_type={exc_type.__name__}, message = a worker's traceback "
                                f"ending in {last!r}",
                    hint=hint)

    return [
        case(ValueError, "ValueError: sample 3 is corrupt", "raise ValueError(...)",
             "ValueError takes one message: build ValueError(message)"),
        case(OSError, "OSError: [Errno 5] Input/output error", "image = open(path).read()",
             "OSError can be built from one message too"),
        case(KeyError, "KeyError: 'label'", "return row['label']",
             "KeyError's str() is the repr() of its argument: a plain str would print as one "
             "line full of \\n. Wrap the message in a str subclass whose __repr__ returns "
             "the string itself"),
        case(TwoArgumentError, "TwoArgumentError: /data/3.png: truncated file",
             "raise TwoArgumentError(path, 'truncated file')",
             "TwoArgumentError(message) raises TypeError (its constructor wants two "
             "arguments): fall back to RuntimeError(message)"),
        case(_json_error(), "json.decoder.JSONDecodeError: Unterminated string starting at: "
                            "line 1 column 10 (char 9)", "return json.loads(text)",
             "JSONDecodeError's constructor wants (msg, doc, pos): fall back to "
             "RuntimeError(message)"),
        case(UnicodeDecodeError, "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff "
                                 "in position 0: invalid start byte", "text = raw.decode()",
             "UnicodeDecodeError's constructor wants five arguments: fall back to "
             "RuntimeError(message)"),
        case(NeedsAKeyword, "NeedsAKeyword: cannot read /data/3.png",
             "raise NeedsAKeyword(path=path)",
             "this constructor accepts keyword arguments only: any exception while building "
             "it means falling back to RuntimeError(message)"),
        case(NeedsACode, "NeedsACode: error code 7", "raise NeedsACode(7)",
             "this constructor raises ValueError (it wants a number), not TypeError: any "
             "exception while building it means falling back to RuntimeError(message)"),
    ]


def _observe_exception(implementation, case: Case) -> dict:
    """What a training loop sees when the loader raises the rebuilt exception."""
    error = implementation(**case.inputs)
    if not isinstance(error, BaseException):
        return {"returned": repr(error)[:200], "an exception": False}
    # line by line: each a plain str (KeyError's str() may be a str subclass)
    return {"type": type(error).__name__, "str(exception), line by line": str(error).splitlines()}


register(Exercise(
    reference=solutions.rebuild_exception,
    cases=_rebuild_cases,
    run=_observe_exception,
    hint="try exc_type(message); if building it raises anything, return RuntimeError(message)",
    forbidden=FINISHED_PIECES,
    time_limit=2.0,
    piece="worker.rebuild_exception",
    rules=(
        Rule("`exc_type(message)`",
             (1, 2)),
        Rule("`KeyError` prints the message itself",
             (3,), parity="KeyError's own message"),
        Rule("any failure to build it: `RuntimeError(message)`",
             (4, 5, 6, 7, 8)),
    ),
    goals=(1, 6),
))

# ---------------------------------------------------------------------------------------
# Pools of real worker processes, for the next two exercises


def _fork():
    return multiprocessing.get_context("fork")


def _how_it_ended(worker) -> str:
    code = worker.exitcode  # None while it runs (reading it reaps an ended process)
    if code is None:
        return "still running"
    if code < 0:
        return "stopped by a signal"
    return f"exited by itself (code {code})"


def _end_all(workers) -> None:
    for worker in workers:
        if worker.is_alive():
            worker.kill()
        worker.join(5)


class DiesAsRead:
    """A result whose sender dies as it is read, as a batch of shared tensors does when its
    worker is killed before the main process has taken the memory over: reading it kills
    the sender (SIGKILL), waits until it is gone, then fails with ConnectionResetError. The
    reader kills it, so that the death comes before the failure, however busy the machine."""

    def __init__(self, pid: int):
        self.pid = pid

    def __reduce__(self):
        return _read_after_death, (self.pid,)


def _read_after_death(pid: int):
    os.kill(pid, signal.SIGKILL)  # as the out-of-memory killer would, right now
    deadline = time.monotonic() + 5.0
    # until its parent (this process) can see it ended: all its threads gone, not only its
    # main one (/proc says "zombie" earlier); WNOWAIT leaves it to its Process to reap
    while time.monotonic() < deadline and os.waitid(
            os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        time.sleep(0.005)
    raise ConnectionResetError(104, "Connection reset by peer")


def _watched_worker(worker_id, result_queue, behaviour) -> None:
    """A worker of the watchdog exercise: after 0.1 s it answers, dies or goes on sleeping."""
    time.sleep(0.1)
    if behaviour == "answers":
        result_queue.put((worker_id, f"a batch from worker {worker_id}"))
    elif behaviour == "dies as read":  # the reader kills it (see DiesAsRead)
        result_queue.put((worker_id, DiesAsRead(os.getpid())))
    elif behaviour == "killed":
        os.kill(os.getpid(), signal.SIGKILL)  # as the out-of-memory killer does
    elif behaviour == "exits":
        os._exit(3)
    time.sleep(60)  # alive, busy with something else


_DEATH = {"killed": "SIGKILL", "exits": "exit code 3", "dies as read": "SIGKILL"}


def _watchdog_cases() -> list[Case]:
    def case(behaviours, timeout, hint):
        described = ", ".join(f"worker {i} {b}" for i, b in enumerate(behaviours)
                              if b != "sleeps")
        return Case({"behaviours": behaviours, "timeout": timeout},
                    description=f"{len(behaviours)} workers; after 0.1 s "
                                f"{described or 'nothing happens'}; timeout={timeout}",
                    hint=hint)

    return [
        case(("sleeps", "answers"), 1.5,
             "worker 1 puts a result on the queue: return it (worker 0 is alive)"),
        case(("killed", "sleeps"), 3.0,
             "worker 0 dies without sending anything: each time get() times out (after 0.1 s, "
             "not after `timeout`), look for a worker that is no longer alive, and raise "
             "RuntimeError with its pid and signal.Signals(-exitcode).name"),
        case(("sleeps", "exits"), 3.0,
             "worker 1 calls os._exit(3): its exitcode is 3; say 'exit code 3' and its pid"),
        case(("sleeps", "sleeps"), 0.3,
             "nothing arrives and every worker is alive: after `timeout` seconds raise "
             "RuntimeError saying it timed out"),
        case(("dies as read", "sleeps"), 3.0,
             "worker 0's result cannot be read (ConnectionResetError) because worker 0 died "
             "as it was read: when reading fails, look at the workers too; a dead one is "
             "reported as any dead worker is, with its pid and how it ended"),
    ]


def _use_watchdog(implementation, case: Case) -> dict:
    context = _fork()
    result_queue = context.Queue()
    behaviours, timeout = case.inputs["behaviours"], case.inputs["timeout"]
    workers = [context.Process(target=_watched_worker, args=(i, result_queue, b), daemon=True)
               for i, b in enumerate(behaviours)]
    for worker in workers:
        worker.start()
    start = time.monotonic()
    try:
        result = implementation(result_queue, workers, timeout)
        return {"returned": result}
    except NotImplementedError:
        raise
    except Exception as error:  # the failure it reports is the outcome
        elapsed = time.monotonic() - start
        message = str(error)
        seen = {"raised": type(error).__name__}
        dying = [i for i, b in enumerate(behaviours) if b in _DEATH]
        if dying:
            worker = workers[dying[0]]
            seen["the message has the dead worker's pid"] = str(worker.pid) in message
            seen[f"the message says {_DEATH[behaviours[dying[0]]]!r}"] = (
                _DEATH[behaviours[dying[0]]] in message)
            seen["noticed within 2 s of the death"] = elapsed < 0.1 + 2.0
        else:
            seen["the message says 'timed out'"] = "timed out" in message
            seen["waited about `timeout` seconds"] = timeout - 0.05 <= elapsed <= timeout + 1.5
        return seen
    finally:
        _end_all(workers)


register(Exercise(
    reference=solutions.get_result,
    cases=_watchdog_cases,
    run=_use_watchdog,
    hint=("loop: result_queue.get(timeout=0.1); on queue.Empty check every worker's "
          "is_alive(), then the deadline"),
    forbidden=FINISHED_PIECES,
    time_limit=4.0,  # real processes: the reference needs 0.7 s, 2 s on a busy machine
    piece="dataloader.get_result",
    expected_from="reference, with real processes",
    rules=(
        Rule("the next result",
             (1,)),
        Rule("a dead worker: `RuntimeError` with its pid and how it ended, noticed within a second or so",
             (2, 3)),
        Rule("nothing within `timeout`: `RuntimeError` saying \"timed out\"",
             (4,)),
        Rule("a result that cannot be read because its worker died: that death's `RuntimeError`",
             (5,)),
    ),
    goals=(2, 3, 6),
))


def _pool_worker(worker_id, index_queue, result_queue, done_event, behaviour) -> None:
    """A worker of the shutdown exercise: the loop of chapter 6, simplified. A task is a
    number of seconds of work; None means "leave"; with done_event set, tasks are skipped."""
    if behaviour == "stuck":
        time.sleep(60)  # in the middle of a sample that never ends
    if behaviour == "unread result":  # more than a pipe holds: exiting waits for a reader
        result_queue.put((worker_id, bytes(1 << 20)))
    while True:
        try:
            task = index_queue.get(timeout=0.05)
        except queue.Empty:
            if done_event.is_set():
                break
            continue
        if task is None:
            break
        if done_event.is_set():
            continue
        time.sleep(task)
        result_queue.put((worker_id, task))


_SITUATIONS = {
    "idle": "idle",
    "busy": "busy with 10 queued tasks of 0.1 s",
    "stuck": "stuck in a sample that takes a minute",
    "unread result": "has a 1 MB result in the queue that nobody read",
    "dead": "already dead (killed)",
}


def _shutdown_cases() -> list[Case]:
    def case(behaviours, hint):
        described = "; ".join(f"worker {i} {_SITUATIONS[b]}" for i, b in enumerate(behaviours))
        return Case({"behaviours": behaviours, "timeout": 0.3},
                    description=f"{described}; timeout=0.3", hint=hint)

    return [
        case(("idle", "idle", "idle"),
             "idle workers leave by themselves when they get None: put one on each index "
             "queue and wait for them; terminate nobody who leaves in time"),
        case(("idle", "busy", "idle"),
             "worker 1 still has tasks queued before its None: set done_event first, so that "
             "it skips them and leaves at once"),
        case(("idle", "idle", "stuck"),
             "worker 2 never reads its queue: wait at most `timeout` seconds in all, then "
             "terminate() whoever is still alive, and return their positions in `workers` "
             "(here [2]), not their pids"),
        case(("unread result", "idle"),
             "worker 0 cannot exit before its last result is read from result_queue (its "
             "queue's feeder thread waits for a reader): while you wait, keep reading "
             "result_queue"),
        case(("dead", "idle", "idle"),
             "worker 0 is already dead: shutting down must neither fail nor wait for it"),
    ]


def _use_shutdown(implementation, case: Case) -> dict:
    context = _fork()
    result_queue, done_event = context.Queue(), context.Event()
    index_queues, workers = [], []
    behaviours, timeout = case.inputs["behaviours"], case.inputs["timeout"]
    for worker_id, behaviour in enumerate(behaviours):
        index_queue = context.Queue()
        worker = context.Process(target=_pool_worker, daemon=True, args=(
            worker_id, index_queue, result_queue, done_event, behaviour))
        worker.start()
        index_queues.append(index_queue)
        workers.append(worker)
        if behaviour == "busy":
            for _ in range(10):
                index_queue.put(0.1)
        elif behaviour == "dead":
            worker.kill()
            worker.join()
    time.sleep(0.05)  # let each settle into its situation
    start = time.monotonic()
    try:
        returned = implementation(workers, index_queues, result_queue, done_event, timeout)
        elapsed = time.monotonic() - start
        return {
            "how each worker ended": [_how_it_ended(worker) for worker in workers],
            "finished within timeout + 2 s": elapsed <= timeout + 2.0,
            "returned": returned,
        }
    finally:
        _end_all(workers)


register(Exercise(
    reference=solutions.shutdown_workers,
    cases=_shutdown_cases,
    run=_use_shutdown,
    hint=("done_event.set(); None on every index queue; until all have exited or `timeout` "
          "has passed, read result_queue; terminate() and join() the rest; return their "
          "positions in `workers`"),
    forbidden=FINISHED_PIECES,
    time_limit=4.0,  # real processes: the reference needs 0.7 s, 2 s on a busy machine
    piece="dataloader.shutdown_workers",
    expected_from="reference, with real processes",
    rules=(
        Rule("idle workers leave by themselves",
             (1,)),
        Rule("`done_event` first: busy workers skip their tasks",
             (2,)),
        Rule("stuck ones are terminated after `timeout`; their positions in `workers` are returned",
             (3,)),
        Rule("read the result queue while waiting",
             (4,)),
        Rule("an already dead worker",
             (5,)),
    ),
    goals=(8, 9),
))

# ---------------------------------------------------------------------------------------
# The worker loop, grown: errors travel with their traceback; it watches its parent and
# done_event


class BigFirst:
    """A dataset whose sample 0 is 1 MB of bytes: more than a pipe holds, so a worker that
    sent it cannot exit before someone reads it (or it gives up on its queue). ``read`` is
    set once sample 0 is read: the worker is in its loop, its parent noted."""

    def __init__(self):
        self.read = multiprocessing.get_context("fork").Event()

    def __getitem__(self, index):
        self.read.set()
        return bytes(1 << 20) if index == 0 else index

    def __len__(self):
        return 4

    def __repr__(self):
        return "4 samples, sample 0 being 1 MB of bytes"


def _orphan(implementation, arguments, report, errors) -> None:
    """The worker's parent: starts the reader's worker loop, waits until it has read a
    sample (so that it noted who its parent is), tells its pid, and dies at once (as a main
    process killed by the out-of-memory killer), leaving the worker an orphan."""
    context = multiprocessing.get_context("fork")
    index_queue, result_queue = context.Queue(), context.Queue()
    index_queue.put((0, [0]))  # a 1 MB result nobody will read
    worker = context.Process(target=report_errors, args=(
        implementation, errors, arguments[0], index_queue, result_queue, context.Event(),
        *arguments[1:]))
    worker.start()
    deadline = time.monotonic() + 5.0
    while not arguments[0].read.wait(0.02) and worker.is_alive() and time.monotonic() < deadline:
        pass  # until it has read (or died: code that raises at once reads nothing)
    report.send(worker.pid)
    os._exit(0)


def _parent_dies(implementation, arguments) -> dict:
    context = multiprocessing.get_context("fork")
    reading, writing = context.Pipe(duplex=False)
    errors = context.Queue()
    parent = context.Process(target=_orphan, args=(implementation, arguments, writing, errors))
    parent.start()
    if not reading.poll(5):
        raise TimeoutError("the worker did not start")
    pid = reading.recv()
    parent.join()
    start = time.monotonic()
    while running(pid) and time.monotonic() - start < 6.0:  # 1 s is typical: a busy machine
        time.sleep(0.02)
    try:
        raise pickle.loads(errors.get(timeout=0.1))  # what the reader's loop raised, if it did
    except queue.Empty:
        pass
    return {"the orphaned worker left within 6 s": not running(pid)}


def _escaped(implementation, escaped, *args) -> None:
    """The worker process's target: the reader's loop, and what escaped it (a type's name),
    or None when it returned."""
    try:
        implementation(*args)
    except KeyboardInterrupt:  # what Process._bootstrap would print a traceback of
        escaped.put("KeyboardInterrupt")
        return
    except BaseException as error:  # noqa: BLE001 - re-raised in the checking process
        try:
            escaped.put(pickle.dumps(error))
        except Exception:
            escaped.put(pickle.dumps(RuntimeError(f"{type(error).__name__}: {error}")))
        return
    escaped.put(None)


def _interrupted(implementation, arguments) -> dict:
    """The reader's loop in a worker process that has served one task and waits for the
    next, when SIGINT comes (Ctrl-C, a kernel's interrupt: the whole process group)."""
    context = multiprocessing.get_context("fork")
    index_queue, result_queue, escaped = context.Queue(), context.Queue(), context.Queue()
    index_queue.put((0, (0, 1)))
    worker = context.Process(target=_escaped, daemon=True, args=(
        implementation, escaped, arguments[0], index_queue, result_queue, context.Event(),
        *arguments[1:]))
    worker.start()
    try:
        served = result_queue.get(timeout=5.0)[0] == 0  # it is in its loop now
    except queue.Empty:
        served = False
    try:
        what = escaped.get(timeout=0.1) if not served else None  # it raised before serving?
    except queue.Empty:
        what = None
    if what is None:
        os.kill(worker.pid, signal.SIGINT)
        try:
            what = escaped.get(timeout=5.0)
        except queue.Empty:
            what = "(nothing: it was still running 5 s after SIGINT)"
    if isinstance(what, bytes):
        worker.join(1.0)
        raise pickle.loads(what)  # an error of its own, not the interrupt: the outcome
    worker.join(1.0)
    if worker.is_alive():
        worker.kill()
        worker.join()
    return {"served task 0": served,
            "what escaped the loop on SIGINT (a traceback on stderr)":
                "nothing: it returned quietly" if what is None else what}


STILL_THERE = ("worker_loop was still running {seconds:g} s after done_event was set, with no "
               "task left and no None coming: wait with index_queue.get(timeout=...), and leave "
               "when a wait ends with done_event set")


def _worker_case(dataset, tasks, hint, in_a_process=True, done=False, orphan=False,
                 interrupted=False) -> Case:
    where = "in a real worker process (fork), " if in_a_process else ""
    situation = ("; done_event is set before it starts" if done else
                 "; its parent dies right after starting it" if orphan else
                 "; after task 0 it gets SIGINT (Ctrl-C)" if interrupted else "")
    return Case({"dataset": dataset, "tasks": tuple(tasks), "in_a_process": in_a_process,
                 "done": done, "orphan": orphan, "interrupted": interrupted},
                description=f"{where}worker 0 of 1; dataset: {dataset}{situation}; "
                            f"index queue: {tasks_text(tasks)}", hint=hint)


def _errors_worker_cases() -> list[Case]:
    return [
        _worker_case(CorruptAt(6, 2), [(0, (0, 1)), (1, (2, 3)), (2, (4,)), None],
                     "an exception cannot travel with its traceback: send WorkerError(type("
                     "error), a message holding traceback.format_exc()) in place of the batch, "
                     "and go on", in_a_process=False),
        _worker_case(KeyedBy(3), [(0, (0, 1)), (1, (5,)), None],
                     "the type travels as it is (here KeyError), the traceback as text in the "
                     "message"),
    ]


def _watchful_worker_cases() -> list[Case]:
    return [
        _errors_worker_cases()[0],  # in a thread: what the loop returns is compared too
        _worker_case(CorruptAt(6, 2), [(0, (0, 1)), (1, (2, 3))],
                     "with done_event set, fetch nothing more: skip the tasks; and since no "
                     "None comes, wait with a timeout (index_queue.get(timeout=...)) and leave "
                     "when the wait ends with done_event set", done=True),
        _worker_case("4 samples, sample 0 being 1 MB of bytes", [],
                     "a worker whose main process has died must leave: when a wait times out, "
                     "compare os.getppid() with the parent's pid you noted at the start; and "
                     "tell the result queue not to wait for its feeder thread before leaving "
                     "(chapter 6), or the 1 MB nobody will read keeps the process from "
                     "exiting", orphan=True),
    ]


def _interrupted_worker_cases() -> list[Case]:
    return [
        _errors_worker_cases()[0],  # in a thread: what the loop returns is compared too
        _worker_case(CorruptAt(6, 2), [(0, (0, 1))],
                     "Ctrl-C sends SIGINT to the workers too: catch the KeyboardInterrupt "
                     "around the loop (except KeyboardInterrupt: pass) and return quietly, "
                     "since the main process reports it; one that escapes prints a traceback "
                     "per worker", interrupted=True),
    ]


class KeyedBy:
    """A dataset of rows that are dicts; row 5 is missing its "label": KeyError."""

    def __init__(self, n: int):
        self.n = n

    def __getitem__(self, index):
        row = {"x": index, **({"label": index % 2} if index < self.n else {})}
        return row["x"], row["label"]

    def __len__(self):
        return self.n

    def __repr__(self):
        return f"{self.n} rows that are dicts; asking for row 5 raises KeyError('label')"


def _use_error_worker(implementation, case: Case) -> dict:
    # dataset, [queues and done_event], auto_collation, collate_fn, drop_last, base_seed,
    # init_fn, worker_id, num_workers
    if case.inputs["orphan"]:  # a dataset of its own: its event is this run's
        return _parent_dies(implementation, (BigFirst(), True, list, False, 7, None, 0, 1))
    arguments = (case.inputs["dataset"], True, list, False, 7, None, 0, 1)
    if case.inputs["interrupted"]:
        return _interrupted(implementation, arguments)
    seen = run_worker(implementation, arguments, list(case.inputs["tasks"]),
                      case.inputs["in_a_process"], seconds=2.5,
                      done_after=0.0 if case.inputs["done"] else None,
                      late=STILL_THERE if case.inputs["done"] else LATE)
    if not case.inputs["in_a_process"]:
        seen["tasks left unread"] = "(not compared)"
    return seen


WORKER_LOOP = dict(run=_use_error_worker, forbidden=WORKER_PIECES + FINISHED_PIECES,
                   allowed=("Dataset", "IterableDataset", "Sampler", "get_worker_info"),
                   piece="worker.worker_loop",
                   expected_from="reference; milestone 10 compares with torch")
ITERATOR = dict(oracle=TorchIterator, run=use_iterator, piece="dataloader.MultiProcessIterator",
                forbidden=ITERATOR_PIECES + FINISHED_PIECES, expected_from="torch: its iterator")


def _errors_iterator_cases() -> list[Case]:
    return [
        iterator_case(("numbers", 8, None, 5), {"batch_size": 2, "num_workers": 2},
                      "a WorkerError in place of a batch: raise rebuild_exception(its exc_type, "
                      "its message) in that batch's turn", watch=("errors",)),
        iterator_case(("numbers", 8, None, 3, (), "KeyError"), {"batch_size": 2,
                                                               "num_workers": 2},
                      "the type comes back as it was: KeyError", watch=("errors",)),
    ]


def _watchful_iterator_cases() -> list[Case]:
    return [
        iterator_case(("numbers", 8, None, 0, (), "SIGKILL"), {"batch_size": 2,
                                                              "num_workers": 2},
                      "a worker killed: read through get_result(the queue you read, the "
                      "workers still active, the timeout), which raises RuntimeError within a "
                      "second or so", watch=("errors",)),
        iterator_case(("numbers", 8, None, 3, (), "sleep"), {"batch_size": 2, "num_workers": 2,
                                                            "timeout": 0.3},
                      "loader.timeout > 0: get_result raises RuntimeError ('timed out') when no "
                      "batch came within it; timeout=0 means wait as long as it takes",
                      watch=("errors",)),
    ]


def _guarded_iterator_cases() -> list[Case]:
    return [
        iterator_case(("numbers", 12), {"batch_size": 2, "num_workers": 2},
                      "after a break, the iterator goes away with workers still running: "
                      "__del__ shuts them down (shutdown_workers, once)", watch=("del",),
                      epochs=(2,)),
        iterator_case(("numbers", 8, None, 0, (), "SIGKILL"), {"batch_size": 2,
                                                              "num_workers": 2},
                      "after a worker's death, the iterator goes away: __del__ shuts the "
                      "others down", watch=("errors", "del")),
        iterator_case(("numbers", 6), {"batch_size": 2, "num_workers": 2},
                      "a whole epoch: the workers are shut down at its end, and __del__ later "
                      "does nothing more", watch=("len", "del")),
        _a_forked_copy(iterator_case(
            ("numbers", 12), {"batch_size": 2, "num_workers": 2},
            "only the owner shuts down: a process forked while the iterator is alive (a "
            "worker is one) holds a copy of it, and may free it; here the copy's __del__ "
            "stopped your workers. Note os.getpid() in __init__, and let only that process "
            "shut down", watch=("len", "forked copy", "errors"))),
    ]


def _a_forked_copy(case: Case) -> Case:
    case.description += (" (before the first next(), a process forked from this one frees "
                         "its copy of the iterator: its __del__ runs there)")
    return case


# The steps, in the chapter's order for each piece (NOTE [ A piece grown in steps ]): the
# worker loop's first, then the iterator's; each piece's steps in the order its pages ask them.

register(Exercise(
    reference=errors.worker_loop,
    name="worker_loop, errors",
    cases=_errors_worker_cases,
    hint=("catch what fetching raises and send WorkerError(type(error), a message holding "
          "traceback.format_exc()) in place of the batch; go on with the next task"),
    time_limit=6.0,
    rules=(
        Rule("an error travels as `WorkerError(type, message with the traceback)`, and the loop goes on",
             (1, 2)),
    ),
    goals=(1, 6),
    **WORKER_LOOP,
))

register(Exercise(
    reference=errors.MultiProcessIterator,
    name="MultiProcessIterator, errors rebuilt",
    cases=_errors_iterator_cases,
    hint="a WorkerError in place of a batch: raise rebuild_exception(its exc_type, its message)",
    time_limit=8.0,
    rules=(
        Rule("a `WorkerError` raised as its own type, its message holding the worker's traceback, in its turn",
             (1, 2)),
    ),
    goals=(1, 6),
    **ITERATOR,
))

register(Exercise(
    reference=watchdog.MultiProcessIterator,
    name="MultiProcessIterator, watchful",
    cases=_watchful_iterator_cases,
    hint=("read every result through get_result, with the workers still active and the "
          "loader's timeout (no limit for 0)"),
    time_limit=8.0,
    rules=(
        Rule("a killed worker: `RuntimeError` within seconds (`get_result`)",
             (1,)),
        Rule("`loader.timeout`: `RuntimeError` saying \"timed out\"",
             (2,)),
    ),
    goals=(2, 3, 6),
    **ITERATOR,
))

register(Exercise(
    reference=watchdog.worker_loop,
    name="worker_loop, watchful",
    cases=_watchful_worker_cases,
    hint=("note os.getppid() at the start; wait for tasks with a timeout, and when a wait "
          "ends empty leave if done_event is set or the parent changed; skip tasks once "
          "done_event is set; an orphan gives up on its result queue"),
    time_limit=9.0,
    rules=(
        Rule("a `None` still ends the loop; with `done_event` set: tasks skipped, and the loop "
             "leaves after a wait without a `None`",
             (1, 2)),
        Rule("a dead parent noticed when a wait times out; `cancel_join_thread` before leaving",
             (3,)),
    ),
    goals=(3, 6),
    **WORKER_LOOP,
))

register(Exercise(
    reference=solutions.worker_loop,
    name="worker_loop, interrupted",
    cases=_interrupted_worker_cases,
    hint="wrap the whole loop in try: ... except KeyboardInterrupt: pass",
    time_limit=6.0,
    rules=(
        Rule("the loop as before: errors sent with their traceback, a `None` ends it",
             (1,)),
        Rule("Ctrl-C (SIGINT): the `KeyboardInterrupt` caught, the loop left quietly",
             (2,)),
    ),
    goals=(7,),
    **WORKER_LOOP,
))

register(Exercise(
    reference=solutions.MultiProcessIterator,
    name="MultiProcessIterator, guarded",
    cases=_guarded_iterator_cases,
    hint=("shut down with shutdown_workers, once, at the end of the epoch and in __del__, and "
          "only in the process that started the workers"),
    time_limit=9.0,
    rules=(
        Rule("`__del__` shuts the workers down after a `break` or an error",
             (1, 2)),
        Rule("the end of an epoch: shut down once",
             (3,)),
        Rule("only the owner: a copy freed in a forked process shuts nothing down",
             (4,)),
    ),
    goals=(9,),
    **ITERATOR,
))


# ---------------------------------------------------------------------------------------
# The debugging lab: three bugs to find with the trace tools, and fix

# The finished iterators count as delegation; the package's worker loop, which the lab's
# iterator is given, does not.
LAB_PIECES = tuple(name for name in ITERATOR_PIECES if not name.endswith("_worker_loop"))


def _lab_cases() -> list[Case]:
    return [
        iterator_case(("numbers", 8), {"batch_size": 2, "num_workers": 2},
                      "a whole epoch, each batch in its turn (one that comes early waits for "
                      "its turn), and an end: at its end every worker, busy or idle, is told "
                      "to leave, and only then joined; a worker never told to leave waits for "
                      "work, and a join() waits for it forever", watch=("len",)),
        iterator_case(("numbers", 8, 2), {"batch_size": 2, "num_workers": 2},
                      "sample 2 is slow, so batch 2 arrives before batch 1: a batch that comes "
                      "early waits for its turn; hand out the batch whose turn it is, not just "
                      "any batch that waits", watch=()),
        iterator_case(("numbers", 12), {"batch_size": 2, "num_workers": 2},
                      "after a break the iterator is dropped while its workers still run: "
                      "a __del__ that shuts them down leaves none behind", watch=("del",),
                      epochs=(2,)),
    ]


register(Exercise(
    reference=solutions.RepairedIterator,
    cases=_lab_cases,
    run=use_iterator,
    oracle=TorchIterator,
    hint=("trace the buggy iterator: which worker never exits, which batch is yielded before "
          "its turn, which workers outlive a break? Override the methods at fault"),
    forbidden=LAB_PIECES + FINISHED_PIECES,
    time_limit=8.0,
    expected_from="torch: its iterator",
    rules=(
        Rule("the epoch ends: every worker is told to leave, and leaves (no stuck worker)",
             (1,)),
        Rule("the batches in the sampler's order: an early batch waits for its turn",
             (1, 2, 3)),
        Rule("after a `break`, no worker process is left",
             (3,)),
    ),
    goals=(11,),
))


# ---------------------------------------------------------------------------------------
# Shared memory


def _memory_cases() -> list[Case]:
    rows = [
        ((3, 224, 224), 4, 64, 2, 2, 1, "images as float32: a batch is 64 × 3 × 224 × 224 × 4 "
                                        "bytes; 2 workers × 2 batches ahead, plus 1 held"),
        ((3, 224, 224), 4, 64, 8, 2, 1, "8 workers each keep prefetch_factor batches ready"),
        ((16,), 4, 8, 2, 2, 1, "the batches measured in the chapter: 2 × 2 + 1 = 5 batches"),
        ((1, 28, 28), 1, 256, 4, 4, 1, "uint8 pixels: 1 byte per element"),
        ((3, 224, 224), 4, 64, 2, 2, 3, "the training loop keeps the last 3 batches alive "
                                        "(say, for logging): each stays in shared memory"),
        ((3, 224, 224), 4, 64, 0, None, 1, "num_workers=0: batches are made in the main "
                                           "process, so nothing goes through shared memory"),
        ((), 8, 1000, 3, 1, 1, "a sample of shape () is one element: float64, 8 bytes"),
    ]
    return [Case({"sample_shape": shape, "element_size": size, "batch_size": batch,
                  "num_workers": workers, "prefetch_factor": ahead, "batches_held": held},
                 hint=hint)
            for shape, size, batch, workers, ahead, held, hint in rows]


register(Exercise(
    reference=solutions.shared_memory_needed,
    cases=_memory_cases,
    hint=("a batch is batch_size × (product of sample_shape) × element_size bytes; the "
          "pipeline holds num_workers × prefetch_factor of them, plus the batches_held"),
    time_limit=2.0,
    expected_from="reference; the chapter measures it",
    rules=(
        Rule("`(workers × prefetch_factor + held) × batch bytes`",
             (1, 2, 3, 4, 5, 7)),
        Rule("no workers: 0",
             (6,)),
    ),
    goals=(4,),
))

# ---------------------------------------------------------------------------------------
# Which failure is it?

_CODE_LINE = '  File "/home/me/project/data.py", line {line}, in {function}\n    {code}\n'


def _worker_traceback(function: str, code: str, last: str, line: int) -> str:
    return ("Traceback (most recent call last):\n"
            '  File ".../torch/utils/data/_utils/worker.py", line 374, in _worker_loop\n'
            "    data = fetcher.fetch(index)\n"
            + _CODE_LINE.format(line=line, function=function, code=code) + last + "\n")


# (exception type, the worker's traceback): what readers' datasets raise, traps included
_WORKER_ERRORS = [
    ("ValueError", _worker_traceback("__getitem__", "raise ValueError(f'bad label {y}')",
                                     "ValueError: bad label -1", 52)),
    ("TimeoutError", _worker_traceback("__getitem__", "data = client.get(url, timeout=5)",
                                       "TimeoutError: [Errno 110] Connection timed out", 33)),
    ("OSError", _worker_traceback("__getitem__", "image = Image.open(path)",
                                  "OSError: [Errno 24] Too many open files: "
                                  "'/data/img_01234.png'", 27)),
    ("RuntimeError", _worker_traceback("__getitem__", "return image.cuda()",
                                       "RuntimeError: Cannot re-initialize CUDA in forked "
                                       "subprocess. To use CUDA with multiprocessing, you "
                                       "must use the 'spawn' start method", 61)),
]


def _substitute(template: str, values: dict) -> str:
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template


def _classify_cases() -> list[Case]:
    rng = random.Random(10)
    cases = []

    def add(message: str, hint: str):
        last = message.strip().splitlines()[-1]
        cases.append(Case({"message": message}, hint=hint,
                          description=f"message = {message.splitlines()[0][:90]!r} … "
                                      f"ending in {last[:90]!r}"))

    for entry in ch10_messages.MESSAGES:
        if entry.key in ("exception", "rebuilt as RuntimeError", "CUDA in a forked worker"):
            continue  # below, with real tracebacks inside
        meaning = ch10_messages.CATEGORIES[entry.category][0]
        for wording in (entry.torch, entry.ours):
            if wording:
                add(_substitute(wording, {**_values(rng), "type": "ValueError"}),
                    f"this is the message for: {meaning}; expected {entry.category!r} (check "
                    f"the categories in the statement's order: the first with a clue wins)")
    exception = ch10_messages.BY_KEY["exception"]
    rebuilt = ch10_messages.BY_KEY["rebuilt as RuntimeError"]
    for exc_type, traceback in _WORKER_ERRORS:
        for wording in (exception.torch, exception.ours):
            message = _substitute(wording, {**_values(rng), "type": exc_type,
                                            "traceback": traceback})
            if "CUDA" in traceback:
                add(message, "an exception in a worker, but the one whose fix is specific: "
                             "CUDA used in a forked worker. Check for it first")
            else:
                add(message, "an exception raised by the dataset in a worker: whatever its "
                             "own traceback says, it is 'exception' (check for the wrapper "
                             "wording before the other clues)")
    add(_substitute(rebuilt.torch, {**_values(rng), "type": "JSONDecodeError",
                                    "traceback": _worker_traceback(
                                        "__getitem__", "return json.loads(text)",
                                        "json.decoder.JSONDecodeError: Expecting value: line 1 "
                                        "column 1 (char 0)", 18)}),
        "a RuntimeError, but it says 'Caught JSONDecodeError in DataLoader worker process': "
        "an exception raised in a worker, rebuilt as RuntimeError")
    add("RuntimeError: DataLoader worker (pid 31337) is killed by signal: Aborted. "
        "\n\nThe above exception was the direct cause of the following exception:\n\n"
        "RuntimeError: DataLoader worker (pid(s) 31337) exited unexpectedly",
        "killed by a signal that is neither SIGKILL nor SIGBUS (here SIGABRT, an abort in "
        "native code): 'crashed'")
    add("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; "
        "79.1 GiB total capacity)",
        "the GPU ran out of memory in the training loop: not a loader failure, so 'unknown'")
    # two categories' clues in one message: the statement's order decides
    add("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. It is "
        "possible that dataloader's workers are out of shared memory.\n\nThe above exception "
        "was the direct cause of the following exception:\n\nRuntimeError: DataLoader worker "
        "(pid(s) 4242) exited unexpectedly",
        "a bus error, then 'exited unexpectedly': both clues are there, and 'shared memory' "
        "comes before 'exited' in the statement's order")
    add("RuntimeError: DataLoader worker (pid 5151) is killed by signal: Killed.\n\nThe above "
        "exception was the direct cause of the following exception:\n\nRuntimeError: "
        "DataLoader timed out after 30 seconds",
        "SIGKILL and 'timed out' in one chain: 'timeout' comes before 'killed' in the "
        "statement's order")
    return cases


def _values(rng: random.Random) -> dict:
    return {"pid": str(rng.randrange(1000, 60000)), "worker": str(rng.randrange(4)),
            "code": str(rng.choice([1, 2, 3])), "seconds": rng.choice(["5", "30", "120.0"]),
            "traceback": "", "rest": " …", "cause": ""}


register(Exercise(
    reference=solutions.classify_failure,
    cases=_classify_cases,
    hint="look for the words the real messages use; check the categories in the order given",
    time_limit=2.0,
    expected_from="reference; the chapter checks it on every captured message",
    rules=(
        # the concept: each failure told by its clue, in torch's wording
        Rule("each failure told by its clue, in torch's wording",
             (1, 3, 5, 7, 8, 10, 11, 13, 15)),
        Rule("a worker's exception is \"exception\" whatever its traceback says; CUDA's fork error before it",
             (16, 18, 20, 22, 24)),
        Rule("another signal is \"crashed\"; other errors \"unknown\"",
             (5, 25, 26)),
        # torch's detail, and the package's: the exact wordings, and which clue wins
        Rule("the package's wordings too, clues matched exactly",
             (2, 4, 6, 9, 12, 14, 17, 19, 21, 23), parity="the package's wordings"),
        Rule("two clues in one message: the table's order decides",
             (27, 28), parity="the order of the clues"),
    ),
    goals=(2, 5),
))


# ---------------------------------------------------------------------------------------
# Check yourself: the first page (when things go wrong)


class JsonLines:
    """A map-style dataset of JSON records: sample i is ``json.loads`` of record i."""

    def __init__(self, records: list[bytes]):
        self.records = records

    def __len__(self):
        return len(self.records)

    def __getitem__(self, index):
        return json.loads(self.records[index])


def _type_of_a_corrupt_record() -> str:
    from torch.utils.data import DataLoader

    records = [b'{"label": 1}', b'{"label": ']
    loader = DataLoader(JsonLines(records), batch_size=None, num_workers=1,
                        multiprocessing_context="fork")
    try:
        list(loader)
    except Exception as error:
        return type(error).__name__
    return "nothing raised"


register(Prediction(
    "ch10-rebuilt-type", measure=_type_of_a_corrupt_record,
    prompt_text='a type name, as a string (e.g. "ValueError")',
    why="the main process rebuilds the worker's exception from its type and the message "
        "alone; json.JSONDecodeError wants the message, the document and a position, so "
        "torch raises a RuntimeError with the same message instead",
    mistakes={"JSONDecodeError": "the loader rebuilds the type from one argument, the "
                                 "message; JSONDecodeError's constructor wants three, so "
                                 "it cannot be rebuilt",
              "ValueError": "JSONDecodeError is a ValueError, but the loader never falls "
                            "back to a base class: what it cannot rebuild becomes a "
                            "RuntimeError"},
    goals=(1,),
))

register(Choice(
    "ch10-orphan-worker", answer="c", why={
        "a": "SIGKILL runs no handler, no finally, no exit function: the main process cannot "
             "tell anyone it is dying",
        "b": "nothing is sent to the workers: they find out by looking, and only when they "
             "are not busy",
        "d": "workers are daemonic, but that helps only when the main process exits "
             "normally; after SIGKILL the workers are on their own",
    }, goals=(3,)))

register(Choice(
    "ch10-sharing-strategy", answer="b", why={
        "a": "the limit is on open file descriptors, per process, not on the size of /dev/shm",
        "c": "file_system is the strategy that leaves files in /dev/shm after a crash; "
             "file_descriptor removes each file's name at once",
        "d": "more workers make it worse, not better: the descriptors are held by the process "
             "that keeps the tensors, the main process",
    }, goals=(4,)))

register(Choice(
    "ch10-cuda-fork-why", answer="a", why={
        "b": "spawned workers may use CUDA (each with a context of its own); the error is "
             "about a copy made by fork",
        "c": "a forked worker has no GPU memory of its own to run out of; it fails at its "
             "first CUDA call, whatever the memory",
        "d": "before the main process has used CUDA, a forked worker can start CUDA itself; "
             "the error needs CUDA started in the parent first",
    }, goals=(5,)))


# ---------------------------------------------------------------------------------------
# Check yourself: the second page (shutdown)

register(Choice(
    "ch10-ctrl-c-workers", answer="b", why={
        "a": "Ctrl-C signals the whole foreground process group, and the workers are in it",
        "c": "the worker loop catches its KeyboardInterrupt and leaves quietly: the main "
             "process reports the interrupt, once",
        "d": "the KeyboardInterrupt is raised in the main process at once, wherever it is, "
             "and goes up through the for loop",
    }, goals=(7,)))

register(Choice(
    "ch10-after-interrupt", answer="c", why={
        "a": "the interrupt reached the workers too, and they exited: nothing is left to "
             "resume from",
        "b": "with persistent workers the loader keeps its iterator, and asks the old "
             "workers for the new epoch; it does not start new ones",
        "d": "the kernel catches the KeyboardInterrupt and lives on; only the workers are "
             "gone",
    }, goals=(7,)))

register(Choice(
    "ch10-tasks-still-queued", answer="b", why={
        "a": "a queue is first in, first out: the None goes to the back, behind the tasks "
             "already sent",
        "c": "the worker reads every task before its None, whether anybody wants the "
             "batches or not",
        "d": "nothing is lost: the trouble is the opposite, work done for nobody",
    }, goals=(8,)))

register(Choice(
    "ch10-package-drain", answer="c", why={
        "a": "the training loop has stopped asking: the drained batches are dropped",
        "b": "torch's main process never reads the result queue at shutdown; its workers "
             "abandon what they could not send",
        "d": "the drain counts nothing: it reads until every worker has exited, or the time "
             "is up",
    }, goals=(8, 10)))
