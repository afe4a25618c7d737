"""Chapter 5's debugging lab: the loader it hands out, with four bugs.

The broken loader is not written twice: it is the mended ``LabLoader`` of ``solution.py``
with the four mistakes of ``mutants.FOUR_BUGS`` made, so that every bug is also a mutant the
lab's check must refuse. The workbook's stub cell holds the same code (a test compares them).
"""

from __future__ import annotations

import inspect

from minidataloader_course.chapters.ch05 import mutants, solution


def broken_source() -> str:
    """The source of the loader the lab hands out: ``class LabLoader`` with its four bugs."""
    source = inspect.getsource(solution.LabLoader)
    for old, new in mutants.FOUR_BUGS:
        if source.count(old) != 1:
            raise ValueError(f"{old!r} is not in LabLoader's source exactly once")
        source = source.replace(old, new)
    return source


def broken_loader() -> type:
    """The broken loader itself, made from ``broken_source()`` with the names the solution
    module gives it (the samplers of chapter 3, the collate function of chapter 4, torch)."""
    namespace = dict(vars(solution))
    exec(compile(broken_source(), f"<{__name__}: the broken LabLoader>", "exec"), namespace)
    return namespace["LabLoader"]
