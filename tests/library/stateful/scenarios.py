"""Scenarios for the stateful loader's guarantee. A configuration (a dict of plain values)
describes a dataset, a sampler, the loader's settings, the number of epochs and where the
checkpoint is taken; ``run`` plays it like a training script does:

    seed the global RNGs; build the loader (fresh generators, fixed seeds)
    for each epoch: set_epoch (DistributedSampler); for each batch: record it, then draw
        from the global RNGs (the training step's dropout, say)
    at the checkpoint: loader.state_dict() and the global RNG states, through torch.save

A resumed run builds everything afresh, loads both, and goes on from the checkpoint. What
is compared: every batch (they hold the sample, the worker's id and seed, and numbers the
dataset drew from torch, random and numpy inside its worker), and at the end the global
RNG states and every generator's state.

Datasets and samplers are built on torch's base classes, so both loaders accept them;
this module is importable (spawned workers, the restart subprocess find it).
"""

from __future__ import annotations

import io
import random

import numpy as np
import torch
import torch.utils.data as tud

import minidataloader as mdl
from minidataloader.stateful import StatefulDataLoader, rng_states, set_rng_states


def seed_everything(seed: int) -> None:
    """Seed the three global generators a training script may draw from."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def plain(batch):
    """A batch as nested lists: comparable with ``==``, printable."""
    if isinstance(batch, torch.Tensor):
        return batch.tolist()
    if isinstance(batch, (list, tuple)):
        return [plain(item) for item in batch]
    return batch


def through_a_file(obj):
    """What ``torch.save`` then ``torch.load`` (``weights_only=True``, the default) give back."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer)


def _worker() -> tuple:
    info = tud.get_worker_info()  # answers inside both libraries' workers
    return (-1, -1) if info is None else (info.id, info.seed)


def _draws() -> tuple:
    """An augmentation's random numbers, from the three global RNGs of the process."""
    return (int(torch.randint(0, 10**6, ())), random.randrange(10**6),
            int(np.random.randint(10**6)))


class Numbers(tud.Dataset):
    """Sample i: (i, worker id, worker seed, three random draws) -- or just i."""

    def __init__(self, n: int, detailed: bool = True) -> None:
        self.n, self.detailed = n, detailed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not self.detailed:
            return i
        return (i, *_worker(), *_draws())


class CountingNumbers(Numbers):
    """A map-style dataset with a state: how many samples this copy has produced."""

    def __init__(self, n: int, detailed: bool = True) -> None:
        super().__init__(n, detailed)
        self.calls = 0

    def __getitem__(self, i):
        self.calls += 1
        sample = super().__getitem__(i)
        return (*sample, self.calls) if self.detailed else sample

    def state_dict(self):
        return {"calls": self.calls}

    def load_state_dict(self, state):
        self.calls = state["calls"]


def _shard(n: int) -> list:
    worker_id, num_workers = _worker()[0], 1
    info = tud.get_worker_info()
    if info is not None:
        num_workers = info.num_workers
    return list(range(max(worker_id, 0), n, num_workers))


def _shuffled(items: list, seed: int) -> list:
    order = torch.randperm(len(items), generator=torch.Generator().manual_seed(seed))
    return [items[j] for j in order.tolist()]


class StatefulStream(tud.IterableDataset):
    """Each worker streams its shard of range(n), shuffled by a seed drawn from its torch
    RNG when its epoch begins; the dataset saves the position and that seed."""

    def __init__(self, n: int) -> None:
        self.n, self.pos, self.seed = n, 0, None

    def __iter__(self):
        if self.pos == 0:  # a new epoch (not a resumed one): a new order
            self.seed = int(torch.randint(0, 2**31, ()))
        order = _shuffled(_shard(self.n), self.seed)
        for j in range(self.pos, len(order)):
            self.pos = j + 1  # before the yield: the state says "this one is done"
            yield (order[j], *_worker(), *_draws())
        self.pos = 0

    def state_dict(self):
        return {"pos": self.pos, "seed": self.seed}

    def load_state_dict(self, state):
        self.pos, self.seed = state["pos"], state["seed"]


class _ShardIterator:
    def __init__(self, n: int) -> None:
        self.shard, self.pos = _shard(n), 0
        self.seed = int(torch.randint(0, 2**31, ()))  # drawn at iter(), eagerly
        self.order = _shuffled(self.shard, self.seed)

    def __iter__(self):
        return self

    def __next__(self):
        if self.pos >= len(self.order):
            raise StopIteration
        self.pos += 1
        return (self.order[self.pos - 1], *_worker(), *_draws())

    def state_dict(self):
        return {"pos": self.pos, "seed": self.seed}

    def load_state_dict(self, state):
        self.pos, self.seed = state["pos"], state["seed"]
        self.order = _shuffled(self.shard, self.seed)


class IteratorStream(tud.IterableDataset):
    """Not Stateful itself: the iterator its __iter__ returns is."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return _ShardIterator(self.n)


class PlainStream(tud.IterableDataset):
    """No protocol at all: a fast-forward re-reads it."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        order = _shuffled(_shard(self.n), int(torch.randint(0, 2**31, ())))
        for i in order:
            yield (i, *_worker(), *_draws())


