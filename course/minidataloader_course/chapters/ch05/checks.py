"""Chapter 5 (the loader, single-process): the exercises and their hidden cases."""

from __future__ import annotations

import itertools

import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, RandomSampler, default_collate
from torch.utils.data._utils.fetch import _IterableDatasetFetcher, _MapDatasetFetcher

from minidataloader_course.chapters.ch05 import solution as solutions
from minidataloader_course.checker.draws import DRAWS_KEY, compare_with_draws, draws
from minidataloader_course.checker.framework import (
    Case,
    Exercise,
    Rule,
    TooManyItems,
    register,
    take,
)
from minidataloader_course.checker.questions import Choice, Prediction

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

# (dataset, arguments, hint). The hint names the behaviour the case tests. The chapter's
# probes and table show torch refusing examples of its own, not these.
_VALIDATION = [
    (MAP, {}, "all defaults are fine"),
    (MAP, {"batch_size": 3, "shuffle": True}, "shuffle=True with a batch size is fine"),
    (MAP, {"sampler": [3, 1, 2], "batch_size": 2},
     "a sampler of your own is fine: shuffle=None (the default) is not shuffle=True"),
    (MAP, {"batch_sampler": [[0, 1], [2]]}, "a batch_sampler alone is fine"),
    (MAP, {"batch_size": None}, "batch_size=None (no batching) is fine"),
    (STREAM, {"batch_size": 2, "drop_last": True}, "an IterableDataset may drop its last batch"),
    (STREAM, {"shuffle": False},
     "torch tolerates shuffle=False for an IterableDataset (old code passes it): only a "
     "shuffle that asks for shuffling is refused"),
    (MAP, {"num_workers": 3, "prefetch_factor": 1, "persistent_workers": True},
     "prefetch_factor and persistent_workers are fine with workers"),
    (MAP, {"num_workers": -3}, "num_workers must be >= 0"),
    (MAP, {"timeout": -0.5}, "timeout must be >= 0"),
    (MAP, {"prefetch_factor": 2},
     "prefetch_factor counts batches loaded ahead by each worker: with num_workers=0 it must "
     "stay None"),
    (MAP, {"num_workers": 1, "prefetch_factor": -2}, "prefetch_factor must be >= 0"),
    (MAP, {"persistent_workers": True}, "persistent_workers needs num_workers > 0"),
    (MAP, {"shuffle": True, "sampler": [2, 1]},
     "shuffle=True and a sampler both decide the order: ValueError"),
    (MAP, {"batch_sampler": [[1, 0]], "batch_size": 3},
     "a batch_sampler excludes batch_size (other than the default 1)"),
    (MAP, {"batch_sampler": [[1, 0]], "shuffle": True}, "a batch_sampler excludes shuffle"),
    (MAP, {"batch_sampler": [[1, 0]], "sampler": [1, 0]}, "a batch_sampler excludes sampler"),
    (MAP, {"batch_sampler": [[1, 0]], "drop_last": True}, "a batch_sampler excludes drop_last"),
    (MAP, {"batch_size": None, "drop_last": True},
     "batch_size=None makes no batches, so drop_last=True makes no sense: ValueError"),
    (STREAM, {"shuffle": True}, "an IterableDataset cannot be shuffled by the loader"),
    (STREAM, {"sampler": [1, 0]}, "an IterableDataset takes no sampler"),
    (STREAM, {"batch_sampler": [[1]]}, "an IterableDataset takes no batch_sampler"),
    (MAP, {"batch_size": 0}, "batch_size must be a positive int (the BatchSampler checks it)"),
    (MAP, {"batch_size": 1.5}, "batch_size must be an int, not a float"),
    (MAP, {"batch_size": True},
     "True is an int in Python (isinstance(True, int)), but torch's BatchSampler refuses "
     "bools"),
    (STREAM, {"batch_size": -2}, "batch_size must be positive for a stream too"),
    (MAP, {"drop_last": None}, "drop_last must be a bool (the BatchSampler checks it)"),
    (MAP, {"timeout": 3},
     "timeout=3 with num_workers=0 is accepted when the loader is built (torch's constructor "
     "accepts it): the epoch refuses it, in the iterator, not this function"),
]


def describe_arguments(dataset: str, arguments: dict) -> str:
    given = ", ".join(f"{name}={value!r}" for name, value in arguments.items())
    return f"{_NAMES[dataset]}" + (f", {given}" if given else ", no other argument")


def _validation_cases() -> list[Case]:
    return [Case({"dataset": _DATASETS[kind](), **arguments},
                 description=describe_arguments(kind, arguments), hint=hint)
            for kind, arguments, hint in _VALIDATION]


