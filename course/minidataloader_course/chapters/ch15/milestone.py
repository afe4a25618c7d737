"""Milestone 15: the open capstone (chapter 15). The learner's ``capstone_loader`` (their
``StatefulDataLoader`` with the settings and collate function they chose) over the
capstone's recordings must

1. give the batches torch's ``DataLoader`` gives with the same settings and collate
   function, epoch after epoch (torch is the oracle);
2. resume exactly: a state taken in the middle of the second epoch, loaded into a new
   loader, gives the rest of that epoch as torch's uninterrupted loader does;
3. meet the throughput target: at least ``TARGET`` times the samples per second of the same
   loader without workers, on the same machine, in the same run. Reads wait on a slow disk
   (sleeps), so the target holds on any machine, however few CPUs it has. Both are
   measured in a steady state: the learner's ``DataLoader`` with the same settings and
   persistent workers, the best of three epochs after a first one (which starts the
   workers), against the best of two epochs without workers.

The loaders start their workers with fork where it exists (as milestone 13's ranks do): the
start method is chapter 14's matter, and spawned workers would cost seconds each here.
"""

from __future__ import annotations

import importlib
import tempfile
import warnings

import torch
import torch.utils.data

from minidataloader_course.chapters.ch15 import solution
from minidataloader_course.chapters.ch15.recordings import (
    READ_MS,
    Recordings,
    make_recordings,
    samples_per_second,
)
from minidataloader_course.chapters.multiprocess_cases import HAS_FORK
from minidataloader_course.checker.milestones import Milestone, Suite, register_milestone

TARGET = 3.0  # times the samples per second without workers
SEED = 15
MET = f"at least {TARGET:g} times"


def capstone_loader(data):
    """The learner's ``capstone_loader`` (``myloader/capstone.py``), or, for torch's side,
    the book's (only its settings are used there: torch's DataLoader is built with them)."""
    if data is torch.utils.data:
        return solution.capstone_loader
    return importlib.import_module(f"{data.__name__}.capstone").capstone_loader


def _settings(loader) -> dict:
    """The loader's settings, as DataLoader arguments (its dataset and generator apart)."""
    settings = {"batch_size": loader.batch_size, "shuffle": True, "drop_last": loader.drop_last,
                "num_workers": loader.num_workers, "collate_fn": loader.collate_fn,
                "in_order": getattr(loader, "in_order", True)}
    if loader.num_workers:
        settings.update(prefetch_factor=loader.prefetch_factor,
                        multiprocessing_context="fork" if HAS_FORK else None)
    return settings


def _plain(batch):
    if isinstance(batch, dict):
        return {key: _plain(value) for key, value in sorted(batch.items())}
    return batch.tolist() if isinstance(batch, torch.Tensor) else batch


def _loaders(data, folder, read_ms: float):
    """The learner's loader (or, for torch, torch's DataLoader with the same settings), and
    a function that makes another one built the same way."""
    dataset = Recordings(make_recordings(folder), read_ms=read_ms)
    make_capstone = capstone_loader(data)

    def made():
        generator = torch.Generator().manual_seed(SEED)
        loader = make_capstone(dataset, generator)
        if data is torch.utils.data:
            return torch.utils.data.DataLoader(dataset, generator=generator,
                                               **_settings(loader))
        if loader.num_workers and HAS_FORK:
            loader.multiprocessing_context = "fork"
        return loader

    return made


def same_batches(data, spec: dict) -> dict:
    """Two epochs, batch by batch (the reads do not wait: only the batches matter)."""
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*worker processes")
        loader = _loaders(data, folder, read_ms=0)()
        return {f"epoch {epoch + 1}": [_plain(batch) for batch in loader]
                for epoch in range(2)}


