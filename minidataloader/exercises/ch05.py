"""Chapter 5 (the loader, single-process): the exercises and their hidden cases."""

from __future__ import annotations

import itertools

import torch
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    default_collate,
)
from torch.utils.data._utils.fetch import _IterableDatasetFetcher

from ._framework import Case, Exercise, TooManyItems, register
from .solutions import ch05 as solutions

LOADER_ITSELF = ("minidataloader.dataloader._SingleProcessDataLoaderIter",
                 "torch.utils.data.dataloader._SingleProcessDataLoaderIter",
                 "minidataloader.fetch._IterableDatasetFetcher",
                 "torch.utils.data._utils.fetch._IterableDatasetFetcher",
                 "minidataloader.fetch._MapDatasetFetcher",
                 "torch.utils.data._utils.fetch._MapDatasetFetcher")


class Squares(Dataset):
    """A map-style dataset: sample i is i * i. It remembers which indices were read."""

    def __init__(self, size: int):
        self.size = size
        self.reads: list[int] = []

    def __getitem__(self, index):
        if not 0 <= index < self.size:
            raise IndexError(f"index {index} out of range for {self.size} samples")
        self.reads.append(index)
        return index * index

    def __len__(self):
        return self.size

    def __repr__(self):
        return f"Squares({self.size})"


class BatchedSquares(Squares):
    """Squares that can also fetch a whole batch at once, and count how often it did."""

    def __init__(self, size: int):
        super().__init__(size)
        self.batched_reads = 0

    def __getitems__(self, indices):
        self.batched_reads += 1
        self.reads.extend(indices)
        return [index * index for index in indices]


class Numbers(IterableDataset):
    """A stream of ``count`` numbers (endless if ``count`` is None); ``length`` is what its
    __len__ reports (no __len__ at all if None). It counts what it has produced."""

    def __init__(self, count: int | None = 5, length: int | None = None):
        self.count, self.length = count, length
        self.produced = 0
        self.iter_calls = 0

    def __iter__(self):
        self.iter_calls += 1
        numbers = itertools.count() if self.count is None else range(self.count)
        for number in numbers:
            self.produced += 1
            yield number

    def __len__(self):
        if self.length is None:
            raise TypeError(f"{self!r} is a stream without a length")
        return self.length

    def __repr__(self):
        size = "endless" if self.count is None else self.count
        reported = "" if self.length is None else f", len() says {self.length}"
        return f"Numbers({size}{reported})"


# ---------------------------------------------------------------------------------------
# Argument validation

MAP, STREAM = "map", "stream"
_DATASETS = {MAP: lambda: Squares(10), STREAM: lambda: Numbers(5)}
_NAMES = {MAP: "a map-style dataset of 10 samples", STREAM: "an IterableDataset"}