def _torch_accepts(dataset, **arguments):
    """torch's answer: None, or the exception its DataLoader raises when it is built (a
    timeout without workers is refused later, by the single-process iterator)."""
    DataLoader(dataset, **arguments)


register(Exercise(
    reference=solutions.check_loader_arguments,
    oracle=_torch_accepts,
    cases=_validation_cases,
    hint="probe torch's DataLoader with these arguments: a wrong value or a contradiction "
         "is refused with ValueError when the loader is built; a timeout without workers is "
         "not refused here",
    time_limit=3.0,
    piece="dataloader.check_loader_arguments",
    expected_from="torch: its `DataLoader`, built",
    rules=(
        Rule("accepted combinations return `None`",
             (1, 2, 3, 4, 5, 6, 8)),
        Rule("`num_workers`, `timeout` >= 0",
             (9, 10)),
        Rule("`prefetch_factor` and `persistent_workers` need workers; `prefetch_factor` >= 0",
             (11, 12, 13)),
        Rule("a stream takes no shuffle, sampler or batch sampler",
             (20, 21, 22)),
        Rule("a sampler excludes `shuffle=True`",
             (14,)),
        Rule("a batch sampler excludes `batch_size`, `shuffle`, `sampler`, `drop_last`",
             (15, 16, 17, 18)),
        Rule("`batch_size=None` excludes `drop_last=True`",
             (19,)),
        Rule("`batch_size` a positive `int`, `drop_last` a bool",
             (23, 24, 26, 27)),
        Rule("`shuffle=False` tolerated for a stream",
             (7,), parity="shuffle=False for a stream"),
        Rule("`batch_size=True` refused: a bool, though an `int`",
             (25,), parity="a bool batch size"),
        Rule("a `timeout` without workers accepted when built (the epoch refuses it)",
             (28,), parity="the timeout, checked at the epoch"),
    ),
    goals=(2,),
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
        case(Squares(10), "len() of the sampler, never a pass over it: this RandomSampler's "
             "pass draws from its generator, and its next epoch would change", batch_size=4,
             sampler=RandomSampler(range(10), generator=torch.Generator().manual_seed(3)),
             shown=", batch_size=4, sampler=RandomSampler(range(10), "
                   "generator=torch.Generator().manual_seed(3))"),
    ]



register(Exercise(
    reference=solutions.loader_len,
    oracle=lambda dataset, **arguments: len(DataLoader(dataset, **arguments)),
    cases=_len_cases,
    hint="for a map-style dataset count what the sampler yields (the batch_sampler if there "
         "is one, else the sampler, else the dataset); for a stream use len(dataset)",
    forbidden=("minidataloader_course.viz.arithmetic.epoch_arithmetic",),
    time_limit=2.0,
    piece="dataloader.loader_len",
    expected_from="torch: `len(DataLoader)`",
    rules=(
        Rule("map-style: the sampler, or batch sampler, sets the count; rounding with `drop_last`",
             (1, 2, 3, 4, 5, 6)),
        Rule("`batch_size=None`; an empty dataset",
             (7, 8, 12)),
        Rule("a stream: `len(dataset)`, trusted; `TypeError` without `__len__`",
             (9, 10, 11, 13)),
        Rule("counts with `len()`, never iterating a sampler (a random sampler's next epoch is unchanged)",
             (14,)),
    ),
    goals=(3,),
))


# ---------------------------------------------------------------------------------------
# The fetcher of a map-style dataset


def to_tensor(data):
    """The collate_fn of the hidden cases: a list of numbers (or one number) as a tensor."""
    return torch.tensor(data)


def _use_map_fetcher(implementation, case: Case) -> dict:
    spec = case.inputs
    dataset = (BatchedSquares if spec["batched"] else Squares)(spec["size"])
    collate_fn = default_collate if spec["collate_fn"] == "default_collate" else to_tensor
    fetcher = implementation(dataset, spec["auto_collation"], collate_fn, spec["drop_last"])
    seen = {"samples read before the first fetch": list(dataset.reads), "fetched": []}
    for index in spec["indices"]:
        seen["fetched"].append(fetcher.fetch(list(index) if isinstance(index, tuple) else index))
    seen["samples read"] = list(dataset.reads)
    if spec["batched"]:
        seen["calls of __getitems__"] = dataset.batched_reads
    return seen


def _map_fetcher_cases() -> list[Case]:
    def case(indices, auto_collation=True, batched=False, drop_last=False, hint="",
             collate_fn="torch.tensor"):
        kind = "a dataset of 10 squares with __getitems__" if batched else \
            "a dataset of 10 squares"
        return Case({"size": 10, "indices": tuple(tuple(i) if isinstance(i, list) else i
                                                  for i in indices),
                     "auto_collation": auto_collation, "batched": batched,
                     "drop_last": drop_last, "collate_fn": collate_fn},
                    description=f"{kind}, auto_collation={auto_collation}, "
                                f"drop_last={drop_last}, collate_fn={collate_fn}; fetch "
                                + ", then ".join(map(repr, indices)), hint=hint or None)

    return [
        case([[0, 1, 2], [3, 4, 5]], hint="auto_collation: read dataset[i] for each index of "
                                          "the list, then return collate_fn(samples)"),
        case([[9, 0, 9]], hint="keep the order of the indices, repeats included"),
        case([[4, 1]], collate_fn="default_collate",
             hint="collate with the collate_fn you were given, whatever it is (here torch's "
                  "own default_collate: calling what you are handed is not delegation)"),
        case([[2, 5], [7]], batched=True,
             hint="a dataset with __getitems__ gets ONE call per batch: "
                  "dataset.__getitems__(indices), and no dataset[i]"),
        case([4, 2], auto_collation=False,
             hint="without auto_collation the index is a single index: return "
                  "collate_fn(dataset[index])"),
        case([[1, 2, 3]], drop_last=True, hint="drop_last changes nothing for a map-style "
                                               "dataset: every batch has its indices"),
        case([[3, 12]], hint="an index past the end: the dataset raises IndexError, and "
                             "the fetcher lets it through"),
    ]


register(Exercise(
    reference=solutions.MapFetcher,
    oracle=_MapDatasetFetcher,
    cases=_map_fetcher_cases,
    run=_use_map_fetcher,
    hint="keep the four arguments in __init__; fetch reads the samples of the indices (one "
         "__getitems__ call if the dataset has it) and returns collate_fn(samples)",
    forbidden=LOADER_ITSELF,
    time_limit=3.0,
    piece="fetch.MapFetcher",
    expected_from="torch: `_MapDatasetFetcher`",
    rules=(
        Rule("the samples of the indices, in their order, repeats included, read at `fetch`",
             (1, 2)),
        Rule("`collate_fn(samples)` with the `collate_fn` given (torch's `default_collate` included)",
             (1, 3)),
        Rule("`__getitems__` once per batch when the dataset has it",
             (4,)),
        Rule("`auto_collation=False`: one index, `collate_fn(dataset[index])`",
             (5,)),
        Rule("`drop_last` changes nothing; the dataset's `IndexError` passes through",
             (6, 7)),
    ),
    goals=(4,),
))


# ---------------------------------------------------------------------------------------
# The fetcher of an IterableDataset


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
    reference=solutions.IterableFetcher,
    oracle=_IterableDatasetFetcher,
    cases=_fetcher_cases,
    run=_drive_fetcher,
    hint="call iter(dataset) once, in __init__; in fetch, take one sample with next() per "
         "entry of possibly_batched_index, and raise StopIteration when the stream gave "
         "nothing (or, with drop_last, too little)",
    forbidden=LOADER_ITSELF,
    time_limit=3.0,
    piece="fetch.IterableFetcher",
    expected_from="torch: `_IterableDatasetFetcher`",
    rules=(
        Rule("batches from one pass; the short last one unless `drop_last`; `StopIteration` when nothing is left",
             (1, 2, 3, 4, 5)),
        Rule("`auto_collation=False`: one sample",
             (6,)),
        Rule("reads only what a batch needs (an endless stream); `iter(dataset)` once",
             (1, 2, 3, 4, 5, 6, 7)),
    ),
    goals=(4,),
))


