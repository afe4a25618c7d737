"""The guarantee, over random configurations: a run checkpointed after batch k (state_dict()
in the middle of it) gives torch's batches and RNG states, and a run resumed from that
checkpoint -- everything built afresh -- gives the same remaining batches, worker seeds and
random numbers (inside workers too), and the same RNG states at the end.

The configurations cover map-style datasets (stateless, and Stateful per worker copy) with
every built-in sampler (ours and torch's), a Stateful sampler, a list, a batch_sampler;
IterableDatasets that are Stateful, whose iterator is Stateful, or that are fast-forwarded;
num_workers 0-3, persistent workers, in_order True/False, prefetch_factor 1-4, drop_last,
batch_size None, 1-3 epochs, a checkpoint anywhere: right after iter(), after any batch,
after the last batch but before StopIteration, between epochs. Here the resumed run is in
this process (test_restart.py restarts processes for real)."""

import collections

import pytest

from tests.library.stateful.compare import check_like_torch, check_resumed
from tests.library.stateful.scenarios import GRID, checkpoint_batch, run


def test_the_grid_covers_what_it_claims():
    assert len(GRID) >= 200
    seen = collections.defaultdict(set)
    for c in GRID:
        for key in ("dataset", "sampler", "mode", "num_workers", "persistent_workers",
                    "in_order", "prefetch_factor", "drop_last", "generators", "torch_samplers",
                    "epochs", "shuffle"):
            seen[key].add(c[key])
        seen["checkpoint"].add("end" if c["checkpoint_at"] == "end" else
                               "start" if checkpoint_batch(c) == 0 else "middle")
    assert seen["dataset"] == {"numbers", "counting", "stateful_stream", "iterator_stream",
                               "plain_stream"}
    assert seen["sampler"] >= {None, "sequential", "random", "random_replacement",
                               "random_num_samples", "subset_random", "weighted",
                               "distributed", "list", "resumable"}
    assert seen["mode"] == {"batch_size", "none", "batch_sampler"}
    assert seen["num_workers"] == {0, 1, 2, 3}
    assert seen["prefetch_factor"] == {None, 1, 2, 3, 4}
    for key in ("persistent_workers", "in_order", "drop_last", "torch_samplers", "shuffle"):
        assert seen[key] == {False, True}, key
    assert seen["generators"] == {"none", "loader", "sampler", "shared", "separate"}
    assert seen["epochs"] == {1, 2, 3}
    assert seen["checkpoint"] == {"start", "middle", "end"}


@pytest.mark.parametrize("index", range(len(GRID)))
def test_resume_continues_the_run_exactly(index):
    c = GRID[index]
    ours = run(c)
    check_like_torch(c, run(c, stateful=False), ours)
    (checkpoint,) = ours["checkpoints"].values()
    check_resumed(c, ours, checkpoint, run(c, resume=checkpoint))
