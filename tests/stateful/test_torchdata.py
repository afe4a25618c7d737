"""Against the anchor: torchdata 0.11's StatefulDataLoader, where the two loaders mean the
same thing -- a sequential sampler, a Stateful IterableDataset split per worker, a Stateful
sampler -- gives the same remaining batches after a resume as ours. And where they differ
(the anchor, research/anchors.md): with shuffle=True and workers its epoch is not torch's,
ours is. Each library runs in its own process: torchdata patches torch's samplers."""

import json
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("torchdata.stateful_dataloader")  # pinned in requirements.txt

CHILD = pathlib.Path(__file__).resolve().parent / "torchdata_child.py"
CASES = [{"scenario": scenario, "n": n, "num_workers": workers, "k": k}
         for scenario, n in (("sequential", 20), ("stateful_stream", 17),
                             ("stateful_sampler", 13))
         for workers in (0, 2) for k in (0, 1, 3, 4)]


def play(lib: str, cases: list) -> list:
    child = subprocess.run([sys.executable, str(CHILD), lib, json.dumps(cases)],
                           capture_output=True, text=True, timeout=150)
    assert child.returncode == 0, child.stderr[-3000:]
    return json.loads(child.stdout)


@pytest.mark.timeout(330)
def test_same_remaining_batches_as_torchdata_where_the_semantics_coincide():
    theirs, ours = play("torchdata", CASES), play("mini", CASES)
    for case, a, b in zip(CASES, theirs, ours):
        assert a["before"] == b["before"], case
        assert a["after"] == b["after"], (case, a["after"], b["after"])
        assert len(a["after"]) > 0


@pytest.mark.timeout(330)
def test_with_shuffle_and_workers_torchdata_is_not_torch_and_we_are():
    case = [{"scenario": "shuffled", "n": 20, "num_workers": 2, "k": 7}]
    (torch_epoch,) = play("torch", case)
    (theirs,), (ours,) = play("torchdata", case), play("mini", case)
    assert ours["before"] == torch_epoch
    assert theirs["before"] != torch_epoch  # measured in research/anchors.md