# ---------------------------------------------------------------------------------------
# The single-process iterator, and the DataLoader


def _next_or_end(iterator):
    try:
        return next(iterator)
    except StopIteration:
        return "StopIteration (the epoch is over)"


def _global_draw() -> list[int]:
    return torch.randint(1000, (2,)).tolist()


def _dataset(kind: str, size: int):
    return {"map": Squares, "batched": BatchedSquares, "stream": Numbers}[kind](size)


def _describe(kind: str, size: int, arguments: dict) -> str:
    names = {"map": "a dataset of {} squares", "batched": "a dataset of {} squares with "
             "__getitems__", "stream": "an IterableDataset of {} numbers"}
    shown = {name: f"torch.Generator().manual_seed({value})" if name == "generator"
             else _OWN_SAMPLER if value == _OWN_SAMPLER_SEED
             else getattr(value, "__name__", None) or repr(value)
             for name, value in arguments.items()}
    given = ", ".join(f"{name}={value}" for name, value in shown.items())
    return f"{names[kind].format(size)}, {given or 'no other argument'}"


# A sampler of the hidden cases: a RandomSampler with a generator of its own (seed 3), named
# by a string so that the case's inputs stay plain data.
_OWN_SAMPLER_SEED = "RandomSampler, seed 3"
_OWN_SAMPLER = "RandomSampler(range(10), generator=torch.Generator().manual_seed(3))"