# (dataset, arguments, hint). The hint names the rule of the statement the case tests. The
# chapter's table shows torch refusing examples of its own, not these.
_VALIDATION = [
    (MAP, {}, "all defaults are fine"),
    (MAP, {"batch_size": 3, "shuffle": True}, "shuffle=True with a batch size is fine"),
    (MAP, {"sampler": [3, 1, 2], "batch_size": 2}, "a sampler of your own is fine"),
    (MAP, {"batch_sampler": [[0, 1], [2]]}, "a batch_sampler alone is fine"),
    (MAP, {"batch_size": None}, "batch_size=None (no batching) is fine"),
    (STREAM, {"batch_size": 2, "drop_last": True}, "an IterableDataset may drop its last batch"),
    (STREAM, {"shuffle": False}, "rule 3: shuffle=False is accepted for an IterableDataset"),
    (MAP, {"num_workers": 3, "prefetch_factor": 1, "persistent_workers": True},
     "prefetch_factor and persistent_workers are fine with workers"),
    (MAP, {"num_workers": -3}, "rule 1: num_workers must be >= 0"),
    (MAP, {"timeout": -0.5}, "rule 1: timeout must be >= 0"),
    (MAP, {"prefetch_factor": 2},
     "rule 2: prefetch_factor counts batches loaded ahead by each worker: with num_workers=0 "
     "it must stay None"),
    (MAP, {"num_workers": 1, "prefetch_factor": -2}, "rule 2: prefetch_factor must be >= 0"),
    (MAP, {"persistent_workers": True}, "rule 2: persistent_workers needs num_workers > 0"),
    (MAP, {"shuffle": True, "sampler": [2, 1]},
     "rule 4: shuffle=True and a sampler both decide the order: ValueError"),
    (MAP, {"batch_sampler": [[1, 0]], "batch_size": 3},
     "rule 5: a batch_sampler excludes batch_size (other than the default 1)"),
    (MAP, {"batch_sampler": [[1, 0]], "shuffle": True}, "rule 5: a batch_sampler excludes shuffle"),
    (MAP, {"batch_sampler": [[1, 0]], "sampler": [1, 0]}, "rule 5: a batch_sampler excludes "
                                                          "sampler"),
    (MAP, {"batch_sampler": [[1, 0]], "drop_last": True}, "rule 5: a batch_sampler excludes "
                                                          "drop_last"),
    (MAP, {"batch_size": None, "drop_last": True},
     "rule 6: batch_size=None makes no batches, so drop_last=True makes no sense: ValueError"),
    (STREAM, {"shuffle": True}, "rule 3: an IterableDataset cannot be shuffled by the loader"),
    (STREAM, {"sampler": [1, 0]}, "rule 3: an IterableDataset takes no sampler"),
    (STREAM, {"batch_sampler": [[1]]}, "rule 3: an IterableDataset takes no batch_sampler"),
    (MAP, {"batch_size": 0}, "rule 7: batch_size must be a positive int (BatchSampler checks it)"),
    (MAP, {"batch_size": 1.5}, "rule 7: batch_size must be an int, not a float"),
    (MAP, {"batch_size": True},
     "rule 7: True is an int in Python (isinstance(True, int)), but the BatchSampler refuses "
     "bools"),
    (STREAM, {"batch_size": -2}, "rule 7: batch_size must be positive for a stream too"),
    (MAP, {"drop_last": None}, "rule 7: drop_last must be a bool (BatchSampler checks it)"),
    (MAP, {"timeout": 3},
     "rule 8: timeout > 0 with num_workers=0: torch raises AssertionError (when the epoch "
     "starts)"),
]


def describe_arguments(dataset: str, arguments: dict) -> str:
    given = ", ".join(f"{name}={value!r}" for name, value in arguments.items())
    return f"{_NAMES[dataset]}" + (f", {given}" if given else ", no other argument")


def _validation_cases() -> list[Case]:
    return [Case({"dataset": _DATASETS[kind](), **arguments},
                 description=describe_arguments(kind, arguments), hint=hint)
            for kind, arguments, hint in _VALIDATION]


def _torch_accepts(dataset, **arguments):
    """torch's answer: None, or the exception its DataLoader raises when it is built or when
    its first epoch starts (workers are never started here)."""
    loader = DataLoader(dataset, **arguments)
    if loader.num_workers == 0:
        next(iter(loader), None)


register(Exercise(
    reference=solutions.check_loader_arguments,
    oracle=_torch_accepts,
    cases=_validation_cases,
    hint="go through the rules of the statement in their order: workers and timeouts, the "
         "IterableDataset rules, sampler vs shuffle, batch_sampler vs the rest, then "
         "batch_size and drop_last, and last the timeout without workers",
    time_limit=3.0,
))


# ---------------------------------------------------------------------------------------
# len(loader)


