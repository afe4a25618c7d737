"""Chapter 12 (distributed sampling): the exercises and their hidden cases."""

from __future__ import annotations

import logging
import multiprocessing.util
import os
import pathlib
import random
import tempfile

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, IterableDataset, get_worker_info

from minidataloader_course.chapters.ch12 import solution as solutions
from minidataloader_course.chapters.multiprocess_cases import (
    WORKER_INFO,
    more_workers_than_cpus_is_fine,
    workers_for_a_check,
)
from minidataloader_course.checker.framework import Case, Exercise, Rule, register, take
from minidataloader_course.checker.questions import Choice, Prediction
from minidataloader_course.shared.compare import close, difference

FINISHED_PIECE = ("minidataloader.distributed.DistributedSampler",)


def _share_hint(dataset_size: int, num_replicas: int, drop_last: bool) -> str:
    if dataset_size % num_replicas == 0:
        return (f"{dataset_size} samples divide evenly among {num_replicas} ranks: no padding "
                "and nothing cut")
    if drop_last:
        return (f"drop_last=True: {dataset_size} samples over {num_replicas} ranks give each "
                f"rank only the full rounds, {dataset_size} // {num_replicas}; the tail is cut")
    if dataset_size < num_replicas:
        return (f"fewer samples ({dataset_size}) than ranks ({num_replicas}): every rank still "
                "gets one, so the padding repeats samples, cycling through the order")
    return (f"drop_last=False: {dataset_size} samples over {num_replicas} ranks: every rank gets "
            f"ceil({dataset_size} / {num_replicas}); the shortfall is padded with repeats")


SIZES = [(10, 2, False), (11, 2, False), (11, 2, True), (10, 3, False), (10, 3, True),
         (2, 4, False), (2, 4, True), (0, 3, False), (153, 8, False), (153, 8, True),
         (768, 64, False), (5, 1, False), (3, 8, False)]

# torch's answers: what its DistributedSampler computes and deals


def _torch_shard_sizes(dataset_size, num_replicas, drop_last=False):
    sampler = DistributedSampler(range(dataset_size), num_replicas, rank=0, shuffle=False,
                                 drop_last=drop_last)
    return sampler.num_samples, sampler.total_size


def _torch_rank_indices(order, num_replicas, rank, drop_last=False):
    positions = DistributedSampler(range(len(order)), num_replicas, rank, shuffle=False,
                                   drop_last=drop_last)
    return [order[position] for position in positions]


def _torch_sampler(dataset, num_replicas, rank, seed=0, drop_last=False):
    return DistributedSampler(dataset, num_replicas, rank, shuffle=True, seed=seed,
                              drop_last=drop_last)


DEAL = ("; rank r takes positions r, r + num_replicas, r + 2 * num_replicas, … of the padded "
        "(or cut) list, like dealing cards")

register(Exercise(
    reference=solutions.shard_sizes,
    oracle=_torch_shard_sizes,
    cases=lambda: [Case({"dataset_size": n, "num_replicas": r, "drop_last": d},
                        hint=_share_hint(n, r, d)) for n, r, d in SIZES],
    hint="return a tuple (num_samples, total_size), with total_size = num_samples * num_replicas",
    forbidden=FINISHED_PIECE,
    expected_from="torch: `DistributedSampler`",
    rules=(
        Rule("ceil and padding without `drop_last`, floor with it; `total_size = num_samples × num_replicas`",
             (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13)),
    ),
    goals=(1, 2),
))


def _order_cases() -> list[Case]:
    rng = random.Random(12)
    cases = []
    for n, replicas, rank, drop_last, shuffled in [
            (10, 2, 0, False, False), (11, 2, 1, False, False), (11, 2, 1, True, False),
            (10, 3, 2, False, True), (10, 3, 0, True, True), (7, 4, 3, False, True),
            (3, 8, 6, False, True), (5, 8, 1, True, False), (12, 4, 3, False, True),
            (1, 1, 0, False, False)]:
        order = list(range(n))
        if shuffled:
            rng.shuffle(order)
        hint = _share_hint(n, replicas, drop_last) + DEAL
        if n % replicas and not drop_last:
            hint += "; the repeats come from the START of `order`, in its order"
        cases.append(Case({"order": order, "num_replicas": replicas, "rank": rank,
                           "drop_last": drop_last}, hint=hint))
    return cases