def _loader_arguments(arguments) -> dict:
    arguments = dict(arguments)
    if "generator" in arguments:
        arguments["generator"] = torch.Generator().manual_seed(arguments["generator"])
    if arguments.get("sampler") == _OWN_SAMPLER_SEED:
        arguments["sampler"] = _own_sampler(3)
    return arguments


def _epoch(iterator, limit: int) -> list:
    batches = []
    while True:
        batch = _next_or_end(iterator)
        if isinstance(batch, str):
            return batches
        batches.append(batch)
        if len(batches) > limit:
            raise TooManyItems(limit)


def collate_list(batch):
    """A collate_fn of the hidden cases: the batch's samples as a plain list."""
    return list(batch)


def _named(arguments: dict) -> dict:
    """The loader's generator, named for ``draws()``."""
    generator = arguments.get("generator")
    return {"the loader's generator": generator} if generator is not None else {}


def _own_sampler(seed: int):
    """A RandomSampler with a generator of its own, for a loader without one: its order does
    not depend on what the loader's iterator draws from the global generator."""
    return RandomSampler(range(10), generator=torch.Generator().manual_seed(seed))


def _random_state(generator=None) -> tuple:
    """The global generator's state and ``generator``'s, as bytes: what a draw changes."""
    states = [torch.get_rng_state()] + ([generator.get_state()] if generator is not None else [])
    return tuple(bytes(state.numpy()) for state in states)


def _drew_nothing(count, loader, generator=None) -> bool:
    """Whether ``count(loader)`` (a ``len()``) left every random number generator as it was:
    counting must not draw (a pass over a random sampler would)."""
    before = _random_state(generator)
    count(loader)
    return _random_state(generator) == before


def _use_iterator(implementation, case: Case) -> dict:
    """The iterator of one epoch, made from a finished loader (the reference DataLoader):
    what it reads when, what it gives, whether its ``len()`` draws; for an ``exact`` case
    also what it draws from the random number generators (and when), torch's detail."""
    kind, size, arguments = (case.inputs[k] for k in ("kind", "size", "arguments"))
    exact = case.inputs.get("exact", False)
    arguments = _loader_arguments(arguments)
    dataset = _dataset(kind, size)
    torch.manual_seed(0)
    loader = solutions.DataLoader(dataset, **arguments)
    with draws(**_named(arguments)) as log:
        iterator = implementation(loader)
        log.mark("SingleProcessIterator(loader) made")
        seen = {"iter(iterator) is iterator": iter(iterator) is iterator}
        if kind != "stream":
            seen["samples read before the first next()"] = list(dataset.reads)
        seen["first batch"] = _next_or_end(iterator)
        log.mark("the first next()")
        seen["the other batches"] = _epoch(iterator, size + 2)
        seen["next() after the last batch"] = _next_or_end(iterator)
        log.mark("the end of the epoch")
    if exact:
        seen[DRAWS_KEY] = log.rows
    if kind == "batched":
        seen["calls of __getitems__"] = dataset.batched_reads
    if kind != "stream" or "batch_size" not in arguments or arguments["batch_size"] is None:
        seen["len(iterator)"] = len(iterator)
        seen["len(iterator) drew no random number"] = _drew_nothing(
            len, iterator, getattr(loader.sampler, "generator", None))
    if exact:
        seen["the global RNG afterwards"] = _global_draw()
    return seen


def _iterator_cases() -> list[Case]:
    def case(kind, size, hint, tier=None, exact=False, **arguments):
        return Case({"kind": kind, "size": size, "arguments": tuple(arguments.items()),
                     "exact": exact},
                    description=f"SingleProcessIterator(loader) for a loader of "
                                f"{_describe(kind, size, arguments)}"
                                + ("; its random draws compared with torch's" if exact else ""),
                    hint=hint, tier=tier)

    return [
        case("map", 10, "read no sample when the iterator is made; each next() takes the next "
                        "list of indices and fetches it with a MapFetcher; len() is "
                        "len(loader)", batch_size=4),
        case("map", 10, "the order is the loader's sampler's (here a RandomSampler with a "
                        "generator of its own); len() counts without a pass over it, which "
                        "would draw", batch_size=4, sampler=_OWN_SAMPLER_SEED),
        case("batched", 9, "a MapFetcher makes one __getitems__ call per batch", batch_size=4),
        case("map", 6, "collate with the loader's collate_fn (here one that makes lists), "
                       "whatever it is: give it to the fetcher", batch_size=4,
             collate_fn=collate_list),
        case("map", 5, "batch_size=None: the loader has no batch_sampler; iterate its "
                       "sampler, and the fetcher gets single indices (auto_collation=False)",
             batch_size=None),
        case("stream", 10, "an IterableDataset: an IterableFetcher over it; the epoch ends "
                           "when the fetcher raises StopIteration", batch_size=4),
        case("stream", 10, "drop_last=True: the fetcher drops the short last batch",
             batch_size=4, drop_last=True),
        case("map", 0, "an empty dataset: the first next() raises StopIteration", batch_size=2),
        case("map", 10, "draw, when the iterator is made, what torch's iterator draws (see it "
                        "with draws()): the iterator's draw and the sampler's permutation come "
                        "from the same generator, the loader's, in torch's order",
             tier=1, exact=True, batch_size=3, shuffle=True, generator=7),
        case("map", 10, "without a generator, the iterator draws from the global generator, "
                        "when it is made", tier=2, exact=True, batch_size=3, shuffle=True),
        case("map", 4, "a loader with a timeout but no workers: the iterator raises "
                       "AssertionError when it is made (torch's loader accepted the timeout; "
                       "its single-process iterator refuses it)", batch_size=2, timeout=5),
    ]


