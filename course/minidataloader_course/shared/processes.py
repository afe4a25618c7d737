"""Watching processes from outside (Linux: ``/proc``): which children a process has, which
processes a group holds, how long until some are gone, how a subprocess ended. Chapter 10
watches a loader's workers with these, and the multi-process tests use the same ones.

    running(pid)               alive, not a zombie
    children(pid)              running child processes (default: this process's)
    process_group(pgid)        running processes of a process group
    wait_gone(pids, within)    seconds until none of pids runs (TimeoutError after within)
    seconds_until_gone(groups) the same for several named groups watched at once
    first_line(process)        the first line a subprocess prints, with a time limit
    signal_name(returncode)    "SIGKILL" or "exit status 3"
    open_fds()                 how many file descriptors this process has open
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time

_GONE = ("Z", "X")  # a zombie (ended, not yet reaped) or a dead process


def _stat(pid: int | str) -> list[str] | None:
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
    return fields is not None and fields[0] not in _GONE


def _running_where(field: int, value: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(entry)
            if fields and int(fields[field]) == value and fields[0] not in _GONE:
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


def wait_gone(pids, within: float) -> float:
    """Seconds until none of ``pids`` runs; TimeoutError, naming those left, after
    ``within`` seconds."""
    seconds = seconds_until_gone({"pids": list(pids)}, within)["pids"]
    if seconds is None:
        left = ", ".join(str(pid) for pid in pids if running(pid))
        raise TimeoutError(f"still running after {within} s: {left}")
    return seconds


def first_line(process: subprocess.Popen, timeout: float = 60) -> str:
    """The first line ``process`` (started with ``stdout=PIPE, text=True``) prints; after
    ``timeout`` seconds of silence it is killed and TimeoutError says what it wrote to stderr."""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            process.kill()
            raise TimeoutError(f"no output within {timeout} s; stderr: {process.stderr.read()}")
    line = process.stdout.readline()
    if not line:
        raise RuntimeError(f"the process printed nothing; stderr: {process.stderr.read()}")
    return line


def signal_name(returncode: int) -> str:
    """How a subprocess ended, from its return code."""
    if returncode < 0:
        return signal.Signals(-returncode).name
    return f"exit status {returncode}"


def open_fds() -> int:
    """How many file descriptors this process has open."""
    return len(os.listdir("/proc/self/fd"))
