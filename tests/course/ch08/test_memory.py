"""Copy-on-read, the demo of chapter 8 (chapters/ch08/memory.py): a forked worker that reads a
list of Python floats ends up with a private copy of them, one that reads a numpy array of
the same numbers does not; the same with torch's loader and with the package's."""

from __future__ import annotations

import sys

import pytest
import torch.utils.data as tud

import minidataloader as mdl
from minidataloader_course.chapters.ch08.memory import (
    NumpyFloats,
    PythonFloats,
    worker_memory_growth,
)

pytestmark = [pytest.mark.timeout(240),
              pytest.mark.skipif(not sys.platform.startswith("linux"),
                                 reason="reads /proc and forks its workers")]

SIZE = 1_000_000  # as the chapter measures: the workers' own bookkeeping is far below a tenth
FLOATS = SIZE * sys.getsizeof(1.0)  # the float objects, without the list


@pytest.mark.parametrize("library", [tud, mdl], ids=["torch", "minidataloader"])
def test_reading_python_objects_copies_them_into_each_worker_and_an_array_stays_shared(library):
    grown = {dataset_class: worker_memory_growth(
        library.DataLoader, dataset_class(SIZE), num_workers=2, batch_size=1000, shuffle=True,
        collate_fn=len) for dataset_class in (PythonFloats, NumpyFloats)}
    assert len(grown[PythonFloats]) == len(grown[NumpyFloats]) == 2
    assert all(growth > 0.5 * FLOATS for growth in grown[PythonFloats]), grown
    assert all(growth < 0.1 * FLOATS for growth in grown[NumpyFloats]), grown