def _len_cases() -> list[Case]:
    def case(dataset, hint, shown=None, **arguments):
        given = "".join(f", {name}={value!r}" for name, value in arguments.items())
        return Case({"dataset": dataset, **arguments},
                    description=f"dataset={dataset!r}{shown or given}", hint=hint)

    return [
        case(Squares(10), "10 samples in batches of 3: 3 full batches and one of 1",
             batch_size=3),
        case(Squares(10), "drop_last=True drops the incomplete last batch", batch_size=3,
             drop_last=True),
        case(Squares(10), "the batch size divides the dataset size", batch_size=5),
        case(Squares(10), "a sampler of 3 indices: the loader reads 3 samples, not 10",
             batch_size=2, sampler=[9, 8, 7]),
        case(Squares(10), "a sampler can draw more samples than the dataset has (with "
             "replacement): len follows the sampler", batch_size=10,
             sampler=[i % 10 for i in range(25)],
             shown=", batch_size=10, sampler=[0, 1, ..., 9, 0, 1, ...] (25 indices)"),
        case(Squares(10), "a batch_sampler decides the batches: count them",
             batch_sampler=[[0, 1, 2], [3], [4, 5]]),
        case(Squares(10), "batch_size=None: one item per sample", batch_size=None),
        case(Squares(0), "an empty dataset gives no batch", batch_size=4),
        case(Numbers(10, length=10), "a stream has no sampler to count: the loader divides "
             "len(dataset) by batch_size and rounds up", batch_size=4),
        case(Numbers(10, length=10), "for a stream, drop_last rounds down", batch_size=4,
             drop_last=True),
        case(Numbers(13, length=10), "the loader trusts the stream's len() (10), even if the "
             "stream yields more", batch_size=4),
        case(Numbers(10, length=10), "batch_size=None: len(dataset) itself", batch_size=None),
        case(Numbers(10), "a stream without __len__: len(loader) raises TypeError",
             batch_size=4),
    ]


register(Exercise(
    reference=solutions.loader_len,
    oracle=lambda dataset, **arguments: len(DataLoader(dataset, **arguments)),
    cases=_len_cases,
    hint="for a map-style dataset count what the sampler yields (the batch_sampler if there "
         "is one, else the sampler, else the dataset); for a stream use len(dataset)",
    forbidden=("minidataloader.viz.arithmetic.epoch_arithmetic",),
    time_limit=2.0,
))


# ---------------------------------------------------------------------------------------
# The fetcher of an IterableDataset


def to_tensor(data):
    """The collate_fn of the hidden cases: a list of numbers (or one number) as a tensor."""
    return torch.tensor(data)


def _drive_fetcher(implementation, case: Case) -> dict:
    """What the single-process iterator does with a fetcher: ask for batches until
    StopIteration (at most ``batches`` of them, for an endless stream)."""
    count, batch_size, drop_last, wanted = (case.inputs[k] for k in
                                            ("count", "batch_size", "drop_last", "batches"))
    stream = Numbers(count)
    fetcher = implementation(stream, batch_size is not None, to_tensor, drop_last)
    index = [None] * batch_size if batch_size is not None else None
    batches, read_for_first = [], None
    while len(batches) < wanted:
        try:
            batches.append(fetcher.fetch(index))
        except StopIteration:
            break
        if read_for_first is None:
            read_for_first = stream.produced
        if len(batches) > 200:
            raise TooManyItems(200)
    return {"batches": batches, "numbers read when the first batch came back": read_for_first,
            "calls of iter(dataset)": stream.iter_calls}


def _fetcher_cases() -> list[Case]:
    def case(count, batch_size, drop_last, hint, batches=1000):
        stream = "an endless stream 0, 1, 2, ..." if count is None else f"a stream of {count} numbers"
        wanted = f" (the first {batches} batches)" if count is None else ""
        return Case({"count": count, "batch_size": batch_size, "drop_last": drop_last,
                     "batches": batches},
                    description=f"{stream}, batch_size={batch_size}, drop_last={drop_last}"
                                f"{wanted}", hint=hint)

    return [
        case(10, 4, False, "two full batches, then the 2 numbers left as a last batch"),
        case(10, 4, True, "drop_last=True: the short last batch is not returned"),
        case(8, 4, False, "the stream ends exactly after a batch: the next fetch finds "
                          "nothing and raises StopIteration"),
        case(0, 4, False, "an empty stream: the first fetch raises StopIteration"),
        case(3, 5, True, "fewer numbers than one batch, and drop_last=True: no batch at all"),
        case(5, None, False, "auto_collation=False (batch_size=None): each fetch returns "
                             "collate_fn(one sample)"),
        case(None, 3, False, "read only what a batch needs: the stream may never end",
             batches=4),
    ]


