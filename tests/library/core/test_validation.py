"""Every argument check of torch's DataLoader, in torch's order: same exception type (ours
may be a subclass), same warning categories, same RNG use before the error."""

import multiprocessing

import pytest
import torch

import minidataloader as mdl
from minidataloader.dataset import AssertionValueError
from tests.support.differential import datasets, same

MAP, STREAM, EMPTY = "map", "stream", "empty"


def build(lib, dataset, kwargs):
    ds = {MAP: lambda: datasets(lib)[0](6), STREAM: lambda: datasets(lib)[2](6, "int", 6),
          EMPTY: lambda: datasets(lib)[0](0)}[dataset]()
    return lib.DataLoader(ds, **kwargs)


def construct_and_iterate(dataset, kwargs):
    """torch starts worker processes for num_workers > 0, which we do not yet: there the
    scenario stops after construction (and len())."""

    def scenario(lib):
        loader = build(lib, dataset, kwargs)
        if kwargs.get("num_workers", 0) > 0:
            return len(loader), loader.prefetch_factor, loader.multiprocessing_context
        return list(loader), len(loader)

    return scenario


INVALID = [
    # workers, timeout, prefetching
    (MAP, {"num_workers": -1}),
    (MAP, {"num_workers": -1, "timeout": -1}),  # num_workers is checked first
    (MAP, {"timeout": -0.5}),
    (MAP, {"prefetch_factor": 2}),
    (MAP, {"prefetch_factor": 0}),
    (MAP, {"num_workers": 2, "prefetch_factor": -1}),
    (MAP, {"persistent_workers": True}),
    (MAP, {"persistent_workers": 1, "prefetch_factor": 1}),  # prefetch_factor first
    (MAP, {"multiprocessing_context": "fork"}),
    (MAP, {"multiprocessing_context": multiprocessing.get_context("spawn")}),
    (MAP, {"num_workers": 1, "multiprocessing_context": "threads"}),
    (MAP, {"num_workers": 1, "multiprocessing_context": 3}),
    (MAP, {"num_workers": 1, "multiprocessing_context": multiprocessing}),
    (MAP, {"timeout": 2}),  # accepted, then refused when the epoch starts
    (MAP, {"timeout": 2, "shuffle": True}),
    (STREAM, {"timeout": 1, "pin_memory": True}),
    # iterable datasets
    (STREAM, {"shuffle": True}),
    (STREAM, {"shuffle": 1}),
    (STREAM, {"shuffle": "no"}),
    (STREAM, {"shuffle": []}),  # torch tests membership in a set: TypeError
    (STREAM, {"sampler": [0, 1]}),
    (STREAM, {"shuffle": True, "sampler": [0, 1]}),
    (STREAM, {"batch_sampler": [[0, 1]]}),
    (STREAM, {"sampler": [0], "batch_sampler": [[0, 1]]}),
    (STREAM, {"batch_size": None, "drop_last": True}),
    (STREAM, {"batch_size": 0}),
    # samplers and shuffle
    (MAP, {"sampler": [0, 1], "shuffle": True}),
    (MAP, {"sampler": [0, 1], "shuffle": "yes"}),
    (MAP, {"batch_sampler": [[0]], "batch_size": 2}),
    (MAP, {"batch_sampler": [[0]], "batch_size": None}),
    (MAP, {"batch_sampler": [[0]], "shuffle": True}),
    (MAP, {"batch_sampler": [[0]], "sampler": [0]}),
    (MAP, {"batch_sampler": [[0]], "drop_last": True}),
    (MAP, {"batch_size": None, "drop_last": True}),
    (MAP, {"batch_size": 0}),
    (MAP, {"batch_size": -1}),
    (MAP, {"batch_size": 2.0}),
    (MAP, {"batch_size": True}),
    (MAP, {"batch_size": "2"}),
    (MAP, {"drop_last": 1}),
    (MAP, {"drop_last": None}),
    (EMPTY, {"shuffle": True}),
    (EMPTY, {"shuffle": True, "generator": torch.Generator()}),
    (MAP, {"sampler": 5}),
    (MAP, {"batch_sampler": 5}),
    (MAP, {"sampler": [0, 9]}),  # an index the dataset does not have
]

VALID = [
    (MAP, {"shuffle": 0}), (MAP, {"shuffle": "yes"}), (STREAM, {"shuffle": False}),
    (STREAM, {"shuffle": 0}), (MAP, {"batch_sampler": [[0, 1]], "batch_size": 1}),
    (MAP, {"batch_sampler": [[0, 1]], "batch_size": True, "shuffle": False}),
    (MAP, {"num_workers": 1, "prefetch_factor": 0}),
    (MAP, {"num_workers": 3, "multiprocessing_context": "spawn", "persistent_workers": True}),
    (MAP, {"num_workers": 1, "multiprocessing_context": multiprocessing.get_context("fork")}),
    (MAP, {"pin_memory": True}),
    (MAP, {"pin_memory": True, "pin_memory_device": "cuda"}),
    (MAP, {"pin_memory_device": "cuda"}),
    (MAP, {"in_order": False}), (MAP, {"in_order": "whatever"}),
    (MAP, {"num_workers": 1000}),  # more workers than CPUs: a warning
    (MAP, {"worker_init_fn": print, "generator": torch.Generator().manual_seed(3)}),
]


def case_ids(cases):
    """Stable ids (object reprs hold addresses, which differ between xdist workers)."""
    return [f"{i}-{dataset}-{'-'.join(kwargs)}" for i, (dataset, kwargs) in enumerate(cases)]


@pytest.mark.parametrize("dataset, kwargs", INVALID, ids=case_ids(INVALID))
def test_invalid_arguments(dataset, kwargs):
    ref = same(construct_and_iterate(dataset, kwargs))
    assert ref.error is not None, "the case list should hold invalid combinations only"


@pytest.mark.parametrize("dataset, kwargs", VALID, ids=case_ids(VALID))
def test_valid_edge_arguments(dataset, kwargs):
    ref = same(construct_and_iterate(dataset, kwargs))
    assert ref.error is None


def test_pin_memory_warnings_come_with_each_epoch():
    def scenario(lib):
        loader = build(lib, MAP, {"pin_memory": True, "pin_memory_device": "cpu"})
        return list(loader), list(loader)

    ref = same(scenario)
    expected = 4 if not torch.accelerator.is_available() else 2
    assert ref.warnings == [UserWarning] * expected


def test_setting_multiprocessing_context_later():
    def scenario(lib, workers, context):
        loader = build(lib, MAP, {"num_workers": workers})
        loader.multiprocessing_context = context
        return loader.multiprocessing_context

    for workers, context in [(0, "spawn"), (2, "nope"), (2, 1.5), (0, None), (2, None),
                             (2, "forkserver")]:
        same(lambda lib, w=workers, c=context: scenario(lib, w, c))


def test_our_assertion_errors_are_also_value_errors():
    with pytest.raises(ValueError, match="timeout"):
        iter(mdl.DataLoader(range(3), timeout=1))
    assert issubclass(AssertionValueError, AssertionError)
