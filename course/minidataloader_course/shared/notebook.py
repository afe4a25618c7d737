"""Tools for the chapters' code cells (IPython), kept out of the chapters so that a cell
shows the experiment, not the plumbing:

- :func:`limit_every_cell`: every cell run from now on raises TimeoutError after a while,
  so that an experiment that hangs fails its cell (and the book's build) instead of
  blocking it;
- :func:`captured_stderr`: what processes write to file descriptor 2 inside a block (a
  worker's crash report), collected as lines;
- :func:`side_by_side`: texts in columns, as an HTML table;
- :func:`shorten`: paths in a traceback without this machine's folders;
- :class:`NestedKernel`: a second Jupyter kernel, started and interrupted the way JupyterLab
  does it (jupyter_client), to run code in.

IPython and jupyter_client are imported by what needs them: importing this module does not.
"""

from __future__ import annotations

import contextlib
import html
import os
import queue
import re
import signal
import sys
import tempfile
import textwrap
import time

_SITE_PACKAGES = re.compile(r"/[^\s\"']*/site-packages/")
_PYTHON_LIB = re.compile(r"/[^\s\"']*/lib/python3\.\d+/")
# a clone's root: the course is course/minidataloader_course/ in it
_REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def shorten(text: str) -> str:
    """Paths in a traceback, without the folders of this machine."""
    text = _SITE_PACKAGES.sub(".../site-packages/", text)
    text = _PYTHON_LIB.sub(".../python3/", text)
    return text.replace(_REPOSITORY + os.sep, "")


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


class NestedKernel:
    """A Jupyter kernel of its own, started by this process with jupyter_client, the library
    JupyterLab and Notebook use to start, run and interrupt kernels. So ``interrupt()`` is
    exactly what their "interrupt the kernel" button does."""

    def __init__(self, kernel_name: str = "python3"):
        from jupyter_client import KernelManager

        self.manager = KernelManager(kernel_name=kernel_name)
        self.manager.start_kernel()  # returns once the process runs; run() waits for it
        self.client = None

    @property
    def pid(self) -> int:
        return self.manager.provisioner.process.pid

    def start(self, code: str) -> str:
        """Send ``code`` to run; return the request's id, for :meth:`wait`."""
        if self.client is None:
            self.client = self.manager.client()
            self.client.start_channels()
            self.client.wait_for_ready(timeout=120)
        return self.client.execute(textwrap.dedent(code))

    def wait(self, request: str, timeout: float = 60) -> tuple[str, str | None]:
        """Wait for request ``request`` to finish: what it printed, and the name of the
        exception it ended with (None if none). TimeoutError after ``timeout`` seconds."""
        printed, error = [], None
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.client.get_iopub_msg(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                raise TimeoutError(f"the kernel did not finish within {timeout} s") from None
            if message["parent_header"].get("msg_id") != request:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                printed.append(content["text"])
            elif kind == "error":
                error = content["ename"]
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(printed), error

    def run(self, code: str, timeout: float = 60) -> tuple[str, str | None]:
        """Run ``code`` and wait for it: see :meth:`wait`."""
        return self.wait(self.start(code), timeout)

    def interrupt(self) -> None:
        """What the "interrupt the kernel" button does."""
        self.manager.interrupt_kernel()

    def shutdown(self) -> None:
        if self.client is not None:
            self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
