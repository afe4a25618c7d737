"""Multi-process loading against torch's, same seeds: every batch and its order, what code
in a worker observes, IterableDatasets with and without sharding, persistent workers over
three epochs, in_order=False, and the global RNG states afterwards (`same` checks those
after every scenario)."""

from __future__ import annotations

import multiprocessing

import pytest
import torch
import torch.utils.data as tud

import minidataloader as mdl
from tests.support.differential import datasets, epochs, same, same_error
from tests.support.mp_datasets import (
    KEYS,
    Counting,
    KeyEcho,
    Observer,
    Pids,
    Squares,
    TorchOnlyStream,
    as_received,
    record_init,
    stream,
)


def same_value(scenario, seed: int = 0):
    """`same`, and torch must not raise: a scenario failing in both libraries alike would
    pass `same` without testing what it is about."""
    ref = same(scenario, seed)
    assert ref.error is None, f"the scenario raised in torch: {ref.error!r}"
    return ref.value


@pytest.mark.parametrize("num_workers", [1, 2, 3, 4])
@pytest.mark.parametrize("batch_size, shuffle, prefetch_factor",
                         [(3, True, None), (None, False, 1), (4, False, 3)])
def test_batches_and_worker_observations(num_workers, batch_size, shuffle, prefetch_factor):
    def scenario(lib):
        loader = lib.DataLoader(Observer(13), batch_size=batch_size, shuffle=shuffle,
                                num_workers=num_workers, prefetch_factor=prefetch_factor)
        return epochs(loader, 2 if shuffle else 1), torch.rand(2)

    same_value(scenario, seed=num_workers)


@pytest.mark.parametrize("num_workers", [1, 3])
def test_generator_worker_init_fn_drop_last_and_samplers(num_workers):
    def scenario(lib):
        generator = torch.Generator().manual_seed(7)
        loaders = [
            lib.DataLoader(Observer(10), batch_size=3, shuffle=True, drop_last=True,
                           generator=generator, num_workers=num_workers,
                           worker_init_fn=record_init),
            lib.DataLoader(datasets(lib)[1](9, "nested"), num_workers=num_workers,
                           batch_sampler=lib.BatchSampler(lib.RandomSampler(range(9)), 2,
                                                          False)),
            lib.DataLoader(datasets(lib)[0](11, "numpy"), batch_size=2, num_workers=2,
                           sampler=lib.WeightedRandomSampler([1.0] * 11, 9)),
        ]
        return [epochs(loader, 2) for loader in loaders], generator

    same_value(scenario)


def test_worker_info_is_none_in_the_main_process():
    assert mdl.get_worker_info() is None
    batch = next(iter(mdl.DataLoader(Observer(2), batch_size=None, num_workers=1)))
    assert batch["worker"] == 0 and batch["num_workers"] == 1
    assert mdl.get_worker_info() is None


@pytest.mark.parametrize("num_workers", [1, 2, 3])
@pytest.mark.parametrize("shard", [True, False])
def test_iterable_dataset_with_and_without_sharding(num_workers, shard):
    def scenario(lib):
        results = []
        for n, batch_size, drop_last, count in [(10, 3, False, 2), (10, 3, True, 1),
                                                (7, None, False, 1), (0, 2, False, 1)]:
            loader = lib.DataLoader(stream(lib, n, shard), batch_size=batch_size,
                                    drop_last=drop_last, num_workers=num_workers)
            results.append(epochs(loader, count))
        return results

    same_value(scenario)


@pytest.mark.parametrize("num_workers", [2, 3])
def test_a_stream_written_for_torch_shards_itself_in_our_workers(num_workers):
    """torch's get_worker_info() must answer inside our workers too, or a dataset written
    for torch repeats its whole stream in every worker."""
    def scenario(lib):
        return epochs(lib.DataLoader(TorchOnlyStream(11), batch_size=2,
                                     num_workers=num_workers), 2)

    batches = same_value(scenario)
    assert sorted(x for epoch in batches for batch in epoch for x in batch.tolist()) == \
        sorted(list(range(11)) * 2)


@pytest.mark.parametrize("num_workers", [1, 3])
def test_persistent_workers_over_three_epochs(num_workers):
    def scenario(lib):
        observer = lib.DataLoader(Observer(7), batch_size=2, shuffle=True,
                                  num_workers=num_workers, persistent_workers=True)
        counting = lib.DataLoader(Counting(6), batch_size=2, num_workers=num_workers,
                                  persistent_workers=True)
        streams = lib.DataLoader(stream(lib, 7, True), batch_size=2,
                                 num_workers=num_workers, persistent_workers=True)
        cut = lib.DataLoader(Counting(12), batch_size=2, shuffle=True,
                             num_workers=num_workers, persistent_workers=True)
        return (epochs(observer, 3), epochs(counting, 3), epochs(streams, 3),
                epochs(cut, 3, stop_after=2), torch.rand(1))

    same_value(scenario)


