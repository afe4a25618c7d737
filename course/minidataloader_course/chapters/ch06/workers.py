"""The dataset of chapter 6's start-method lesson, in a module.

The chapter defines ``Squares`` in a notebook cell and shows that workers started with
spawn or forkserver cannot find it there; this is the same class where they can: a module
that every process can import by name.
"""

from __future__ import annotations

from minidataloader.dataset import Dataset


class Squares(Dataset):
    """``n`` samples; sample ``i`` is ``i * i``."""

    def __init__(self, n: int = 8):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(f"index {i} out of range for {self.n} samples")
        return i * i


def forkserver_writing_to(path: str):
    """Start the fork server (the ``forkserver`` start method) with its standard error, and
    that of every worker it forks, going to the file ``path``. What such a worker prints
    (the traceback of a class it cannot find) then shows in the cell that prints it, not in
    the log of the book's build. Returns a function that gives what was written since its
    last call."""
    import multiprocessing.forkserver
    import os

    saved = os.dup(2)
    with open(path, "ab") as file:
        os.dup2(file.fileno(), 2)  # inherited by the server, started now
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    read = 0

    def printed() -> str:
        nonlocal read
        with open(path, encoding="utf-8", errors="replace") as file:
            file.seek(read)
            text = file.read()
            read = file.tell()
        return text

    return printed
