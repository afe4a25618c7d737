"""Failures on demand, for chapter 10 (when things go wrong): datasets and worker functions
that fail in the ways real ones do, the scripts the chapter runs in a subprocess (a dying
main process, Ctrl-C, the open-files limit), and small tools to watch processes.

Everything that runs inside a worker lives here, in a module, so that workers started with
spawn or forkserver can import it. :class:`minidataloader.demo.synthetic.FaultyDataset`
covers exceptions, ``os._exit``, SIGKILL, segfaults and hangs; this module adds:

- :class:`SlowSample`: one sample takes a while (``timeout``);
- :class:`JsonRecords`: samples parsed from bytes, some corrupt (real exceptions whose
  constructors take several arguments);
- :class:`SharedMemoryFault`: a worker killed by SIGBUS, as when /dev/shm is full;
- :func:`fail_in_worker_init`, :func:`refuse_to_collate`, :func:`dump_stack_later`.

The scenarios in :data:`SCENARIOS` run as ``python -m minidataloader.demo.ch10_faults
SCENARIO [LIBRARY]``, where LIBRARY is ``torch`` or ``minidataloader``.
"""

from __future__ import annotations

import contextlib
import faulthandler
import html
import importlib
import json
import mmap
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time

import torch

from minidataloader.dataset import Dataset

from .synthetic import SlowDataset, any_worker_info

# ---------------------------------------------------------------------------------------
# Datasets and functions that fail inside workers


class SlowSample(Dataset):
    """``n`` samples; sample ``i`` is ``{"index": i, "pid": <the process that made it>}``,
    and sample ``at`` takes ``seconds`` to make (a slow disk, a network read). With
    ``announce``, a file of that name is created when the slow sample starts."""

    def __init__(self, n: int = 8, at: int = 3, seconds: float = 1.5,
                 announce: str | None = None):
        self.n, self.at, self.seconds, self.announce = n, at, seconds, announce

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.at:
            if self.announce:
                open(self.announce, "w").close()
            time.sleep(self.seconds)
        return {"index": i, "pid": os.getpid()}


class JsonRecords(Dataset):
    """Samples stored as JSON text in bytes, as in a file of labels; ``json.loads`` parses
    each. A corrupt record raises what the parser raises: ``UnicodeDecodeError`` for bytes
    that are not UTF-8, ``json.JSONDecodeError`` for cut-off text."""

    def __init__(self, records: list[bytes]):
        self.records = records

    def __len__(self):
        return len(self.records)

    def __getitem__(self, i):
        return json.loads(self.records[i].decode("utf-8"))


def _in_worker() -> bool:
    return any_worker_info() is not None


def touch_a_page_with_nothing_behind_it() -> None:
    """What a worker writing a batch into a full /dev/shm does: write to a page of a memory
    mapping that the kernel cannot back with memory. The kernel answers with SIGBUS (bus
    error), which kills the process. Here the page lies past the end of a one-page file that
    was cut to zero length after it was mapped."""
    folder = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryFile(dir=folder) as file:
        file.truncate(mmap.PAGESIZE)
        page = mmap.mmap(file.fileno(), mmap.PAGESIZE)
        file.truncate(0)
        page[0] = 1  # SIGBUS: the process ends here


class SharedMemoryFault(Dataset):
    """``n`` samples (sample ``i`` is ``i``); fetching index ``at`` in a worker kills the
    worker with SIGBUS, the way a full /dev/shm does."""

    def __init__(self, n: int = 8, at: int = 3):
        self.n, self.at = n, at

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.at and _in_worker():
            touch_a_page_with_nothing_behind_it()
        return i


def fail_in_worker_init(worker_id: int) -> None:
    """A ``worker_init_fn`` that fails in worker 1 (say, it opens a file that is missing)."""
    if worker_id == 1:
        raise FileNotFoundError(f"worker {worker_id}: /data/shard-{worker_id}.bin not found")


def refuse_to_collate(samples: list):
    """A ``collate_fn`` that cannot batch a sample of 5 (say, one of a different shape)."""
    if 5 in samples:
        raise TypeError(f"cannot batch {samples}: sample 5 has another shape")
    return torch.tensor(samples)


def dump_stack_later(worker_id: int, seconds: float, folder: str) -> None:
    """A ``worker_init_fn`` (bind ``seconds`` and ``folder`` with functools.partial): every
    ``seconds``, the worker writes the stack of every thread it runs to
    ``folder/worker-<id>.txt``: where a worker is stuck, even in a hung sample. This is
    Python's :mod:`faulthandler`; it needs no help from the stuck code."""
    file = open(os.path.join(folder, f"worker-{worker_id}.txt"), "w")  # noqa: SIM115 - kept open
    faulthandler.dump_traceback_later(seconds, repeat=True, file=file)


def put_and_exit(queue, size: int) -> None:
    """A process that puts ``size`` bytes on a multiprocessing queue, then ends."""
    queue.put(bytes(size))


