"""Chapter 7 (randomness and identity in workers): the exercises and their hidden cases.

The learner's worker loop and iterator grow here (seeds installed in each worker, the worker
told who it is, a stream that ends in one worker); they are checked with the machinery of
``multiprocess_cases``, the worker loop in real forked processes but for its first case.

Two exercises run the reader's code inside real worker processes of torch's DataLoader
(started with fork: the checker itself runs in a forked child, and only fork hands the
reader's notebook code to a worker without pickling it). Code that misbehaves in a worker
(exits, hangs, floods) would be judged by what the loader makes of it, so ``seed_worker``
is first called in the checker's own process the way a worker calls it: torch's worker
seeds ``random``, torch and numpy, sets its ``WorkerInfo``, then calls
``worker_init_fn(worker_id)`` (``multiprocess_cases.as_in_a_torch_worker``; a test compares
it with a real worker). Where there is no fork
(Windows), the loaders of the hidden cases run without workers, for the reference and the
reader's code alike.
"""

from __future__ import annotations

import random
import sys

import numpy as np
import torch
import torch.utils.data._utils.worker as torch_worker
from torch.utils.data import DataLoader, Dataset, IterableDataset

from minidataloader_course.chapters.ch07 import solution as solutions
from minidataloader_course.chapters.ch07 import worker_seeded
from minidataloader_course.chapters.multiprocess_cases import (
    ITERATOR_PIECES,
    WORKER_INFO,
    WORKER_PIECES,
    TorchIterator,
    as_in_a_torch_worker,
    iterator_case,
    more_workers_than_cpus_is_fine,
    run_worker,
    tasks_text,
    use_iterator,
    worker_info_in,
    worker_module_of,
    workers_for_a_check,
)
from minidataloader_course.checker.framework import Case, Exercise, Rule, register, take
from minidataloader_course.checker.questions import Choice, Prediction

GENERATE_STATE = ("minidataloader.worker._generate_state",
                  "torch.utils.data._utils.worker._generate_state")


# ---------------------------------------------------------------------------------------
# numpy's seed in a worker (a piece of the learner's loader)

def _state_hint(base_seed: int, worker_id: int) -> str:
    if base_seed >> 32:
        return ("this base seed needs more than 32 bits: of the four words (the worker id, "
                "the base seed's low 32 bits, its high 32 bits, and 0), the third is not 0 here")
    return ("numpy's SeedSequence of four 32-bit words: the worker id, the base seed's low 32 "
            "bits, its high 32 bits, and 0; ask it for 4 words of state, as a list of ints")


def _state_cases() -> list[Case]:
    drawn = torch.empty((), dtype=torch.int64).random_(
        generator=torch.Generator().manual_seed(0)).item()
    return [Case({"base_seed": base, "worker_id": worker}, hint=_state_hint(base, worker))
            for base, worker in [(0, 0), (drawn, 0), (drawn, 3), (2**32 - 1, 1), (2**32, 1),
                                 (7, 2), (2**63 - 1, 1), (12345, 0)]]


register(Exercise(
    reference=solutions.generate_state,
    oracle=torch_worker._generate_state,
    cases=_state_cases,
    hint=("mix the worker id and the two 32-bit halves of the base seed with "
          "np.random.SeedSequence, and return generate_state(4) as a list of ints"),
    forbidden=GENERATE_STATE,
    piece="worker.generate_state",
    expected_from="torch: `_generate_state`",
    rules=(
        Rule("`SeedSequence([worker_id, low word, high word, 0]).generate_state(4)` as a list",
             (1, 3, 6, 8)),
        Rule("base seeds over 32 bits",
             (2, 4, 5, 7)),
    ),
    goals=(1,),
))


# ---------------------------------------------------------------------------------------
# A worker_init_fn that seeds the dataset's own generator


class NoisyNumbers(Dataset):
    """Sample i is a random float from a numpy generator made in __init__, seeded with 0:
    without help, every worker draws the same floats."""

    def __init__(self, n: int = 8):
        self.n = n
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.rng.random()


# A realistic base seed: what DataLoader(generator=torch.Generator().manual_seed(0)) draws.
BASE_SEED = 900450186894289455