def _torch_iterator(loader):
    """torch's answer: the iterator of torch's DataLoader made of the same parts (the
    sampler or batch sampler, the collate_fn, the generator)."""
    parts = {"collate_fn": loader.collate_fn, "generator": loader.generator,
             "timeout": loader.timeout}
    if isinstance(loader.dataset, IterableDataset):
        parts.update(batch_size=loader.batch_size, drop_last=loader.drop_last)
    elif loader.batch_sampler is not None:
        parts.update(batch_sampler=loader.batch_sampler)
    else:
        parts.update(batch_size=None, sampler=loader.sampler)
    return iter(DataLoader(loader.dataset, **parts))


register(Exercise(
    reference=solutions.SingleProcessIterator,
    oracle=_torch_iterator,
    cases=_iterator_cases,
    run=_use_iterator,
    compare=compare_with_draws(),
    hint="make the epoch's pass over the index sampler and the fetcher when the iterator is "
         "made, read nothing then; each next() fetches the next indices; len() is len(loader)",
    forbidden=LOADER_ITSELF,
    time_limit=3.0,
    piece="dataloader.SingleProcessIterator",
    expected_from="torch: the iterator of its `DataLoader` made of the same parts",
    rules=(
        Rule("reads nothing before `next()`; `iter` returns itself; `len` is `len(loader)` and draws nothing; `StopIteration` at the end",
             (1, 2, 8)),
        Rule("the index sampler's order; the batch sampler, or the sampler without batching",
             (1, 2, 5)),
        Rule("a `MapFetcher` (one `__getitems__` per batch) or an `IterableFetcher`, with the loader's `collate_fn` and `drop_last`",
             (3, 4, 6, 7)),
        Rule("torch's draws (`draws()` logs marked when the iterator is made, after the first `next()`, at the end): one draw when the iterator is made, from the loader's generator or the global one, before the sampler's",
             (9, 10), note="every draw is compared", parity="the base seed's draw"),
        Rule("a loader's `timeout` other than 0: `AssertionError` when the iterator is made",
             (11,), parity="AssertionError for a timeout"),
    ),
    goals=(4, 5),
))


def _contents(epoch: list) -> list:
    """What an epoch held, in order: its batches' samples one after the other."""
    return [sample for batch in epoch
            for sample in (batch.tolist() if isinstance(batch, torch.Tensor) else batch)]


