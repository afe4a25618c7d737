"""Running one scenario with torch's loader and with minidataloader, and comparing what came
out: the book's differential experiments use these.

- :func:`seed_everything`: the same start for both runs (``random``, numpy, torch);
- :func:`outcome`: what a call gives, its value or the type of what it raised;
- :func:`same`: whether minidataloader's result is torch's, all the way down;
- :func:`error_text`: an exception and its causes as Python prints them, for comparing
  messages.
"""

from __future__ import annotations

import random

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    """Seed the three global generators a training script (or a check) may draw from."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def outcome(action):
    """What ``action()`` gives: its value, or the type of the exception it raised."""
    try:
        return action()
    except Exception as error:  # noqa: BLE001 - the type is the result
        return type(error)


def same(theirs, ours) -> bool:
    """Whether ``ours`` (minidataloader's result) is ``theirs`` (torch's), all the way down:
    values of the same types; an exception type of ours may be a subclass of torch's (the
    package's contract); tensors and arrays of the same dtype, shape and values; dicts with
    the same keys in the same order; lists and tuples item by item."""
    if isinstance(theirs, type) and issubclass(theirs, BaseException):
        return isinstance(ours, type) and issubclass(ours, theirs)
    if type(theirs) is not type(ours):
        return False
    if isinstance(theirs, torch.Tensor):
        return (theirs.dtype == ours.dtype and theirs.shape == ours.shape
                and torch.equal(theirs, ours))
    if isinstance(theirs, np.ndarray):
        return theirs.dtype == ours.dtype and np.array_equal(theirs, ours)
    if isinstance(theirs, dict):
        return list(theirs) == list(ours) and all(same(theirs[k], ours[k]) for k in theirs)
    if isinstance(theirs, (list, tuple)):
        return len(theirs) == len(ours) and all(map(same, theirs, ours))
    return theirs == ours


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