def _as_a_worker_would(implementation, worker_id: int, num_workers: int) -> dict:
    """Call the worker_init_fn here, as torch's worker calls it: seeds and WorkerInfo first."""
    dataset = NoisyNumbers()
    with as_in_a_torch_worker(worker_id, num_workers, BASE_SEED, dataset):
        returned = implementation(worker_id)
    rng = dataset.rng
    if not isinstance(rng, np.random.Generator):
        return {"returned": returned, "dataset.rng afterwards": type(rng).__name__}
    return {"returned": returned, "dataset.rng's first draws": [rng.random() for _ in range(3)]}


def _use_worker_init_fn(implementation, case: Case) -> dict:
    workers, seed = case.inputs["num_workers"], case.inputs["generator_seed"]
    seen = {f"worker {w} (called directly)": _as_a_worker_would(implementation, w, workers)
            for w in range(workers)}
    with more_workers_than_cpus_is_fine():
        loader = DataLoader(NoisyNumbers(4 * workers), batch_size=2,
                            worker_init_fn=implementation, **workers_for_a_check(workers),
                            generator=torch.Generator().manual_seed(seed))
        draws = torch.cat(take(loader, 4 * workers)).tolist()
    seen["draws in a real epoch"] = draws
    seen["draws repeated across workers"] = len(draws) - len(set(draws))
    return seen


register(Exercise(
    reference=solutions.seed_worker,
    cases=lambda: [Case({"num_workers": w, "generator_seed": s},
                        description=f"NoisyNumbers(), DataLoader(num_workers={w}, "
                                    f"worker_init_fn=seed_worker, generator seed {s})")
                   for w, s in [(2, 0), (3, 1)]],
    run=_use_worker_init_fn,
    hint=("in the worker, get_worker_info() (from torch.utils.data) gives .seed and .dataset "
          "(this worker's copy): give that copy a new numpy Generator made from the "
          "worker's seed, and return nothing"),
    allowed=WORKER_INFO,
    time_limit=5.0,
    rules=(
        Rule("each worker's `dataset.rng` seeded with `get_worker_info().seed`, nothing returned; no repeats across workers",
             (1, 2)),
    ),
    goals=(2, 3),
))


# ---------------------------------------------------------------------------------------
# Counting duplicated augmentations


def _params(rng: random.Random, rows: int) -> list[list[float]]:
    return [[rng.randrange(-2, 3), rng.randrange(-2, 3), 0.6 + 0.8 * rng.random()]
            for _ in range(rows)]


def _as_batches(rows: list[list[float]], batch_size: int) -> list[torch.Tensor]:
    return [torch.tensor(rows[i:i + batch_size], dtype=torch.float64)
            for i in range(0, len(rows), batch_size)]


def _shared_state(stream: list, num_workers: int, batches: int, batch_size: int) -> list:
    """The rows of a map-style epoch whose workers all copied one generator: batch b is
    fetched by worker b % num_workers, which draws the next rows of the same stream."""
    drawn = [0] * num_workers
    rows = []
    for b in range(batches):
        w = b % num_workers
        rows += stream[drawn[w]:drawn[w] + batch_size]
        drawn[w] += batch_size
    return rows


def _duplicate_cases() -> list[Case]:
    rng = random.Random(7)
    distinct = _params(rng, 10)
    stream = _params(rng, 8)
    near = [[1, 0, 0.9], [1, 0, 0.9 + 1e-9], [0, 1, 0.9]]

    def case(rows, batch_size, what, hint):
        return Case({"batches": _as_batches(rows, batch_size)},
                    description=f"{what}: {len(rows)} samples in batches of {batch_size}",
                    hint=hint)

    return [
        case(distinct, 4, "a healthy epoch",
             "every augmentation differs: no duplicates (the last batch is short)"),
        case(_shared_state(stream, 4, 16, 2), 2, "4 workers sharing one generator state",
             "each worker draws the same rows, which come back in later batches: compare "
             "each row with every row before it, across batches (3 of every 4 samples repeat "
             "an earlier one)"),
        case(_shared_state(stream, 2, 5, 2), 2, "2 workers sharing one generator state, 5 "
             "batches", "compare rows across batches, not only within a batch: batch 1 "
             "repeats batch 0, batch 3 repeats batch 2"),
        case(distinct[:3] + [distinct[1]], 4, "one batch",
             "a repeat inside one batch counts too"),
        case(near, 3, "nearly equal rows", "rows that differ in the 9th decimal are different "
             "augmentations: compare exactly"),
        case([distinct[0]] * 5, 2, "the same row five times",
             "five identical rows: four of them repeat the first"),
        Case({"batches": []}, description="no batches at all", hint="nothing to count: 0"),
    ]


