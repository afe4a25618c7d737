"""Against the anchor: torchdata 0.11's StatefulDataLoader, where the two loaders mean the
same thing -- a sequential sampler, a Stateful IterableDataset split per worker, a Stateful
sampler -- gives the same remaining batches after a resume as ours. And where they differ
(the anchor, research/anchors.md): with shuffle=True and workers its epoch is not torch's,
ours is. torchdata runs in a child process, never in this one: the project's rule for
comparing with it (research/anchors.md)."""

import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest
import torch
import torch.utils.data as tud

from minidataloader.stateful import StatefulDataLoader
from tests.library.stateful.torchdata_child import build, play

# Never imported here (it runs in a child process): only looked for.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("torchdata") is None,
                                reason="torchdata is pinned in requirements.txt")
CHILD = ["-m", "tests.library.stateful.torchdata_child"]  # run from the repository root, where tests is a package
ROOT = pathlib.Path(__file__).resolve().parents[3]
CASES = [{"scenario": scenario, "n": n, "num_workers": workers, "k": k}
         for scenario, n in (("sequential", 20), ("stateful_stream", 17),
                             ("stateful_sampler", 13))
         for workers in (0, 2) for k in (0, 1, 3, 4)]
SHUFFLED = {"scenario": "shuffled", "n": 20, "num_workers": 2, "k": 7}


@pytest.mark.timeout(200)
def test_same_remaining_batches_as_torchdata_where_the_semantics_coincide():
    child = subprocess.run([sys.executable, *CHILD, json.dumps([*CASES, SHUFFLED])],
                           cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert child.returncode == 0, child.stderr[-3000:]
    *theirs, their_shuffled = json.loads(child.stdout)
    for case, a in zip(CASES, theirs):
        b = play(StatefulDataLoader, case)
        assert a["before"] == b["before"], case
        assert a["after"] == b["after"], (case, a["after"], b["after"])
        assert len(a["after"]) > 0

    # where they differ: with shuffle=True and workers, torchdata's epoch is not torch's
    torch.manual_seed(0)
    torch_epoch = [batch.tolist() for batch in build(tud.DataLoader, SHUFFLED)]
    assert play(StatefulDataLoader, SHUFFLED)["before"] == torch_epoch
    assert their_shuffled["before"] != torch_epoch  # measured in research/anchors.md