def test_persistent_workers_keep_their_pids():
    for lib in (tud, mdl):
        loader = lib.DataLoader(Pids(), batch_size=2, num_workers=2, persistent_workers=True)
        pids = [set(torch.cat(epochs(loader, 1)[0]).tolist()) for _ in range(3)]
        assert len(pids[0]) == 2 and pids[0] == pids[1] == pids[2], (lib.__name__, pids)
        fresh = lib.DataLoader(Pids(), batch_size=2, num_workers=2)
        assert not set(torch.cat(list(fresh)).tolist()) & pids[0]


@pytest.mark.parametrize("num_workers", [2, 3])
@pytest.mark.parametrize("prefetch_factor", [1, 2])
def test_out_of_order_yields_every_batch_once(num_workers, prefetch_factor):
    def scenario(lib):
        # sample 1 is slow, so batch 0 comes late and the others overtake it
        loader = lib.DataLoader(Squares(20, delay=0.3, slow=1), batch_size=2, shuffle=True,
                                num_workers=num_workers, prefetch_factor=prefetch_factor,
                                in_order=False)
        batches = list(loader)
        order = [batch["i"].tolist() for batch in batches]
        return sorted(order), torch.rand(1), order

    ref = run_and_keep_order(scenario)
    assert sorted(sum(ref, [])) == list(range(20))


def run_and_keep_order(scenario):
    """`same` on everything but the arrival order, which in_order=False leaves to timing;
    returns our arrival order."""
    orders = {}

    def without_order(lib):
        *rest, order = scenario(lib)
        orders[lib] = order
        return rest

    same_value(without_order)
    return orders[mdl]


def test_out_of_order_really_lets_batches_overtake():
    loader = mdl.DataLoader(Squares(8, delay=1.0, slow=0), batch_size=2, num_workers=2,
                            in_order=False)
    order = [batch["i"][0].item() for batch in loader]
    assert sorted(order) == [0, 2, 4, 6] and order[0] != 0, order
    in_order = mdl.DataLoader(Squares(8, delay=1.0, slow=0), batch_size=2, num_workers=2)
    assert [batch["i"][0].item() for batch in in_order] == [0, 2, 4, 6]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # torch's
def test_prefetch_factor_zero_fails_when_iterating():  # __del__ on its half-built iterator
    def scenario(lib):
        loader = lib.DataLoader(Squares(4), num_workers=1, prefetch_factor=0)
        return list(loader)

    assert same_error(scenario) is AssertionError


@pytest.mark.parametrize("context", ["fork", "context_object"])
def test_multiprocessing_context_as_string_or_object(context):
    def scenario(lib):
        ctx = multiprocessing.get_context("fork") if context == "context_object" else context
        return epochs(lib.DataLoader(Observer(5), batch_size=2, num_workers=2,
                                     multiprocessing_context=ctx), 1)

    same_value(scenario)


# Spawn starts a fresh interpreter per worker (seconds each on this machine): a small,
# representative subset. Persistent workers pay the start once for both epochs.
@pytest.mark.timeout(240)
def test_spawn_map_style_persistent():
    def scenario(lib):
        loader = lib.DataLoader(Observer(9), batch_size=2, shuffle=True, num_workers=2,
                                persistent_workers=True, worker_init_fn=record_init,
                                multiprocessing_context="spawn")
        return epochs(loader, 2), torch.rand(1)

    same_value(scenario)


@pytest.mark.timeout(240)
def test_spawn_iterable_dataset():
    def scenario(lib):
        loader = lib.DataLoader(stream(lib, 9, True), batch_size=2, num_workers=2,
                                multiprocessing_context="spawn")
        return epochs(loader, 1)

    same_value(scenario)


def test_numpy_seed_derivation_matches_torch():
    from torch.utils.data._utils.worker import _generate_state as torch_generate_state

    from minidataloader.worker import _generate_state

    generator = torch.Generator().manual_seed(0)
    seeds = [0, 1, 2**32 - 1, 2**32, 2**63 - 1] + torch.randint(
        0, 2**63 - 1, (200,), generator=generator).tolist()
    for seed in seeds:
        for worker_id in (0, 1, 7, 63):
            assert _generate_state(seed, worker_id) == torch_generate_state(seed, worker_id)


@pytest.mark.parametrize("batch_size", [None, 3])
def test_keys_reach_the_workers_datasets_as_torch_hands_them_on(batch_size):
    def scenario(lib):
        loader = lib.DataLoader(KeyEcho(), batch_size=batch_size, sampler=KEYS, num_workers=2,
                                collate_fn=as_received)
        return list(loader)

    same_value(scenario)