register(Exercise(
    reference=solutions.count_duplicate_augmentations,
    cases=_duplicate_cases,
    hint=("go through every row of every batch in order, keep the rows seen so far in a set "
          "(as tuples: tensors and lists cannot go in a set), and count the rows already in it"),
    rules=(
        Rule("rows equal to an earlier row, across batches and within one",
             (1, 2, 3, 4, 6)),
        Rule("exact comparison",
             (5,)),
        Rule("no batch",
             (7,)),
    ),
    goals=(3,),
))


# ---------------------------------------------------------------------------------------
# Sharding an IterableDataset


def _use_stream(implementation, case: Case) -> dict:
    items, workers, batch_size = (case.inputs[k] for k in ("items", "num_workers", "batch_size"))
    stream = implementation(items)
    with more_workers_than_cpus_is_fine():
        loader = DataLoader(stream, batch_size=batch_size, **workers_for_a_check(workers))
        batches = take(loader, 3 * len(items) + 3)  # an endless stream becomes a verdict
    numbers = [n for batch in batches for n in batch.tolist()]
    return {"batches, in the order the loader yields them": batches,
            "numbers read more than once": sorted({n for n in numbers if numbers.count(n) > 1})}


def _stream_cases() -> list[Case]:
    def case(n, workers, batch_size, hint):
        return Case({"items": list(range(n)), "num_workers": workers, "batch_size": batch_size},
                    description=f"ShardedStream(list(range({n}))), DataLoader(batch_size="
                                f"{batch_size}, num_workers={workers})", hint=hint)

    return [
        case(7, 0, 3, "no workers: get_worker_info() is None, and the main process reads "
                      "every item"),
        case(10, 3, 2, "3 workers: worker 0 reads items 0, 3, 6, 9; worker 1 reads 1, 4, 7; "
                       "worker 2 reads 2, 5, 8 (strided: items[id::num_workers])"),
        case(2, 3, 2, "more workers than items: worker 2 gets nothing, and that is fine"),
    ]


register(Exercise(
    reference=solutions.ShardedStream,
    cases=_stream_cases,
    run=_use_stream,
    hint=("in __iter__, ask torch.utils.data.get_worker_info(): None means no workers (yield "
          "everything); otherwise yield self.items[info.id::info.num_workers]"),
    allowed=WORKER_INFO,
    time_limit=5.0,
    rules=(
        Rule("every item in the main process",
             (1,)),
        Rule("worker *w* of *W*: `items[w::W]`, each item once",
             (2, 3)),
    ),
    goals=(2, 5),
))


# ---------------------------------------------------------------------------------------
# The worker loop, grown: seeds, get_worker_info, worker_init_fn, the end of a stream


class WhatAWorkerSees(Dataset):
    """Sample ``i`` is what code in the worker sees: its WorkerInfo (as the learner's
    ``get_worker_info()`` gives it), torch's initial seed, one draw from each global
    generator, and what ``worker_init_fn`` left on this copy of the dataset."""

    def __init__(self, n: int, worker_module: str | None):
        self.n, self.worker_module = n, worker_module
        self.from_init_fn = "worker_init_fn did not run"

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        info = worker_info_in(self.worker_module)
        if info is None:
            return index, "get_worker_info() is None"
        return (index, {"id": info.id, "num_workers": info.num_workers, "seed": info.seed,
                        "dataset is this copy": info.dataset is self},
                torch.initial_seed(), round(random.random(), 9), round(float(np.random.rand()), 9),
                round(torch.rand(()).item(), 6), self.from_init_fn)


def note_the_seed(worker_id):
    """The cases' worker_init_fn: leaves on the worker's copy of the dataset what it saw."""
    module = sys.modules[note_the_seed.worker_module]
    info = module._worker_info
    info.dataset.from_init_fn = (worker_id, info.seed, round(random.random(), 9))


class Revives(IterableDataset):
    """A stream of ``n`` numbers whose iterator starts over after its StopIteration (a badly
    written iterator, but a legal one): a worker must not read it again this epoch."""

    def __init__(self, n: int):
        self.n = n

    def __iter__(self):
        return _Reviving(self.n)

    def __repr__(self):
        return f"a stream of {self.n} numbers whose iterator starts over after it ends"