class ResumableSampler(tud.Sampler):
    """A Stateful sampler: range(n) rotated by its epoch count. ``state_dict()`` says where
    its next index comes from: ``next`` is a position, or None for "a new iteration"."""

    def __init__(self, n: int) -> None:
        self.n, self.epoch, self.next, self.pending = n, -1, None, None

    def __iter__(self):
        if self.pending is None:
            self.epoch, self.next = self.epoch + 1, 0
        else:
            self.next, self.pending = self.pending, None
        order = [(i + self.epoch) % self.n for i in range(self.n)]
        while self.next < self.n:
            self.next += 1  # before the yield: the state says "this one is done"
            yield order[self.next - 1]
        self.next = None

    def __len__(self):
        return self.n

    def state_dict(self):
        return {"epoch": self.epoch, "next": self.next}

    def load_state_dict(self, state):
        self.epoch, self.pending = state["epoch"], state["next"]


# ----------------------------------------------------------------------------------------
# Configurations

MAP_DATASETS = ("numbers", "counting")
ITERABLE_DATASETS = ("stateful_stream", "iterator_stream", "plain_stream")
SAMPLERS = (None, "sequential", "random", "random_replacement", "random_num_samples",
            "subset_random", "weighted", "distributed", "list", "resumable")
GENERATORS = ("none", "loader", "sampler", "shared", "separate")


def draw_config(rng: random.Random) -> dict:
    """One valid configuration, with a checkpoint somewhere in it."""
    dataset = rng.choice(MAP_DATASETS * 3 + ITERABLE_DATASETS * 2)
    iterable = dataset in ITERABLE_DATASETS
    workers = rng.choice([0, 0, 1, 2, 2, 3])
    c = {
        "dataset": dataset, "n": rng.choice([0, 1, 5, 7, 12, 17, 24]) if not iterable
        else rng.choice([0, 3, 7, 12, 19]),
        "mode": "batch_size" if iterable else rng.choice(["batch_size"] * 4 + ["none",
                                                                               "batch_sampler"]),
        "batch_size": rng.choice([1, 2, 3, 5]), "drop_last": rng.random() < 0.3,
        "shuffle": False, "sampler": None, "generators": rng.choice(GENERATORS),
        "torch_samplers": rng.random() < 0.2,
        "num_workers": workers,
        "persistent_workers": workers > 0 and rng.random() < 0.4,
        "in_order": workers < 2 or rng.random() < 0.7,
        "prefetch_factor": rng.choice([1, 2, 3, 4]) if workers else None,
        "epochs": rng.choice([1, 2, 2, 3]), "seed": rng.randrange(1000),
        "draws": rng.random() < 0.8,
    }
    if c["mode"] != "batch_size":
        c["drop_last"] = False
    if not iterable:
        if c["n"] == 0 or rng.random() < 0.3:
            c["shuffle"] = c["n"] > 0 and rng.random() < 0.5
        else:
            c["sampler"] = rng.choice(SAMPLERS[1:])
        if c["mode"] == "batch_sampler" and c["sampler"] is None:
            c["sampler"] = "sequential"
        if not c["in_order"]:
            c["draws"] = False  # with in_order=False which worker loads a batch is timing
    c["checkpoint_epoch"] = rng.randrange(c["epochs"])
    c["checkpoint_at"] = rng.random()  # a fraction of the epoch; 1.0 or more: after it ended
    if rng.random() < 0.15:
        c["checkpoint_at"] = "end"
    return c


GRID = [draw_config(random.Random(f"stateful {i}")) for i in range(240)]


def make_dataset(c: dict):
    n, draws = c["n"], c["draws"]
    return {
        "numbers": lambda: Numbers(n, draws),
        "counting": lambda: CountingNumbers(n, draws),
        "stateful_stream": lambda: StatefulStream(n),
        "iterator_stream": lambda: IteratorStream(n),
        "plain_stream": lambda: PlainStream(n),
    }[c["dataset"]]()


def make_generators(c: dict) -> tuple:
    loader_gen = torch.Generator().manual_seed(100 + c["seed"])
    sampler_gen = torch.Generator().manual_seed(200 + c["seed"])
    return {"none": (None, None), "loader": (loader_gen, None), "sampler": (None, sampler_gen),
            "shared": (loader_gen, loader_gen), "separate": (loader_gen, sampler_gen)}[
        c["generators"]]


