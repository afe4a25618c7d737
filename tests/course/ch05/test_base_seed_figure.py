"""Chapter 5's figure of the base seed (book/figures/ch05_base_seed_first.svg) draws what
torch's loader draws in one shuffled epoch, moment by moment: the base seed at iter(loader),
the permutation at the first next(), nothing at the second, the unused permutation at the
end. Observed with draws(), for torch and the package alike."""

from __future__ import annotations

import pathlib

import pytest
import torch
import torch.utils.data as tud

import minidataloader as mdl
from minidataloader_course.checker.draws import draws

FIGURE = pathlib.Path(__file__).resolve().parents[3] / "book" / "figures" / "ch05_base_seed_first.svg"


def moments(library) -> list[list[str]]:
    """The calls drawn from g between each moment the figure shows."""
    generator = torch.Generator().manual_seed(0)
    loader = library.DataLoader(range(10), batch_size=5, shuffle=True, generator=generator)
    with draws(g=generator) as log:
        iterator = iter(loader)
        log.mark("iter(loader)")
        next(iterator)
        log.mark("batch 1")
        next(iterator)
        log.mark("batch 2")
        with pytest.raises(StopIteration):
            next(iterator)
        log.mark("the end")
    segments, current = [], []
    for row in log:
        if row.kind == "mark":
            segments.append(current)
            current = []
        else:
            current.append(f"{row.call} {row.count}")
    return segments


@pytest.mark.parametrize("library", [tud, mdl], ids=["torch", "minidataloader"])
def test_the_draws_are_where_the_figure_puts_them(library):
    assert moments(library) == [["random_ 1"], ["randperm 10"], [], ["randperm 10"]]


def test_the_figure_names_that_loader_and_those_draws():
    text = FIGURE.read_text()
    assert "DataLoader(range(10), batch_size=5, shuffle=True, generator=g)" in text
    for words in ("draw 1: base seed", "draw 2: the order", "draw 3: unused", "nothing drawn"):
        assert words in text, words