class _Reviving:
    def __init__(self, n):
        self.n, self.i = n, 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.i == self.n:
            self.i = 0
            raise StopIteration
        self.i += 1
        return self.i - 1


class EveryOther(IterableDataset):
    """The numbers 0..n-1; in a worker (asked of the learner's get_worker_info when the
    fetcher calls ``iter()``) only those of its share: ``items[id::num_workers]``."""

    def __init__(self, n: int, worker_module: str | None):
        self.n, self.worker_module = n, worker_module

    def __iter__(self):
        info = worker_info_in(self.worker_module)
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def _worker_case(dataset, tasks, hint, base_seed=123, worker_id=1, num_workers=3,
                 init_fn=False, in_a_process=True) -> Case:
    where = "in a real worker process (fork), " if in_a_process else ""
    init = ", worker_init_fn notes what it sees" if init_fn else ""
    kind, n = dataset
    shown = {"sees": f"{n} samples that report what code in the worker sees",
             "revives": repr(Revives(n)),
             "every other": f"a stream of 0..{n - 1} giving worker w of W items[w::W]"}[kind]
    return Case({"dataset": dataset, "tasks": tuple(tasks), "base_seed": base_seed,
                 "worker_id": worker_id, "num_workers": num_workers, "init_fn": init_fn,
                 "in_a_process": in_a_process},
                description=f"{where}worker {worker_id} of {num_workers}, base_seed="
                            f"{base_seed}{init}; dataset: {shown}; index queue: "
                            f"{tasks_text(tasks)}", hint=hint)


def _seeded_worker_cases() -> list[Case]:
    return [
        _worker_case(("sees", 2), [(0, (0, 1)), None],
                     "seed torch and random with base_seed + worker_id, numpy with "
                     "generate_state(base_seed, worker_id), and set the module's _worker_info "
                     "= WorkerInfo(id, num_workers, seed, dataset) before the first task",
                     in_a_process=False),
        _worker_case(("sees", 3), [(0, (0,)), (1, (1, 2)), None],
                     "a base seed of more than 32 bits: numpy's seed comes from "
                     "generate_state, torch's and random's are base_seed + worker_id",
                     base_seed=2**40 + 5, worker_id=2),
        _worker_case(("sees", 2), [(0, (0, 1)), None],
                     "call init_fn(worker_id) after the seeds and the info, before the first "
                     "task (it may draw random numbers, and read get_worker_info())",
                     worker_id=0, num_workers=2, init_fn=True),
        _worker_case(("every other", 7), [(0, (None, None)), (1, (None, None)), None],
                     "make the fetcher after setting _worker_info: for a stream it calls "
                     "iter(dataset), which asks get_worker_info() for this worker's share",
                     worker_id=1, num_workers=2),
    ]


def _stream_end_cases() -> list[Case]:
    return [
        _worker_case(("sees", 4), [(0, (0, 1)), (1, (2, 3)), None],
                     "a map-style dataset: no stream, no StreamEnded; every task is answered, "
                     "as in the step before", worker_id=0, num_workers=2, in_a_process=False),
        _worker_case(("revives", 4), [(0, (None, None)), (1, (None, None)), (2, (None, None)),
                                      (3, (None, None)), None],
                     "an IterableDataset: the fetcher raises StopIteration when this worker's "
                     "copy has run out; send (batch_number, StreamEnded(worker_id)) in place of "
                     "the batch, once, then answer no more tasks (this stream would start over)",
                     worker_id=0, num_workers=1),
        _worker_case(("every other", 7), [(0, (None, None)), (1, (None, None)),
                                          (2, (None, None)), (3, (None, None)), None],
                     "worker 1 of 2 has 3 of the 7 numbers: two batches, then its "
                     "StreamEnded(1) for task 2, and no answer to task 3",
                     worker_id=1, num_workers=2),
    ]


def _use_grown_worker(implementation, case: Case) -> dict:
    inputs = case.inputs
    module = worker_module_of(implementation)
    kind, n = inputs["dataset"]
    dataset = {"sees": WhatAWorkerSees(n, module), "revives": Revives(n),
               "every other": EveryOther(n, module)}[kind]
    note_the_seed.worker_module = module
    init_fn = note_the_seed if inputs["init_fn"] else None
    # dataset, [queues and done_event], auto_collation, collate_fn, drop_last, base_seed,
    # init_fn, worker_id, num_workers
    arguments = (dataset, True, list, False, inputs["base_seed"], init_fn,
                 inputs["worker_id"], inputs["num_workers"])
    seen = run_worker(implementation, arguments, list(inputs["tasks"]), inputs["in_a_process"])
    if not inputs["in_a_process"]:
        seen["tasks left unread"] = "(not compared)"
    return seen