register(Exercise(
    reference=solutions.rank_indices,
    oracle=_torch_rank_indices,
    cases=_order_cases,
    hint=("make the list total_size long (pad by repeating order from its start, or cut its "
          "tail), then take every num_replicas-th element starting at rank"),
    forbidden=FINISHED_PIECE,
    expected_from="torch: `DistributedSampler`, `shuffle=False`",
    rules=(
        Rule("pad from the start of `order` (several times over), or cut; deal positions like cards",
             (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)),
        Rule("`order` unchanged: the caller still needs it",
             (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)),
    ),
    goals=(2,),
))


def _sampler_cases() -> list[Case]:
    return [Case({"dataset_size": n, "num_replicas": r, "rank": k, "seed": s, "drop_last": d},
                 hint=_share_hint(n, r, d) + "; each epoch shuffles with torch.randperm(n) from "
                                             "a new generator seeded with seed + epoch" + DEAL)
            for n, r, k, s, d in [(10, 2, 0, 0, False), (11, 2, 1, 0, False),
                                  (11, 2, 1, 0, True), (10, 3, 2, 5, False),
                                  (7, 4, 3, 1, False), (2, 4, 3, 0, False),
                                  (3, 8, 5, 0, False), (5, 8, 1, 0, True)]]


def _use_sampler(implementation, case: Case) -> dict:
    """What a training loop over three epochs observes, and what forgetting set_epoch does."""
    inputs = case.inputs
    dataset = list(range(inputs["dataset_size"]))
    sampler = implementation(dataset, inputs["num_replicas"], inputs["rank"],
                             seed=inputs["seed"], drop_last=inputs["drop_last"])
    limit = len(dataset) + inputs["num_replicas"]  # more than any share: stops endless ones
    seen = {"len(sampler)": len(sampler)}
    for epoch in range(3):
        sampler.set_epoch(epoch)
        seen[f"after set_epoch({epoch})"] = take(iter(sampler), limit)
    seen["again, without calling set_epoch"] = take(iter(sampler), limit)
    # Every rank must draw the same order whatever else it drew: never the global generator.
    seen["the global RNG afterwards: torch.randint(1000, (3,))"] = (
        torch.randint(1000, (3,)).tolist())
    return seen


register(Exercise(
    reference=solutions.ShardedEpochSampler,
    oracle=_torch_sampler,
    cases=_sampler_cases,
    run=_use_sampler,
    hint=("in __iter__, seed a NEW torch.Generator with seed + epoch, draw "
          "torch.randperm(len(dataset), generator=...), then keep this rank's share exactly "
          "as rank_indices does; __len__ is the share's size"),
    forbidden=FINISHED_PIECE,
    expected_from="torch: `DistributedSampler`, `shuffle=True`",
    rules=(
        Rule("a permutation from a new generator seeded with `seed + epoch`, then the rank's share; `len`; the same order without `set_epoch`",
             (1, 2, 3, 4, 5, 6, 7, 8)),
        Rule("never the global generator: it is as torch leaves it (compared afterwards)",
             (1, 2, 3, 4, 5, 6, 7, 8)),
    ),
    goals=(4,),
))


