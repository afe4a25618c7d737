"""Milestone 13: the learner's complete loader runs chapter 13's two training runs with two
worker processes that persist from epoch to epoch and the pinning path, and
gives torch's loss at every step.

The runs are the chapter's own (``chapters.ch13.capstone``); they take ``data``, a module with
``DataLoader``, ``random_split`` and ``Subset``. The learner's side gets their ``DataLoader``
with torch's ``random_split`` and ``Subset`` (the runs call them, not the learner's code).

Two ranks: the learner's loader, given torch's ``DistributedSampler``, in each of two ranks of a
real process group (gloo over loopback, ``shared/ranks.py``); every rank's batches must be what
torch's loader gives that rank. The ranks are spawned processes, which import the learner's
package from its folder.

Pinning: without an accelerator neither loader pins, so the runs hand the training loader a
stand-in pin function (chapter 9's hook, ``loader._pin_memory_fn``), which copies each batch
and counts it. The learner's iterator calls it in its pin thread; torch's loader knows no such
hook, so on torch's side each batch it yields goes through the stand-in, where its pin thread
would pin it on a machine with an accelerator. A pin path that is skipped, or that pins
anything but batches, shows in the count.
"""

from __future__ import annotations

import pathlib
import types
import warnings

import torch
import torch.utils.data

from minidataloader_course.chapters.ch13 import capstone
from minidataloader_course.chapters.multiprocess_cases import HAS_FORK
from minidataloader_course.checker.milestones import Milestone, Suite, register_milestone
from minidataloader_course.learner.package import import_package
from minidataloader_course.shared.ranks import spawn_ranks


class StandInPin:
    """A pin function for a machine without an accelerator: every tensor of the batch
    copied (as pinning copies it, to page-locked memory), and the batches counted."""

    def __init__(self):
        self.batches = 0

    def __call__(self, batch):
        self.batches += 1
        return [part.clone() if isinstance(part, torch.Tensor) else part for part in batch]


class TorchLoader(torch.utils.data.DataLoader):
    """torch's DataLoader; each batch it yields goes through ``_pin_memory_fn`` when one is
    set, where torch's pin thread pins it on a machine with an accelerator."""

    def __iter__(self):
        batches = super().__iter__()
        pin_fn = getattr(self, "_pin_memory_fn", None)
        return batches if pin_fn is None else map(pin_fn, batches)


def library(data) -> types.SimpleNamespace:
    """What the runs take as ``data``: the loader under test, and torch's splitting."""
    loader = TorchLoader if data is torch.utils.data else data.DataLoader
    return types.SimpleNamespace(DataLoader=loader, random_split=torch.utils.data.random_split,
                                 Subset=torch.utils.data.Subset)


# The runs split their data with torch's random_split and Subset; spawned workers get the
# Subset pickled, which looks the class up where the learner's code starts them.
SPLITTING = ("Dataset", "IterableDataset", "Sampler", "Subset", "random_split")
RUNS = {"diabetes": capstone.train_diabetes, "digits": capstone.train_digits}