def _use_loader(implementation, case: Case) -> dict:
    """A loader built with the case's arguments, two epochs of it: its parts, its length
    (and whether counting drew), its batches; a shuffled epoch is compared by what it holds
    and whether its order is new, unless the case is ``exact``: then its batches, and the
    random draws of both epochs, are torch's detail."""
    kind, size, arguments = (case.inputs[k] for k in ("kind", "size", "arguments"))
    exact = case.inputs.get("exact", False)
    dataset = _dataset(kind, size)
    arguments = _loader_arguments(arguments)
    torch.manual_seed(0)
    with draws(**_named(arguments)) as log:
        loader = implementation(dataset, **arguments)
        log.mark("DataLoader(...) made")
        seen = {"loader.dataset is dataset": loader.dataset is dataset,
                "loader.batch_size": loader.batch_size, "loader.drop_last": loader.drop_last,
                "loader.collate_fn": getattr(loader.collate_fn, "__name__", "?")}
        if kind != "stream":
            seen["type(loader.sampler)"] = type(loader.sampler).__name__
            seen["type(loader.batch_sampler)"] = type(loader.batch_sampler).__name__
            if arguments.get("shuffle"):
                seen["loader.sampler.generator is the loader's generator"] = (
                    loader.sampler.generator is arguments.get("generator"))
        try:
            seen["len(loader)"] = len(loader)
            seen["len(loader) drew no random number"] = _drew_nothing(
                len, loader, arguments.get("generator"))
        except TypeError:  # a stream without __len__: its epochs are still compared
            seen["len(loader)"] = "raises TypeError"
        epochs = []
        for epoch in (1, 2):
            try:
                iterator = iter(loader)
            except AssertionError as error:
                # where the loader refuses a timeout without workers is what is compared:
                # torch's constructor accepts it and its epoch refuses it
                seen["iter(loader)"] = f"raises {type(error).__name__}"
                return seen
            log.mark(f"epoch {epoch}: iter(loader)")
            epochs.append(_epoch(iterator, size + 2))
            log.mark(f"epoch {epoch}: the end")
    if exact or not arguments.get("shuffle"):
        seen["epoch 1"], seen["epoch 2"] = epochs
    else:  # the concept: every sample once an epoch, in a new order each epoch
        seen["each epoch's samples, sorted"] = [sorted(_contents(e)) for e in epochs]
        seen["each epoch's batch sizes"] = [[len(batch) for batch in e] for e in epochs]
        seen["epoch 2 in epoch 1's order"] = _contents(epochs[0]) == _contents(epochs[1])
    if exact:
        seen[DRAWS_KEY] = log.rows
        seen["the global RNG afterwards"] = _global_draw()
    return seen


def _loader_cases() -> list[Case]:
    def case(kind, size, hint, exact=False, **arguments):
        return Case({"kind": kind, "size": size, "arguments": tuple(arguments.items()),
                     "exact": exact},
                    description=f"DataLoader({_describe(kind, size, arguments)}); two epochs"
                                + (", their random draws compared with torch's" if exact
                                   else ""),
                    hint=hint)

    return [
        case("map", 10, "no shuffle: a SequentialSampler, grouped by a BatchSampler, batches "
                        "collated by default_collate", batch_size=4),
        case("map", 10, "shuffle=True: a RandomSampler with the loader's generator; each "
                        "epoch a new order; len() counts without drawing", batch_size=3,
             shuffle=True, generator=1),
        case("map", 10, "drop_last=True goes to the BatchSampler", batch_size=4,
             drop_last=True),
        case("map", 10, "a sampler of your own (a list) replaces the SequentialSampler",
             batch_size=2, sampler=[9, 1, 8]),
        case("map", 10, "a batch_sampler of your own: no BatchSampler is built, and "
                        "loader.batch_size is None, loader.drop_last False (as torch's say)",
             batch_sampler=[[0, 1], [5]]),
        case("map", 6, "batch_size=None: no batch sampler, and default_convert instead of "
                       "default_collate", batch_size=None),
        case("map", 6, "a collate_fn of your own replaces default_collate", batch_size=4,
             collate_fn=collate_list),
        case("batched", 9, "a dataset with __getitems__: one call per batch", batch_size=4),
        case("stream", 10, "an IterableDataset: the fetcher reads the stream (this one has no "
                           "__len__, so len(loader) raises TypeError, as torch's does)",
             batch_size=4),
        case("stream", 5, "an IterableDataset with batch_size=None", batch_size=None),
        case("map", 10, "check_loader_arguments refuses shuffle with a sampler", shuffle=True,
             sampler=[0, 1]),
        case("map", 10, "multiprocessing_context needs workers: ValueError",
             multiprocessing_context="spawn"),
        case("map", 10, "the BatchSampler refuses batch_size=0", batch_size=0),
        case("map", 10, "each epoch's iterator draws torch's base seed from the global "
                        "generator, even without shuffling", exact=True, batch_size=4),
        case("map", 10, "the base seed and the shuffle both come from the loader's generator, "
                        "in torch's order", exact=True, batch_size=3, shuffle=True,
             generator=1),
        case("map", 10, "shuffle=True without a generator: the base seed and the sampler's "
                        "seed both come from the global generator", exact=True, batch_size=3,
             shuffle=True),
        case("map", 10, "timeout=5 without workers: the loader is built (as torch's is), and "
                        "iter(loader) raises AssertionError, from your iterator", batch_size=4,
             timeout=5),
    ]


