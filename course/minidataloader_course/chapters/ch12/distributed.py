"""Chapter 12's experiments on real ranks: jobs for ``spawn_ranks`` (``shared/ranks.py``:
``torch.distributed`` with gloo over loopback, ranks started by
``torch.multiprocessing.spawn``; imported here, so ``distributed.spawn_ranks`` works too).
A job is ``(name, function, keyword arguments)``; the function runs in every rank and
returns something JSON can hold. The jobs:

- :func:`sampler_shards`: each rank's indices, epoch after epoch, from torch's
  ``DistributedSampler`` and from minidataloader's, both reading rank and world size from
  the process group;
- :func:`evaluate_shard`: the usual distributed evaluation (each rank counts its correct
  predictions, ``all_reduce`` adds the counts up), padding included;
- :func:`stream_shard_job`: an :class:`RankWorkerStream` read by a loader with workers in
  every rank: who reads what when ranks and workers both split an IterableDataset;
- :func:`worker_seeds_job`: the seed and the random crops of every loader worker in every
  rank, with torch's loader and with minidataloader's, when the ranks seed torch alike;
- :func:`uneven_training_job`: a tiny DistributedDataParallel model trained on shares of
  unequal length, with and without ``torch.distributed.algorithms.Join``, and on the even
  shares of the chapter's ``EvenStream`` exercise, without Join.
"""

from __future__ import annotations

import datetime
import importlib
import sys
import time

import torch
import torch.distributed as dist

import minidataloader
from minidataloader_course.shared.ranks import free_port, run_rank, spawn_ranks  # noqa: F401
from minidataloader_course.shared.synthetic import any_worker_info

# --------------------------------------------------------------------------- the jobs

def sampler_shards(dataset_size: int, epochs: int, set_epoch: bool = True,
                   **sampler_options) -> dict:
    """This rank's indices in each epoch, from torch's DistributedSampler and from
    minidataloader's. Neither is told its rank or the world size: both ask the process
    group."""
    dataset = range(dataset_size)  # a range is a map-style dataset of its own indices
    samplers = {"torch": torch.utils.data.DistributedSampler(dataset, **sampler_options),
                "minidataloader": minidataloader.DistributedSampler(dataset, **sampler_options)}
    shards = {name: [] for name in samplers}
    for epoch in range(epochs):
        for name, sampler in samplers.items():
            if set_epoch:
                sampler.set_epoch(epoch)
            shards[name].append(list(sampler))
    return shards


def evaluate_shard(model, features, labels, drop_last: bool = False,
                   batch_size: int = 32) -> dict:
    """Distributed evaluation as training scripts write it: each rank scores the share its
    DistributedSampler gives it, then one all_reduce sums the counts over the ranks."""
    dataset = minidataloader.TensorDataset(features, labels)
    sampler = minidataloader.DistributedSampler(dataset, shuffle=False, drop_last=drop_last)
    loader = minidataloader.DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    correct = count = 0
    with torch.no_grad():
        for inputs, targets in loader:
            predictions = (model(inputs) > 0).float()  # the model outputs a logit
            correct += int((predictions == targets).sum())
            count += len(targets)
    totals = torch.tensor([correct, count])
    dist.all_reduce(totals)  # default op: SUM over the ranks, result in every rank
    return {"indices": list(sampler), "correct": correct, "count": count,
            "all_correct": int(totals[0]), "all_count": int(totals[1])}


def stream_shard_job(dataset_size: int, num_workers: int) -> list:
    """(sample, worker) for every sample this rank's loader delivers, reading a
    RankWorkerStream with ``num_workers`` worker processes (torch's loader)."""
    loader = torch.utils.data.DataLoader(RankWorkerStream(dataset_size), batch_size=None,
                                         num_workers=num_workers,
                                         multiprocessing_context=_fork_if_possible())
    return [(int(sample), int(worker)) for sample, worker in loader]


def _fork_if_possible():
    # A process started with spawn (as this rank was) starts its own children with spawn
    # too, each importing torch again: seconds per worker. On Linux, where fork is safe,
    # ask for fork: the workers then start in milliseconds.
    return "fork" if sys.platform.startswith("linux") else None


def worker_seeds_job(dataset_size: int = 8, num_workers: int = 2, seed: int | None = 0,
                     seed_by_rank: bool = False) -> dict:
    """What each loader worker of this rank draws: ``[index, worker, worker seed, crop]`` for
    every sample, from torch's DataLoader and from minidataloader's.

    ``seed``: the script calls ``torch.manual_seed(seed)`` first, in every rank, as training
    scripts do (``None``: it seeds nothing). ``seed_by_rank``: the loader gets a generator
    seeded with ``seed + rank``, from which it draws its base seed."""
    rank = dist.get_rank()
    samples = {}
    for name, data in (("torch", torch.utils.data), ("minidataloader", minidataloader)):
        if seed is not None:
            torch.manual_seed(seed)  # the same state for both loaders
        generator = torch.Generator().manual_seed(seed + rank) if seed_by_rank else None
        loader = data.DataLoader(RandomCrops(dataset_size), batch_size=None,
                                 sampler=data.DistributedSampler(range(dataset_size),
                                                                 shuffle=False),
                                 num_workers=num_workers, generator=generator,
                                 multiprocessing_context=_fork_if_possible())
        samples[name] = [list(sample) for sample in loader]
    return samples


