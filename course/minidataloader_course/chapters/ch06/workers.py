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
