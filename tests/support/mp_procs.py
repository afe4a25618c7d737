"""Helpers for tests that watch processes: run a Python script in a subprocess with a time
limit, find every process a script started. Whether a pid still runs, waiting until some are
gone and the other /proc watchers come from :mod:`minidataloader_course.shared.processes`."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

# One home for the /proc watchers, shared with the book's chapter-10 demonstrations.
from minidataloader_course.shared.processes import (
    children,
    first_line,
    open_fds,
    running,
    wait_gone,
)

__all__ = ["children", "env", "first_line", "marked", "open_fds", "python", "running", "start",
           "wait_gone"]

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


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