def uneven_training_job(dataset_size: int = 13, batch_size: int = 2, join: bool = True,
                        timeout: float = 3.0, even_stream: str | None = None) -> dict:
    """Train a one-input linear model with DistributedDataParallel on this rank's share of a
    RankWorkerStream of ``dataset_size`` samples: with an odd size and two ranks, rank 0 has
    one batch more than rank 1. With ``join`` the loop runs inside ``Join([model])``.
    ``even_stream`` names another stream class, ``"module:Class"`` (the chapter passes its
    exercise's ``EvenStream``, the solution or a reader's own), built as
    ``Class(items, rank, world_size)``: one that pads the shares to one length gives every
    rank as many batches. (Named, not imported here: the demo never imports the exercises.)

    The model's process group is a new one with a ``timeout`` of a few seconds: without
    Join, a rank that waits for a partner who has left gives up after it (the default group
    would wait 30 minutes). Returns the steps taken, the error if any, and the weights."""
    from torch.distributed.algorithms import Join
    from torch.nn.parallel import DistributedDataParallel

    group = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=timeout))
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(1, 1), process_group=group)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if even_stream:
        module, _, name = even_stream.partition(":")
        stream_class = getattr(importlib.import_module(module), name)
        stream = stream_class(list(range(dataset_size)), dist.get_rank(), dist.get_world_size())
    else:
        stream = RankWorkerStream(dataset_size)
    loader = minidataloader.DataLoader(stream, batch_size=batch_size)
    steps, error = 0, None
    start = time.monotonic()
    try:
        with Join([model], enable=join):
            for batch in loader:
                samples = batch if even_stream else batch[0]  # RankWorkerStream adds the worker
                x = samples.float().unsqueeze(1) / dataset_size
                optimizer.zero_grad()
                ((model(x) - 2 * x) ** 2).mean().backward()  # learn y = 2x
                optimizer.step()
                steps += 1
    except RuntimeError as failure:  # a collective call that timed out
        first_line = str(failure).splitlines()[0]
        error = "RuntimeError: " + first_line.split("] ", 1)[-1]  # without gloo's file:line
    seconds = time.monotonic() - start
    weights = [float(value) for value in torch.cat([p.detach().flatten()
                                                    for p in model.module.parameters()])]
    return {"batches": len(list(loader)), "steps": steps, "error": error,
            "seconds": seconds, "weights": weights}


# --------------------------------------------------------------------------- datasets

class RandomCrops(torch.utils.data.Dataset):
    """Sample ``i`` is ``(i, worker id, worker seed, crop)``: ``crop`` is where a random
    crop would start in a larger picture, ``[top, left]`` (each 0 to 7), drawn from torch's
    global generator as a transform does. In a worker, that generator was seeded with the
    worker's seed."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        info = any_worker_info()
        crop = torch.randint(0, 8, (2,)).tolist()
        return index, info.id if info else -1, info.seed if info else -1, crop


# Built on torch's IterableDataset: torch's loader (which the chapter uses for workers)
# recognises only its own, and minidataloader's loader takes torch's datasets too.
class RankWorkerStream(torch.utils.data.IterableDataset):
    """The samples ``0 .. n-1`` as a stream, split across ranks *and* across each rank's
    loader workers, so that every sample is read exactly once in all.

    An IterableDataset gets no sampler: it must split itself. With R ranks of W workers
    each there are R * W readers; reader ``rank * W + worker`` takes every (R * W)-th
    sample, starting at its own number. Each sample comes out as ``(sample, worker)``.

    ``rank`` and ``world_size`` default to the process group's, read here in ``__init__``,
    in the rank's own process: ``__iter__`` runs in a worker, which may have been started
    without the process group (spawn). The worker is asked of minidataloader's loader,
    then of torch's, so either loader can read the stream."""

    def __init__(self, n: int, rank: int | None = None, world_size: int | None = None):
        joined = dist.is_available() and dist.is_initialized()
        self.n = n
        self.rank = rank if rank is not None else (dist.get_rank() if joined else 0)
        self.world_size = (world_size if world_size is not None
                           else (dist.get_world_size() if joined else 1))

    def __iter__(self):
        info = any_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info else (0, 1)
        reader, readers = self.rank * num_workers + worker, self.world_size * num_workers
        for sample in range(reader, self.n, readers):
            yield sample, worker
