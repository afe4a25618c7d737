"""A time limit and a clean-up for the workbooks' try-it cells, the cells that run the
learner's own multi-process code in the notebook's kernel (a check runs it in a process of
its own; a try-it cell cannot: it prints as it goes, and later cells use what it made)::

    from minidataloader_course import try_it

    with try_it(30, "your loader"):
        print([batch.tolist() for batch in myloader.DataLoader(data, num_workers=2)])

- past the limit, the block is stopped and :class:`TryItTimeout` says where it was (the
  line of the learner's code, what it waited on) and what to look at, instead of the kernel
  freezing;
- every process the block started that still runs at its end is stopped (SIGTERM, then
  SIGKILL), whether the block hung, failed or ended well: a worker left waiting never
  outlives its cell;
- the kernel stays usable: fix the code, run the cell again.

NOTE [ How a hung cell is stopped ]
The kernel runs a cell in its main thread, so a SIGALRM timer (``setitimer``) interrupts it
wherever it waits: a queue's ``get()`` without a timeout (a read on a pipe, a semaphore),
``join()``, ``time.sleep``, a lock. The handler first stops the processes the block started,
then raises :class:`_TimeUp` (a BaseException, so the learner's ``except Exception`` does
not swallow it). Stopping the workers first matters: the unwinding runs the learner's
clean-up (a ``__del__`` that joins its workers without a timeout), which then returns at
once instead of hanging in its turn. The timer stays armed with a short interval until the
block has ended, so clean-up code that hangs anyway is interrupted again. Forked workers do
not inherit the timer.

While it stops processes, SIGCHLD has no handler (SIG_DFL; not SIG_IGN, with which the
system would reap the children itself and ``join()`` could no longer tell that they ended):
torch's loader watches its workers with a SIGCHLD handler that raises "DataLoader worker ...
is killed by signal" in the main thread, which would replace the message that says what
hung. Workers that are ``multiprocessing`` processes (torch's, the package's, the
learner's) are reaped with their own ``join``, so their ``is_alive()`` stays true.

Not stopped: multiprocessing's own servers (the resource tracker that spawn starts, the
forkserver), which a block may start on first use and the kernel keeps using afterwards.
A block that ends well first lets the garbage collector free what it left (a loader and its
iterator that hold each other), still under the time limit, so that such a loader's workers
end on their own; only what still runs then is stopped, with a note on stderr.

Without SIGALRM (Windows) a watchdog thread interrupts the main thread instead
(``_thread.interrupt_main``: a KeyboardInterrupt). A block run outside the main thread gets
the clean-up only: no interruption reaches it there.
"""

from __future__ import annotations

import _thread
import gc
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback

from minidataloader_course.shared.processes import children

__all__ = ["try_it", "TryItTimeout"]

_STOP_WAIT = 2.0  # seconds a process gets after SIGTERM, before SIGKILL
_EXIT_GRACE = 0.5  # seconds a worker gets to end on its own after a block that ended well
_AGAIN = 2.0  # seconds between interruptions once the limit is past (clean-up that hangs)

# What the innermost frame of the standard library that the block was stopped in waited on:
# (file, function or None for any), what it means.
_WAITS = (
    ("queues.py", "get", "a read from a multiprocessing queue"),
    ("connection.py", None, "a read from a queue or a pipe"),
    ("selectors.py", None, "a wait for a queue or a pipe to have something to read (a loader "
                           "waiting for its workers' batches)"),
    ("queue.py", "get", "a read from a queue"),
    ("popen_fork.py", None, "a join() on a process that does not end"),
    ("process.py", "join", "a join() on a process that does not end"),
    ("synchronize.py", None, "a multiprocessing lock, semaphore or event"),
    ("threading.py", None, "a lock, an event or a thread's join()"),
)


class TryItTimeout(TimeoutError):
    """A try-it block ran past its time limit; the message says where it was stopped."""


class _TimeUp(BaseException):
    """Raised into the block by the timer (see NOTE [ How a hung cell is stopped ])."""


def _helpers() -> set[int]:
    """multiprocessing's own servers (the resource tracker, the forkserver): started on first
    use, perhaps inside a block, and meant to serve the kernel for the rest of its life."""
    from multiprocessing import forkserver, resource_tracker

    pids = {getattr(resource_tracker._resource_tracker, "_pid", None),
            getattr(forkserver._forkserver, "_forkserver_pid", None)}
    return {pid for pid in pids if pid}


