"""For every k in every epoch: a checkpoint after batch k (and right after iter(), and
after the epoch ended) resumes exactly -- for a few configurations chosen to cover the
hard cases: workers whose streams end at different times, persistent workers across
epochs, a fast-forward, in_order=False, a Stateful sampler, random draws in workers."""

import pytest

from tests.library.stateful.compare import check_like_torch, check_resumed
from tests.library.stateful.scenarios import run

BASE = {"mode": "batch_size", "batch_size": 3, "drop_last": False, "shuffle": False,
        "sampler": None, "generators": "none", "torch_samplers": False, "num_workers": 0,
        "persistent_workers": False, "in_order": True, "prefetch_factor": None, "epochs": 2,
        "seed": 5, "draws": True, "checkpoint_epoch": 0, "checkpoint_at": 0.0}
CONFIGS = {
    "no workers, shuffled, generator": dict(
        dataset="numbers", n=10, shuffle=True, generators="loader"),
    "2 workers, RandomSampler without generator": dict(
        dataset="numbers", n=11, sampler="random", num_workers=2, prefetch_factor=2),
    "3 persistent workers, Stateful map dataset, with replacement": dict(
        dataset="counting", n=7, sampler="random_replacement", num_workers=3,
        persistent_workers=True, prefetch_factor=1, batch_size=5, generators="separate"),
    "2 persistent workers, Stateful stream, uneven shards": dict(
        dataset="stateful_stream", n=9, batch_size=2, num_workers=2,
        persistent_workers=True, prefetch_factor=2),
    "3 workers, Stateful iterator, drop_last": dict(
        dataset="iterator_stream", n=11, batch_size=2, drop_last=True, num_workers=3,
        prefetch_factor=1),
    "2 persistent workers, fast-forward": dict(
        dataset="plain_stream", n=8, batch_size=2, num_workers=2, persistent_workers=True,
        prefetch_factor=3),
    "2 workers, in_order=False, DistributedSampler": dict(
        dataset="numbers", n=24, sampler="distributed", num_workers=2, in_order=False,
        prefetch_factor=2, batch_size=2, draws=False),
    "a worker, batch_sampler over a Stateful sampler": dict(
        dataset="counting", n=8, sampler="resumable", mode="batch_sampler", num_workers=1,
        prefetch_factor=4),
    "no workers, Stateful stream": dict(dataset="stateful_stream", n=7, batch_size=2),
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", CONFIGS)
def test_every_checkpoint_resumes_exactly(name):
    c = {**BASE, **CONFIGS[name]}
    positions = {(epoch, k) for epoch in range(c["epochs"]) for k in range(30)}
    positions |= {(epoch, None) for epoch in range(c["epochs"])}
    whole = run(c, positions=positions)
    check_like_torch(c, run(c, stateful=False), whole)
    lengths = [len(batches) for batches in whole["epochs"]]
    assert all(length >= 3 for length in lengths), lengths
    expected = {(epoch, k) for epoch, length in enumerate(lengths) for k in range(length + 1)}
    assert set(whole["checkpoints"]) == expected | {(epoch, "end") for epoch in range(2)}
    for checkpoint in whole["checkpoints"].values():
        check_resumed(c, whole, checkpoint, run(c, resume=checkpoint))
