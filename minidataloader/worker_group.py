"""The main process's side of the worker processes: the group a multi-process iterator
starts (workers, their queues, the pin-memory thread), how it is stopped, and what the main
process says when a worker dies or when it runs out of file descriptors.

torch keeps all of this inside its iterator (and ``_utils/signal_handling.py``); here it
has a module of its own, so that ``dataloader.py`` holds the loader and its iterators. The
iterator (``_MultiProcessingDataLoaderIter``) decides what the workers do; the group only
owns them:

    iterator --starts--> _WorkerGroup: workers[w], index_queues[w], result_queue,
                                       done_event, pin_thread, pin_done_event
             --stops---> _WorkerGroup.shutdown()   (end of epoch, iterator freed, exit)
"""

from __future__ import annotations

import atexit
import ctypes
import errno
import multiprocessing.connection
import os
import pickle
import queue
import signal
import time
import warnings

from .worker import _STATUS_CHECK_INTERVAL

# How long shutdown waits for the workers to finish their current batch and exit before it
# terminates them.
_SHUTDOWN_TIMEOUT = 5.0

_DEATH_HINTS = {
    "SIGKILL": "; often the out-of-memory killer (see `dmesg`): fewer workers or smaller batches",
    "SIGBUS": "; often shared memory (/dev/shm) too small, as in Docker's 64 MB default: "
              "start the container with --shm-size=2g or --ipc=host",
    "SIGSEGV": "; a crash in native code the dataset called",
}


def _describe_death(worker) -> str:
    """How a worker ended, and what usually causes that, for the error message."""
    code = worker.exitcode
    if code < 0:
        name = signal.Signals(-code).name
        return f"was killed by {name}{_DEATH_HINTS.get(name, '')}"
    # Ctrl-C, and Jupyter's "interrupt", signal the whole process group: workers leave (code 0)
    interrupted = "interrupted (Ctrl-C or a Jupyter kernel's interrupt) or " if code == 0 else ""
    return (f"exited with code {code}: {interrupted}sys.exit() or os._exit() in the dataset, "
            "or an uncaught error whose traceback it printed to stderr. With spawn or forkserver, "
            "a worker dies this way when it cannot import the dataset's class (one defined in a "
            "notebook or `python -c`: move the class to a .py module), or when the script that "
            "starts the loader lacks an `if __name__ == \"__main__\":` guard")


def _raise_if_out_of_file_descriptors() -> None:
    """Raise RuntimeError, saying what to do, if this process is at its open-files limit
    (a few files to spare do not count): then no batch can be received."""
    opened = []
    try:
        while len(opened) < 10:
            opened.append(os.open(os.devnull, os.O_RDONLY))
    except OSError as error:
        if error.errno == errno.EMFILE:
            raise RuntimeError(
                "Too many open files: the main process is at its open-files limit, so it can "
                "no longer receive batches (with the default 'file_descriptor' sharing strategy "
                "each tensor received holds a file descriptor). Raise the limit (`ulimit -n` "
                "in the shell), keep fewer batches alive, or call torch.multiprocessing."
                "set_sharing_strategy('file_system') at the start of the program.") from None
    finally:
        for fd in opened:
            os.close(fd)


class _DoneFlag(ctypes.c_bool):
    """The group's ``done_event``, a bool in shared memory: the main process sets its
    ``value``, the workers ask ``is_set()``. Not a ``multiprocessing.Event``, whose
    ``is_set()`` takes a lock shared by every process: a worker killed while it holds it
    (SIGKILL, the out-of-memory killer) leaves it taken for good, and the shutdown's
    ``set()`` then waits forever (torch's does). Reading or writing a bool takes no lock."""

    def is_set(self) -> bool:
        return self.value