register(Exercise(
    reference=solutions.DataLoader,
    oracle=DataLoader,
    cases=_loader_cases,
    run=_use_loader,
    compare=compare_with_draws(),
    hint="check the arguments, then choose the sampler, the batch sampler and the collate_fn "
         "as torch's constructor does (probe it); len() and iter() hand the work to your "
         "loader_len and SingleProcessIterator",
    forbidden=LOADER_ITSELF + ("minidataloader.dataloader.DataLoader",
                               "torch.utils.data.dataloader.DataLoader"),
    time_limit=4.0,
    piece="dataloader.DataLoader",
    expected_from="torch: `DataLoader`",
    rules=(
        Rule("the parts: `SequentialSampler` or `RandomSampler` with the loader's generator, `BatchSampler` (with `drop_last`), `default_collate`; two epochs; `len`, which draws nothing",
             (1, 2, 3)),
        Rule("a sampler or batch sampler of your own (then `batch_size` is `None`, `drop_last` `False`)",
             (4, 5)),
        Rule("`batch_size=None`: no batch sampler, `default_convert`; a `collate_fn` of your own",
             (6, 7)),
        Rule("`__getitems__`; an `IterableDataset` with and without batching",
             (8, 9, 10)),
        Rule("refused arguments: `check_loader_arguments`, `multiprocessing_context` without workers, the `BatchSampler`'s checks",
             (11, 12, 13)),
        Rule("torch's draws over two epochs (`draws()` logs marked at each `iter(loader)` and epoch end), and torch's shuffled batches",
             (14, 15, 16), parity="the base seed's draw"),
        Rule("a `timeout` without workers: built, and `iter(loader)` raises `AssertionError`",
             (17,), parity="AssertionError for a timeout"),
    ),
    goals=(1, 6),
))


# ---------------------------------------------------------------------------------------
# The debugging lab: a loader with four bugs, mended


def records(size: int) -> list[dict]:
    """The lab's dataset: ``size`` dict samples whose keys are not in alphabetical order."""
    return [{"x": torch.tensor([i, -i]), "label": i % 3} for i in range(size)]


def _torch_lab_loader(dataset, batch_size=1, shuffle=False, generator=None):
    """torch's answer: its DataLoader with the same arguments."""
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, generator=generator)


def _order(epoch: list) -> list[int]:
    """The samples of an epoch, in order, by their number (``x[0]``)."""
    return [int(number) for batch in epoch for number in batch["x"][:, 0]]


def _use_lab_loader(implementation, case: Case) -> dict:
    """Three epochs of the loader, for a concept case: the batches, or (shuffled) what each
    epoch holds and whether its order is new; for an ``exact`` case, two epochs' batches and
    their random draws, to compare with torch's."""
    size, batch_size, shuffle, seed, exact = (
        case.inputs[k] for k in ("size", "batch_size", "shuffle", "seed", "exact"))
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    named = {} if generator is None else {"the loader's generator": generator}
    torch.manual_seed(0)
    loader = implementation(records(size), batch_size, shuffle, generator=generator)
    seen = {"len(loader)": len(loader)}
    epochs = []
    with draws(**named) as log:
        for epoch in (1, 2, 3):
            epochs.append(take(loader, size + 2))
            log.mark(f"epoch {epoch}: the end")
    if exact:
        seen["epoch 1"], seen["epoch 2"] = epochs[:2]
        seen[DRAWS_KEY] = log.rows
        seen["the global RNG afterwards"] = _global_draw()
    elif not shuffle:
        seen["epoch 1"] = epochs[0]
    else:
        orders = [_order(epoch) for epoch in epochs]
        seen["each epoch's samples, sorted"] = [sorted(order) for order in orders]
        seen["epoch 2 in epoch 1's order"] = orders[1] == orders[0]
        seen["epoch 3 in epoch 2's order"] = orders[2] == orders[1]
    return seen


def _lab_cases() -> list[Case]:
    def case(size, batch_size, hint, shuffle=False, seed=None, exact=False):
        generator = "" if seed is None else f", generator=torch.Generator().manual_seed({seed})"
        return Case({"size": size, "batch_size": batch_size, "shuffle": shuffle, "seed": seed,
                     "exact": exact},
                    description=f"LabLoader(records({size}), batch_size={batch_size}, "
                                f"shuffle={shuffle}{generator}), where records(n) are the "
                                f"samples {{'x': tensor([i, -i]), 'label': i % 3}}"
                                + ("; its batches and random draws compared with torch's"
                                   if exact else ""),
                    hint=hint)

    return [
        case(8, 4, "each field of the batch under its own name: 'x' the stacked x, 'label' "
                   "the labels"),
        case(10, 4, "10 samples in batches of 4: two full batches and a short one of 2, which "
                    "torch keeps (and len(loader) counts)"),
        case(3, 5, "fewer samples than a batch: one short batch"),
        case(10, 4, "with a generator, each epoch a new order: the generator goes on from "
                    "where the last epoch left it", shuffle=True, seed=0),
        case(10, 3, "torch's order for the same seed: compare your draws with torch's "
                    "(draws()), their order included", shuffle=True, seed=1, exact=True),
        case(10, 3, "without a generator, torch's order for the same global seed: the base "
                    "seed, then the sampler's seed, from the global generator", shuffle=True,
             exact=True),
    ]


