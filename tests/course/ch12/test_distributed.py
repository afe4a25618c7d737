"""DistributedSampler on a real process group: two ranks joined by torch.distributed (gloo,
over loopback), started with torch.multiprocessing.spawn, each asking the group for its rank
and the world size. minidataloader's shards must be torch's, epoch by epoch, with and without
drop_last; a rank that fails or hangs must not leave the others running.

The ranks run minidataloader_course.chapters.ch12.distributed (the code chapter 12 shows). One spawn of two
ranks costs a few seconds (each imports torch): the shard tests share it."""

from __future__ import annotations

import multiprocessing
import time

import pytest
import torch
from torch.multiprocessing import ProcessRaisedException
from torch.utils.data import DistributedSampler

from minidataloader_course.chapters.ch12 import distributed as demo
from minidataloader_course.chapters.ch12 import solution as ch12

pytestmark = pytest.mark.timeout(240)

WORLD_SIZE = 2
EPOCHS = 2
# (dataset size, DistributedSampler options): odd sizes need padding or cutting with two
# ranks; 1 sample is fewer than ranks; unshuffled and a non-default seed too
SCENARIOS = {
    "11 samples": (11, {}),
    "11 samples, drop_last": (11, {"drop_last": True}),
    "10 samples": (10, {"seed": 3}),
    "10 samples, drop_last": (10, {"drop_last": True}),
    "1 sample": (1, {}),
    "1 sample, drop_last": (1, {"drop_last": True}),
    "7 samples, in order": (7, {"shuffle": False}),
}


def _hang_on_rank_1():
    if torch.distributed.get_rank() == 1:
        time.sleep(1e9)
    return "rank 0 went on to the gather, and waits there for rank 1"


def _fail_on_rank_1():
    if torch.distributed.get_rank() == 1:
        raise ValueError("rank 1 fails on purpose")
    return "rank 0 waits in the gather for rank 1"


@pytest.fixture(scope="module")
def gathered():
    jobs = [(name, demo.sampler_shards, {"dataset_size": n, "epochs": EPOCHS, **options})
            for name, (n, options) in SCENARIOS.items()]
    jobs.append(("forgot set_epoch", demo.sampler_shards,
                 {"dataset_size": 11, "epochs": EPOCHS, "set_epoch": False}))
    jobs.append(("stream", demo.stream_shard_job, {"dataset_size": 23, "num_workers": 2}))
    features = torch.arange(11 * 2, dtype=torch.float32).reshape(11, 2)
    labels = (features[:, :1] > 10).float()  # the model below gets these right ...
    labels[0] = 1.0  # ... but for sample 0, the one that padding repeats
    model = torch.nn.Linear(2, 1)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 0.0]]))
        model.bias.fill_(-10.5)
    jobs.append(("evaluate", demo.evaluate_shard,
                 {"model": model, "features": features, "labels": labels}))
    jobs.append(("seeds, alike", demo.worker_seeds_job, {"seed": 5}))
    jobs.append(("seeds, by rank", demo.worker_seeds_job, {"seed": 5, "seed_by_rank": True}))
    jobs.append(("uneven, Join", demo.uneven_training_job, {"join": True}))
    jobs.append(("even, no Join", demo.uneven_training_job,
                 {"join": False, "even_stream": "minidataloader_course.chapters.ch12.solution:EvenStream"}))
    return demo.spawn_ranks(jobs, world_size=WORLD_SIZE, timeout=180)


def torchs_shards(n, epochs, set_epoch=True, **options):
    """What torch's sampler gives each rank when told its rank explicitly (no group)."""
    shards = []
    for rank in range(WORLD_SIZE):
        sampler = DistributedSampler(range(n), WORLD_SIZE, rank, **options)
        epochs_seen = []
        for epoch in range(epochs):
            if set_epoch:
                sampler.set_epoch(epoch)
            epochs_seen.append(list(sampler))
        shards.append(epochs_seen)
    return shards


@pytest.mark.parametrize("name", SCENARIOS)
def test_each_rank_gets_torchs_shard(gathered, name):
    n, options = SCENARIOS[name]
    by_rank = gathered[name]
    assert len(by_rank) == WORLD_SIZE
    for rank, result in enumerate(by_rank):
        assert result["minidataloader"] == result["torch"], f"rank {rank}"
    # the group told every rank its true rank and world size
    assert [result["torch"] for result in by_rank] == torchs_shards(n, EPOCHS, **options)
    for epoch in range(EPOCHS):
        shards = [result["minidataloader"][epoch] for result in by_rank]
        assert len({len(shard) for shard in shards}) == 1, "the ranks got unequal shares"
        seen = [i for shard in shards for i in shard]
        if options.get("drop_last"):
            assert len(seen) == len(set(seen)) == n - n % WORLD_SIZE
        else:
            assert set(seen) == set(range(n)) and len(seen) == n + (-n) % WORLD_SIZE


def test_set_epoch_changes_the_order_and_forgetting_it_repeats_it(gathered):
    for rank, result in enumerate(gathered["forgot set_epoch"]):
        first, second = result["minidataloader"]
        assert first == second == result["torch"][0], f"rank {rank}"
    for rank, result in enumerate(gathered["11 samples"]):
        first, second = result["minidataloader"]
        assert first != second, f"rank {rank}: set_epoch(1) drew the same order"


