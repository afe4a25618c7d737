"""Comparing results, the one way the course does it, and the random state they depend on.

``difference(expected, got)`` returns ``None`` when two results match, and otherwise one
sentence that says where and how they differ ("item [3]: expected 64, got 63"). It serves:

- the checks (the default): strict about types on purpose (``100.0`` is no answer to "how many
  iterations?", and the message says so), dict keys compared as a set, an object without
  ``==`` by its attributes;
- the differential comparisons of torch's results with minidataloader's (``strict=True``, as
  :func:`same` and the tests' ``assert_identical`` do): dict keys in order too, tensors by
  layout and device as well, torch's class and the package's of the same name compared by
  what they expose, an exception type of ours that is a subclass of torch's accepted (the
  package's contract).

The random state: :func:`seed_everything` seeds the three global generators a training script
(or a check) draws from; :func:`rng_states` and :func:`restore_rng_states` save and put them
back, :class:`untouched_rng` around a block. Also :func:`outcome` (a call's value, or the type
it raised), :func:`short` (a value in a line a beginner can read) and :func:`error_text`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import reprlib
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

# ---------------------------------------------------------------------------------------
# Random state


def seed_everything(seed: int) -> None:
    """Seed the three global generators a training script (or a check) may draw from."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def rng_states() -> tuple:
    """The states of the three global generators (``random``, numpy, torch)."""
    return random.getstate(), np.random.get_state(), torch.get_rng_state()


def restore_rng_states(states: tuple) -> None:
    random.setstate(states[0])
    np.random.set_state(states[1])
    torch.set_rng_state(states[2])


def same_rng_states(a: tuple, b: tuple) -> str | None:
    """None if two :func:`rng_states` are equal, else which generator differs."""
    if a[0] != b[0]:
        return "the `random` module's state differs"
    if not all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
               for x, y in zip(a[1], b[1])):
        return "numpy's global RNG state differs"
    if not torch.equal(a[2], b[2]):
        return "the global torch RNG state differs"
    return None


class untouched_rng:
    """Context manager: the global generators' states are put back as they were on exit."""

    def __enter__(self):
        self._states = rng_states()

    def __exit__(self, *exc):
        restore_rng_states(self._states)


def outcome(action):
    """What ``action()`` gives: its value, or the type of the exception it raised."""
    try:
        return action()
    except Exception as error:  # noqa: BLE001 - the type is the result
        return type(error)


# ---------------------------------------------------------------------------------------
# Values in a line


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


# ---------------------------------------------------------------------------------------
# The comparison


def same(theirs, ours) -> bool:
    """Whether ``ours`` (minidataloader's result) is ``theirs`` (torch's), all the way down:
    ``difference(theirs, ours, strict=True)`` finds nothing."""
    return difference(theirs, ours, strict=True) is None