register(Exercise(
    reference=solutions.LabLoader,
    oracle=_torch_lab_loader,
    cases=_lab_cases,
    run=_use_lab_loader,
    compare=compare_with_draws(),
    hint="compare the loader with torch's DataLoader for the same seed: its batches, its len, "
         "two epochs' orders, and its draws (draws())",
    forbidden=LOADER_ITSELF,
    time_limit=3.0,
    expected_from="torch: `DataLoader` with the same arguments",
    rules=(
        Rule("every sample once an epoch: the short last batch kept, and counted by `len`",
             (2, 3)),
        Rule("each field of a batch under its own name",
             (1, 2, 3)),
        Rule("with a generator, a new order every epoch (the generator is never reseeded)",
             (4,)),
        Rule("torch's order for the same seed: the base seed drawn before the sampler's draws",
             (5, 6), parity="the base seed's draw"),
    ),
    goals=(5,),
))


# ---------------------------------------------------------------------------------------
# Check yourself

register(Choice(
    "ch05-stream-index-sampler", answer="b", why={
        "a": "a stream has no indices to give: its sampler yields None for ever, and the "
             "batch sampler groups those",
        "c": "the loader builds a BatchSampler for a stream too: its lists say how many "
             "samples each batch takes from the stream",
        "d": "samplers never see samples: the fetcher reads them from the stream, one per None",
    }, goals=(1,)))

register(Choice(
    "ch05-timeout-without-workers", answer="b", why={
        "a": "torch's constructor accepts timeout=5 without workers; the check comes later",
        "c": "timeout is how long the loader waits for a worker's batch: without workers there "
             "is nothing to wait for, and torch refuses it, when an epoch starts",
        "d": "it is not ignored: the first epoch fails with an AssertionError",
    }, goals=(2,)))


def _batches_of_an_overlong_stream() -> int:
    return len(list(DataLoader(Numbers(13, length=10), batch_size=4)))


register(Prediction(
    "ch05-overlong-stream", measure=_batches_of_an_overlong_stream,
    why="an epoch reads the stream to its end, whatever its __len__ says: 13 samples in "
        "batches of 4",
    mistakes={3: "3 is len(loader), computed from the stream's __len__ of 10; the epoch reads "
                 "the stream to its end",
              13: "13 is the number of samples: they come in batches of 4",
              10: "the stream's __len__ is only a guess, and counts samples, not batches"},
    goals=(3,),
))


def _reads_before_the_first_next() -> int:
    dataset = Squares(10)
    iter(DataLoader(dataset, batch_size=4, shuffle=True,
                    generator=torch.Generator().manual_seed(0)))
    return len(dataset.reads)


register(Prediction(
    "ch05-reads-before-next", measure=_reads_before_the_first_next,
    why="making the iterator reads no sample: the first batch is read at the first next()",
    mistakes={4: "the first batch is read when it is asked for, at the first next(), not "
                 "when the iterator is made",
              10: "nothing is read ahead without workers: each batch is read when it is asked "
                  "for"},
    goals=(4,),
))


def _global_numbers_of_an_epoch(**arguments) -> int:
    torch.manual_seed(0)
    loader = DataLoader(range(10), batch_size=4, shuffle=True, **arguments)
    with draws() as log:
        list(loader)
    return log.numbers("torch (global)")


register(Prediction(
    "ch05-epoch-draws", measure=_global_numbers_of_an_epoch,
    why="two draws: the iterator's base seed when it is made, and the RandomSampler's seed "
        "for its own generator when the first index is asked for",
    mistakes={1: "the iterator draws one (the base seed), but the RandomSampler draws one "
                 "too: the seed of its private generator",
              0: "without a generator both the iterator and the sampler take their number "
                 "from the global generator",
              20: "the permutations come from the sampler's private generator; the global "
                  "one gives only its seed",
              3: "the sampler's second permutation comes from its private generator too"},
    goals=(5,),
))

register(Prediction(
    "ch05-generator-draws",
    measure=lambda: _global_numbers_of_an_epoch(generator=torch.Generator().manual_seed(1)),
    why="with generator=g, the base seed comes from g, and the RandomSampler built with g "
        "draws its permutations from g: nothing from the global generator",
    mistakes={1: "the base seed comes from the loader's generator too, when it has one",
              2: "both draws move to the loader's generator"},
    goals=(5,),
))

register(Choice(
    "ch05-draw-order", answer="b", why={
        "a": "the iterator draws the base seed when it is made, before anyone asks for an "
             "index; the sampler draws when the first index is asked for",
        "c": "building a loader draws nothing: every draw belongs to an epoch",
        "d": "the base seed is drawn once per iterator, that is once per epoch, not per batch",
    }, goals=(5,)))