def test_rank_and_worker_sharding_read_every_sample_once(gathered):
    samples = [sample for rank in gathered["stream"] for sample, _ in rank]
    assert sorted(samples) == list(range(23))
    for rank, pairs in enumerate(gathered["stream"]):
        for sample, worker in pairs:
            assert sample % (WORLD_SIZE * 2) == rank * 2 + worker


def test_padding_counts_a_sample_twice_in_the_all_reduced_metric(gathered):
    ranks = gathered["evaluate"]
    assert [r["indices"] for r in ranks] == [[0, 2, 4, 6, 8, 10], [1, 3, 5, 7, 9, 0]]
    assert [r["count"] for r in ranks] == [6, 6]
    # 10 of the 11 samples are right; sample 0, wrong, is counted on both ranks: 10 / 12
    assert [r["correct"] for r in ranks] == [5, 5]
    assert all(r["all_count"] == 12 and r["all_correct"] == 10 for r in ranks)


def _base_seed(generator=None):
    """The number a DataLoader iterator draws first: its workers' base seed."""
    return int(torch.empty((), dtype=torch.int64).random_(generator=generator))


@pytest.mark.parametrize("job", ["seeds, alike", "seeds, by rank"])
def test_worker_seeds_in_every_rank(gathered, job):
    for rank, result in enumerate(gathered[job]):
        assert result["minidataloader"] == result["torch"], f"rank {rank}"
        if job == "seeds, alike":  # torch.manual_seed(5) in every rank, then iter(loader)
            torch.manual_seed(5)
            base = _base_seed()
        else:  # the loader's generator, seeded with 5 + rank
            base = _base_seed(torch.Generator().manual_seed(5 + rank))
        samples = result["torch"]
        assert sorted(index for index, *_ in samples) == list(range(rank, 8, WORLD_SIZE))
        assert {(worker, seed) for _, worker, seed, _ in samples} == {(0, base), (1, base + 1)}
    crops = [[crop for *_, crop in result["torch"]] for result in gathered[job]]
    assert (crops[0] == crops[1]) == (job == "seeds, alike")


def test_join_lets_ranks_with_unequal_shares_finish_with_one_model(gathered):
    ranks = gathered["uneven, Join"]
    assert [r["batches"] for r in ranks] == [r["steps"] for r in ranks] == [4, 3]
    assert all(r["error"] is None for r in ranks)
    assert ranks[0]["weights"] == ranks[1]["weights"]


def test_even_shares_keep_the_ranks_in_step_without_join(gathered):
    ranks = gathered["even, no Join"]  # 13 samples: rank 1's share padded with sample 0
    assert [r["batches"] for r in ranks] == [r["steps"] for r in ranks] == [4, 4]
    assert all(r["error"] is None for r in ranks)
    assert ranks[0]["weights"] == ranks[1]["weights"]


def test_a_failing_rank_ends_the_run_with_its_error():
    start = time.monotonic()
    # whichever rank's end is noticed first: rank 1's own error, or rank 0's gather that
    # lost its peer (gloo: "Connection reset by peer" / "Connection closed by peer")
    with pytest.raises(ProcessRaisedException, match="rank 1 fails on purpose|by peer"):
        demo.spawn_ranks([("fail", _fail_on_rank_1, {})], timeout=120)
    assert time.monotonic() - start < 120
    assert multiprocessing.active_children() == []


def test_hanging_ranks_are_killed_at_the_timeout():
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="killed"):
        demo.spawn_ranks([("hang", _hang_on_rank_1, {})], timeout=4)
    assert time.monotonic() - start < 4 + 15
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("n", [0, 1, 2, 7, 11, 12, 153])
@pytest.mark.parametrize("num_replicas", [1, 2, 3, 8])
@pytest.mark.parametrize("drop_last", [False, True])
def test_chapter_12_solutions_agree_with_torch(n, num_replicas, drop_last):
    torch_samplers = [DistributedSampler(range(n), num_replicas, rank, seed=5,
                                         drop_last=drop_last) for rank in range(num_replicas)]
    assert ch12.shard_sizes(n, num_replicas, drop_last) == (torch_samplers[0].num_samples,
                                                            torch_samplers[0].total_size)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(5)).tolist()
    for rank, theirs in enumerate(torch_samplers):
        assert ch12.rank_indices(order, num_replicas, rank, drop_last) == list(theirs)
        ours = ch12.ShardedEpochSampler(range(n), num_replicas, rank, seed=5,
                                        drop_last=drop_last)
        for epoch in (0, 3):
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)
    items = [f"line {i}" for i in range(n)]
    for rank in range(num_replicas):  # the chapter's even stream: torch's share, no workers
        positions = DistributedSampler(range(n), num_replicas, rank, shuffle=False,
                                       drop_last=drop_last)
        stream = ch12.EvenStream(items, rank, num_replicas, drop_last)
        assert list(stream) == [items[p] for p in positions] and len(stream) == len(positions)
    if n and not drop_last:
        flags = [i % 3 != 0 for i in range(n)]
        unshuffled = [DistributedSampler(range(n), num_replicas, rank, shuffle=False)
                      for rank in range(num_replicas)]
        by_rank = [[flags[i] for i in sampler] for sampler in unshuffled]
        assert ch12.unpadded_accuracy(by_rank, n) == pytest.approx(sum(flags) / n)
