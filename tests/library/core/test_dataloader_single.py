"""The single-process DataLoader against torch's: every batch, len(), attributes, warnings
and the RNG state afterwards."""

import pickle

import pytest
import torch
import torch.utils.data as tud

import minidataloader as mdl
from minidataloader import _tracing
from tests.support.differential import SAMPLE_KINDS, datasets, epochs, same, same_error


@pytest.mark.parametrize("n", [0, 1, 7, 1000])
@pytest.mark.parametrize("batch_size", [1, 5, 1024])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("use_generator", [False, True])
def test_map_style_grid(n, batch_size, shuffle, drop_last, use_generator):
    seed = n + batch_size + drop_last  # a different seed for each case

    def scenario(lib):
        generator = torch.Generator().manual_seed(seed + 11) if use_generator else None
        loader = lib.DataLoader(datasets(lib)[0](n), batch_size=batch_size, shuffle=shuffle,
                                drop_last=drop_last, generator=generator)
        return epochs(loader, 2), len(loader), generator, torch.rand(2)

    same(scenario, seed)


@pytest.mark.parametrize("kind", SAMPLE_KINDS)
@pytest.mark.parametrize("dataset", ["map", "batched", "iterable"])
@pytest.mark.parametrize("batch_size", [None, 1, 3])
def test_sample_structures(kind, dataset, batch_size):
    def scenario(lib):
        squares, batched_squares, stream = datasets(lib)
        ds = {"map": squares, "batched": batched_squares, "iterable": stream}[dataset](8, kind)
        shuffle = None if dataset == "iterable" else True
        return epochs(lib.DataLoader(ds, batch_size=batch_size, shuffle=shuffle), 2)

    same(scenario)


@pytest.mark.parametrize("n", [0, 1, 7, 20])
@pytest.mark.parametrize("batch_size", [None, 1, 3, 50])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("reported_len", [None, "exact", "under", "over"])
def test_iterable_dataset(n, batch_size, drop_last, reported_len):
    length = {None: None, "exact": n, "under": max(n - 3, 0), "over": n + 4}[reported_len]

    def scenario(lib):
        loader = lib.DataLoader(datasets(lib)[2](n, "tensor", length), batch_size=batch_size,
                                drop_last=drop_last)
        before = len(loader) if length is not None else None  # arms the too-long warning
        return before, epochs(loader, 2), epochs(loader, 1, stop_after=2)

    same(scenario)


class Flaky:
    """An iterator that raises StopIteration every fifth call, then carries on (for a while):
    once a stream has ended inside a batch, the loader must not ask it again."""

    def __init__(self):
        self.calls = 0

    def __iter__(self):
        return self

    def __next__(self):
        self.calls += 1
        if self.calls % 5 == 0 or self.calls > 23:  # and ends for good
            raise StopIteration
        return self.calls


@pytest.mark.parametrize("batch_size", [None, 1, 3, 4])
def test_a_stream_that_ended_is_not_asked_again(batch_size):
    def scenario(lib):
        class Restarting(lib.IterableDataset):
            def __iter__(self):
                return Flaky()

        return epochs(lib.DataLoader(Restarting(), batch_size=batch_size), 2)

    same(scenario)


def test_iterable_length_warning_counts_batches_against_samples():
    def scenario(lib):
        loader = lib.DataLoader(datasets(lib)[2](12, "int", 3), batch_size=2)
        return len(loader), list(loader)  # 6 batches > 3 samples reported: 3 warnings

    ref = same(scenario)
    assert ref.warnings == [UserWarning] * 3


@pytest.mark.parametrize("sampler", ["sequential", "random", "random_replacement",
                                     "subset_random", "weighted", "list", "generator",
                                     "distributed", "torch_random"])