def make_sampler(c: dict, lib, generator):
    n = c["n"]
    return {
        None: lambda: None,
        "sequential": lambda: lib.SequentialSampler(range(n)),
        "random": lambda: lib.RandomSampler(range(n), generator=generator),
        "random_replacement": lambda: lib.RandomSampler(range(n), True, n + 40, generator),
        "random_num_samples": lambda: lib.RandomSampler(range(n), False, 2 * n + 1, generator),
        "subset_random": lambda: lib.SubsetRandomSampler(list(range(0, n, 2)), generator),
        "weighted": lambda: lib.WeightedRandomSampler([i + 1.0 for i in range(n)],
                                                      n + 3 if n % 2 else n, n % 2 == 1,
                                                      generator),
        "distributed": lambda: lib.DistributedSampler(range(n), 3, 1, shuffle=n % 2 == 1,
                                                      seed=c["seed"], drop_last=n % 3 == 0),
        "list": lambda: list(range(n))[::-1],
        "resumable": lambda: ResumableSampler(n),
    }[c["sampler"]]()


def make_loader(c: dict, stateful: bool):
    """The loader of configuration ``c``: torch's DataLoader, or our StatefulDataLoader
    (given torch's samplers when ``c["torch_samplers"]``)."""
    lib = tud if not stateful or c["torch_samplers"] else mdl
    loader_gen, sampler_gen = make_generators(c)
    sampler = make_sampler(c, lib, sampler_gen)
    kwargs = {"num_workers": c["num_workers"], "persistent_workers": c["persistent_workers"],
              "in_order": c["in_order"], "prefetch_factor": c["prefetch_factor"],
              "generator": loader_gen}
    if c["mode"] == "batch_sampler":
        kwargs["batch_sampler"] = lib.BatchSampler(sampler, c["batch_size"], c["drop_last"])
    else:
        kwargs.update(batch_size=None if c["mode"] == "none" else c["batch_size"],
                      drop_last=c["drop_last"], shuffle=c["shuffle"], sampler=sampler)
    if stateful:
        loader = StatefulDataLoader(make_dataset(c), fast_forward=c["dataset"] == "plain_stream",
                                    **kwargs)
    else:
        loader = tud.DataLoader(make_dataset(c), **kwargs)
    generators = [g for g in (loader_gen, sampler_gen) if g is not None]
    return loader, sampler, generators


def run(c: dict, stateful: bool = True, resume: dict | None = None,
        positions: set | None = None) -> dict:
    """Play configuration ``c``, taking a checkpoint at each of ``positions`` -- pairs
    (epoch, batches yielded in it), None for "after the epoch ended"; by default the
    configuration's own. With ``resume`` (a checkpoint) go on from there instead."""
    seed_everything(c["seed"])
    loader, sampler, generators = make_loader(c, stateful)
    distributed = sampler if c["sampler"] == "distributed" else None
    if positions is None:
        positions = {(c["checkpoint_epoch"], checkpoint_batch(c))}
    first_epoch = 0
    if resume is not None:
        loader.load_state_dict(resume["loader"])
        set_rng_states(resume["rng"])
        first_epoch = resume["epoch"] + (resume["at"] == "end")
    checkpoints = {}

    def save(epoch, at):
        if stateful and resume is None:
            checkpoints[(epoch, at)] = through_a_file({
                "loader": loader.state_dict(), "rng": rng_states(), "epoch": epoch, "at": at})

    epochs = []
    for epoch in range(first_epoch, c["epochs"]):
        if distributed is not None:
            distributed.set_epoch(epoch)
        batches = []
        iterator = iter(loader)
        if (epoch, 0) in positions:
            save(epoch, 0)
        for batch in iterator:
            batches.append(plain(batch))
            torch.rand(1), random.random(), np.random.rand()  # the training step's draws
            if (epoch, len(batches)) in positions:
                save(epoch, len(batches))
        del iterator
        epochs.append(batches)
        if any(e == epoch and (k is None or k > len(batches)) for e, k in positions):
            save(epoch, "end")  # asked for, or the epoch was shorter than the place chosen
    return {"epochs": epochs, "checkpoints": checkpoints, "rng": rng_states(),
            "generators": [g.get_state() for g in generators]}


def len_hint(c: dict) -> int:
    """About how many batches an epoch has (only places the checkpoint)."""
    per_epoch = max(c["n"], 1)
    if c["sampler"] in ("random_replacement",):
        per_epoch = c["n"] + 40
    elif c["sampler"] == "random_num_samples":
        per_epoch = 2 * c["n"] + 1
    return max(1, per_epoch // (1 if c["mode"] == "none" else c["batch_size"]))


def checkpoint_batch(c: dict) -> int | None:
    """After how many batches of its epoch the checkpoint is taken (0: right after iter(),
    None: after the epoch ended)."""
    if c["checkpoint_at"] == "end":
        return None
    return int(c["checkpoint_at"] * (len_hint(c) + 1))


class RangeStream(tud.IterableDataset):
    """Each worker streams its shard of range(n), in order; a Stateful dataset with no
    random numbers (the semantics torchdata's loader shares with ours)."""

    def __init__(self, n: int) -> None:
        self.n, self.pos = n, 0

    def __iter__(self):
        shard = _shard(self.n)
        while self.pos < len(shard):
            self.pos += 1
            yield shard[self.pos - 1]
        self.pos = 0

    def state_dict(self):
        return {"pos": self.pos}

    def load_state_dict(self, state):
        self.pos = state["pos"]