class _WorkerGroup:
    """The worker processes of one iterator with their queues, and the pin-memory thread:
    what a multi-process iterator starts, and what ``shutdown()`` stops.

    NOTE [ Who stops the workers ]
    The workers must stop when their iterator goes away, and an iterator often goes away
    as garbage: caught in a reference cycle (an exception's traceback holds the frame that
    holds it), it is freed whenever the garbage collector runs. The collector first
    finalizes whatever else is in the cycle, and a queue finalized that way stops its
    feeder thread: a None put on it afterwards never arrives, and the workers wait for it.
    (torch's __del__ runs into this, and then waits 5 s per worker before terminating it.)
    So these resources live here, in a group that is never garbage: ``_live_groups`` holds
    it until it is shut down, and a ``weakref.finalize`` of the iterator shuts it down when
    the iterator dies. ``shutdown()`` also runs at the end of an epoch (workers that do not
    persist), and at interpreter exit, from ``_shutdown_at_exit``, while everything still
    works. It runs once.
    """

    def __init__(self, context) -> None:
        _live_groups.add(self)
        self.owner_pid = os.getpid()
        self.context = context
        self.result_queue = context.Queue()  # see NOTE [ Messages on the result queue ]
        self.done_event = context.RawValue(_DoneFlag)  # set: skip remaining tasks
        self.index_queues, self.workers = [], []  # only started workers: those we may join
        self.pin_thread = self.pin_done_event = None

    def start(self, worker, index_queue) -> None:
        """Start the worker process ``worker`` and add it to the group, with its index
        queue. With spawn or forkserver, starting pickles the worker's arguments."""
        try:
            worker.start()
        except (TypeError, AttributeError, pickle.PicklingError) as error:
            # As torch does: a warning (a bare pickling error reads like a bug in the
            # loader), then the error; both say what to change.
            message = (
                "A DataLoader worker could not be started. With the "
                f"{self.context.get_start_method()!r} start method each worker gets a pickled "
                "copy of the dataset, collate_fn and worker_init_fn, and pickle sends functions "
                "and classes by name: a lambda, or a function or class defined in a function or "
                "a notebook, cannot be sent. Define them at the top level of a .py module and "
                "import them, or use multiprocessing_context='fork' (Linux, macOS).")
            warnings.warn(message, stacklevel=5)  # the line that called iter(loader)
            raise type(error)(f"{message} Pickling said: {error}") from error
        self.index_queues.append(index_queue)
        self.workers.append(worker)

    def wait_for_an_exit(self, in_use: list[bool]) -> None:
        """Wait a moment for one of the workers still ``in_use`` to end, and reap it."""
        active = {worker.sentinel: worker for worker, used in zip(self.workers, in_use) if used}
        for ended in multiprocessing.connection.wait(active, _STATUS_CHECK_INTERVAL):
            active[ended].join(timeout=_STATUS_CHECK_INTERVAL)

    def shutdown(self) -> None:
        """Stop the pin thread, then the workers; see NOTE [ The pipeline and its shutdown ]."""
        # A forked worker inherits a copy of every iterator alive in its parent, and its
        # garbage collector may finalize one: only the owner may stop its workers.
        if os.getpid() != self.owner_pid or self not in _live_groups:
            return
        _live_groups.discard(self)
        try:
            if self.pin_thread is not None:
                self.pin_done_event.set()
                self.result_queue.put((None, None))  # wake it if it waits
                self.pin_thread.join(timeout=_SHUTDOWN_TIMEOUT)
            self.done_event.value = True
            for index_queue in self.index_queues:
                index_queue.put(None)  # a retired worker may get a second one: harmless
            self._drain(deadline=time.monotonic() + _SHUTDOWN_TIMEOUT)
            self.result_queue.cancel_join_thread()  # the pin thread's wake-up call, unread
            for queue_ in (self.result_queue, *self.index_queues):
                queue_.close()
        finally:
            for worker in self.workers:
                for end in (worker.terminate, worker.kill):  # stuck in a sample, or deaf
                    if worker.is_alive():
                        end()
                        worker.join(timeout=_STATUS_CHECK_INTERVAL)

    def _drain(self, deadline: float) -> None:
        """Receive and drop what the workers still send, until they have all exited.

        A batch sent must be received: its tensors stay in shared memory until then (under
        the 'file_system' strategy, as files in /dev/shm that outlive the workers). And a
        worker sends everything it has queued before it exits, so it needs a reader."""
        while time.monotonic() < deadline:
            alive = [worker for worker in self.workers if worker.is_alive()]
            if not alive and any(worker.exitcode != 0 for worker in self.workers):
                return  # one died, perhaps in the middle of a message: do not read it
            try:
                # NOTE [ Noticing the exits quickly ]
                # A worker's exit does not wake this get(), only its timeout does, and
                # without persistent workers every epoch ends here. With 10 ms the exits
                # were noticed late: a shutdown took 5 ms (2 workers) to 15 ms (4) longer
                # than torch's, which joins the workers, 1-2% of a short epoch. With 1 ms
                # it takes as long as torch's; the extra wake-ups cost next to nothing.
                self.result_queue.get(timeout=0.001 if alive else 0)
            except queue.Empty:
                if not alive:
                    return
            except Exception:  # a batch its dead sender cannot hand over any more
                continue


_live_groups: set[_WorkerGroup] = set()  # started and not yet shut down


@atexit.register
def _shutdown_at_exit() -> None:
    """Stop the workers still running when Python exits. Registered when this module is
    imported, after multiprocessing's exit handler (torch imported it first), so it runs
    before it (atexit runs the last registered first): multiprocessing would terminate the
    workers, and tear down the queues this needs."""
    for group in list(_live_groups):
        group.shutdown()
