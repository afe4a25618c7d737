"""Samplers against torch's over several epochs: same index streams, same RNG use."""

import pytest
import torch

from tests.support.differential import same, same_error

EPOCHS = 3


def epochs_of(sampler, generator=None):
    """Indices of several epochs, with len() and the global RNG read between them."""
    result = []
    for _ in range(EPOCHS):
        result.append((list(sampler), len(sampler), torch.rand(1)))
    return result, generator


def with_generator(use_generator, seed=7):
    return torch.Generator().manual_seed(seed) if use_generator else None


@pytest.mark.parametrize("n", [1, 2, 7, 64, 1000])
def test_sequential_sampler(n):
    same(lambda lib: epochs_of(lib.SequentialSampler(range(n))))


@pytest.mark.parametrize("n", [1, 7, 32, 33])
@pytest.mark.parametrize("replacement", [False, True])
@pytest.mark.parametrize("num_samples", [None, 5, 32, 64, 65])
@pytest.mark.parametrize("use_generator", [False, True])
def test_random_sampler(n, replacement, num_samples, use_generator):
    def scenario(lib):
        generator = with_generator(use_generator)
        sampler = lib.RandomSampler(range(n), replacement, num_samples, generator)
        return epochs_of(sampler, generator), sampler.num_samples

    same(scenario, seed=n)


def test_random_sampler_partial_epoch_and_growing_dataset():
    def scenario(lib):
        data = list(range(5))
        sampler = lib.RandomSampler(data)
        it = iter(sampler)
        first = [next(it), next(it)]
        data.extend(range(5, 9))  # the sampler reads len() when each epoch starts
        return first, list(it), list(sampler), len(sampler)

    same(scenario)


@pytest.mark.parametrize("kwargs", [
    {"replacement": 1}, {"replacement": "yes"}, {"num_samples": 0}, {"num_samples": -3},
    {"num_samples": 2.5}, {"num_samples": "4"}, {"num_samples": True},
])
def test_random_sampler_validation(kwargs):
    same(lambda lib: epochs_of(lib.RandomSampler(range(4), **kwargs)))


def test_random_sampler_edge_cases():
    assert same_error(lambda lib: lib.RandomSampler(range(0))) is ValueError
    assert same_error(lambda lib: lib.RandomSampler(object())) is TypeError
    # an empty data source with an explicit num_samples fails when iterated
    same(lambda lib: list(lib.RandomSampler(range(0), num_samples=3)))
    same(lambda lib: list(lib.RandomSampler(range(0), replacement=True, num_samples=3)))


@pytest.mark.parametrize("indices", [[], [4], [10, 3, 7, 7, 1], list(range(50, 0, -3))])
@pytest.mark.parametrize("use_generator", [False, True])
def test_subset_random_sampler(indices, use_generator):
    def scenario(lib):
        generator = with_generator(use_generator)
        return epochs_of(lib.SubsetRandomSampler(indices, generator), generator)

    same(scenario)


@pytest.mark.parametrize("weights", [[1.0], [0.1, 0.9, 0.4, 0.7, 3.0, 0.6], list(range(1, 40)),
                                     torch.tensor([0.5, 0.0, 2.0])])
@pytest.mark.parametrize("num_samples, replacement", [(1, True), (2, False), (10, True),
                                                      (3, False)])
@pytest.mark.parametrize("use_generator", [False, True])
def test_weighted_random_sampler(weights, num_samples, replacement, use_generator):
    def scenario(lib):
        generator = with_generator(use_generator)
        sampler = lib.WeightedRandomSampler(weights, num_samples, replacement, generator)
        return epochs_of(sampler, generator), sampler.weights

    same(scenario)


@pytest.mark.parametrize("args", [
    ([1.0, 2.0], 0), ([1.0, 2.0], -1), ([1.0, 2.0], 1.5), ([1.0, 2.0], True),
    ([1.0, 2.0], 2, 1), ([1.0, 2.0], 2, None), ([[1.0, 2.0]], 2), (5.0, 1), ([], 1),
    (["a"], 1), ([-1.0, 2.0], 1),
])
def test_weighted_random_sampler_validation(args):
    same(lambda lib: epochs_of(lib.WeightedRandomSampler(*args)))


@pytest.mark.parametrize("n", [0, 1, 6, 7, 13])
@pytest.mark.parametrize("batch_size", [1, 3, 6, 20])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("inner", ["sequential", "random", "list", "generator"])
def test_batch_sampler(n, batch_size, drop_last, inner):
    def scenario(lib):
        base = {"sequential": lambda: lib.SequentialSampler(range(n)),
                "random": lambda: lib.RandomSampler(range(max(n, 1))),
                "list": lambda: list(range(n, 0, -1)),
                "generator": lambda: (i * 2 for i in range(n))}[inner]()
        sampler = lib.BatchSampler(base, batch_size, drop_last)
        if inner == "generator":  # no len(), and exhausted after one epoch
            return list(sampler), list(sampler)
        return epochs_of(sampler)

    same(scenario)


@pytest.mark.parametrize("batch_size, drop_last", [
    (0, False), (-2, False), (2.0, False), (True, False), ("3", False), (None, False),
    (2, 1), (2, None), (2, "no"),
])
def test_batch_sampler_validation(batch_size, drop_last):
    assert same_error(lambda lib: lib.BatchSampler(range(5), batch_size, drop_last)) \
        is ValueError


def test_custom_sampler_on_base_class():
    def scenario(lib):
        class Evens(lib.Sampler[int]):
            def __init__(self, n):
                self.n = n

            def __iter__(self):
                return iter(range(0, self.n, 2))

            def __len__(self):
                return (self.n + 1) // 2

        sampler = Evens(9)
        return list(sampler), len(sampler), list(lib.BatchSampler(sampler, 2, False))

    same(scenario)
