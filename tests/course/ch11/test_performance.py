"""Chapter 11's demo pieces (course/minidataloader_course/chapters/ch11/performance.py): the batched dataset
gives torch's batches, the transfer experiment and the memory reader work, the committed
report can be replaced by the reader's own, samples of different lengths are measured against
the ideal epoch. Measurements are never compared with a number
here (that is the chapter's job, with margins); only their shape and their sense."""

from __future__ import annotations

import os
import sys

import pytest
import torch
import torch.utils.data as tud

import minidataloader as mdl
from minidataloader_course.chapters.ch11 import performance as perf
from minidataloader_course.chapters.ch11 import solution as solutions

linux = pytest.mark.skipif(sys.platform != "linux", reason="fork and /proc are Linux's")


def _table(rows=300, columns=5, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, columns, generator=generator), torch.randint(0, 9, (rows,), generator=generator)


def _batches(data, dataset, num_workers, **kwargs):
    sampler = data.RandomSampler(dataset, generator=torch.Generator().manual_seed(3))
    loader = data.DataLoader(dataset, batch_size=32, sampler=sampler, num_workers=num_workers,
                             multiprocessing_context="fork" if num_workers else None, **kwargs)
    return list(loader)


def _assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert len(x) == len(y)
        for u, v in zip(x, y):
            assert torch.equal(u, v)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("num_workers", [0, pytest.param(2, marks=linux)])
def test_sliced_rows_give_torchs_batches(num_workers):
    features, labels = _table()
    dataset = perf.SlicedRows(features, labels)
    theirs = _batches(tud, dataset, num_workers, collate_fn=perf.keep_batch)
    ours = _batches(mdl, dataset, num_workers, collate_fn=perf.keep_batch)
    _assert_same(theirs, ours)
    # and the same batches as fetching one row at a time with default_collate
    _assert_same(ours, _batches(tud, perf.InMemoryRows(features, labels), 0))
    # and as the exercise's plain slicing, for the same sampler seed
    sliced = list(solutions.sliced_batches(features, labels, 32, torch.Generator().manual_seed(3)))
    _assert_same(ours, sliced)


def test_sliced_rows_getitem_is_one_row():
    features, labels = _table(rows=4)
    assert torch.equal(perf.SlicedRows(features, labels)[2][0], features[2])
    assert len(perf.SlicedRows(features, labels)) == 4


@linux
@pytest.mark.timeout(120)
def test_transfer_seconds_measures_every_way():
    for how in perf.HOW:
        seconds = perf.transfer_seconds(1, how, count=2)
        assert len(seconds) == 2 and all(0 < s < 60 for s in seconds), (how, seconds)
    with pytest.raises(ValueError, match="how should be one of"):
        perf.transfer_seconds(1, "by carrier pigeon")


@linux
@pytest.mark.timeout(120)
def test_transfer_works_after_this_process_used_its_thread_pool():
    # The sender is forked: before it set one thread, a parent whose OpenMP pool had run
    # (as in a long test session, or a notebook) forked a sender that waited forever.
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        (torch.ones(2**22) * 2).sum()
        assert len(perf.transfer_seconds(1, perf.HOW[0], count=1)) == 1
    finally:
        torch.set_num_threads(threads)


@linux
def test_memory_kib_of_this_process():
    memory = perf.memory_kib()
    assert set(memory) == {"rss", "pss", "uss"}
    assert 0 < memory["uss"] <= memory["pss"] <= memory["rss"]
    assert perf.memory_kib(os.getpid())["rss"] > 0


