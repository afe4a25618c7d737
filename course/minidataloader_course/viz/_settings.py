"""What every visual does with the settings a chapter passes it: refuse unknown names and
out-of-range values with an error that says what to change. And a count in words, which
every view's numbers table uses."""

from __future__ import annotations


def merged(given: dict, defaults: dict, view: str) -> dict:
    """``defaults`` updated with ``given``; TypeError for a name ``defaults`` lacks."""
    unknown = set(given) - set(defaults)
    if unknown:
        raise TypeError(f"unknown {view} setting(s) {sorted(unknown)}; the settings are "
                        f"{list(defaults)}")
    return {**defaults, **given}


def check_number(name: str, value, low, high, whole: bool = True) -> None:
    """ValueError unless ``value`` is a number (``whole``: an integer) from ``low`` to
    ``high``; True and False are not numbers here."""
    kind = int if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not low <= value <= high:
        what = "an integer" if whole else "a number"
        raise ValueError(f"{name} should be {what} from {low} to {high}, but got {value!r}")


def check_choice(name: str, value, choices: tuple) -> None:
    """ValueError unless ``value`` is one of ``choices`` (``(True, False)``: a flag)."""
    if choices == (True, False):
        if not isinstance(value, bool):
            raise ValueError(f"{name} should be True or False, but got {value!r}")
    elif value not in choices:
        raise ValueError(f"{name} should be one of {choices}, but got {value!r}")


def plural(n: int, one: str, many: str = "") -> str:
    """``1 batch``, ``2 batches``: ``many`` defaults to ``one`` + s (+ es after ch)."""
    if n == 1:
        return f"{n} {one}"
    return f"{n} {many or one + ('es' if one.endswith('ch') else 's')}"
