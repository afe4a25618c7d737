"""What chapter 4's collate tree (book/figures/ch04_collate_tree.svg) draws is what torch's
default_collate does: a list of dicts of tuples of tensors becomes a dict with the same keys,
each tuple a list of stacked tensors, the ints one int64 tensor. The package agrees."""

from __future__ import annotations

import pathlib
import re

import pytest
import torch
import torch.utils.data as tud

import minidataloader as mdl

FIGURE = pathlib.Path(__file__).resolve().parents[3] / "book" / "figures" / "ch04_collate_tree.svg"


def the_figures_batch() -> list[dict]:
    """Three samples {'pos': (a, b), 'label': int}, a of shape (2,), b of shape (3,)."""
    generator = torch.Generator().manual_seed(0)
    return [{"pos": (torch.randn(2, generator=generator), torch.randn(3, generator=generator)),
             "label": label} for label in (3, 1, 4)]


@pytest.mark.parametrize("library", [tud, mdl], ids=["torch", "minidataloader"])
def test_the_batch_is_what_the_figure_draws(library):
    batch = library.default_collate(the_figures_batch())
    assert type(batch) is dict and list(batch) == ["pos", "label"]
    assert type(batch["pos"]) is list  # the tuple comes back as a list of its fields
    assert [tuple(t.shape) for t in batch["pos"]] == [(3, 2), (3, 3)]
    assert batch["label"].dtype == torch.int64 and batch["label"].tolist() == [3, 1, 4]


def test_the_figure_says_so():
    text = FIGURE.read_text()
    for words in ("shape (3, 2)", "shape (3, 3)", "int64, shape (3,)", "{'pos': [A, B],",
                  "default_collate([3, 1, 4])"):
        assert words in text, words
    assert not re.search(r"(?:href|src)=\"https?:", text), "a figure loads nothing from elsewhere"
