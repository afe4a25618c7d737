"""DistributedSampler against torch's: every rank's indices, epoch by epoch."""

import pytest
import torch

from tests.support.differential import same, same_error


@pytest.mark.parametrize("n", [0, 1, 5, 12, 13])
@pytest.mark.parametrize("num_replicas", [1, 3, 4, 16])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
def test_every_rank_every_epoch(n, num_replicas, shuffle, drop_last):
    seed = 42 + n
    def scenario(lib):
        result = []
        for rank in range(num_replicas):
            sampler = lib.DistributedSampler(range(n), num_replicas, rank, shuffle, seed,
                                             drop_last)
            for epoch in (0, 1, 5):
                sampler.set_epoch(epoch)
                result.append((list(sampler), list(sampler), len(sampler), sampler.total_size,
                               sampler.num_samples, sampler.epoch))
        return result

    same(scenario)


def test_in_a_dataloader_and_without_set_epoch():
    def scenario(lib):
        sampler = lib.DistributedSampler(range(11), num_replicas=3, rank=2)
        loader = lib.DataLoader(range(11), batch_size=2, sampler=sampler)
        return list(loader), list(loader), len(loader), torch.rand(1)

    same(scenario)


@pytest.mark.parametrize("rank", [-1, 3, 4])
def test_invalid_rank(rank):
    assert same_error(lambda lib: lib.DistributedSampler(range(5), num_replicas=3, rank=rank)) \
        is ValueError


def test_without_a_process_group():
    # torch.distributed is available but not initialised: asking for the world size fails
    assert same_error(lambda lib: lib.DistributedSampler(range(5))) is ValueError
    assert same_error(lambda lib: lib.DistributedSampler(range(5), num_replicas=2)) is ValueError
    assert same_error(lambda lib: lib.DistributedSampler(range(5), rank=0)) is ValueError


def test_dataset_changed_length():
    def scenario(lib, change, drop_last=False):
        data = list(range(10))
        sampler = lib.DistributedSampler(data, num_replicas=3, rank=0, drop_last=drop_last)
        data[:] = range(10 + change)
        return list(sampler)

    for change, drop_last in [(3, False), (5, False), (-2, True)]:
        assert issubclass(same_error(lambda lib, c=change, d=drop_last: scenario(lib, c, d)),
                          AssertionError)
    for change, drop_last in [(0, False), (1, False), (-8, False), (4, True)]:
        same(lambda lib, c=change, d=drop_last: scenario(lib, c, d))
