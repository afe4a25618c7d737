"""Chapter 8 (epochs and persistent workers): the exercises and their hidden cases."""

from __future__ import annotations

import queue

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from minidataloader.demo.ch08_pool import Resume, ToyPool, interrupted_epoch

from ._compare import close
from ._framework import Case, Exercise, register, take
from .ch07 import more_workers_than_cpus_is_fine, workers_for_a_check
from .solutions import ch08 as solutions

# ---------------------------------------------------------------------------------------
# Start-up time over a run


def _startup_cases() -> list[Case]:
    def case(epochs, start_s, persistent, resume_s, hint):
        return Case({"epochs": epochs, "start_s": start_s, "persistent": persistent,
                     "resume_s": resume_s}, hint=hint)

    return [
        case(10, 2.0, False, 0.0, "without persistent workers, every epoch starts its workers"),
        case(10, 2.0, True, 0.0, "persistent workers start once, for the first epoch"),
        case(10, 2.0, True, 0.001, "every epoch after the first pays for a resume handshake"),
        case(1, 0.05, True, 0.001, "a single epoch: no handshake, one start either way"),
        case(1, 0.05, False, 0.001, "resume_s only counts with persistent workers"),
        case(100, 0.08, False, 0.0, "100 epochs, 100 starts"),
        case(0, 2.0, True, 0.001, "no epoch, no workers: 0.0"),
    ]


register(Exercise(
    reference=solutions.startup_seconds,
    cases=_startup_cases,
    compare=close(rtol=1e-9, atol=1e-12),
    hint=("without persistent workers: epochs * start_s; with them: start_s once, plus resume_s "
          "for each epoch after the first; 0.0 for no epoch"),
))


# ---------------------------------------------------------------------------------------
# The resume handshake of a toy pool


def _label(message) -> str:
    if isinstance(message, tuple) and len(message) == 2:
        first, second = message
        if isinstance(first, Resume):
            return f"an acknowledgement from worker {second}"
        if isinstance(second, str):
            return second
    return repr(message)


def _use_resume(implementation, case: Case) -> dict:
    workers = case.inputs["num_workers"]
    pool = ToyPool(workers)
    try:
        tasks = 2 * workers  # prefetch_factor=2: two batches in flight per worker
        received = interrupted_epoch(pool, tasks)
        dropped = implementation(pool.index_queues, pool.result_queue)
        old = {f"epoch 0, batch {b}" for b in range(tasks)} - {_label(m) for m in received}
        returned = [_label(m) for m in dropped] if isinstance(dropped, (list, tuple)) else []
        for batch in range(workers):  # the new epoch's first round of tasks
            pool.dispatch(1, batch)
        new = []
        for _ in range(workers):
            try:
                new.append(_label(pool.receive(timeout=1.0)))
            except queue.Empty:
                break
    finally:
        pool.close()
    return {
        "what it returned is a": type(dropped).__name__,
        "stale batches it did not return": sorted(old - set(returned)),
        "what else it returned": sorted(label for label in returned if label not in old),
        "the new epoch's first messages": sorted(new),
    }


register(Exercise(
    reference=solutions.resume_workers,
    cases=lambda: [Case({"num_workers": w},
                        description=f"a ToyPool of {w} worker(s), epoch 0 left after its first "
                                    f"result with {2 * w} batches dispatched, the last one "
                                    "slow to fetch")
                   for w in (1, 2, 3)],
    run=_use_resume,
    hint=("put a Resume() in every index queue, then take messages from the result queue "
          "until one acknowledgement (Resume(), worker_id) per worker has come: everything "
          "else you take on the way is a stale batch, to return in a list"),
    time_limit=3.0,
))


# ---------------------------------------------------------------------------------------
# State that reaches persistent workers