register(Exercise(
    reference=solutions.StreamFetcher,
    oracle=_IterableDatasetFetcher,
    cases=_fetcher_cases,
    run=_drive_fetcher,
    hint="call iter(dataset) once, in __init__; in fetch, take one sample with next() per "
         "entry of possibly_batched_index, and raise StopIteration when the stream gave "
         "nothing (or, with drop_last, too little)",
    forbidden=LOADER_ITSELF,
    time_limit=3.0,
))


# ---------------------------------------------------------------------------------------
# The single-process iterator


def _batch_sampler(spec: dict):
    size, batch_size, drop_last = spec["size"], spec["batch_size"], spec["drop_last"]
    sampler = (RandomSampler(range(size), generator=torch.Generator().manual_seed(spec["seed"]))
               if spec.get("seed") is not None else SequentialSampler(range(size)))
    return BatchSampler(sampler, batch_size, drop_last)


def _next_or_end(iterator):
    try:
        return next(iterator)
    except StopIteration:
        return "StopIteration (the epoch is over)"


def _use_iterator(implementation, case: Case) -> dict:
    spec = case.inputs
    dataset = (BatchedSquares if spec["batched"] else Squares)(spec["size"])
    iterator = implementation(dataset, _batch_sampler(spec), default_collate)
    seen = {"len(iterator)": len(iterator), "iter(iterator) is iterator": iter(iterator) is iterator,
            "samples read before the first next()": list(dataset.reads)}
    seen["first batch"] = _next_or_end(iterator)
    seen["samples read by then"] = list(dataset.reads)
    rest = []
    while True:
        batch = _next_or_end(iterator)
        if isinstance(batch, str):
            break
        rest.append(batch)
        if len(rest) > spec["size"] + 1:
            raise TooManyItems(spec["size"] + 1)
    seen["the other batches"] = rest
    seen["next() after the last batch"] = _next_or_end(iterator)
    if spec["batched"]:
        seen["calls of __getitems__"] = dataset.batched_reads
    return seen


def _iterator_cases() -> list[Case]:
    def case(size, batch_size, drop_last=False, seed=None, batched=False, hint=""):
        order = f"shuffled (seed {seed})" if seed is not None else "in order"
        kind = "a dataset with __getitems__" if batched else "a dataset"
        return Case({"size": size, "batch_size": batch_size, "drop_last": drop_last,
                     "seed": seed, "batched": batched},
                    description=f"{kind} of {size} squares, a BatchSampler {order} with "
                                f"batch_size={batch_size}, drop_last={drop_last}, "
                                f"collate_fn=default_collate", hint=hint or None)

    return [
        case(10, 4, hint="read nothing in __init__: each next() fetches one batch of indices "
                         "from the batch sampler, reads those samples, and collates them"),
        case(10, 3, drop_last=True, seed=0,
             hint="the batch sampler decides the order: use its batches as they come"),
        case(9, 4, batched=True,
             hint="a dataset with __getitems__ gets ONE call per batch: "
                  "dataset.__getitems__(indices)"),
        case(0, 2, hint="an empty dataset: the first next() raises StopIteration"),
    ]


def _torch_iterator(dataset, batch_sampler, collate_fn):
    """torch's answer: the iterator of a loader made of these parts."""
    return iter(DataLoader(dataset, batch_sampler=batch_sampler, collate_fn=collate_fn))


register(Exercise(
    reference=solutions.SingleProcessIterator,
    oracle=_torch_iterator,
    cases=_iterator_cases,
    run=_use_iterator,
    hint="__init__ keeps iter(batch_sampler); __next__ takes the next list of indices from "
         "it (its StopIteration ends the epoch), fetches those samples and returns "
         "collate_fn(samples); __len__ is len(batch_sampler)",
    forbidden=LOADER_ITSELF,
    time_limit=3.0,
))
