"""The comparisons of the guarantee, shared by the grid, the every-k and the restart tests.

With in_order=False which batch comes first is timing, even without a checkpoint; which
batches come is not: those epochs are compared as multisets of batches."""

from __future__ import annotations

import collections

import torch


def _bag(batches: list) -> collections.Counter:
    return collections.Counter(repr(batch) for batch in batches)


def same_epoch(expected: list, got: list, in_order: bool, what: str) -> None:
    if in_order:
        assert got == expected, f"{what}: batches differ\n expected {expected}\n got      {got}"
    else:
        assert _bag(got) == _bag(expected), (
            f"{what}: batches differ (as multisets)\n expected {expected}\n got      {got}")


def same_states(expected: dict, got: dict, what: str) -> None:
    assert got["rng"] == expected["rng"], f"{what}: the global RNG states differ"
    assert len(got["generators"]) == len(expected["generators"])
    for a, b in zip(expected["generators"], got["generators"]):
        assert torch.equal(a, b), f"{what}: a generator's state differs"


def check_like_torch(c: dict, torch_run: dict, ours: dict) -> None:
    """The uninterrupted stateful run (state_dict() called in it) is torch's run."""
    assert len(ours["epochs"]) == len(torch_run["epochs"])
    for epoch, (expected, got) in enumerate(zip(torch_run["epochs"], ours["epochs"])):
        same_epoch(expected, got, c["in_order"], f"epoch {epoch}, against torch")
    same_states(torch_run, ours, "against torch")


def check_resumed(c: dict, whole: dict, checkpoint: dict, resumed: dict) -> None:
    """The run resumed from ``checkpoint``, one of ``whole``'s, continues ``whole`` exactly."""
    epoch, at = checkpoint["epoch"], checkpoint["at"]
    expected, got = whole["epochs"][epoch:], resumed["epochs"]
    if at == "end":
        expected = expected[1:]
    else:
        before, rest = expected[0][:at], expected[0][at:]
        if c["in_order"]:
            same_epoch(rest, got[0], True, f"epoch {epoch} after batch {at}")
        else:
            assert _bag(got[0]) == _bag(expected[0]) - _bag(before), (
                f"epoch {epoch} after batch {at}: the batches not yielded before the "
                f"checkpoint differ\n whole epoch {expected[0]}\n before {before}\n"
                f" resumed {got[0]}")
        expected, got = expected[1:], got[1:]
    assert len(got) == len(expected), f"{len(got)} epochs after resuming, not {len(expected)}"
    for offset, (e, g) in enumerate(zip(expected, got)):
        same_epoch(e, g, c["in_order"], f"epoch {epoch + 1 + offset} after resuming")
    same_states(whole, resumed, "after resuming")