def _accuracy_cases() -> list[Case]:
    """Per-rank correct/incorrect flags laid out as DistributedSampler(shuffle=False)
    deals them: the rank r's j-th flag belongs to position r + j * R of the padded order."""
    rng = random.Random(7)
    cases = []
    for n, replicas in [(153, 2), (153, 8), (10, 8), (11, 3), (12, 4), (5, 8), (1, 3), (6, 4)]:
        flags = [int(rng.random() < 0.75) for _ in range(n)]
        if n == 6:  # right on the first samples only: their padded repeats inflate the count
            flags = [1, 1, 0, 0, 0, 0]
        share = -(-n // replicas)
        padded = [flags[p % n] for p in range(share * replicas)]
        by_rank = [padded[r::replicas] for r in range(replicas)]
        repeats = share * replicas - n
        cases.append(Case(
            {"correct_by_rank": by_rank, "dataset_size": n},
            description=(f"{n} validation samples over {replicas} ranks "
                         f"({repeats} padded repeat{'s' * (repeats != 1)}); "
                         f"correct_by_rank = {by_rank if n <= 12 else '…'}"),
            hint=("no padding here: every flag counts once" if repeats == 0 else
                  f"{repeats} of the flags {'is a repeat' if repeats == 1 else 'are repeats'}: "
                  f"count only the positions "
                  f"rank + j * {replicas} that are below {n}")))
    return cases


register(Exercise(
    reference=solutions.unpadded_accuracy,
    cases=_accuracy_cases,
    compare=close(rtol=1e-9, atol=1e-12),
    hint=("flag j of rank r sat at position r + j * num_replicas of the padded list; "
          "positions from dataset_size on are padding. Divide by dataset_size"),
    forbidden=FINISHED_PIECE,
    rules=(
        Rule("rank *r*'s *j*-th flag is position `r + j × R`; positions from `dataset_size` on are padding",
             (1, 2, 3, 4, 5, 6, 7, 8), note="padding that changes the count: 8"),
    ),
    goals=(7,),
))


def _stream_hint(n: int, rank: int, world: int, worker: int, workers: int) -> str:
    reader = rank * workers + worker
    return (f"{world} ranks x {workers} workers = {world * workers} readers; rank {rank}'s "
            f"worker {worker} is reader {reader}: samples {reader}, {reader + world * workers}, …")


register(Exercise(
    reference=solutions.stream_shard,
    cases=lambda: [Case({"dataset_size": n, "rank": r, "world_size": w, "worker_id": k,
                         "num_workers": m}, hint=_stream_hint(n, r, w, k, m))
                   for n, r, w, k, m in [(20, 0, 2, 0, 2), (20, 1, 2, 1, 2), (10, 1, 2, 0, 3),
                                         (5, 3, 4, 1, 2), (7, 0, 1, 0, 1), (100, 3, 4, 2, 4),
                                         (9, 1, 3, 0, 1)]],
    hint=("number the readers: all the workers of rank 0 first, then those of rank 1, and "
          "so on, world_size * num_workers in all; each reader takes every readers-th sample, "
          "starting from its own number"),
    rules=(
        Rule("reader `rank × num_workers + worker_id` of `world_size × num_workers`",
             (1, 2, 3, 4, 5, 6, 7)),
    ),
    goals=(8,),
))


# ---------------------------------------------------------------------------------------
# A stream that keeps the ranks in step


class _TorchEvenStream(IterableDataset):
    """torch's answer: each rank's share is what torch's DistributedSampler (shuffle=False)
    deals it; the rank's workers split the share as chapter 7's ShardedStream does."""

    def __init__(self, items, rank, world_size, drop_last=False):
        self.items = items
        self.sampler = DistributedSampler(range(len(items)), world_size, rank, shuffle=False,
                                          drop_last=drop_last)

    def __iter__(self):
        share = [self.items[position] for position in self.sampler]
        info = get_worker_info()
        return iter(share if info is None else share[info.id::info.num_workers])

    def __len__(self):
        return len(self.sampler)


def _even_cases() -> list[Case]:
    def case(n, world_size, workers, batch_size, drop_last, hint):
        return Case({"items": [100 + i for i in range(n)], "world_size": world_size,
                     "num_workers": workers, "batch_size": batch_size, "drop_last": drop_last},
                    description=(f"items = [100, 101, …, {99 + n}], world_size={world_size}, "
                                 f"drop_last={drop_last}; each rank reads its stream with "
                                 f"DataLoader(batch_size={batch_size}, num_workers={workers})"),
                    hint=hint)

    return [
        case(10, 2, 0, 2, False,
             "no workers: the rank's process reads its whole share; the ranks share the items "
             "out like cards, rank 0 taking items 100, 102, 104, …"),
        case(9, 2, 0, 2, False,
             "9 items over 2 ranks: dealt as they are, rank 0 would read 5 (3 batches) and "
             "rank 1 only 4 (2 batches), and rank 0's third step would wait for rank 1 "
             "forever. Pad as DistributedSampler does: rank 1's share ends with item 100 again"),
        case(9, 2, 0, 2, True,
             "drop_last=True: cut instead, 4 items each; item 108 is not read in this epoch"),
        case(20, 2, 2, 3, False,
             "with workers, the rank's workers split its share: worker w of W reads every W-th "
             "item of the share from its w-th (chapter 7); each item of a share comes once"),
        case(13, 2, 2, 2, False,
             "pad each rank's share (at most world_size - 1 repeats in all), then split it "
             "among the workers; padding every worker's part instead repeats more items"),
        case(3, 4, 0, 2, False,
             "more ranks than items: every rank still reads one item; rank 3 reads item 100 "
             "again"),
        case(10, 3, 3, 2, True,
             "drop_last=True with workers: 3 items per rank, one per worker"),
        case(4, 2, 3, 2, False,
             "more workers than items in a share: worker 2 reads nothing, in every rank alike"),
    ]


def _use_even_stream(implementation, case: Case) -> dict:
    """Every rank's loader, read in turn (no process group is needed to read a stream that
    is told its rank): what each rank trains on, and whether the ranks stay in step."""
    items, world_size, workers, batch_size, drop_last = (
        case.inputs[k] for k in ("items", "world_size", "num_workers", "batch_size", "drop_last"))
    lengths, batches = [], []
    with more_workers_than_cpus_is_fine():
        for rank in range(world_size):
            stream = implementation(items, rank, world_size, drop_last=drop_last)
            loader = DataLoader(stream, batch_size=batch_size, **workers_for_a_check(workers))
            batches.append([batch.tolist() for batch in take(loader, 2 * len(items) + 4)])
            lengths.append(len(stream))
    return {
        "number of steps (batches) of each rank":
            [len(rank_batches) for rank_batches in batches],
        "every item read by all the ranks together, sorted":
            sorted(item for rank_batches in batches for batch in rank_batches for item in batch),
        "len(stream) in each rank": lengths,
        "each rank's batches, in the order its loader yields them": batches,
    }


register(Exercise(
    reference=solutions.EvenStream,
    oracle=_TorchEvenStream,
    cases=_even_cases,
    run=_use_even_stream,
    hint=("first the rank's share, padded or cut as DistributedSampler deals it (your "
          "rank_indices), then, in a worker, every num_workers-th item of it from the "
          "worker's id; len is the share's length"),
    forbidden=FINISHED_PIECE,
    allowed=WORKER_INFO,
    time_limit=5.0,
    expected_from="torch: each rank's share as its `DistributedSampler(shuffle=False)` deals it",
    rules=(
        Rule("every rank as many steps: shares padded by repeating from the start of `items`",
             (1, 2, 4, 5, 6, 8)),
        Rule("`drop_last=True`: shares cut",
             (3, 7)),
        Rule("in a worker, its part of the rank's share, `share[w::W]`; without workers, the whole share",
             (4, 5, 7, 8), note="without: 1, 2, 3, 6"),
        Rule("`len(stream)`: the length of the rank's share",
             (1, 2, 3, 4, 5, 6, 7, 8)),
    ),
    goals=(9,),
))


# ---------------------------------------------------------------------------------------
# A real process group, started by the learner's own launcher


def _report_membership(folder: str, rank: int) -> None:
    """Run as the rank's process ends (a multiprocessing finalizer): whether it is still in
    the process group then."""
    left = "still in the group" if dist.is_initialized() else "left the group"
    (pathlib.Path(folder) / f"rank{rank}").write_text(left)


def _group_job(folder: str, fails_in=None):
    """The job every rank runs: what the group says to this process, and one collective
    call of its own; a finalizer reports, at the process's end, whether it left the group."""

    def job():
        rank = dist.get_rank()
        multiprocessing.util.Finalize(None, _report_membership, args=(folder, rank),
                                      exitpriority=0)
        if rank == fails_in:
            raise ValueError(f"rank {rank}'s job failed (on purpose)")
        summed = torch.tensor([rank])
        dist.all_reduce(summed)  # every rank's number, added up: the group works
        return {"rank": rank, "world size": dist.get_world_size(),
                "backend": dist.get_backend(), "sum of all ranks (all_reduce)": int(summed),
                "pid": os.getpid()}

    return job


def _launcher_cases() -> list[Case]:
    def case(world_size, hint, fails_in=None, tier=None):
        failing = f"; rank {fails_in}'s job raises ValueError" if fails_in is not None else ""
        return Case({"world_size": world_size, "fails_in": fails_in}, hint=hint, tier=tier,
                    description=f"run_in_a_group(job, world_size={world_size}), where job() "
                                "asks the group for its rank, its size and its backend, "
                                f"and calls all_reduce{failing}")

    return [
        case(2, "each process joins the gloo group with its own rank (0 and 1), runs job(), "
                "and gathers every rank's result with all_gather_object: both ranks get "
                "[rank 0's result, rank 1's result]"),
        case(3, "the group has world_size processes, ranks 0 to world_size - 1: pass the "
                "size you were given to init_process_group and start as many processes"),
        case(1, "a group of one process works too: it gathers its own result"),
        case(2, "a rank whose job raises leaves the other waiting for it in all_gather, "
                "forever: notice the failed process, stop the others and raise "
                "(torch.multiprocessing.start_processes does it for you)", fails_in=1),
    ]


def _use_launcher(implementation, case: Case) -> dict:
    """Run the launcher with the check's job: what every rank gathered (a pid becomes "the
    caller's process" or "a process of its own"), whether the ranks ran in different
    processes, and whether each left the group before its process ended."""
    world_size, fails_in = case.inputs["world_size"], case.inputs["fails_in"]
    with tempfile.TemporaryDirectory() as folder:
        job = _group_job(folder, fails_in)
        if fails_in is not None:
            # torch's launcher logs a warning as it stops the other ranks: expected here
            logging.getLogger("torch.multiprocessing.spawn").setLevel(logging.ERROR)
            try:
                implementation(job, world_size)
            except NotImplementedError:  # not written yet: not an answer to this case
                raise
            except Exception:  # noqa: BLE001 - whichever way it says so: it did not hang
                return {"the launcher raised an exception": True}
            return {"the launcher raised an exception": False}
        gathered = implementation(job, world_size)
        reports = {path.name: path.read_text() for path in pathlib.Path(folder).iterdir()}
    caller = os.getpid()
    pids = [result.get("pid") if isinstance(result, dict) else None
            for result in (gathered[0] if gathered else [])]
    for everyone in gathered if isinstance(gathered, list) else ():
        for result in everyone if isinstance(everyone, list) else ():
            if isinstance(result, dict) and "pid" in result:
                result["pid"] = ("the caller's process" if result["pid"] == caller
                                 else "a process of its own")
    return {
        "what each rank gathered (item r: rank r's list)": gathered,
        "every rank in a process of its own": len(set(pids)) == len(pids) and caller not in pids,
        "each rank's process, as it ended": [reports.get(f"rank{rank}", "ended without "
                                                          "multiprocessing's clean-up")
                                             for rank in range(world_size)],
    }


register(Exercise(
    reference=solutions.run_in_a_group,
    cases=_launcher_cases,
    run=_use_launcher,
    hint=("start world_size processes with fork; in process r, init_process_group('gloo', "
          "rank=r, world_size=world_size) at one free port on 127.0.0.1, run job(), "
          "all_gather_object its result, send what you gathered home (a queue), and "
          "destroy_process_group before the process ends"),
    forbidden=("minidataloader_course.shared.ranks.spawn_ranks",
               "minidataloader_course.shared.ranks.run_rank"),
    time_limit=15.0,  # four small groups: about 2 s on an idle machine
    rules=(
        Rule("each process joins with its own rank; every rank gathers every rank's result, "
             "in rank order",
             (1, 2, 3)),
        Rule("a group of `world_size` processes",
             (2, 3)),
        Rule("every rank leaves the group (`destroy_process_group`) before its process ends",
             (1, 2, 3)),
        Rule("a rank that fails: the launcher raises instead of waiting forever",
             (4,)),
    ),
    goals=(3,),
))


# ---------------------------------------------------------------------------------------
# The debugging lab: two ranks that overlap and repeat


def _lab_cases() -> list[Case]:
    def case(size, world_size, epochs, hint):
        return Case({"dataset_size": size, "world_size": world_size, "epochs": epochs},
                    description=f"rank_epochs({size}, rank, {world_size}, {epochs}) for every "
                                f"rank of {world_size}", hint=hint)

    return [
        case(10, 2, 3, "print what each rank reads, epoch by epoch, next to what torch's "
                       "DistributedSampler gives that rank: they must be the same"),
        case(11, 2, 2, "11 samples over 2 ranks: every sample read in every epoch, one of "
                       "them by both ranks (the padding)"),
        case(7, 3, 2, "7 samples over 3 ranks: 3 samples each, two of them repeats"),
        case(12, 4, 3, "four ranks, three epochs: one shuffled order per epoch, a new one "
                       "every epoch, dealt to the ranks"),
    ]


def _use_lab(implementation, case: Case) -> dict:
    """Every rank's epochs, and what the debugging tools show about them: samples two ranks
    read, samples no rank read, epochs that repeat the first."""
    size, world_size, epochs = (case.inputs[k] for k in ("dataset_size", "world_size",
                                                         "epochs"))
    ranks = [implementation(size, rank, world_size, epochs) for rank in range(world_size)]
    first = [[i for batch in rank[0] for i in batch] for rank in ranks]
    read = [i for share in first for i in share]
    return {
        "epoch 0: how many samples each rank read": [len(share) for share in first],
        "epochs that repeat epoch 0, rank by rank": [
            [e for e in range(1, len(rank)) if rank[e] == rank[0]] for rank in ranks],
        "epoch 0: samples read more than once, by all ranks together": sorted(
            {i for i in read if read.count(i) > 1}),
        "epoch 0: samples no rank read": sorted(set(range(size)) - set(read)),
        "each rank's batches, epoch by epoch": ranks,
    }


_COUNTS = "epoch 0: how many samples each rank read"
_REPEATED = "epochs that repeat epoch 0, rank by rank"
_TWICE = "epoch 0: samples read more than once, by all ranks together"
_UNREAD = "epoch 0: samples no rank read"


def _symptom(expected, got) -> tuple[str, str] | None:
    """What the debugging tools show (the observation that differs) and the bug it points
    at, or None."""
    if any(mine > theirs for mine, theirs in zip(got[_COUNTS], expected[_COUNTS])):
        return _COUNTS, ("every rank read more than its share: the loader is not given the "
                         "sampler (a loader that shuffles on its own reads the whole dataset "
                         "in every rank)")
    if got[_REPEATED] != expected[_REPEATED]:
        return _REPEATED, ("an epoch repeats epoch 0's order: without set_epoch(epoch) before "
                           "each epoch, the sampler's order stays the one of epoch 0")
    if set(got[_TWICE]) - set(expected[_TWICE]):
        return _TWICE, ("the ranks overlap: a seed per rank gives each rank an order of its "
                        "own, so they read some samples twice and others never; one seed "
                        "(the default, 0) on every rank")
    if got[_UNREAD]:
        return _UNREAD, ("a sample is read by no rank: cutting (drop_last=True) leaves a "
                         "sample unread; the sampler pads by default, so that every sample "
                         "is read in every epoch")
    return None


def _compare_lab(expected, got) -> str | None:
    """The first symptom, with the bug it points at; else the first difference."""
    try:
        found = _symptom(expected, got)
    except (TypeError, KeyError, AttributeError):  # not the shape of an observation
        found = None
    if found is not None:
        key, bug = found
        return f"{difference(expected[key], got[key], key)}. {bug}"
    return difference(expected, got)


def _torch_lab(dataset_size, rank, world_size, epochs):
    """torch's answer: its DistributedSampler (seed 0, padding) in its DataLoader, with
    set_epoch before every epoch."""
    sampler = DistributedSampler(range(dataset_size), num_replicas=world_size, rank=rank)
    loader = DataLoader(range(dataset_size), batch_size=2, sampler=sampler)
    seen = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        seen.append([batch.tolist() for batch in loader])
    return seen


register(Exercise(
    reference=solutions.rank_epochs,
    oracle=_torch_lab,
    cases=_lab_cases,
    run=_use_lab,
    compare=_compare_lab,
    hint=("print each rank's indices for one epoch and compare them with torch's "
          "DistributedSampler for that rank; four things must hold: one seed for all "
          "ranks, the sampler given to the loader, padding, and set_epoch every epoch"),
    allowed=("Dataset", "IterableDataset", "Sampler", "DistributedSampler", "DataLoader"),
    expected_from="torch: its `DistributedSampler` (seed 0) in a `DataLoader`, `set_epoch` "
                  "before each epoch",
    rules=(
        Rule("one shuffled order for all ranks: the same seed on every rank",
             (1, 2, 3, 4)),
        Rule("each rank reads its share: the sampler is given to the loader",
             (1, 2, 3, 4)),
        Rule("every sample read every epoch: padded, not cut",
             (2, 3)),
        Rule("a new order every epoch: `set_epoch(epoch)` before each",
             (1, 2, 3, 4)),
    ),
    goals=(4,),
))


# ---------------------------------------------------------------------------------------
# Check yourself

register(Choice(
    "ch12-same-number", answer="b", why={
        "a": "the ranks may hold any samples; what must match is the number of steps, since "
             "each step waits for every rank",
        "c": "a rank with fewer samples does not finish early and wait politely: the others "
             "wait for it in an all-reduce it never joins",
        "d": "samples are not sent between ranks: each rank reads its own share",
    }, goals=(1,)))


def _share_of_rank_3() -> list:
    return list(DistributedSampler(range(10), num_replicas=4, rank=3, shuffle=False))


register(Prediction(
    "ch12-rank-share", measure=_share_of_rank_3, prompt_text="a list of indices",
    why="10 indices are padded to 12 with the first two again (0, 1), then dealt like cards: "
        "rank 3 takes positions 3, 7 and 11",
    mistakes={(3, 7): "drop_last=False pads: every rank gets ceil(10 / 4) = 3 indices, and "
                      "the padding repeats the list from its start",
              (6, 7, 8): "DistributedSampler deals the indices like cards, it does not cut "
                         "the list into blocks",
              (3, 7, 3): "the padding repeats the list from its start (0, 1), not the rank's "
                         "own indices"},
    goals=(2,),
))


def _orders_without_set_epoch() -> int:
    sampler = DistributedSampler(range(8), num_replicas=2, rank=0, shuffle=True, seed=0)
    return len({tuple(sampler) for _ in range(3)})


register(Prediction(
    "ch12-no-set-epoch", measure=_orders_without_set_epoch,
    why="the permutation's generator is seeded with seed + epoch, and the epoch stays 0 "
        "without set_epoch: every epoch gets the same order",
    mistakes={3: "the sampler draws from a generator of its own, seeded with seed + epoch "
                 "every time; without set_epoch the epoch is always 0"},
    goals=(4,),
))

register(Choice(
    "ch12-worker-seeds", answer="a", why={
        "b": "without a generator, the base seed comes from torch's global generator, which "
             "torch.manual_seed(0) set alike in both ranks",
        "c": "the sampler's rank changes which samples a rank reads, not the seeds of its "
             "workers",
        "d": "a worker's seed is base seed + worker id: nothing of the rank goes into it",
    }, goals=(5,)))

register(Choice(
    "ch12-without-join", answer="b", why={
        "a": "DDP does not notice a rank that has left its loop: the others' all-reduce "
             "waits for it",
        "c": "nothing skips the step: rank 0's backward waits in the all-reduce",
        "d": "rank 1 has nothing to read: its share is used up, and it has left the loop",
    }, goals=(6,)))
