"""Run one scenario with torch.utils.data and with minidataloader, and compare everything
observable: the returned value (exact types, dtypes, shapes, values), the exception type,
the warning categories, and the state of every global RNG afterwards.

A scenario is a function of one argument, the library (``torch.utils.data`` or
``minidataloader``), that builds what it needs from that library and returns plain data.
"""

from __future__ import annotations

import functools
import warnings
from collections import namedtuple
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
import torch.utils.data as tud

import minidataloader as mdl
from minidataloader_course.shared.compare import (
    difference,
    rng_states,
    same_rng_states,
    seed_everything,
)

LIBS = (tud, mdl)
Point = namedtuple("Point", "x y")


class Frozen(Mapping):
    """An immutable mapping, built from a dict."""

    def __init__(self, data):
        self._data = dict(data)

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __eq__(self, other):
        return type(other) is Frozen and self._data == other._data


@dataclass
class Outcome:
    value: object
    error: BaseException | None
    warnings: list
    rng: tuple  # the global generators' states afterwards (shared.compare.rng_states)


def run(scenario, lib, seed: int = 0) -> Outcome:
    seed_everything(seed)
    value = error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = scenario(lib)
        except Exception as exc:  # noqa: BLE001 - the exception is what we compare
            error = exc
    return Outcome(value, error, [w.category for w in caught], rng_states())


def same(scenario, seed: int = 0) -> Outcome:
    """Assert that ``scenario`` behaves identically with both libraries; return torch's
    outcome. Our exception may be a subclass of torch's, our warnings subclasses of its."""
    ref, got = run(scenario, tud, seed), run(scenario, mdl, seed)
    if ref.error is not None:
        assert got.error is not None, (
            f"torch raised {type(ref.error).__name__}({ref.error}); we returned {got.value!r}")
        assert isinstance(got.error, type(ref.error)), (
            f"torch raised {type(ref.error).__name__}({ref.error}); we raised "
            f"{type(got.error).__name__}({got.error})")
    else:
        assert got.error is None, f"torch returned {ref.value!r}; we raised {got.error!r}"
        assert_identical(ref.value, got.value)
    assert len(ref.warnings) == len(got.warnings) and all(
        issubclass(g, r) for r, g in zip(ref.warnings, got.warnings)), (
        f"warnings: torch {ref.warnings}, ours {got.warnings}")
    rng = same_rng_states(ref.rng, got.rng)
    assert rng is None, rng
    return ref


def same_error(scenario, seed: int = 0) -> type:
    """Like ``same``, and torch must raise: returns torch's exception type."""
    ref = same(scenario, seed)
    assert ref.error is not None, f"torch did not raise; it returned {ref.value!r}"
    return type(ref.error)


def assert_identical(a, b, path: str = "value") -> None:
    """torch's value ``a`` and ours ``b`` are the same all the way down (the course's one
    comparer, strict: see minidataloader_course.shared.compare)."""
    problem = difference(a, b, path, strict=True)
    assert problem is None, problem


# ----------------------------------------------------------------------------------------
# Datasets for scenarios. Each library gets its own classes (built on its own base
# classes) with the same names, so results compare as mirrored types.

SAMPLE_KINDS = ("int", "float", "tensor", "numpy", "nested", "random", "str", "bool")


def make_sample(i: int, kind: str):
    if kind == "int":
        return i
    if kind == "float":
        return i / 3
    if kind == "bool":
        return i % 3 == 0
    if kind == "str":
        return f"s{i}"
    if kind == "tensor":
        return torch.arange(6, dtype=torch.float32).reshape(2, 3) * i
    if kind == "numpy":
        return np.arange(3, dtype=np.int16) * i
    if kind == "random":  # an augmentation drawing from the global RNG, in the loop
        return torch.rand(2) + i
    if kind == "nested":
        return {"x": torch.tensor([i, -i]), "p": Point(i, np.float32(i) / 2),
                "l": [i % 2 == 0, f"n{i}", (np.int64(i), b"b")]}
    raise ValueError(kind)


@functools.cache
def datasets(lib):
    """Dataset classes built on ``lib``'s base classes."""

    class Squares(lib.Dataset):
        def __init__(self, n, kind="int"):
            self.n, self.kind = n, kind

        def __getitem__(self, i):
            if not 0 <= i < self.n:
                raise IndexError(i)
            return make_sample(i * i, self.kind)

        def __len__(self):
            return self.n

    class BatchedSquares(Squares):
        """Fetches batches itself: its samples are marked, so we see who fetched them."""

        def __getitems__(self, indices):
            return [make_sample(i * i + 1000, self.kind) for i in indices]

    class Stream(lib.IterableDataset):
        def __init__(self, n, kind="int", reported_len=None):
            self.n, self.kind, self.reported_len = n, kind, reported_len

        def __iter__(self):
            return (make_sample(i, self.kind) for i in range(self.n))

        def __len__(self):
            if self.reported_len is None:
                raise TypeError("this stream has no len()")
            return self.reported_len

        def __repr__(self):
            return f"Stream({self.n})"

    return Squares, BatchedSquares, Stream


def epochs(loader, count: int = 2, stop_after: int | None = None) -> list:
    """Batches of ``count`` epochs, each cut after ``stop_after`` batches if given."""
    result = []
    for _ in range(count):
        batches = []
        for batch in loader:
            batches.append(batch)
            if stop_after is not None and len(batches) >= stop_after:
                break
        result.append(batches)
    return result