def resumed(data, spec: dict) -> dict:
    """A state after ``k`` batches of the second epoch, through torch.save, into a new
    loader; torch's side is its uninterrupted loader."""
    k = spec["k"]
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*worker processes")
        made = _loaders(data, folder, read_ms=0)
        loader = made()
        list(loader)  # the first epoch
        if data is torch.utils.data:
            return {"the rest of the second epoch": [_plain(b) for b in loader][k:]}
        iterator = iter(loader)
        for _ in range(k):
            next(iterator)
        state = _through_a_file(loader.state_dict())
        del iterator
        again = made()
        again.load_state_dict(state)
        return {"the rest of the second epoch": [_plain(b) for b in again]}


def _through_a_file(state):
    import io

    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer)


def throughput(data, spec: dict) -> dict:
    """The target, met or not (torch's side: met, the target is the rule)."""
    if data is torch.utils.data:
        return {"samples per second, against no workers": MET}
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*worker processes")
        dataset = Recordings(make_recordings(folder), read_ms=READ_MS)
        chosen = capstone_loader(data)(dataset, torch.Generator().manual_seed(SEED))
        settings = _settings(chosen)
        if not settings["num_workers"]:
            ratio, fast, base = 1.0, None, None
        else:
            steady = data.DataLoader(dataset, persistent_workers=True,
                                     generator=torch.Generator().manual_seed(SEED), **settings)
            samples_per_second(steady)  # the first epoch starts the workers
            fast = samples_per_second(steady, epochs=3)
            del steady
            alone = dict(settings, num_workers=0)
            alone.pop("prefetch_factor", None)
            alone.pop("multiprocessing_context", None)
            base = samples_per_second(data.DataLoader(
                dataset, generator=torch.Generator().manual_seed(SEED), **alone), epochs=2)
            ratio = fast / base
    if ratio >= TARGET:
        return {"samples per second, against no workers": MET}
    numbers = "" if fast is None else f" ({fast:.0f} against {base:.0f} samples/s)"
    return {"samples per second, against no workers": f"{ratio:.1f} times{numbers}"}


register_milestone(Milestone(
    number=15,
    goals={"ch15": (3, 4)},
    title="the capstone: your loader on the recordings, fast and resumable",
    suites=[
        Suite(name="your settings: torch's batches",
              cases=lambda: [{"epochs": 2}],
              observe=same_batches,
              describe=lambda spec: (
                  "your capstone_loader(Recordings(128 recordings), torch.Generator()."
                  f"manual_seed({SEED})), two epochs, against torch's DataLoader with the "
                  "same settings and collate_fn"),
              time_limit=60.0,
              suspects=("capstone.capstone_loader", "capstone.collate_recordings"),
              hint="your loader with your settings must give torch's batches: the pieces "
                   "of chapters 5 to 10 as their checks want them, your collate_fn as it is"),
        Suite(name="resumed in the middle of the second epoch",
              cases=lambda: [{"k": 3}],
              observe=resumed,
              describe=lambda spec: (
                  f"your capstone_loader, one epoch, then {spec['k']} batches of the second: "
                  "state_dict() through torch.save into a new loader, load_state_dict(), "
                  "the rest of that epoch against torch's uninterrupted DataLoader"),
              time_limit=60.0,
              suspects=("resumable.ResumableEpochs", "resumable.StatefulDataLoader",
                        "resumable.ResumedBatches", "resumable.InTheWorkers",
                        "resumable.track_position"),
              hint="capstone_loader must return your StatefulDataLoader; with your settings "
                   "(prefetch_factor, batch_size) the batches in flight and the workers' "
                   "states are what chapter 14's pieces keep"),
        Suite(name=f"throughput: at least {TARGET:g} times the samples per second without "
                   "workers",
              cases=lambda: [{"target": TARGET}],
              observe=throughput,
              describe=lambda spec: (
                  f"Recordings(128 recordings, {READ_MS:g} ms per read): your DataLoader "
                  "with your capstone_loader's settings and persistent workers, the best of "
                  "3 epochs after a first, against the same loader with num_workers=0, the "
                  "best of 2 epochs"),
              time_limit=120.0,
              suspects=("capstone.capstone_loader",),
              hint="reads wait on the disk, not on a CPU: workers read in parallel even on "
                   "two cores. Count the batches an epoch has, and how many workers can "
                   "each have one; look at your trace's worker lanes"),
    ],
))