@linux
@pytest.mark.timeout(120)
def test_workers_share_the_array_and_report_their_pids():
    dataset = perf.SharedArray(megabytes=8, rows=8)
    loader = mdl.DataLoader(dataset, batch_size=2, num_workers=2, multiprocessing_context="fork",
                            persistent_workers=True)
    iterator = iter(loader)
    pids = set()
    for _ in range(2):
        sums, batch_pids = next(iterator)
        pids.update(batch_pids.tolist())
    assert len(pids) == 2 and os.getpid() not in pids
    for pid in pids:  # the 8 MB array was read in each worker, not copied into it
        memory = perf.memory_kib(pid)
        assert memory["rss"] > 8 * 1024 * 0.9
        assert memory["uss"] < memory["rss"] - 8 * 1024 * 0.5
    expected = dataset.array.sum(axis=1)
    assert torch.allclose(sums, torch.tensor(expected[2:4], dtype=sums.dtype), rtol=1e-4)
    del iterator


def test_digits_for_training_enlarges_each_image():
    image, label = perf.DigitsForTraining()[0]
    assert image.shape == (1, 64, 64) and image.dtype == torch.float32
    assert 0.0 <= image.min() <= image.max() <= 1.0 and isinstance(label, int)


@linux
@pytest.mark.timeout(120)
@pytest.mark.parametrize("data", [tud, mdl], ids=["torch", "minidataloader"])
def test_workers_set_torchs_pool_to_one_thread_but_not_numpys(data):
    main = perf.thread_pools()
    seen = {}
    for init in (None, perf.blas_threads_by_environment, perf.one_blas_thread):
        loader = data.DataLoader(perf.ThreadPools(), batch_size=None, num_workers=2,
                                 worker_init_fn=init, multiprocessing_context="fork")
        samples = list(loader)
        assert len({sample.pop("pid") for sample in samples}) == 2
        assert all(sample["torch threads"] == 1 for sample in samples)
        seen[getattr(init, "__name__", None)] = {sample["numpy BLAS threads"]
                                                 for sample in samples}
    assert seen == {None: {main["numpy BLAS threads"]},
                    "blas_threads_by_environment": {main["numpy BLAS threads"]},
                    "one_blas_thread": {1}}


def test_sliced_batches_without_a_generator_follow_random_sampler():
    features, labels = _table(rows=50)
    torch.manual_seed(7)
    order = list(tud.RandomSampler(range(50)))  # a seed from the global generator, then its own
    after = torch.rand(1)
    torch.manual_seed(7)
    sliced = list(solutions.sliced_batches(features, labels, 16))
    assert torch.equal(torch.cat([y for _, y in sliced]), labels[order])
    assert torch.equal(torch.rand(1), after)  # the same draws from the global generator


def test_text_lengths_have_a_long_tail():
    lengths = perf.text_lengths(500)
    assert lengths == perf.text_lengths(500) and len(lengths) == 500
    assert all(2 <= n <= 1000 and isinstance(n, int) for n in lengths)
    assert max(lengths) > 5 * sorted(lengths)[250]


def test_token_budget_batches_are_the_same_in_either_loader():
    lengths = perf.text_lengths(300)
    epochs = {}
    for data in (tud, mdl):
        sampler = solutions.TokenBudgetBatchSampler(lengths, 1024,
                                                    generator=torch.Generator().manual_seed(1))
        loader = data.DataLoader(perf.TokenSamples(lengths, 0.0), batch_sampler=sampler,
                                 collate_fn=perf.keep_batch)
        epochs[data.__name__] = [list(loader), list(loader)]
        assert len(loader) == len(epochs[data.__name__][0])
    theirs, ours = epochs.values()
    assert theirs == ours and theirs[0] != theirs[1]
    for batches in theirs:
        assert sorted(i for batch in batches for i in batch) == list(range(300))
        assert max(len(batch) * max(lengths[i] for i in batch) for batch in batches) <= 1024


@linux
@pytest.mark.timeout(120)
def test_epoch_vs_ideal_is_no_faster_than_the_ideal():
    lengths = [10] * 16  # four batches of equal work: two per worker
    ratios = perf.epoch_vs_ideal({"fours": mdl.BatchSampler(range(16), 4, drop_last=False)},
                                 lengths, 1e-4, rounds=1, in_order=False)
    assert set(ratios) == {"fours"} and 0.95 < ratios["fours"] < 60