# The worker loop grows in two steps (NOTE [ A piece grown in steps ]): who it is, then the
# end of its stream. Registered in that order, the chapter's.
register(Exercise(
    reference=worker_seeded.worker_loop,
    name="worker_loop, seeded",
    cases=_seeded_worker_cases,
    run=_use_grown_worker,
    hint=("before the loop: the three seeds, _worker_info, init_fn, then the fetcher"),
    forbidden=WORKER_PIECES + GENERATE_STATE,
    allowed=WORKER_INFO,
    time_limit=5.0,
    piece="worker.worker_loop",
    expected_from="reference; milestone 7 compares with torch",
    rules=(
        Rule("torch and `random` seeded with `base_seed + worker_id`, numpy with `generate_state`",
             (1, 2), parity="torch's seed arithmetic"),
        Rule("`get_worker_info()` knows the worker: `WorkerInfo(id, num_workers, seed, this dataset)`",
             (1, 2)),
        Rule("`init_fn(worker_id)` after the seeds and the info",
             (3,)),
        Rule("the fetcher made after `_worker_info` (a stream asks for its share)",
             (4,)),
    ),
    goals=(1, 6),
))

register(Exercise(
    reference=solutions.worker_loop,
    name="worker_loop, streams",
    cases=_stream_end_cases,
    run=_use_grown_worker,
    hint=("a StopIteration from the fetcher means this worker's copy of the stream has run "
          "out: send (batch_number, StreamEnded(worker_id)) once, then answer no more tasks "
          "until the None"),
    forbidden=WORKER_PIECES + GENERATE_STATE,
    allowed=WORKER_INFO,
    time_limit=5.0,
    piece="worker.worker_loop",
    expected_from="reference; milestone 7 compares with torch",
    rules=(
        Rule("a stream's end: `StreamEnded(worker_id)` in place of the batch, once, and only then",
             (1, 2, 3)),
        Rule("after it, no answer to any task (a stream may start over)",
             (2, 3)),
    ),
    goals=(6,),
))


# ---------------------------------------------------------------------------------------
# The iterator, grown: a worker whose stream has ended gets no more tasks


def _stream_iterator_cases() -> list[Case]:
    return [
        iterator_case(("stream", 9), {"batch_size": 2, "num_workers": 2},
                      "every worker reads the whole stream here: both copies' batches come, "
                      "in turns; when a worker sends StreamEnded, give it no more tasks (None "
                      "lets it leave), send the task to another worker, and skip the batch "
                      "numbers it still owed; the epoch ends when no worker is left", watch=()),
        iterator_case(("stream", 9, (3, 1)), {"batch_size": 2, "num_workers": 2},
                      "worker 0 has three times as much to read as worker 1: after worker 1's "
                      "stream ends, every task goes to worker 0, until its stream ends too; the "
                      "epoch ends when no worker is left", watch=()),
        iterator_case(("stream", 10, (1, 1, 1)), {"batch_size": 3, "num_workers": 3,
                                                  "prefetch_factor": 1, "drop_last": True},
                      "three shares of a stream, each ending with a partial batch that "
                      "drop_last drops: each worker ends at its own time", watch=()),
        iterator_case(("numbers", 10), {"batch_size": 3, "num_workers": 3,
                                        "prefetch_factor": 1},
                      "a map-style dataset: every worker stays active, as in chapter 6, and no "
                      "StreamEnded comes: the epoch ends when the sampler has run out and every "
                      "batch sent has been handed out"),
    ]


register(Exercise(
    reference=solutions.MultiProcessIterator,
    name="MultiProcessIterator, streams",
    oracle=TorchIterator,
    cases=_stream_iterator_cases,
    run=use_iterator,
    hint=("a StreamEnded from worker w is never handed out: w gets None and no more tasks, "
          "one more task goes to a worker whose stream has not ended, and the batch numbers "
          "w still owed are skipped"),
    forbidden=ITERATOR_PIECES,
    time_limit=8.0,
    piece="dataloader.MultiProcessIterator",
    expected_from="torch: its iterator",
    rules=(
        Rule("a worker whose stream ended gets no more tasks; the batches it owed are skipped",
             (1, 2, 3)),
        Rule("the epoch ends when every stream has ended",
             (1, 2, 3)),
        Rule("a map-style dataset as before",
             (4,)),
    ),
    goals=(6,),
))