def _running_children() -> set[int]:
    found = {process.pid for process in multiprocessing.active_children() if process.pid}
    if os.path.isdir("/proc"):
        for attempt in range(5):
            try:
                found.update(children())
                break
            except OSError:
                # A queue freed a moment ago may still have its feeder thread close a file
                # descriptor that the directory listing has just been given (EBADF): look again
                if attempt == 4:
                    raise
                time.sleep(0.01)
    return found - _helpers()


def _alive(pid: int, processes: dict) -> bool:
    process = processes.get(pid)
    if process is not None:
        return process.is_alive()
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return not done


def stop_processes(pids, wait: float = _STOP_WAIT) -> list[int]:
    """Stop ``pids`` (children of this process): SIGTERM, up to ``wait`` seconds, SIGKILL;
    reap them. Returns those that needed SIGKILL."""
    pids = sorted(set(pids))
    if not pids:
        return []
    processes = {p.pid: p for p in multiprocessing.active_children() if p.pid in pids}
    # SIG_DFL, not SIG_IGN: an ignored SIGCHLD makes the kernel reap children by itself,
    # and then join() can no longer tell that they ended
    previous = None
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGCHLD"):
        previous = signal.getsignal(signal.SIGCHLD)  # None: a handler set from C; kept
        if previous is not None:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    killed = []
    try:
        for signum in (signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)):
            left = [pid for pid in pids if _alive(pid, processes)]
            if not left:
                break
            if signum != signal.SIGTERM:
                killed = left
            for pid in left:
                try:
                    os.kill(pid, signum)
                except (ProcessLookupError, PermissionError):
                    pass
            end = time.monotonic() + wait
            while time.monotonic() < end and any(_alive(pid, processes) for pid in left):
                time.sleep(0.01)
        for pid in pids:
            process = processes.get(pid)
            if process is not None:
                process.join(timeout=0.1)
    finally:
        if previous is not None:
            signal.signal(signal.SIGCHLD, previous)
    return killed


