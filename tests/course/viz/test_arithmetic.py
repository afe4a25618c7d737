"""minidataloader_course.viz.arithmetic.epoch_arithmetic, and the explorer's layout of an epoch, against
len() and against what real loaders deliver: torch's (the specification) and
minidataloader's, over a wide random grid."""

from __future__ import annotations

import pytest

from minidataloader_course.viz.arithmetic import epoch_arithmetic
from minidataloader_course.viz.explorer import epoch_layout

from ._runs import LIBRARIES, case_id, iterable_grid, map_grid, run_iterable, run_map

MAP_CASES = map_grid(300)
ITERABLE_CASES = iterable_grid(40)


# --------------------------------------------------------------------------- by hand

@pytest.mark.parametrize("args, kwargs, expected", [
    ((10, 3), {}, dict(iterations_per_epoch=4, last_batch_size=1, samples_dropped=0,
                       partial_batches=(1,), reported_len=4)),
    ((10, 3, True, 5), {}, dict(iterations_per_epoch=3, last_batch_size=3, samples_dropped=1,
                               partial_batches=(), total_iterations=15)),
    ((12, 4), {}, dict(iterations_per_epoch=3, last_batch_size=4, partial_batches=())),
    ((0, 4), {}, dict(iterations_per_epoch=0, last_batch_size=0, samples_yielded=0)),
    # DistributedSampler, 10 samples on 4 ranks: 3 each, 2 of them repeats ...
    ((10, 2), dict(replicas=4), dict(samples_per_stream=(3, 3, 3, 3), samples_padded=2,
                                    iterations_per_epoch=2, last_batch_size=1,
                                    samples_yielded=12)),
    # ... or with the sampler's drop_last, 2 each and 2 samples never seen
    ((10, 2), dict(replicas=4, sampler_drop_last=True),
     dict(samples_per_stream=(2, 2, 2, 2), samples_padded=0, samples_dropped=2,
          iterations_per_epoch=1, last_batch_size=2)),
    # both drop_lasts: 7 per rank, batches of 4 -> 1 batch each, 3 dropped per rank + 2 cut
    ((23, 4, True), dict(replicas=3, sampler_drop_last=True),
     dict(samples_per_stream=(7, 7, 7), iterations_per_epoch=1, samples_dropped=11)),
    # IterableDataset, 10 samples, 2 workers taking every other one: 5 each -> 3 + 2 twice
    ((10, 3), dict(iterable=True, num_workers=2),
     dict(samples_per_stream=(5, 5), iterations_per_epoch=4, partial_batches=(2, 2),
          last_batch_size=2, reported_len=4, len_is_estimate=True, len_warning=False)),
    # contiguous blocks of ceil(10 / 4) = 3: 3, 3, 3, 1
    ((10, 3), dict(iterable=True, num_workers=4, sharding="blocks"),
     dict(samples_per_stream=(3, 3, 3, 1), iterations_per_epoch=4, partial_batches=(1,),
          last_batch_size=1)),
    # no sharding: every worker yields all 10 -> 3 x 4 batches; len() still says 4
    ((10, 3), dict(iterable=True, num_workers=3, sharding="none"),
     dict(iterations_per_epoch=12, samples_duplicated=20, partial_batches=(1, 1, 1),
          reported_len=4, len_warning=True)),
    # blocks of ceil(10 / 3) = 4: 4, 4, 2; batches of 3 arrive w0 w1 w2 | w0 w1, so worker
    # 2's partial batch comes first and the epoch ends on worker 1's
    ((10, 3), dict(iterable=True, num_workers=3, sharding="blocks"),
     dict(samples_per_stream=(4, 4, 2), iterations_per_epoch=5, partial_batches=(2, 1, 1),
          last_batch_size=1)),
])
def test_known_cases(args, kwargs, expected):
    result = epoch_arithmetic(*args, **kwargs)
    assert {name: getattr(result, name) for name in expected} == expected


def test_the_chapter_1_signature_still_works():
    result = epoch_arithmetic(1000, 64, drop_last=False, epochs=3)
    assert (result.dataset_size, result.batch_size, result.drop_last, result.epochs,
            result.iterations_per_epoch, result.last_batch_size, result.samples_dropped,
            result.total_iterations) == (1000, 64, False, 3, 16, 40, 0, 48)


@pytest.mark.parametrize("kwargs, message", [
    (dict(dataset_size=-1, batch_size=2), "dataset_size"),
    (dict(dataset_size=5, batch_size=0), "batch_size"),
    (dict(dataset_size=5, batch_size=True), "batch_size"),
    (dict(dataset_size=5, batch_size=2, replicas=0), "replicas"),
    (dict(dataset_size=5, batch_size=2, num_workers=-1), "num_workers"),
    (dict(dataset_size=5, batch_size=2, sharding="random"), "sharding"),
    (dict(dataset_size=5, batch_size=2, iterable=True, replicas=2), "replicas=1"),
])
def test_bad_input_says_what_to_change(kwargs, message):
    with pytest.raises(ValueError, match=message):
        epoch_arithmetic(**kwargs)


@pytest.mark.parametrize("case", MAP_CASES[:100] + ITERABLE_CASES, ids=case_id)
def test_every_sample_is_accounted_for(case):
    case = {k: v for k, v in case.items() if k not in ("shuffle", "seed")}
    if "num_workers" in case:
        case["iterable"] = True
    a = epoch_arithmetic(**case)
    assert a.samples_yielded + a.samples_dropped == (
        a.dataset_size + a.samples_padded + a.samples_duplicated)
    per_process = (a.iterations_per_epoch - len(a.partial_batches)) * a.batch_size + sum(
        a.partial_batches)
    assert a.samples_yielded == per_process * (1 if a.iterable else a.replicas)
    assert a.total_iterations == a.iterations_per_epoch * a.epochs