def training_run(data, spec: dict) -> dict:
    """One of the chapter's runs, with ``data``'s DataLoader: what the script sees."""
    pin = StandInPin()
    more = {"persistent_workers": True} if spec["run"] == "digits" else {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # every floating-point sum in the same order, on both sides
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pin_memory without an accelerator; CPUs
            run = RUNS[spec["run"]](library(data), epochs=spec["epochs"], num_workers=2,
                                    pin_fn=pin, **more)
    finally:
        torch.set_num_threads(threads)
    return {"the loss of every step": run.losses,
            "validation accuracy after each epoch": run.accuracy,
            "batches given to the pin function": pin.batches,
            "random numbers drawn afterwards": run.drawn_after}


def pinned_as_it_is(data, spec: dict) -> dict:
    """``pin_memory=True`` with no stand-in: on a machine without an accelerator torch warns
    (a UserWarning) and yields the batches unpinned; with one, it yields them pinned."""
    dataset = torch.utils.data.TensorDataset(torch.arange(24.0).reshape(12, 2),
                                             torch.arange(12))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = data.DataLoader(dataset, batch_size=4, num_workers=2, pin_memory=True,
                                 multiprocessing_context="fork")
        batches = [[part.tolist() for part in batch] for batch in loader]
        pinned = [all(part.is_pinned() for part in batch) for batch in loader]
    about_pinning = sorted({w.category.__name__ for w in caught
                            if "pin_memory" in str(w.message)})
    return {"batches": batches, "each batch pinned": pinned,
            "warnings about pin_memory (their category)": about_pinning}


class DrawnWhereRead(torch.utils.data.Dataset):
    """Sample ``i`` is ``[i, a number from 0 to 999 drawn where it is read]``: in a worker,
    from the seed the loader gave that worker."""

    def __init__(self, size: int):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return torch.tensor([index, int(torch.randint(1000, ()))])


def rank_batches(package: str | None, dataset_size: int, batch_size: int, num_workers: int,
                 epochs: int) -> list:
    """A job for one rank: the batches of each epoch, from the learner's DataLoader (from the
    package folder ``package``) or torch's (``None``), reading torch's DistributedSampler,
    which asks the process group for the rank."""
    data = torch.utils.data if package is None else import_package(pathlib.Path(package))
    torch.manual_seed(0)  # every rank alike, as training scripts do
    dataset = DrawnWhereRead(dataset_size)
    sampler = torch.utils.data.DistributedSampler(dataset, seed=0)
    # fork where it exists, whatever start method the milestone runs with: spawned workers
    # import torch and the course again (seconds each, in each rank); the other suites
    # already start the workers with the start method in use
    context = "fork" if HAS_FORK else None
    loader = data.DataLoader(dataset, batch_size=batch_size, sampler=sampler,
                             num_workers=num_workers, multiprocessing_context=context)
    seen = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        batches = iter(loader)
        if package is not None and not type(batches).__module__.startswith(data.__name__):
            # no tripwire watches these processes: the epoch must at least be the learner's
            raise TypeError(f"iter(DataLoader) gave a {type(batches).__module__}."
                            f"{type(batches).__name__}: your DataLoader must run its epochs "
                            "with its own iterator")
        seen.append([batch.tolist() for batch in batches])
    return seen


def on_two_ranks(data, spec: dict) -> dict:
    package = None if data is torch.utils.data else str(pathlib.Path(data.__file__).parent)
    # forked ranks: spawned ones import torch and the course again, a minute on a busy machine
    method = "fork" if HAS_FORK else "spawn"
    gathered = spawn_ranks([("batches", rank_batches, dict(package=package, **spec))],
                           world_size=2, timeout=100, start_method=method)
    return {f"rank {rank}'s batches, epoch by epoch": batches
            for rank, batches in enumerate(gathered["batches"])}


def describe(spec: dict) -> str:
    what = {"diabetes": "Run 1, chapter 1's diabetes network (the split, the weights and "
                        "the shuffles from the global generator)",
            "digits": "Run 2, the digits classifier (RandomShift drawn inside the workers, "
                      "shuffled by the script's generator)"}[spec["run"]]
    return (f"{what}: {spec['epochs']} epochs, DataLoader(batch_size=32, shuffle=True, "
            f"num_workers=2, persistent_workers=True, pin_memory=True) with a stand-in pin "
            f"function")


register_milestone(Milestone(
    number=13,
    goals={"ch13": (1, 6)},
    title="your DataLoader in chapter 13's training runs, and on two ranks",
    suites=[
        Suite(name="pin_memory=True on this machine, as it is",
              cases=lambda: [{"run": "pinned"}],
              observe=pinned_as_it_is,
              describe=lambda spec: (
                  "DataLoader(12 samples of 2 floats and a label, batch_size=4, num_workers=2, "
                  "pin_memory=True), no stand-in pin function; two epochs"),
              time_limit=30.0,
              hint="without an accelerator (torch.cuda.is_available() is False) nothing can be "
                   "pinned: warn as torch does (a UserWarning naming 'pin_memory') and yield "
                   "the batches as they are; with one, pin every batch"),
        Suite(name="Run 1: the diabetes network, loss for loss",
              cases=lambda: [{"run": "diabetes", "epochs": 3}],
              observe=training_run, describe=describe, time_limit=90.0, allowed=SPLITTING,
              hint="the shuffles and base seeds come from the global generator, one after "
                   "the other: persistent workers draw ONE base seed, at the first epoch; "
                   "every batch goes through loader._pin_memory_fn once, in your pin thread"),
        Suite(name="Run 2: digits, augmented in the workers",
              cases=lambda: [{"run": "digits", "epochs": 2}],
              observe=training_run, describe=describe, time_limit=90.0, allowed=SPLITTING,
              hint="the shifts are drawn in the workers: each worker seeded with base_seed + "
                   "its id, once (they persist: the second epoch goes on from there), batch "
                   "i to worker i % 2"),
        Suite(name="two ranks, each with a DistributedSampler",
              cases=lambda: [{"dataset_size": 11, "batch_size": 2, "num_workers": 2,
                              "epochs": 2}],
              observe=on_two_ranks,
              describe=lambda spec: (
                  "two ranks of a gloo process group on 127.0.0.1 (spawned processes), each: "
                  f"torch.manual_seed(0), DataLoader({spec['dataset_size']} samples [i, a "
                  "number drawn where it is read], batch_size="
                  f"{spec['batch_size']}, sampler=DistributedSampler(dataset, seed=0), "
                  f"num_workers={spec['num_workers']}, multiprocessing_context='fork'), "
                  f"{spec['epochs']} epochs, "
                  "sampler.set_epoch(epoch) before each"),
              time_limit=150.0,
              hint="each rank reads the indices of the sampler it is given, and set_epoch "
                   "changes them between epochs; the ranks seed torch alike, so their "
                   "workers' seeds (base_seed + worker id, base_seed drawn from the global "
                   "generator) are alike too, as torch's are"),
    ],
))