# ---------------------------------------------------------------------------------------
# Check yourself

register(Choice(
    "ch07-seed-rule", answer="a", why={
        "b": "the seed column differs from worker to worker: worker 1's is one more than "
             "worker 0's",
        "c": "worker 0's seed is the base seed itself, and worker 1's is only one more",
        "d": "the main process draws one number per iterator, the base seed; each worker "
             "derives its seed from it, with nothing drawn for it",
    }, goals=(1,)))

register(Choice(
    "ch07-why-numpy-state", answer="a", why={
        "b": "numpy takes a single int as well; the four words are there to keep its "
             "numbers apart from random's, not for speed",
        "c": "every worker gets a different state, from its worker id: the point is numbers "
             "that differ between workers",
        "d": "the point is the opposite: numpy's state is made so that numpy replays no "
             "other generator of the worker, neither random's numbers nor torch's",
    }, goals=(1,)))

register(Choice(
    "ch07-worker-info-main", answer="b", why={
        "a": "there is no worker 0 without workers: the main process is no worker",
        "c": "get_worker_info() never raises: in the main process it says so by its value",
        "d": "get_worker_info() answers for the process it runs in, whatever the loader's "
             "settings",
    }, goals=(2,)))


class SharedGenerator(Dataset):
    """Sample i is one draw from a numpy generator made once, in __init__: the classic bug."""

    def __init__(self, n: int):
        self.n, self.rng = n, np.random.default_rng(0)

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return float(self.rng.random())


def _different_draws() -> int:
    with more_workers_than_cpus_is_fine():
        loader = DataLoader(SharedGenerator(16), batch_size=4, num_workers=4,
                            multiprocessing_context="fork")
        draws = [value for batch in loader for value in batch.tolist()]
    return len(set(draws))


register(Prediction(
    "ch07-shared-generator", measure=_different_draws,
    why="each worker starts with a copy of the same generator, in the same state, and torch "
        "does not reseed it: the 4 workers draw the same 4 numbers",
    mistakes={16: "torch reseeds its own global generator, random and numpy's global one; a "
                  "Generator object made in __init__ is copied into each worker as it is",
              1: "within a worker the generator moves on: each of its 4 samples gets another "
                 "number"},
    goals=(3,),
))

register(Choice(
    "ch07-which-generators", answer="c", why={
        "a": "torch seeds more than its own generator: random and numpy's global generator "
             "get seeds too",
        "b": "torch cannot reach a generator object your dataset holds: it is copied into "
             "the worker in whatever state it had",
        "d": "every worker's generators are seeded before its first task, from the base "
             "seed; nothing is left to the operating system",
    }, goals=(3,)))

register(Choice(
    "ch07-change-num-workers", answer="b", why={
        "a": "the base seed is the same, but with 3 workers most samples are fetched by "
             "another worker, or later in a worker's stream",
        "c": "workers 0 and 1 get the same seeds as before (base seed + id), and their first "
             "batches hold the same samples: those keep their augmentations",
        "d": "the samples come in the same order: only who fetches them, and after how many "
             "draws, changes",
    }, goals=(4,)))


def _batches_of_a_sharded_stream() -> int:
    from minidataloader_course.chapters.ch07.randomness import NumberStream

    with more_workers_than_cpus_is_fine():
        return len(list(DataLoader(NumberStream(10, "stride"), batch_size=2, num_workers=4,
                                   multiprocessing_context="fork")))


register(Prediction(
    "ch07-sharded-stream-batches", measure=_batches_of_a_sharded_stream,
    why="each worker batches its own share: shares of 3, 3, 2 and 2 numbers make 2 + 2 + 1 "
        "+ 1 batches",
    mistakes={5: "5 is len(loader), 10 numbers in batches of 2; but every worker ends its own "
                 "share, and two of them end with a partial batch",
              20: "the stream shards itself: every number comes once, not once per worker",
              4: "the shares of 3 numbers need two batches each: one of 2 and one of 1"},
    goals=(5,),
))
