"""Helpers for tests that watch processes: is a pid still running, wait until some are
gone, run a Python script in a subprocess with a time limit."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (an exited child nobody reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            state = file.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_gone(pids, within: float) -> float:
    """Seconds until every pid of ``pids`` is gone; fails after ``within`` seconds."""
    start = time.monotonic()
    while any(running(pid) for pid in pids):
        elapsed = time.monotonic() - start
        assert elapsed < within, f"still running after {within} s: " + ", ".join(
            str(pid) for pid in pids if running(pid))
        time.sleep(0.05)
    return time.monotonic() - start


def children(pid: int | None = None) -> list[int]:
    """Running child processes of ``pid`` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as file:
                    fields = file.read().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
                found.append(int(entry))
    return found


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def env(token: str = "") -> dict:
    """The environment for a script run in a subprocess: it imports tests.support too, and
    carries ``token``, which every process it starts inherits (see ``marked``)."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "MP_TEST_TOKEN": token}


def marked(token: str) -> list[int]:
    """Running processes whose environment carries ``token``: a script run with it and
    every process that script started, whoever their parent is now."""
    found = []
    needle = f"MP_TEST_TOKEN={token}".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/environ", "rb") as file:
                    if needle in file.read().split(b"\0") and running(int(entry)):
                        found.append(int(entry))
            except OSError:
                continue
    return found


def python(code: str, timeout: float, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env=env(), cwd=HERE, **kwargs)


def start(code: str, token: str = "", **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env(token), cwd=HERE,
                            **kwargs)


def first_line(proc: subprocess.Popen, timeout: float) -> str:
    """The first line the subprocess prints, within ``timeout`` seconds."""
    import selectors

    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            proc.kill()
            raise AssertionError(f"no output within {timeout} s; stderr: {proc.stderr.read()}")
    line = proc.stdout.readline()
    assert line, f"the script printed nothing; stderr: {proc.stderr.read()}"
    return line
