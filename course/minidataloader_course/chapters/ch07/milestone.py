"""Milestone 7: the learner's ``DataLoader`` with worker processes is torch's: the same
batches, and in every worker the same seeds and random draws, with 1 to 3 workers started
with fork (or the start method chosen: ``--start-method``) and with spawn, in order and with
``in_order=False``."""

from __future__ import annotations

import multiprocessing
import random
import time
import warnings

import torch

from minidataloader_course.checker.framework import take
from minidataloader_course.checker.milestone_data import (
    WORKER_DATASETS,
    Gated,
    drawn_afterwards,
    init_draw,
)
from minidataloader_course.checker.milestones import Milestone, Suite, register_milestone

CONFIGURATIONS = 24
SLOW_START_CONFIGURATIONS = 6  # spawn and forkserver: seconds per worker, not milliseconds


def start_method() -> str:
    """How the configurations' workers start: the start method chosen for this process
    (``--start-method``, ``multiprocessing.set_start_method``), else fork where there is."""
    chosen = multiprocessing.get_start_method(allow_none=True)
    if chosen is None and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return chosen or multiprocessing.get_start_method()


def worker_configuration(rng: random.Random, method: str = "fork") -> dict:
    """A loader configuration with workers started with ``method``, as plain data."""
    size = rng.choice([0, 1, 7, 16, 23])
    kind = rng.choice(["map", "batched", "stream", "sharded"])
    arguments: dict = {"num_workers": rng.choice([1, 2, 3]), "multiprocessing_context": method,
                       "batch_size": rng.choice([None, 1, 3, 5])}
    if arguments["batch_size"] is not None:
        arguments["drop_last"] = rng.random() < 0.3
    if rng.random() < 0.5:
        arguments["prefetch_factor"] = rng.choice([1, 3])
    if kind in ("map", "batched") and size:
        how = rng.choice(["order", "shuffle", "shuffle", "sampler"])
        if how == "shuffle":
            arguments["shuffle"] = True
        elif how == "sampler":
            arguments["sampler"] = [rng.randrange(size) for _ in range(rng.randint(1, 12))]
    if rng.random() < 0.5:
        arguments["generator"] = rng.randrange(2**31)
    if rng.random() < 0.3:
        arguments["worker_init_fn"] = "init_draw"
    return {"dataset": kind, "size": size, "arguments": arguments}


def configurations() -> list[dict]:
    """The configurations, their workers started as this process starts them: all of them
    with fork, the first few with a start method that takes seconds per worker."""
    rng = random.Random(7)
    method = start_method()
    made = [worker_configuration(rng, method) for _ in range(CONFIGURATIONS)]
    return made if method == "fork" else made[:SLOW_START_CONFIGURATIONS]


def unordered_configurations() -> list[dict]:
    return [{"dataset": "map", "size": size, "arguments": {
        "num_workers": workers, "multiprocessing_context": "fork", "batch_size": batch_size,
        "in_order": False, "generator": seed}}
        for size, workers, batch_size, seed in [(16, 2, 3, 1), (23, 3, 2, 2), (9, 3, None, 3)]]


def spawned_configurations() -> list[dict]:
    return [{"dataset": kind, "size": size, "epochs": 1, "arguments": {
        "num_workers": 2, "multiprocessing_context": "spawn", "batch_size": 3, **more}}
        for kind, size, more in [("map", 10, {"shuffle": True, "generator": 5}),
                                 ("sharded", 9, {})]]


def loader_of(data, spec: dict):
    arguments = dict(spec["arguments"])
    if arguments.get("generator") is not None:
        arguments["generator"] = torch.Generator().manual_seed(arguments["generator"])
    if arguments.get("worker_init_fn") == "init_draw":
        arguments["worker_init_fn"] = init_draw
    dataset = WORKER_DATASETS[spec["dataset"]](spec["size"], info=data.get_worker_info)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # more workers than CPUs: torch's warning, not ours
        return data.DataLoader(dataset, **arguments)


def epochs_with_workers(data, spec: dict) -> dict:
    """Every batch of one or two epochs, each sample with what its worker saw (its id, its
    seed, torch's initial seed, one draw of each global generator), and the random numbers
    the main process draws afterwards."""
    loader = loader_of(data, spec)
    seen = {}
    for epoch in range(1, spec.get("epochs", 2) + 1):
        seen[f"epoch {epoch}"] = take(iter(loader), 4 * spec["size"] + 8)
    seen["random numbers drawn afterwards"] = drawn_afterwards()
    return seen


def unordered_epochs(data, spec: dict) -> dict:
    """``in_order=False``: which worker reads which batch depends on timing, so what is
    compared is what does not: the samples of the epoch, the base seed every worker's seed
    comes from, each worker's torch seed, and that each worker's batches come in the order
    it was sent them."""
    loader = loader_of(data, spec)
    seen = {}
    for epoch in (1, 2):
        batches = take(iter(loader), 4 * spec["size"] + 8)
        indices, ids, seeds, initial = ([batch[k].view(-1).tolist() for batch in batches]
                                        for k in range(4))
        firsts: dict[int, list[int]] = {}
        for batch_indices, batch_ids in zip(indices, ids):
            firsts.setdefault(batch_ids[0], []).append(batch_indices[0])
        seen[f"epoch {epoch}: its samples"] = sorted(i for batch in indices for i in batch)
        seen[f"epoch {epoch}: seed - worker id"] = sorted({s - w for batch_seeds, batch_ids in
                                                          zip(seeds, ids)
                                                          for s, w in zip(batch_seeds, batch_ids)})
        seen[f"epoch {epoch}: torch.initial_seed() is the worker's seed"] = initial == seeds
        seen[f"epoch {epoch}: each worker's batches in the order sent"] = all(
            firsts_of_worker == sorted(firsts_of_worker) for firsts_of_worker in firsts.values())
    return seen