# ---------------------------------------------------------------------------------------
# Errors as text


def error_text(error: BaseException) -> str:
    """The end of what Python prints for ``error``: every exception of the chain, the cause
    first, as ``Type: message`` (without the main process's own traceback lines)."""
    chain = []
    while error is not None:
        chain.append(error)
        error = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
    parts = [f"{_type_name(e)}: {e}" if str(e) else _type_name(e) for e in reversed(chain)]
    return "\n\nThe above exception was the direct cause of the following exception:\n\n".join(
        parts)


def _type_name(error: BaseException) -> str:
    cls = type(error)
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", "__main__") else f"{module}.{cls.__qualname__}"


_SITE_PACKAGES = re.compile(r"/[^\s\"']*/site-packages/")
_PYTHON_LIB = re.compile(r"/[^\s\"']*/lib/python3\.\d+/")


def shorten(text: str) -> str:
    """Paths in a traceback, without the folders of this machine."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = _SITE_PACKAGES.sub(".../site-packages/", text)
    text = _PYTHON_LIB.sub(".../python3/", text)
    return text.replace(root + os.sep, "")


def side_by_side(columns: dict[str, str]):
    """An HTML table showing each text in a column of its own, under its title."""
    from IPython.display import HTML

    cell = ("vertical-align:top; text-align:left; padding:4px 8px; width:{}%; "
            "border-bottom:1px solid #dde3ea")
    width = 100 // max(len(columns), 1)
    head = "".join(f"<th style='{cell.format(width)}'>{html.escape(title)}</th>"
                   for title in columns)
    body = "".join(
        f"<td style='{cell.format(width)}'><pre style='white-space:pre-wrap; "
        f"overflow-wrap:anywhere; font-size:0.75em; margin:0'>{html.escape(shorten(text))}"
        "</pre></td>" for text in columns.values())
    return HTML(f"<table style='width:100%; table-layout:fixed'><tr>{head}</tr>"
                f"<tr>{body}</tr></table>")


def limit_every_cell(seconds: float) -> None:
    """In IPython: give every cell run from now on at most ``seconds``, after which it
    raises TimeoutError. The experiments break loaders on purpose; one that hangs must fail
    its cell (and the book's build) quickly, not block it. SIGALRM interrupts the main
    thread even in a blocking get(); forked workers do not inherit the timer."""
    from IPython import get_ipython

    def expired(signum, frame):
        raise TimeoutError(f"this cell ran for more than {seconds:g} s: something hangs")

    def arm(*_):
        signal.signal(signal.SIGALRM, expired)
        signal.setitimer(signal.ITIMER_REAL, seconds)

    def disarm(*_):
        signal.setitimer(signal.ITIMER_REAL, 0)

    get_ipython().events.register("pre_run_cell", arm)
    get_ipython().events.register("post_run_cell", disarm)


@contextlib.contextmanager
def captured_stderr(lines: list[str]):
    """Collect into ``lines`` what is written to file descriptor 2 (stderr) inside the
    block, by this process and by every process it starts there. Worker processes write
    there directly (torch's workers print a line when they crash); a notebook would show
    it in a random place, or not at all."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as file:
        os.dup2(file.fileno(), 2)
        try:
            yield lines
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            file.seek(0)
            text = file.read().decode("utf-8", "replace").replace("\x00", "")
            lines.extend(line for line in text.splitlines() if line.strip())


# ---------------------------------------------------------------------------------------
# Watching processes (Linux: /proc)


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name, or None if there is no such
    process."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (ended, but not yet reaped)."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _running_where(field: int, value: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields and int(fields[field]) == value and fields[0] not in ("Z", "X"):
                found.append(int(entry))
    return sorted(found)


def children(pid: int | None = None) -> list[int]:
    """The running child processes of ``pid`` (default: this process)."""
    return _running_where(1, os.getpid() if pid is None else pid)


def process_group(pgid: int) -> list[int]:
    """The running processes of process group ``pgid``."""
    return _running_where(2, pgid)


def seconds_until_gone(groups: dict[str, list[int]], within: float = 30.0) -> dict:
    """For each named group of pids, how long until none of them runs any more (None if
    some still run after ``within`` seconds). The groups are watched at the same time."""
    start, gone = time.monotonic(), {}
    while len(gone) < len(groups) and time.monotonic() - start < within:
        for name, pids in groups.items():
            if name not in gone and not any(running(pid) for pid in pids):
                gone[name] = time.monotonic() - start
        time.sleep(0.02)
    return {name: gone.get(name) for name in groups}


# ---------------------------------------------------------------------------------------
# Scenarios run in a subprocess: python -m minidataloader.demo.ch10_faults SCENARIO LIBRARY


def library(name: str):
    """``torch.utils.data`` for "torch", ``minidataloader`` for "minidataloader"."""
    return importlib.import_module("torch.utils.data" if name == "torch" else "minidataloader")


LIBRARIES = ("torch", "minidataloader")


def _start_workers(name: str, dataset) -> tuple[object, list[int]]:
    """An epoch of a loader with two workers, started: its iterator and the workers' pids."""
    before = set(children())
    batches = iter(library(name).DataLoader(dataset, batch_size=2, num_workers=2))
    next(batches)  # both workers are running now
    return batches, sorted(set(children()) - before)


def wait_to_be_killed(seconds: float = 300) -> None:
    """Start a loader of each library, with two workers each; print the workers' pids (one
    JSON line), then wait to be killed (at most ``seconds``)."""
    epochs, pids = {}, {}
    for name in LIBRARIES:
        epochs[name], pids[name] = _start_workers(name, range(1000))
    print(json.dumps(pids), flush=True)
    time.sleep(seconds)


def iterate_until_interrupted(seconds: float = 300) -> None:
    """Go through a long epoch of two loaders at once, one of each library, with two
    workers each; print the workers' pids (one JSON line), then go on until Ctrl-C (or
    for at most ``seconds``)."""
    epochs, pids = {}, {}
    for name in LIBRARIES:
        epochs[name], pids[name] = _start_workers(name, SlowDataset(10**6, seconds=0.05))
    print(json.dumps(pids), flush=True)
    end = time.monotonic() + seconds
    for _ in zip(*epochs.values()):
        if time.monotonic() > end:
            break


class ManyTensors(Dataset):
    """``n`` samples, each a list of 8 small tensors. Received from a worker under the
    'file_descriptor' strategy, each tensor holds one open file descriptor."""

    def __init__(self, n: int = 64):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return [torch.full((3,), i) for _ in range(8)]


def send_tensors(queue, count: int, done) -> None:
    """Put ``count`` small tensors on ``queue``, then stay (the receiver fetches each
    tensor's file descriptor from this process) until ``done`` is set."""
    for i in range(count):
        queue.put(torch.full((3,), i))
    done.wait(60)
    # The receiver stops reading when it fails: what is still queued must not keep this
    # process from exiting (see NOTE [ The pipeline and its shutdown ] in dataloader.py).
    queue.cancel_join_thread()


def reach_the_open_files_limit(limit: int = 256) -> None:
    """Keep everything received, with this process's open-files limit lowered to
    ``limit``: tensors from a bare torch.multiprocessing queue, then the batches of a
    DataLoader with two workers, from each library, under each sharing strategy. Prints
    one JSON object: what each attempt received, or the error that stopped it."""
    import torch.multiprocessing as tmp

    report = {"default strategy": tmp.get_sharing_strategy()}
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    context = tmp.get_context("fork")
    queue, done = context.Queue(), context.Event()
    sender = context.Process(target=send_tensors, args=(queue, 2 * limit, done), daemon=True)
    sender.start()
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))  # here, not in the sender
    kept = []
    try:
        while len(kept) < 2 * limit:
            kept.append(queue.get(timeout=30))  # each tensor kept holds a file descriptor
        report["queue"] = f"received all {len(kept)} tensors"
    except Exception as error:  # noqa: BLE001 - the error is the result
        report["queue"] = f"after {len(kept)} tensors: {error_text(error)}"
    del kept[:]
    done.set()
    sender.join(10)
    if sender.is_alive():
        sender.kill()
    for strategy in ("file_descriptor", "file_system"):
        tmp.set_sharing_strategy(strategy)
        for name in LIBRARIES:
            try:
                for batch in library(name).DataLoader(ManyTensors(), batch_size=1,
                                                      num_workers=2):
                    kept.append(batch)  # 8 tensors, each an open file descriptor (or file)
                outcome = f"received all {len(kept)} batches"
            except Exception as error:  # noqa: BLE001 - the error is the result
                outcome = f"after {len(kept)} batches: {error_text(error)}"
            report[f"{name}, {strategy}"] = outcome
            del kept[:]
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    print(json.dumps(report), flush=True)


SCENARIOS = {
    "wait_to_be_killed": wait_to_be_killed,
    "iterate_until_interrupted": iterate_until_interrupted,
    "reach_the_open_files_limit": reach_the_open_files_limit,
}


def start_scenario(scenario: str, *args: str, **popen) -> subprocess.Popen:
    """Run a scenario of this module in a new Python process (its output piped back)."""
    return subprocess.Popen(
        [sys.executable, "-m", __name__, scenario, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def first_line(process: subprocess.Popen, timeout: float = 60) -> str:
    """The first line a process started by :func:`start_scenario` prints."""
    import selectors

    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            process.kill()
            raise TimeoutError(f"no output within {timeout} s: {process.stderr.read()}")
    line = process.stdout.readline()
    if not line:
        raise RuntimeError(f"the scenario printed nothing: {process.stderr.read()}")
    return line


def signal_name(returncode: int) -> str:
    """How a subprocess ended, from its return code."""
    if returncode < 0:
        return signal.Signals(-returncode).name
    return f"exit status {returncode}"


if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])