def _use_curriculum(implementation, case: Case) -> dict:
    n, workers, persistent, levels = (case.inputs[k] for k in
                                      ("n", "num_workers", "persistent", "levels"))
    dataset = implementation(n)
    with more_workers_than_cpus_is_fine():
        arguments = workers_for_a_check(workers)
        loader = DataLoader(dataset, batch_size=2, collate_fn=list, **arguments,
                            persistent_workers=persistent and arguments["num_workers"] > 0)
        seen = {}
        for level in levels:
            dataset.set_level(level)
            batches = take(loader, n + 1)
            seen[f"after set_level({level})"] = [sample for batch in batches for sample in batch]
    return seen


def _curriculum_cases() -> list[Case]:
    def case(workers, persistent, levels, hint):
        return Case({"n": 4, "num_workers": workers, "persistent": persistent,
                     "levels": levels},
                    description=f"CurriculumDataset(4), DataLoader(batch_size=2, num_workers="
                                f"{workers}, persistent_workers={persistent}), set_level "
                                f"before each epoch: {', '.join(map(str, levels))}",
                    hint=hint)

    return [
        case(0, False, (0.25, 0.75), "without workers the main process fetches: sample i is "
             "(i, level) with level a Python float"),
        case(2, True, (0.0, 0.5, 1.0), "persistent workers hold copies made before the first "
             "epoch: the level must live in memory they share with the main process, made "
             "in __init__ (multiprocessing.Value('d'), or a tensor after .share_memory_())"),
        case(1, False, (0.5, 1.0), "new workers each epoch copy the dataset again: this works "
             "with shared memory too"),
    ]


register(Exercise(
    reference=solutions.CurriculumDataset,
    cases=_curriculum_cases,
    run=_use_curriculum,
    hint=("keep the level in shared memory made in __init__; set_level writes it, and "
          "__getitem__ returns (i, level) with level as a float"),
    time_limit=5.0,
))


# ---------------------------------------------------------------------------------------
# Worker seeds, epoch after epoch


def _seed_hint(workers: int, epochs: int, persistent: bool) -> str:
    if persistent and workers == 0:
        return ("persistent workers need workers: the DataLoader refuses persistent_workers=True "
                "with num_workers=0 (ValueError), and so does your function")
    if epochs == 0:
        return "no epoch: an empty list"
    if workers == 0:
        return "no workers: one empty list per epoch"
    if persistent:
        return ("persistent workers: the loader keeps one iterator, which drew its base seed "
                "once, in the first epoch: every epoch has the same seeds")
    return ("every epoch makes a new iterator, which draws a new base seed from the "
            "generator: worker w's seed is that base seed + w")


class WorkerSeeds(Dataset):
    """Sample w is the seed of the worker that reads it (with batch_size=1, worker w reads
    sample w): a real loader tells the seeds of its workers."""

    def __init__(self, num_workers: int):
        self.num_workers = num_workers

    def __len__(self):
        return self.num_workers

    def __getitem__(self, index):
        return get_worker_info().seed


def _torch_seeds_by_epoch(generator_seed, num_workers, epochs, persistent):
    """torch's answer: the seeds its workers get, read from real workers, epoch by epoch."""
    with more_workers_than_cpus_is_fine():
        loader = DataLoader(WorkerSeeds(num_workers), batch_size=1, collate_fn=lambda b: b[0],
                            **workers_for_a_check(num_workers), persistent_workers=persistent,
                            generator=torch.Generator().manual_seed(generator_seed))
        return [list(loader) for _ in range(epochs)]


register(Exercise(
    reference=solutions.worker_seeds_by_epoch,
    oracle=_torch_seeds_by_epoch,
    cases=lambda: [Case({"generator_seed": s, "num_workers": w, "epochs": e,
                         "persistent": p}, hint=_seed_hint(w, e, p))
                   for s, w, e, p in [(0, 2, 3, False), (0, 2, 3, True), (1, 3, 2, False),
                                      (5, 1, 1, True), (7, 0, 2, False), (3, 2, 0, True),
                                      (11, 4, 2, True), (2, 0, 2, True)]],
    hint=("make torch.Generator().manual_seed(generator_seed); a base seed is "
          "torch.empty((), dtype=torch.int64).random_(generator=generator).item(), drawn "
          "for each new iterator"),
))
