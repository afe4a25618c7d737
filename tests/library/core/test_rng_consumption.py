"""When the loader draws random numbers, step by step: the global RNG (and any generator)
is snapshotted after construction, after iter(), after every batch and after the end, and
every snapshot must equal torch's. A training script seeded once then sees the same
numbers with either library."""

import pytest
import torch

from tests.support.differential import datasets, same


def snapshots(make_loader, epochs=2, generator=None):
    """The RNG states at every step of ``epochs`` epochs."""
    states = []

    def snap(label):
        states.append((label, torch.get_rng_state(),
                       generator.get_state() if generator is not None else None))

    loader = make_loader()
    snap("built")
    for epoch in range(epochs):
        it = iter(loader)
        snap(f"iter {epoch}")
        for i, batch in enumerate(it):
            snap(f"batch {i}")
            states.append(batch)
        snap(f"end {epoch}")
    return states


class Eager:
    """A sampler that draws its order from the global RNG as soon as iter() is called."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(torch.randperm(self.n).tolist())

    def __len__(self):
        return self.n


class EagerBatches(Eager):
    def __iter__(self):
        order = torch.randperm(self.n).tolist()
        return iter([order[i:i + 4] for i in range(0, self.n, 4)])


CASES = {
    "sequential": lambda lib, g: lib.DataLoader(range(7), batch_size=3, generator=g),
    "shuffle": lambda lib, g: lib.DataLoader(range(7), batch_size=3, shuffle=True, generator=g),
    "shuffle, no batching": lambda lib, g: lib.DataLoader(range(5), batch_size=None,
                                                          shuffle=True, generator=g),
    "random sampler with its own generator": lambda lib, g: lib.DataLoader(
        range(6), batch_size=4, generator=g,
        sampler=lib.RandomSampler(range(6), generator=torch.Generator().manual_seed(9))),
    "subset random sampler": lambda lib, g: lib.DataLoader(
        range(9), batch_size=2, generator=g, sampler=lib.SubsetRandomSampler([1, 4, 6, 8])),
    "weighted sampler": lambda lib, g: lib.DataLoader(
        range(4), generator=g, sampler=lib.WeightedRandomSampler([1, 2, 3, 4], 6)),
    "replacement": lambda lib, g: lib.DataLoader(
        range(40), batch_size=16, generator=g, sampler=lib.RandomSampler(range(40), True, 70)),
    "augmenting dataset": lambda lib, g: lib.DataLoader(
        datasets(lib)[0](5, "random"), batch_size=2, shuffle=True, generator=g),
    "augmenting stream": lambda lib, g: lib.DataLoader(datasets(lib)[2](5, "random"),
                                                       batch_size=2, generator=g),
    "batch sampler": lambda lib, g: lib.DataLoader(
        range(8), generator=g, batch_sampler=lib.BatchSampler(lib.RandomSampler(range(8)), 3,
                                                              True)),
    "drawing collate_fn": lambda lib, g: lib.DataLoader(
        range(6), batch_size=4, shuffle=True, generator=g,
        collate_fn=lambda batch: (batch, torch.randint(0, 100, (1,)))),
    "empty": lambda lib, g: lib.DataLoader(range(0), batch_size=2, generator=g),
    "sampler drawing at iter()": lambda lib, g: lib.DataLoader(range(6), batch_size=4,
                                                               generator=g, sampler=Eager(6)),
    "batch sampler drawing at iter()": lambda lib, g: lib.DataLoader(
        range(6), generator=g, batch_sampler=EagerBatches(6)),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("use_generator", [False, True])
def test_every_step(case, use_generator):
    def scenario(lib):
        generator = torch.Generator().manual_seed(21) if use_generator else None
        return snapshots(lambda: CASES[case](lib, generator), generator=generator)

    same(scenario)


def test_each_new_iterator_draws_a_base_seed_even_unused():
    def scenario(lib):
        loader = lib.DataLoader(range(4))
        before = torch.get_rng_state()
        iterators = [iter(loader) for _ in range(3)]  # three draws, no batches
        return before, torch.get_rng_state(), len(iterators)

    ref = same(scenario)
    assert not torch.equal(ref.value[0], ref.value[1])


def test_a_failed_epoch_start_still_drew_its_seed():
    def scenario(lib):
        loader = lib.DataLoader(range(4), shuffle=True, timeout=3)
        try:
            iter(loader)
        except AssertionError:
            pass
        return torch.rand(1)

    same(scenario)


def test_abandoned_epochs():
    def scenario(lib):
        loader = lib.DataLoader(range(50), batch_size=4, shuffle=True)
        out = []
        for stop in (0, 1, 5):
            it = iter(loader)
            out.append([next(it) for _ in range(stop)])
            out.append(torch.rand(1))
        return out

    same(scenario)