def _library_folders() -> tuple[str, ...]:
    # (the checker's sandbox has the same test; importing it from here would make a cycle of
    # folders: the checker imports shared modules)
    import sysconfig

    paths = sysconfig.get_paths()
    folders = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the course
    folders.add(here)
    for name in ("torch", "minidataloader"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            folders.add(os.path.dirname(module.__file__))
    return tuple(os.path.realpath(folder) + os.sep for folder in folders)


def _is_learners(filename: str) -> bool:
    """Code of the learner's: a notebook cell, their package, a script; not the standard
    library, an installed package, torch, minidataloader or the course."""
    if filename.startswith("<frozen"):
        return False
    return not os.path.realpath(filename).startswith(_library_folders())


def _where(error: BaseException) -> str:
    """Where the block was stopped: the innermost line of code that is neither the standard
    library nor an installed package (the learner's), and what it waited on there."""
    frames = traceback.extract_tb(error.__traceback__)
    frames = [f for f in frames if os.path.basename(f.filename) != "try_it.py"]
    if not frames:
        return ""
    lines = []
    readers = [f for f in frames if _is_learners(f.filename)]
    if readers:
        frame = readers[-1]
        name = os.path.basename(frame.filename)
        if "ipykernel_" in frame.filename or name.startswith("<ipython"):
            name = "this cell"
        code = f": {frame.line.strip()}" if frame.line else ""
        lines.append(f"It was stopped in {name}, line {frame.lineno}, in {frame.name}{code}")
    innermost = frames[-1]
    base = os.path.basename(innermost.filename)
    meaning = next((what for file, function, what in _WAITS
                    if base == file and function in (None, innermost.name)), None)
    if innermost is not (readers[-1] if readers else None):
        lines.append(f"It was waiting in {base} ({innermost.name})"
                     + (f": {meaning}." if meaning else "."))
    return "\n".join(lines)


class try_it:  # noqa: N801 - used as a function: `with try_it(30):`
    """``with try_it(seconds, what):`` runs the block with a time limit, and stops every
    process it started that still runs at its end. Past the limit it raises
    :class:`TryItTimeout`, which says where the block was and what to look at. ``what``
    names the code tried in that message ("your loader")."""

    def __init__(self, seconds: float = 30.0, what: str = "your code"):
        if seconds <= 0:
            raise ValueError(f"seconds must be positive, got {seconds}")
        self.seconds, self.what = float(seconds), what
        self.expired = False  # the limit passed (the block may have swallowed the interruption)
        self.stopped: list[int] = []  # the processes it had to stop
        self._before: set[int] = set()

    # -- the timer --------------------------------------------------------------------

    def _expire(self):
        if not self.expired:
            self.expired = True
            # (stopping takes up to twice _STOP_WAIT: not to be interrupted by the timer)
            signal.setitimer(signal.ITIMER_REAL, 0)
            try:
                self._stop_new()
            finally:
                signal.setitimer(signal.ITIMER_REAL, _AGAIN, _AGAIN)
        raise _TimeUp(f"more than {self.seconds:g} s")

    def _on_alarm(self, signum, frame):
        self._expire()

    def _watchdog(self):
        deadline = self.seconds
        while not self._done.wait(deadline):
            with self._lock:  # never an interruption once the block has ended
                if self._done.is_set():
                    return
                self.expired = True
                _thread.interrupt_main()
            deadline = _AGAIN

    def __enter__(self):
        self._before = _running_children()
        self._start = time.monotonic()
        self._done, self._lock = threading.Event(), threading.Lock()
        in_main = threading.current_thread() is threading.main_thread()
        # elsewhere than the main thread no interruption reaches the block: only the clean-up
        self._mode = None if not in_main else "alarm" if hasattr(signal, "SIGALRM") else "watchdog"
        if self._mode == "alarm":
            self._previous = signal.signal(signal.SIGALRM, self._on_alarm)
            self._previous_timer = signal.setitimer(signal.ITIMER_REAL, self.seconds, _AGAIN)
        elif self._mode == "watchdog":
            threading.Thread(target=self._watchdog, daemon=True, name="try_it").start()
        return self

    def _disarm(self):
        with self._lock:
            self._done.set()
        if self._mode == "alarm":
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL if self._previous is None
                          else self._previous)
            delay, interval = self._previous_timer
            if delay:  # a timer of the caller's (a time limit on every cell): give it back
                left = delay - (time.monotonic() - self._start)
                signal.setitimer(signal.ITIMER_REAL, max(left, 0.001), interval)

    # -- the clean-up -----------------------------------------------------------------

    def _stop_new(self, grace: float = 0.0) -> None:
        new = _running_children() - self._before
        if new and grace:
            end = time.monotonic() + grace
            while new and time.monotonic() < end:
                time.sleep(0.02)
                new = _running_children() - self._before
        if new:
            self.stopped = sorted(set(self.stopped) | new)
            stop_processes(new)

    def __exit__(self, kind, error, tb):
        __tracebackhide__ = True  # IPython: the learner's frames, not this one
        if error is None and not self.expired:
            # A loader caught in a reference cycle (a loader and its iterator that hold each
            # other) stops its workers when the garbage collector frees it: let it do so now,
            # still under the time limit (its clean-up might hang), rather than stop them.
            try:
                gc.collect()
            except _TimeUp:
                pass
        try:
            self._disarm()
        except (_TimeUp, KeyboardInterrupt):  # the timer or watchdog fired as the block ended
            if not self.expired:
                raise
        timed_out = self.expired
        self._stop_new(grace=0.0 if (timed_out or error is not None) else _EXIT_GRACE)
        if not timed_out:
            if error is None and self.stopped:
                print(f"try_it: {len(self.stopped)} process(es) started in this block still "
                      f"ran at its end and were stopped (pids {self.stopped}): workers that "
                      f"outlive their loader leak (chapter 10 stops them)", file=sys.stderr)
            return False  # the block's own error, if any, goes on as it is
        raise TryItTimeout(self._message(error)) from None

    def _message(self, error) -> str:
        lines = [f"{self.what} ran for more than {self.seconds:g} s and was stopped: something "
                 f"hangs."]
        where = _where(error) if error is not None else ""
        if where:
            lines.append(where)
        lines.append("What to look at: a worker that never answers (it died, is stuck in "
                     "__getitem__, or waits for a task that was never sent)? A queue read "
                     "without a timeout? A join() on a worker that was never told to stop?")
        if self.stopped:
            many = len(self.stopped) > 1
            lines.append(f"The {len(self.stopped)} process{'es' if many else ''} it started "
                         f"{'were' if many else 'was'} stopped. Fix the code and run the cell "
                         f"again.")
        else:
            lines.append("Fix the code and run the cell again.")
        return "\n".join(lines)