class HeldUp:
    """Sample ``i`` is ``(i, the id of the worker that read it)``; sample 0 takes a second,
    holding its worker up while the others read on."""

    def __init__(self, n: int, info=None):
        self.n, self.info = n, info

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        if index == 0:
            time.sleep(1.0)
        info = self.info() if self.info is not None else None
        return index, -1 if info is None else info.id

    def __repr__(self):
        return f"{self.n} samples (i, worker id), sample 0 taking a second"


def held_up_worker(data, spec: dict) -> dict:
    """``in_order=False``: a worker takes a task only while it holds fewer than
    ``prefetch_factor``; the worker held up by sample 0 reads no more than its first tasks.
    Which of the others reads what depends on timing, and is not compared."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = data.DataLoader(HeldUp(spec["size"], data.get_worker_info), batch_size=1,
                                 num_workers=spec["num_workers"], in_order=False,
                                 prefetch_factor=spec["prefetch_factor"],
                                 multiprocessing_context="fork")
    pairs = [(batch[0].item(), batch[1].item()) for batch in take(iter(loader), 2 * spec["size"])]
    held = dict(pairs).get(0)
    return {"its samples": sorted(i for i, _ in pairs),
            "samples read by the worker that read sample 0": sorted(
                i for i, worker in pairs if worker == held)}


def describe_held_up(spec: dict) -> str:
    return (f"DataLoader({HeldUp(spec['size'])!r}, batch_size=1, num_workers="
            f"{spec['num_workers']}, prefetch_factor={spec['prefetch_factor']}, "
            "in_order=False); one epoch")


def batch_zero_first(data, spec: dict) -> dict:
    """Whether batch 0 is handed out as soon as it arrives: batch 1's samples wait for it
    (half a second at most), and say whether they had to wait in vain."""
    dataset = Gated(spec["size"], spec["gated"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = data.DataLoader(dataset, batch_size=2, num_workers=spec["num_workers"],
                                 multiprocessing_context="fork")
    batches = []
    for batch in loader:
        dataset.handed_out.set()
        batches.append(batch.tolist())
    return {"batches": batches, "samples of batch 1 read before batch 0 was handed out":
            dataset.read_too_early.value}


def describe_gated(spec: dict) -> str:
    return (f"DataLoader({Gated(spec['size'], spec['gated'])!r}, batch_size=2, "
            f"num_workers={spec['num_workers']}); one epoch")


def describe(spec: dict) -> str:
    dataset = WORKER_DATASETS[spec["dataset"]](spec["size"])
    shown = []
    for name, value in spec["arguments"].items():
        if name == "generator":
            value = f"torch.Generator().manual_seed({value})"
        elif name == "worker_init_fn":
            value = f"{value} (it draws a random number)"
        else:
            value = repr(value)
        shown.append(f"{name}={value}")
    epochs = spec.get("epochs", 2)
    return (f"DataLoader({dataset!r}, {', '.join(shown)}); "
            f"{'one epoch' if epochs == 1 else 'two epochs'}")


register_milestone(Milestone(
    number=7,
    goals={"ch06": (4, 5, 6), "ch07": (6,)},
    title="your DataLoader with worker processes",
    suites=[
        Suite(name="configurations with workers, started with the start method in use",
              cases=configurations, observe=epochs_with_workers, describe=describe,
              time_limit=60.0,
              hint="compare with torch on this configuration: which worker gets which batch "
                   "(round robin), the seeds each worker installs before its first task, and "
                   "the end of each worker's stream"),
        Suite(name="batch 0 as soon as it arrives",
              cases=lambda: [{"size": 8, "gated": (2, 3), "num_workers": 2},
                             {"size": 12, "gated": (2, 3), "num_workers": 3}],
              observe=batch_zero_first, describe=describe_gated, time_limit=20.0,
              hint="the reorder buffer keeps only the batches that come early: the batch whose "
                   "turn it is goes out the moment it arrives, whatever is still in flight"),
        Suite(name="in_order=False", cases=unordered_configurations, observe=unordered_epochs,
              describe=describe, time_limit=30.0,
              hint="with in_order=False batches are handed out as they arrive; every sample "
                   "still comes once, and every worker is seeded as with in_order=True"),
        Suite(name="in_order=False: a held-up worker gets no more tasks",
              cases=lambda: [{"size": 12, "num_workers": 2, "prefetch_factor": 2},
                             {"size": 12, "num_workers": 3, "prefetch_factor": 1}],
              observe=held_up_worker, describe=describe_held_up, time_limit=20.0,
              hint="with in_order=False a task goes to the next worker in turn that holds "
                   "fewer than prefetch_factor tasks not yet handed out (with a stream, its "
                   "share of them): the worker held up by sample 0 gets no more"),
        Suite(name="workers started with spawn", cases=spawned_configurations,
              observe=epochs_with_workers, describe=describe, time_limit=60.0,
              hint="a spawned worker imports what it runs: your package (its folder is on "
                   "sys.path) and the dataset's module; it gets its arguments pickled"),
    ],
))
