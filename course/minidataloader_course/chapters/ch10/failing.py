"""Chapter 10 (when things go wrong): datasets and worker functions that fail the ways real
ones do. Everything here runs inside a worker, so it lives in a module, which workers
started with spawn or forkserver can import. :class:`minidataloader_course.shared.synthetic.FaultyDataset`
covers exceptions, ``os._exit``, SIGKILL, segfaults and hangs; this module adds:

- :class:`SlowSample`: one sample takes a while (``timeout``);
- :class:`JsonRecords`: samples parsed from bytes, some corrupt (real exceptions whose
  constructors take several arguments);
- :class:`SharedMemoryFault`: a worker killed by SIGBUS, as when /dev/shm is full;
- :class:`ManyTensors`: samples that hold many file descriptors once received;
- :class:`KilledAtFirstSample`: a worker killed by SIGKILL, which writes down when, and
  who its parent is, first (how long until the main process notices);
- worker functions: :func:`fail_in_worker_init`, :func:`refuse_to_collate`,
  :func:`dump_stack_later`, :func:`put_and_exit`, :func:`send_tensors`.
"""

from __future__ import annotations

import faulthandler
import json
import mmap
import os
import signal
import tempfile
import time

import torch

from minidataloader.dataset import Dataset
from minidataloader_course.shared.synthetic import any_worker_info


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


class KilledAtFirstSample(Dataset):
    """``n`` samples (sample ``i`` is ``i``). The worker that fetches sample 0 writes the time
    (``time.time()``), its parent's pid and its process group to the file ``stamp``, then is
    killed by SIGKILL, as by the out-of-memory killer. The main process's error time minus
    the stamp's is how long it took to notice."""

    def __init__(self, stamp: str, n: int = 4):
        self.stamp, self.n = stamp, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == 0 and any_worker_info() is not None:
            with open(self.stamp, "w") as file:
                file.write(f"{time.time()!r} {os.getppid()} {os.getpgid(0)}")
            os.kill(os.getpid(), signal.SIGKILL)
        return i


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