@pytest.mark.parametrize("batch_size", [None, 1, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_custom_samplers(sampler, batch_size, drop_last):

    def scenario(lib):
        n = 11
        generator = torch.Generator().manual_seed(1)
        make = {
            "sequential": lambda: lib.SequentialSampler(range(n)),
            "random": lambda: lib.RandomSampler(range(n), generator=generator),
            "random_replacement": lambda: lib.RandomSampler(range(n), True, 17),
            "subset_random": lambda: lib.SubsetRandomSampler([3, 1, 4, 1, 5, 9]),
            "weighted": lambda: lib.WeightedRandomSampler([1.0] * 5 + [9.0] * 6, 13),
            "list": lambda: [10, 0, 5, 5, 2],
            "generator": lambda: (i for i in range(n) if i % 3),
            "distributed": lambda: lib.DistributedSampler(range(n), 2, 1, seed=4),
            "torch_random": lambda: tud.RandomSampler(range(n)),  # interop: torch's own
        }[sampler]
        loader = lib.DataLoader(datasets(lib)[0](n, "tensor"), batch_size=batch_size,
                                sampler=make(), drop_last=drop_last)
        length = None if sampler == "generator" else len(loader)
        return length, epochs(loader, 2), generator

    same(scenario)


@pytest.mark.parametrize("batch_sampler", ["batch", "batch_drop", "list", "generator",
                                           "random_batch", "torch_batch"])
def test_custom_batch_samplers(batch_sampler):
    def scenario(lib):
        make = {
            "batch": lambda: lib.BatchSampler(lib.RandomSampler(range(9)), 4, False),
            "batch_drop": lambda: lib.BatchSampler(range(9), 4, True),
            "list": lambda: [[1, 2], [8], [], [0, 0, 0]],
            "generator": lambda: ([i, i + 1] for i in range(0, 8, 2)),
            "random_batch": lambda: lib.BatchSampler(lib.RandomSampler(range(9), True, 20), 3,
                                                     False),
            "torch_batch": lambda: tud.BatchSampler(tud.SequentialSampler(range(9)), 2, False),
        }[batch_sampler]
        loader = lib.DataLoader(datasets(lib)[1](9, "nested"), batch_sampler=make())
        length = None if batch_sampler == "generator" else len(loader)
        return length, epochs(loader, 2), loader.batch_size, loader.drop_last

    same(scenario)


def test_custom_collate_fn():
    def scenario(lib):
        def collate(batch):
            return {"size": len(batch), "batch": lib.default_collate(batch), "rand": torch.rand(1)}

        loaders = [lib.DataLoader(datasets(lib)[0](7, "tensor"), batch_size=3, shuffle=True,
                                  collate_fn=collate),
                   lib.DataLoader(datasets(lib)[2](5, "int"), batch_size=None, collate_fn=str),
                   lib.DataLoader(datasets(lib)[0](4, "nested"), batch_size=2,
                                  collate_fn=lambda batch: batch)]
        return [epochs(loader) for loader in loaders]

    same(scenario)


def test_getitems_and_opting_out_of_it():
    def scenario(lib):
        batched = datasets(lib)[1]

        class OptedOut(batched):
            __getitems__ = None

        return [epochs(lib.DataLoader(cls(6), batch_size=4)) for cls in (batched, OptedOut)]

    same(scenario)


def test_a_loader_pickles_and_keeps_its_order():
    def scenario(lib):
        loader = lib.DataLoader(lib.TensorDataset(torch.arange(9)), batch_size=4, shuffle=True)
        list(loader)
        copy = pickle.loads(pickle.dumps(loader))
        return list(copy), list(loader), copy

    assert same(scenario).error is None


def test_attributes_len_and_iterator_protocol():
    def scenario(lib):
        loader = lib.DataLoader(datasets(lib)[0](10), batch_size=3, shuffle=True,
                                generator=torch.Generator().manual_seed(2))
        it = iter(loader)
        first = next(it)
        return (loader, loader.multiprocessing_context, loader.prefetch_factor,
                loader.persistent_workers, loader.in_order, len(loader), len(it),
                iter(it) is it, first, list(it), type(loader._index_sampler).__name__)

    same(scenario)
    same(lambda lib: [lib.DataLoader(range(5), batch_size=None), lib.DataLoader(range(5))])
    same(lambda lib: lib.DataLoader(datasets(lib)[2](5)))


def test_unsized_datasets_and_samplers():
    assert same_error(lambda lib: len(lib.DataLoader(datasets(lib)[2](5)))) is TypeError
    assert same_error(lambda lib: len(iter(lib.DataLoader(datasets(lib)[2](5))))) is TypeError
    same(lambda lib: list(lib.DataLoader(range(4), sampler=iter([3, 1]), batch_size=None)))


def test_frozen_attributes():
    for attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                 "persistent_workers"):
        assert same_error(lambda lib, a=attr: setattr(lib.DataLoader(range(3)), a, None)) \
            is ValueError

    def scenario(lib):
        loader = lib.DataLoader(range(5), batch_size=2)
        loader.num_workers = 0
        loader.collate_fn = lambda batch: sum(batch)
        loader.timeout = 0
        return list(loader)

    same(scenario)


def test_iterators_cannot_be_pickled():
    assert same_error(lambda lib: pickle.dumps(iter(lib.DataLoader(range(3))))) \
        is NotImplementedError


def test_interop_with_datasets_built_on_torch():
    def scenario(lib):
        torch_squares, torch_batched, torch_stream = datasets(tud)
        pair = tud.TensorDataset(torch.arange(10), torch.arange(10) * 2.0)
        loaders = [
            lib.DataLoader(pair, batch_size=4, shuffle=True),
            lib.DataLoader(tud.Subset(torch_batched(20), [5, 1, 7]), batch_size=2),
            lib.DataLoader(torch_stream(7, "nested"), batch_size=3),
            lib.DataLoader(tud.ConcatDataset([torch_squares(3), pair]), batch_size=None),
            lib.DataLoader(tud.ChainDataset([torch_stream(2), torch_stream(3)]), batch_size=4),
            lib.DataLoader(tud.StackDataset(a=torch_squares(10), b=pair), batch_size=5),
        ]
        return [epochs(loader) for loader in loaders]

    assert same(scenario).error is None
    # an IterableDataset built on torch's base class is still refused a sampler
    assert same_error(lambda lib: lib.DataLoader(datasets(tud)[2](3), sampler=[0])) is ValueError


def test_num_workers_and_prefetch_factor_are_kept():
    # (multi-process loading itself is tested in tests/library/multiprocess)
    loader = mdl.DataLoader(range(5), num_workers=1, prefetch_factor=3)
    assert (len(loader), loader.prefetch_factor) == (5, 3)
    assert [batch.item() for batch in loader] == [0, 1, 2, 3, 4]


def test_tracing_events_of_an_epoch():
    events = []
    _tracing.start(events.append)
    try:
        loader = mdl.DataLoader(range(5), batch_size=2)
        list(loader)
        list(mdl.DataLoader(datasets(mdl)[2](3), batch_size=2))
    finally:
        _tracing.stop()
    names = [(e["event"], e.get("batch", e.get("epoch"))) for e in events]
    per_batch = [[("fetch_start", b), ("fetch_end", b), ("yielded", b)] for b in range(3)]
    assert names[:11] == [("epoch_start", 0), *sum(per_batch, []), ("epoch_end", 0)]
    assert names[11:] == [("epoch_start", 0), *sum(per_batch[:2], []), ("fetch_start", 2),
                          ("epoch_end", 0)]
    assert all(e["worker"] is None for e in events if e["event"].startswith("fetch"))


def test_epochs_are_numbered_per_loader():
    events = []
    loader = mdl.DataLoader(range(2))
    _tracing.start(events.append)
    try:
        for _ in range(3):
            list(loader)
    finally:
        _tracing.stop()
    assert [e["epoch"] for e in events if e["event"] == "epoch_start"] == [0, 1, 2]


def test_tracing_off_never_calls_the_recorder(monkeypatch):
    def explode(*args, **kwargs):
        raise AssertionError("the recorder was called with tracing off")

    monkeypatch.setattr(_tracing, "_record", explode)
    assert not _tracing.enabled
    pinned = mdl.DataLoader(range(5), batch_size=2)
    pinned._pin_memory_fn = lambda batch: batch
    loaders = [mdl.DataLoader(datasets(mdl)[1](9), batch_size=2, shuffle=True), pinned,
               mdl.DataLoader(datasets(mdl)[2](5), batch_size=2)]
    for loader in loaders:
        for _ in range(2):
            assert list(loader)
    _tracing.start(lambda record: None)  # the same patch, tracing on: it must fire
    try:
        with pytest.raises(AssertionError, match="tracing off"):
            list(loaders[0])
    finally:
        _tracing.stop()