# --------------------------------------------------------------------------- real loaders
# Each real run checks two models of it: the arithmetic, and the explorer's layout (which
# sample goes to which rank or worker, in which batch, in which order).

def batches_of(lane) -> list[list[int]]:
    steps = sorted({slot.step for slot in lane.slots if slot.step is not None})
    return [[slot.index for slot in lane.slots if slot.step == step] for step in steps]


@pytest.mark.parametrize("name", LIBRARIES)
@pytest.mark.parametrize("case", MAP_CASES, ids=case_id)
def test_map_style_matches_real_loaders(name, case):
    run = run_map(name, **case)
    a = epoch_arithmetic(case["dataset_size"], case["batch_size"], case["drop_last"],
                         case["epochs"], replicas=case["replicas"],
                         sampler_drop_last=case["sampler_drop_last"])
    n, replicas, batch_size = case["dataset_size"], case["replicas"], case["batch_size"]
    assert run.reported_len == [a.reported_len] * replicas == [a.iterations_per_epoch] * replicas
    assert not a.len_is_estimate
    for epoch, per_rank in enumerate(run.epochs):
        for batches in per_rank:
            sizes = [len(batch) for batch in batches]
            assert len(sizes) == a.iterations_per_epoch
            assert (sizes[-1] if sizes else 0) == a.last_batch_size
            assert tuple(size for size in sizes if size < batch_size) == a.partial_batches
        delivered = [i for batches in per_rank for batch in batches for i in batch]
        assert len(delivered) == a.samples_yielded
        streams = run.sampler_streams[epoch]
        if streams is not None:  # DistributedSampler: shares, padding and cuts
            assert [len(stream) for stream in streams] == list(a.samples_per_stream)
            total = sum(len(stream) for stream in streams)
            assert a.samples_padded == (0 if case["sampler_drop_last"] else total - n)
            cut = n - total if case["sampler_drop_last"] else 0
            assert a.samples_dropped == cut + total - len(delivered)
        else:
            assert a.samples_dropped == n - len(delivered) and a.samples_padded == 0

        layout = epoch_layout(n, batch_size, case["drop_last"], replicas=replicas,
                              sampler_drop_last=case["sampler_drop_last"],
                              shuffle=case["shuffle"], seed=case["seed"], epoch=epoch)
        assert [batches_of(lane) for lane in layout.lanes] == per_rank
        dropped = {slot.index for lane in layout.lanes for slot in lane.slots if slot.step is None}
        if streams is None:
            assert dropped == set(range(n)) - set(delivered)
        else:
            for lane, stream, batches in zip(layout.lanes, streams, per_rank):
                taken = sum(len(batch) for batch in batches)
                assert [slot.index for slot in lane.slots[:len(stream)]] == stream
                assert all(slot.step is None for slot in lane.slots[taken:])
            cut_slots = [slot.index for lane in layout.lanes for slot in lane.slots[len(streams[0]):]]
            assert sorted(cut_slots) == sorted(set(range(n)) - {i for s in streams for i in s})
            originals = [slot.index for lane in layout.lanes
                         for slot in lane.slots[:len(streams[0])] if not slot.padded]
            assert len(originals) == n - len(cut_slots) == len(set(originals))
    assert sum(len(per_rank[0]) for per_rank in run.epochs) == a.total_iterations


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", LIBRARIES)
@pytest.mark.parametrize("case", ITERABLE_CASES, ids=case_id)
def test_iterable_with_workers_matches_real_loaders(name, case):
    run = run_iterable(name, **case)
    n, batch_size, workers = case["dataset_size"], case["batch_size"], case["num_workers"]
    a = epoch_arithmetic(n, batch_size, case["drop_last"], iterable=True, num_workers=workers,
                         sharding=case["sharding"])
    sizes = [len(indices) for _, indices in run.batches]
    assert len(sizes) == a.iterations_per_epoch
    assert (sizes[-1] if sizes else 0) == a.last_batch_size
    assert tuple(size for size in sizes if size < batch_size) == a.partial_batches
    assert sum(sizes) == a.samples_yielded
    worker_ids = list(range(workers)) if workers else [-1]
    yielded_by = [sum(len(ix) for w, ix in run.batches if w == worker) for worker in worker_ids]
    dropped = [share - got for share, got in zip(a.samples_per_stream, yielded_by)]
    assert all(0 <= d < batch_size for d in dropped) and sum(dropped) == a.samples_dropped
    # len() is torch's estimate from len(dataset), and the length warning fires as modelled
    assert a.len_is_estimate
    assert run.reported_len == a.reported_len
    assert bool(run.len_warnings) == a.len_warning, run.len_warnings

    layout = epoch_layout(n, batch_size, case["drop_last"], iterable=True,
                          num_workers=workers, sharding=case["sharding"])
    arrivals = [(worker_ids[k], [slot.index for slot in lane.slots if slot.step == step])
                for step in range(a.iterations_per_epoch)
                for k, lane in enumerate(layout.lanes) if any(s.step == step for s in lane.slots)]
    assert arrivals == run.batches
    for lane, got in zip(layout.lanes, yielded_by):
        assert all(slot.step is None for slot in lane.slots[got:])
