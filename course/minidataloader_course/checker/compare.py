"""Comparing what the reader's code gave with what the reference gave, and describing
values in a line a beginner can read.

``difference(expected, got)`` returns ``None`` when they match and otherwise one sentence
that says where and how they differ ("item [3]: expected 64, got 63"). Matching is strict
about types on purpose: ``100.0`` is not an answer to "how many iterations?", and the
message says so.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import reprlib
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class Raised:
    """What a call produced when it raised instead of returning: compared by type."""

    type: type
    message: str

    def __repr__(self):
        return f"raises {self.type.__name__}"


class _Short(reprlib.Repr):
    def repr_dict(self, x, level):
        """In the dict's own order (reprlib sorts the keys: a verdict must show what is)."""
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        pieces = [f"{self.repr1(key, level - 1)}: {self.repr1(x[key], level - 1)}"
                  for key in itertools.islice(x, self.maxdict)]
        return "{" + ", ".join(pieces + ["..."] * (len(x) > self.maxdict)) + "}"


_SHORT = _Short()
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxset = _SHORT.maxdict = 8
_SHORT.maxstring = 60
_SHORT.maxother = 80
_SHORT.maxlevel = 4


def short(value, limit: int = 160) -> str:
    """A one-line description of ``value``, at most about ``limit`` characters."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        text = _short_array(value)
    elif isinstance(value, (list, tuple)) and any(
            isinstance(v, (torch.Tensor, np.ndarray)) for v in value):
        inner = ", ".join(short(v, 60) for v in value[:4]) + (", …" if len(value) > 4 else "")
        text = f"[{inner}]" if isinstance(value, list) else f"({inner}{',' * (len(value) == 1)})"
    elif isinstance(value, dict) and any(
            isinstance(v, (torch.Tensor, np.ndarray)) for v in value.values()):
        text = "{" + ", ".join(f"{k!r}: {short(v, 60)}" for k, v in list(value.items())[:4]) + "}"
    else:
        try:
            text = _SHORT.repr(value)
        except Exception as error:  # a reader's __repr__ may raise
            text = f"<{type(value).__name__} object (its repr raised {type(error).__name__})>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _short_array(array) -> str:
    """``tensor([1.0, 0.0], dtype=float32)`` when small and flat, else shape and first values."""
    name = "tensor" if isinstance(array, torch.Tensor) else "array"
    dtype = str(array.dtype).replace("torch.", "")
    flat = (array.detach().flatten() if name == "tensor" else array.ravel())[:9].tolist()
    if array.ndim == 0:
        return f"{name}({flat[0]!r}, dtype={dtype})"
    shown = ", ".join(_SHORT.repr(v) for v in flat[:8]) + (", …" if len(flat) > 8 else "")
    if array.ndim == 1 and len(flat) <= 8:
        return f"{name}([{shown}], dtype={dtype})"
    return f"{name}(shape={list(array.shape)}, dtype={dtype}, values=[{shown}])"


def kind(value) -> str:
    """What sort of thing a value is, in words: 'an int', 'a list', 'a torch.Tensor'."""
    if value is None:
        return "None"
    cls = type(value)
    name = cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    if isinstance(value, torch.Tensor):
        name = "torch.Tensor"
    elif isinstance(value, np.ndarray):
        name = "numpy.ndarray"
    article = "an" if name[0].lower() in "aeiou" else "a"
    return f"{article} {name}"


def difference(expected, got, where: str = "", tolerance: tuple[float, float] | None = None,
               ) -> str | None:
    """``None`` if ``got`` matches ``expected``; otherwise how it differs, in one sentence.

    ``tolerance=(rtol, atol)`` lets floating-point values differ by rounding."""
    at = f"{where}: " if where else ""
    if isinstance(expected, Raised):
        if isinstance(got, Raised):
            if issubclass(got.type, expected.type):
                return None
            return f"{at}expected it to raise {expected.type.__name__}, but it raised {got.type.__name__}"
        return f"{at}expected it to raise {expected.type.__name__}, but it returned {short(got, 60)}"
    if isinstance(got, Raised):
        return f"{at}it raised {got.type.__name__}: {got.message}"
    if isinstance(expected, torch.Tensor):
        return _tensor_difference(expected, got, at, tolerance)
    if isinstance(expected, np.ndarray):
        if not isinstance(got, np.ndarray):
            return f"{at}expected a numpy array, got {kind(got)}"
        if expected.dtype.kind in "SUO" or got.dtype.kind in "SUO":
            # strings or objects: no tensor holds them, compare as numpy arrays
            if got.dtype != expected.dtype or got.shape != expected.shape:
                return (f"{at}expected an array of dtype {expected.dtype} and shape "
                        f"{list(expected.shape)}, got dtype {got.dtype} and shape {list(got.shape)}")
            return None if np.array_equal(expected, got) else \
                f"{at}expected {short(expected)}, got {short(got)}"
        return _tensor_difference(torch.from_numpy(expected), torch.from_numpy(np.asarray(got)), at,
                                  tolerance)
    if type(got) is not type(expected):
        if isinstance(expected, int) and isinstance(got, float) and got == expected:
            return (f"{at}expected the int {expected!r}, got the float {got!r}: the right number "
                    f"but a float (use // for whole-number division, or int(...))")
        return f"{at}expected {kind(expected)} ({short(expected, 60)}), got {kind(got)} ({short(got, 60)})"
    if isinstance(expected, (list, tuple)):
        if len(got) != len(expected):
            return (f"{at}expected {len(expected)} item{'s' * (len(expected) != 1)}, "
                    f"got {len(got)}: expected {short(expected, 70)}, got {short(got, 70)}")
        for index, (e, g) in enumerate(zip(expected, got)):
            problem = difference(e, g, f"{where}[{index}]", tolerance)
            if problem:
                return problem
        return None
    if isinstance(expected, dict):
        if set(got) != set(expected):
            return f"{at}expected the keys {sorted(map(str, expected))}, got {sorted(map(str, got))}"
        for key in expected:
            problem = difference(expected[key], got[key], f"{where}[{key!r}]" if where else str(key),
                                 tolerance)
            if problem:
                return problem
        return None
    if isinstance(expected, float):
        if (math.isnan(expected) and math.isnan(got)) or (
                tolerance and math.isclose(got, expected, rel_tol=tolerance[0], abs_tol=tolerance[1])):
            return None
    if dataclasses.is_dataclass(expected) and not isinstance(expected, type):
        # field by field: a dataclass's == compares tuples, ambiguous for tensor fields
        return difference({f.name: getattr(expected, f.name) for f in dataclasses.fields(expected)},
                          {f.name: getattr(got, f.name) for f in dataclasses.fields(got)},
                          where or "fields", tolerance)
    if hasattr(expected, "__dict__") and not isinstance(expected, type) and type(expected).__eq__ is object.__eq__:
        # plain objects (a dataset, a sampler) compare by their attributes
        return difference(vars(expected), vars(got), f"{where}.__dict__" if where else "attributes",
                          tolerance)
    try:
        same = bool(expected == got)
    except Exception as error:
        return f"{at}could not compare {short(got, 60)} with the expected {short(expected, 60)} ({type(error).__name__})"
    return None if same else f"{at}expected {short(expected)}, got {short(got)}"


def _tensor_difference(expected: torch.Tensor, got, at: str,
                       tolerance: tuple[float, float] | None) -> str | None:
    if not isinstance(got, torch.Tensor):
        return f"{at}expected a tensor ({short(expected, 70)}), got {kind(got)} ({short(got, 70)})"
    if got.dtype != expected.dtype:
        return f"{at}expected dtype {expected.dtype}, got {got.dtype}"
    if got.shape != expected.shape:
        return f"{at}expected shape {list(expected.shape)}, got shape {list(got.shape)}"
    if expected.is_floating_point():
        rtol, atol = tolerance or (0.0, 0.0)
        differs = ~torch.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        differs = got != expected
    if not differs.any():
        return None
    position = tuple(differs.nonzero()[0].tolist())
    index = "".join(f"[{i}]" for i in position)
    return (f"{at}the values differ, first at {index}: expected {expected[position].item()!r}, "
            f"got {got[position].item()!r} (expected {short(expected, 70)}, got {short(got, 70)})")


def close(rtol: float = 1e-5, atol: float = 1e-8):
    """A comparison for floating-point results: values may differ by rounding."""
    return lambda expected, got: difference(expected, got, tolerance=(rtol, atol))
