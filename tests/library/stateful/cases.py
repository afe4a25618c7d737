"""The cases of issue 26, played the same way with either library's StatefulDataLoader:
a state taken where a training loop stopped (after ``break``, after ``del`` of the
iterator, between two ``next()`` calls), a dataset that is its own iterator and resets its
position in ``__iter__``, a sampler whose iterator is Stateful, a stream without the
protocol checkpointed at an epoch's end, a dataset that restores the global RNG in its own
``load_state_dict``, and a state through JSON.

test_torchdata_rules.py plays them with ours in its own process, and runs this module as a
program to play them with torchdata's (importing torchdata patches torch's samplers, so it
never shares a process with other comparisons); the results are printed as JSON. The
datasets and samplers are built on torch's base classes, so both loaders take them, and
they live in this importable module, so that workers find them."""

from __future__ import annotations

import io
import json
import sys
import warnings
from collections.abc import Iterator

import torch
import torch.utils.data as tud


def _shard(n: int) -> list:
    info = tud.get_worker_info()  # answers inside both libraries' workers
    return list(range(n)) if info is None else list(range(info.id, n, info.num_workers))


class RangeStream(tud.IterableDataset):
    """Each worker streams its shard of range(n); Stateful (its position)."""

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


class SelfIterating(tud.IterableDataset):
    """Its own iterator: ``__iter__`` resets the position and returns the dataset. The
    position exists only once ``__iter__`` has run (a copy that never iterated has none),
    and a state loaded before ``iter()`` is wiped out by it."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        self.shard, self.i = _shard(self.n), 0
        return self

    def __next__(self):
        if self.i >= len(self.shard):
            raise StopIteration
        self.i += 1
        return self.shard[self.i - 1]

    def state_dict(self):
        return {"i": self.i}

    def load_state_dict(self, state):
        self.i = state["i"]


class _Countdown(Iterator):
    """Stateful: n-1, n-2, ..., 0; its state is how many it gave."""

    def __init__(self, n: int) -> None:
        self.n, self.given = n, 0

    def __next__(self):
        if self.given >= self.n:
            raise StopIteration
        self.given += 1
        return self.n - self.given

    def state_dict(self):
        return {"given": self.given}

    def load_state_dict(self, state):
        self.given = state["given"]


class CountdownSampler(tud.Sampler):
    """Not Stateful itself; the iterator its ``__iter__`` returns is."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return _Countdown(self.n)

    def __len__(self):
        return self.n


class CountdownBatches(tud.Sampler):
    """A batch sampler whose iterator is Stateful: batches of 3 of n-1, n-2, ..., 0."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return _Batches3(self.n)

    def __len__(self):
        return -(-self.n // 3)


class _Batches3(_Countdown):
    def __next__(self):
        batch = []
        for _ in range(3):
            try:
                batch.append(super().__next__())
            except StopIteration:
                break
        if not batch:
            raise StopIteration
        return batch


class PlainStream(tud.IterableDataset):
    """No protocol: its position can only be re-read."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return iter(_shard(self.n))


class _RngRestoringIterator(Iterator):
    """Draws each sample's index from the global torch RNG, and saves and restores that RNG
    in its own state (as torchdata's tests' DummyIterator does)."""

    def __init__(self, samples: list) -> None:
        self.samples, self.i = samples, 0

    def __next__(self):
        if self.i >= len(self.samples):
            raise StopIteration
        self.i += 1
        return self.samples[int(torch.randint(len(self.samples), ()))]

    def state_dict(self):
        return {"i": self.i, "rng": torch.get_rng_state()}

    def load_state_dict(self, state):
        self.i = state["i"]
        torch.set_rng_state(state["rng"])


class RngRestoringStream(tud.IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return _RngRestoringIterator(_shard(self.n))


DATASETS = {"map": lambda n: list(range(n)), "stream": RangeStream,
            "self_iterating": SelfIterating, "plain_stream": PlainStream,
            "rng_stream": RngRestoringStream}
SAMPLERS = {None: lambda n: None, "countdown": CountdownSampler}


def build(loader_class, case: dict):
    n = case["n"]
    kwargs = {"num_workers": case["num_workers"],
              "persistent_workers": case.get("persistent_workers", False)}
    if case.get("batch_sampler") == "countdown":
        kwargs["batch_sampler"] = CountdownBatches(n)
    else:
        kwargs["batch_size"] = case.get("batch_size", 3)
        kwargs["sampler"] = SAMPLERS[case.get("sampler")](n)
    if case["num_workers"]:
        kwargs["multiprocessing_context"] = "fork"
    return loader_class(DATASETS[case["dataset"]](n), **kwargs)


def plain(batch):
    if isinstance(batch, torch.Tensor):
        return batch.tolist()
    if isinstance(batch, (list, tuple)):
        return [plain(item) for item in batch]
    return batch


def _saved(state, how: str):
    """The state as a new process finds it: through torch.save, or through JSON."""
    if how == "json":
        return json.loads(json.dumps(state))
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer)


def play(loader_class, case: dict) -> dict:
    """Take ``k`` batches of the first epoch and stop as ``case["stop"]`` says -- "break"
    out of the for loop, "del" the iterator, or stay "between" two next() calls (the
    uninterrupted run then goes on) -- or run the whole epoch first ("end"); take the state
    there; build everything afresh, load it, and run the rest of the epoch and one more.
    ``before`` is what came before the state, ``uninterrupted`` the same loader going on
    without a resume (where it can), ``after`` the resumed run."""
    torch.manual_seed(0)
    loader = build(loader_class, case)
    before, uninterrupted, k, stop = [], None, case.get("k", 0), case["stop"]
    if stop == "end":
        before = [plain(batch) for batch in loader]
        state = loader.state_dict()
        uninterrupted = [plain(batch) for batch in loader]
    elif stop == "break":
        assert k > 0, "break after k > 0 batches (after none the loop never breaks)"
        for batch in loader:
            before.append(plain(batch))
            if len(before) == k:
                break
        state = loader.state_dict()
    else:
        iterator = iter(loader)
        before = [plain(next(iterator)) for _ in range(k)]
        state = loader.state_dict()
        if stop == "del":
            del iterator
        else:  # between next() calls: the uninterrupted run goes on
            uninterrupted = [plain(batch) for batch in iterator]
    state = _saved(state, case.get("saved", "file"))
    del loader
    loader = build(loader_class, case)
    loader.load_state_dict(state)
    after = [plain(batch) for batch in loader]
    if stop != "end":
        after += [plain(batch) for batch in loader]
    return {"before": before, "uninterrupted": uninterrupted, "after": after}


def main(cases: str) -> None:
    warnings.simplefilter("ignore")  # torchdata's deprecation warnings on torch 2.13
    from torchdata.stateful_dataloader import StatefulDataLoader

    print(json.dumps([play(StatefulDataLoader, case) for case in json.loads(cases)]))


if __name__ == "__main__":  # workers of another start method import this module: not them
    main(*sys.argv[1:])
