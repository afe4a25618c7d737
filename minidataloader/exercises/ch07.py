"""Chapter 7 (randomness and identity in workers): the exercises and their hidden cases.

Two exercises run the reader's code inside real worker processes of torch's DataLoader
(started with fork: the checker itself runs in a forked child, and only fork hands the
reader's notebook code to a worker without pickling it). Code that misbehaves in a worker
(exits, hangs, floods) would be judged by what the loader makes of it, so ``seed_worker``
is first called in the checker's own process the way a worker calls it: torch's worker
sets its ``WorkerInfo``, then calls ``worker_init_fn(worker_id)``. Where there is no fork
(Windows), the loaders of the hidden cases run without workers, for the reference and the
reader's code alike.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import random
import warnings

import numpy as np
import torch
import torch.utils.data._utils.worker as torch_worker
from torch.utils.data import DataLoader, Dataset

from ._framework import Case, Exercise, register, take
from .solutions import ch07 as solutions

GENERATE_STATE = ("minidataloader.worker._generate_state",
                  "torch.utils.data._utils.worker._generate_state")
WORKER_INFO = ("Dataset", "IterableDataset", "Sampler", "get_worker_info")
HAS_FORK = "fork" in multiprocessing.get_all_start_methods()


def workers_for_a_check(num_workers: int) -> dict:
    """DataLoader arguments for ``num_workers`` forked workers (none without fork)."""
    if num_workers == 0 or not HAS_FORK:
        return {"num_workers": 0}
    return {"num_workers": num_workers, "multiprocessing_context": "fork"}


@contextlib.contextmanager
def more_workers_than_cpus_is_fine():
    """Silence torch's warning about more workers than CPUs: the hidden cases use up to 3
    workers on any machine, and the warning is not the reader's doing."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*worker processes", category=UserWarning)
        yield


# ---------------------------------------------------------------------------------------
# The seeds of each worker

def _seed_hint(base_seed: int, num_workers: int) -> str:
    if num_workers == 0:
        return "no workers: an empty list"
    if base_seed >> 32:
        return ("worker w's seed is base_seed + w; this base seed needs more than 32 bits: "
                "numpy's words are [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]")
    return ("worker w's seed is base_seed + w; its numpy state is "
            "np.random.SeedSequence([w, base_seed & 0xFFFFFFFF, base_seed >> 32, 0])"
            ".generate_state(4), as a list of 4 ints")


def _seed_cases() -> list[Case]:
    drawn = torch.empty((), dtype=torch.int64).random_(
        generator=torch.Generator().manual_seed(0)).item()
    return [Case({"base_seed": base, "num_workers": workers}, hint=_seed_hint(base, workers))
            for base, workers in [(0, 1), (drawn, 4), (2**32 - 1, 2), (2**32, 2), (7, 3),
                                  (2**63 - 1, 2), (12345, 0)]]


def _torch_seeds(base_seed, num_workers):
    """torch's answer: the seeds its worker loop gives each worker."""
    return [(base_seed + worker_id, torch_worker._generate_state(base_seed, worker_id))
            for worker_id in range(num_workers)]


register(Exercise(
    reference=solutions.worker_seeds,
    oracle=_torch_seeds,
    cases=_seed_cases,
    hint=("a list with one tuple per worker: (base_seed + worker_id, numpy_state), where "
          "numpy_state is a list of four ints from np.random.SeedSequence"),
    forbidden=GENERATE_STATE,
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
    """Call the worker_init_fn here, as torch's worker calls it: WorkerInfo set first."""
    dataset = NoisyNumbers()
    torch_worker._worker_info = torch_worker.WorkerInfo(
        id=worker_id, num_workers=num_workers, seed=BASE_SEED + worker_id, dataset=dataset)
    try:
        returned = implementation(worker_id)
    finally:
        torch_worker._worker_info = None
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
          "(this worker's copy): set info.dataset.rng = np.random.default_rng(info.seed), "
          "and return nothing"),
    allowed=WORKER_INFO,
    time_limit=5.0,
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
))
