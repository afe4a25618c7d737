"""The comparisons of the guarantee, shared by the grid and the restart tests."""

from __future__ import annotations

import collections

import torch


def same_epoch(expected: list, got: list, in_order: bool, what: str) -> None:
    if in_order:
        assert got == expected, f"{what}: batches differ\n expected {expected}\n got      {got}"
    else:  # which batch comes first is timing; which batches come is not
        assert _bag(got) == _bag(expected), (
            f"{what}: batches differ (as a multiset)\n expected {expected}\n got      {got}")


def _bag(batches: list) -> collections.Counter:
    return collections.Counter(repr(batch) for batch in batches)


def same_states(expected: dict, got: dict, what: str) -> None:
    assert got["rng"] == expected["rng"], f"{what}: the global RNG states differ"
    assert len(got["generators"]) == len(expected["generators"])
    for a, b in zip(expected["generators"], got["generators"]):
        assert torch.equal(a, b), f"{what}: a generator's state differs"


def check_like_torch(c: dict, torch_run: dict, ours: dict) -> None:
    """The uninterrupted stateful run (state_dict() called in it) is torch's run."""
    assert len(ours["epochs"]) == len(torch_run["epochs"])
    for epoch, (expected, got) in enumerate(zip(torch_run["epochs"], ours["epochs"])):
        same_epoch(expected, got, c["in_order"], f"epoch {epoch} vs torch")
    same_states(torch_run, ours, "vs torch")


def check_resumed(c: dict, whole: dict, resumed: dict) -> None:
    """The run resumed from ``whole``'s checkpoint continues ``whole`` exactly."""
    checkpoint = whole["checkpoint"]
    epoch, at = checkpoint["epoch"], checkpoint["at"]
    if at == "end":
        expected = whole["epochs"][epoch + 1:]
        got = resumed["epochs"]
    else:
        rest = whole["epochs"][epoch][at:]
        if not c["in_order"]:
            bag = _bag(whole["epochs"][epoch]) - _bag(whole["epochs"][epoch][:at])
            rest = sorted(bag.elements())
            same_epoch([eval(b) for b in rest], resumed["epochs"][0], False,
                       f"epoch {epoch} after batch {at}")
        else:
            same_epoch(rest, resumed["epochs"][0], True, f"epoch {epoch} after batch {at}")
        expected, got = whole["epochs"][epoch + 1:], resumed["epochs"][1:]
    assert len(got) == len(expected), (len(got), len(expected))
    for offset, (e, g) in enumerate(zip(expected, got)):
        same_epoch(e, g, c["in_order"], f"epoch {epoch + 1 + offset} after resuming")
    same_states(whole, resumed, "after resuming")