def difference(expected, got, where: str = "", tolerance: tuple[float, float] | None = None,
               *, strict: bool = False) -> str | None:
    """``None`` if ``got`` matches ``expected``; otherwise how it differs, in one sentence.

    ``tolerance=(rtol, atol)`` lets floating-point values differ by rounding; ``strict``
    compares torch's results with the package's (see the module's docstring)."""
    at = f"{where}: " if where else ""
    again = lambda e, g, w: difference(e, g, w, tolerance, strict=strict)  # noqa: E731
    if isinstance(expected, Raised):
        if isinstance(got, Raised):
            if issubclass(got.type, expected.type):
                return None
            return f"{at}expected it to raise {expected.type.__name__}, but it raised {got.type.__name__}"
        return f"{at}expected it to raise {expected.type.__name__}, but it returned {short(got, 60)}"
    if isinstance(got, Raised):
        return f"{at}it raised {got.type.__name__}: {got.message}"
    if isinstance(expected, type) and issubclass(expected, BaseException):
        if isinstance(got, type) and issubclass(got, expected):
            return None
        return f"{at}expected the exception type {expected.__name__} (or a subclass), got {short(got, 60)}"
    if isinstance(expected, torch.Tensor):
        return _tensor_difference(expected, got, at, tolerance, strict)
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
                                  tolerance, strict)
    if isinstance(expected, torch.Generator) and isinstance(got, torch.Generator):
        return None if torch.equal(expected.get_state(), got.get_state()) else \
            f"{at}the generators' states differ"
    if type(got) is not type(expected):
        if strict and _mirrored(type(expected), type(got)):
            return _public_state_difference(expected, got, where, again)
        if isinstance(expected, int) and isinstance(got, float) and got == expected:
            return (f"{at}expected the int {expected!r}, got the float {got!r}: the right number "
                    f"but a float (use // for whole-number division, or int(...))")
        return f"{at}expected {kind(expected)} ({short(expected, 60)}), got {kind(got)} ({short(got, 60)})"
    if isinstance(expected, Sequence) and not isinstance(expected, (str, bytes, range)):
        if len(got) != len(expected):
            return (f"{at}expected {len(expected)} item{'s' * (len(expected) != 1)}, "
                    f"got {len(got)}: expected {short(expected, 70)}, got {short(got, 70)}")
        for index, (e, g) in enumerate(zip(expected, got)):
            problem = again(e, g, f"{where}[{index}]")
            if problem:
                return problem
        return _subclass_difference(expected, got, where, strict, again)
    if isinstance(expected, Mapping):
        if set(got) != set(expected):
            return f"{at}expected the keys {sorted(map(str, expected))}, got {sorted(map(str, got))}"
        if strict and list(got) != list(expected):
            return f"{at}expected the keys in the order {list(expected)}, got {list(got)}"
        for key in expected:
            problem = again(expected[key], got[key], f"{where}[{key!r}]" if where else str(key))
            if problem:
                return problem
        return _subclass_difference(expected, got, where, strict, again)
    if isinstance(expected, float):
        if (math.isnan(expected) and math.isnan(got)) or (
                tolerance and math.isclose(got, expected, rel_tol=tolerance[0], abs_tol=tolerance[1])):
            return None
    if strict and isinstance(expected, types.FunctionType):  # torch's default_collate and ours
        return None if expected is got or expected.__qualname__ == got.__qualname__ else \
            f"{at}expected the function {expected.__qualname__}, got {got.__qualname__}"
    if dataclasses.is_dataclass(expected) and not isinstance(expected, type):
        # field by field: a dataclass's == compares tuples, ambiguous for tensor fields
        return again({f.name: getattr(expected, f.name) for f in dataclasses.fields(expected)},
                     {f.name: getattr(got, f.name) for f in dataclasses.fields(got)},
                     where or "fields")
    if hasattr(expected, "__dict__") and not isinstance(expected, type) and type(expected).__eq__ is object.__eq__:
        # plain objects (a dataset, a sampler) compare by their attributes
        return again(vars(expected), vars(got), f"{where}.__dict__" if where else "attributes")
    try:
        equal = bool(expected == got) or bool(expected != expected and got != got)  # NaN
    except Exception as error:
        return f"{at}could not compare {short(got, 60)} with the expected {short(expected, 60)} ({type(error).__name__})"
    return None if equal else f"{at}expected {short(expected)}, got {short(got)}"


def _mirrored(expected: type, got: type) -> bool:
    """torch's class and the package's of the same name, or a class a test builds once per
    library."""
    if expected.__qualname__ != got.__qualname__:
        return False
    return expected.__module__ == got.__module__ or (
        expected.__module__.startswith("torch.utils.data")
        and got.__module__.startswith("minidataloader"))


def _public_state_difference(expected, got, where: str, again) -> str | None:
    """torch's object and the package's: compared by what they expose."""
    names = {key for obj in (expected, got) for key in getattr(obj, "__dict__", {})
             if not key.startswith("_")}
    for name in sorted(names):
        problem = again(getattr(expected, name, None), getattr(got, name, None),
                        f"{where}.{name}" if where else name)
        if problem:
            return problem
    return None


def _subclass_difference(expected, got, where: str, strict: bool, again) -> str | None:
    """A subclass of dict or list (a defaultdict, a namedtuple aside) carries state of its
    own: compared too, in the strict mode."""
    if not strict or type(expected) in (dict, list, tuple) or not isinstance(
            expected, (dict, list)):
        return None
    problem = again(getattr(expected, "default_factory", None),
                    getattr(got, "default_factory", None), f"{where}.default_factory")
    return problem or again(getattr(expected, "__dict__", None), getattr(got, "__dict__", None),
                            f"{where}.__dict__")


def _tensor_difference(expected: torch.Tensor, got, at: str,
                       tolerance: tuple[float, float] | None, strict: bool) -> str | None:
    if not isinstance(got, torch.Tensor):
        return f"{at}expected a tensor ({short(expected, 70)}), got {kind(got)} ({short(got, 70)})"
    if strict:
        layout = ("nested" if expected.is_nested else expected.layout, expected.device)
        if layout != ("nested" if got.is_nested else got.layout, got.device):
            return f"{at}expected a tensor {layout}, got one {('nested' if got.is_nested else got.layout, got.device)}"
        if expected.is_nested:
            expected, got = expected.to_padded_tensor(0.0), got.to_padded_tensor(0.0)
        elif expected.layout != torch.strided:
            expected, got = expected.to_dense(), got.to_dense()
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
