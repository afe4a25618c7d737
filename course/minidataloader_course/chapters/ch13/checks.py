"""Chapter 13 (capstone): the exercises and their hidden cases.

``WorkerSafeNoise`` runs inside real worker processes of minidataloader's DataLoader, started
with fork (the checker itself runs in a forked child, and only fork hands the reader's
notebook code to a worker without pickling it). So does ``AssembledLoader``, the learner's
loader made of the learner's own pieces (imported from ``myloader`` in the workbook), held to
torch's ``DataLoader`` with the same arguments.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import warnings

import torch
from torch.utils.data import DataLoader

import minidataloader as mdl
from minidataloader_course.chapters.ch13 import solution as solutions
from minidataloader_course.chapters.ch13.milestone import TorchLoader
from minidataloader_course.chapters.multiprocess_cases import mark_pinned
from minidataloader_course.checker.framework import Case, Exercise, Rule, register, take
from minidataloader_course.checker.milestones import LOADER_INTERNALS
from minidataloader_course.checker.questions import Choice, Prediction
from minidataloader_course.shared.compare import difference


@contextlib.contextmanager
def _quiet_loader_warnings():
    """The hidden cases use up to 3 workers on any machine: the warning about more workers
    than CPUs is not the reader's doing."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*worker processes", category=UserWarning)
        yield


# ---------------------------------------------------------------------------------------
# A whole data pipeline for a new table

PIPELINE_PIECES = ("Dataset", "TensorDataset", "Subset", "random_split", "DataLoader")


def _table(rows: int, columns: int, classes: int, seed: int) -> dict:
    generator = torch.Generator().manual_seed(seed)
    scales = torch.logspace(0, 3, columns)  # features from ones to thousands: scaling matters
    features = (torch.randn(rows, columns, generator=generator) + 2) * scales
    labels = torch.randint(0, classes, (rows,), generator=generator)
    return {"features": features, "labels": labels, "seed": seed}


def _pipeline_cases() -> list[Case]:
    def case(rows, columns, classes, seed, hint):
        return Case(_table(rows, columns, classes, seed), hint=hint,
                    description=f"a table of {rows} rows, {columns} float32 features and "
                                f"int64 labels from 0 to {classes - 1}, seed={seed}")

    return [
        case(60, 3, 2, 0, "60 rows: 48 for training (3 full batches of 16), 12 to validate"),
        case(101, 4, 3, 1, "101 rows: random_split's fractions give 81 training rows "
                           "(the leftover row goes to the first split): 5 full batches and "
                           "one row that must be dropped"),
        case(21, 2, 2, 7, "21 rows: 17 for training, so one full batch and one sample left over"),
        case(400, 5, 4, 3, "400 rows: 80 validation rows make one batch of 64 and one of 16, "
                           "in the split's order"),
    ]


def _use_pipeline(implementation, case: Case) -> dict:
    result = implementation(**case.inputs)
    seen = {"type of what it returned": type(result).__name__}
    train_loader, val_loader = result
    rows = len(case.inputs["labels"])
    seen["len(train_loader)"] = len(train_loader)
    seen["len(val_loader)"] = len(val_loader)
    for epoch in (1, 2):
        seen[f"training batches, epoch {epoch}"] = take(train_loader, rows + 1)
    seen["validation batches"] = take(val_loader, rows + 1)
    return seen


def _compare_pipeline(expected, got) -> str | None:
    """The first difference, and what usually causes it."""
    compare = functools.partial(difference, tolerance=(1e-5, 1e-6))
    for key, value in expected.items():
        if key not in got:
            break
        problem = compare(value, got[key], key)
        if problem is None:
            continue
        if key.startswith("type"):
            return f"{problem}: return the two loaders as a tuple, (train_loader, val_loader)"
        if key.startswith("len"):
            return (f"{problem}: the training loader drops its incomplete last batch "
                    "(drop_last=True); the validation loader keeps every row, in batches of 64")
        batches = key.split(",")[0]
        if _labels(value) != _labels(got[key]):
            return (f"the labels of the {batches} come in another order ({problem}): the rows "
                    "are split by random_split(range(N), [0.8, 0.2]) with a generator seeded "
                    "with seed; the training loader shuffles with a generator of its own, "
                    "also seeded with seed; the validation loader does not shuffle")
        return (f"the labels are right but the features are not ({problem}): standardise "
                "with the mean and the standard deviation of the TRAINING rows only, "
                "features[train_rows].mean(dim=0) and .std(dim=0) (torch's default std)")
    return compare(expected, got)


def _labels(batches) -> list | None:
    try:
        return [labels.tolist() for _, labels in batches]
    except (TypeError, ValueError, AttributeError):
        return None


register(Exercise(
    reference=solutions.build_pipeline,
    cases=_pipeline_cases,
    run=_use_pipeline,
    compare=_compare_pipeline,
    hint=("split the row numbers, compute mean and std of features[train_rows] only, scale "
          "every row with them, then build a shuffled, drop_last training loader with its own "
          "generator and an in-order validation loader"),
    allowed=PIPELINE_PIECES,
    time_limit=3.0,
    expected_from="reference, built with torch's pieces",
    rules=(
        Rule("`random_split` with a seeded generator; standardised with the training rows' mean and `std`",
             (1, 2, 3, 4)),
        Rule("training: batches of 16, shuffled by its own seeded generator, incomplete last batch dropped",
             (1, 2, 3)),
        Rule("validation: batches of 64 in the split's order",
             (1, 2, 3, 4)),
    ),
    goals=(5,),
))


# ---------------------------------------------------------------------------------------
# Loader settings for a scenario

def _scenario(phase="train", samples=1000, batch_size=32, batch_norm=False,
              reading="in memory", device="cpu", epochs=10) -> dict:
    return {"scenario": {"phase": phase, "samples": samples, "batch_size": batch_size,
                         "batch_norm": batch_norm, "reading": reading, "device": device,
                         "epochs": epochs}}


def _settings_cases() -> list[Case]:
    def case(hint, **scenario):
        return Case(_scenario(**scenario), hint=hint)

    return [
        case("training: shuffle, so that every epoch sees the samples in a new order; data "
             "already in memory needs no worker processes (num_workers=0), and without "
             "workers there is nothing to keep alive (persistent_workers=False)"),
        case("evaluation: shuffle=False keeps prediction k next to sample k; never drop "
             "samples you want to evaluate", phase="evaluate", batch_norm=True, samples=1025),
        case("BatchNorm cannot normalise a training batch of ONE sample: 1025 % 32 == 1, so "
             "drop the last batch (drop_last=True)", batch_norm=True, samples=1025),
        case("1030 % 32 == 6: the last batch holds 6 samples, which BatchNorm handles; keep it",
             batch_norm=True, samples=1030),
        case("images decoded from files for every sample: worker processes pay for "
             "themselves (num_workers=4), and over 10 epochs they should start only once "
             "(persistent_workers=True)", reading="from disk"),
        case("a GPU: pin_memory=True puts batches in page-locked host memory, from which the "
             "copy to the GPU is faster and can run asynchronously; one epoch only: persistent "
             "workers would save nothing", device="cuda", reading="from disk", epochs=1),
        case("one epoch only: persistent workers would save nothing (they would start once "
             "anyway)", reading="from disk", epochs=1),
        case("evaluation on a GPU, data in memory: no workers, in order, pinned",
             phase="evaluate", device="cuda"),
    ]


def _use_settings(implementation, case: Case) -> dict:
    settings = implementation(**case.inputs)
    scenario = case.inputs["scenario"]
    seen = {"settings": settings}
    # the loader must accept them (persistent_workers without workers is refused)
    with _quiet_loader_warnings():
        DataLoader(range(scenario["samples"]), batch_size=scenario["batch_size"], **settings)
    return seen


register(Exercise(
    reference=solutions.choose_loader_settings,
    cases=_settings_cases,
    run=_use_settings,
    hint=("shuffle for training only; drop_last only when a training batch of one sample "
          "would reach BatchNorm; workers (4) only when samples are read from disk; "
          "pin_memory on a GPU; persistent_workers when there are workers and more than one "
          "epoch"),
    rules=(
        Rule("shuffle for training",
             (1, 2)),
        Rule("`drop_last` only for a training batch of one with batch norm",
             (2, 3, 4)),
        Rule("4 workers from disk, persistent only with more than one epoch",
             (5, 6, 7)),
        Rule("pin memory for a GPU; the settings are accepted by a `DataLoader`",
             (6, 8)),
    ),
    goals=(5,),
))


# ---------------------------------------------------------------------------------------
# A worker-safe augmentation


class Blanks(mdl.Dataset):
    """Sample i is ``(noise(zeros), i)``: with an image of zeros, what comes out is the
    noise itself, so repeated noise is easy to spot."""

    def __init__(self, transform, n: int = 12, size: int = 3):
        self.transform, self.n, self.size = transform, n, size
        self.images = [torch.zeros(size) for _ in range(n)]

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.transform(self.images[i]), i


def _repeats(batches: list) -> int:
    rows = [tuple(row) for noise, _ in batches for row in noise.tolist()]
    return len(rows) - len(set(rows))


def _use_noise(implementation, case: Case) -> dict:
    spec = case.inputs
    transform = implementation(spec["seed"])
    dataset = Blanks(transform)
    seen = {}
    if spec["preview"]:  # the script looks at one sample before training
        seen["a sample read in the main process"] = dataset[0][0]
    workers = spec["num_workers"]
    with _quiet_loader_warnings():
        loader = mdl.DataLoader(
            dataset, batch_size=4, shuffle=True, num_workers=workers,
            persistent_workers=spec["persistent"],
            multiprocessing_context="fork" if workers else None,
            generator=torch.Generator().manual_seed(spec["loader_seed"]))
        for epoch in range(1, spec["epochs"] + 1):
            batches = take(loader, len(dataset) + 1)
            seen[f"epoch {epoch}: noise patterns that repeat an earlier one"] = _repeats(batches)
            seen[f"epoch {epoch}: the dataset's images are still zeros afterwards"] = all(
                not image.any() for image in dataset.images)
            seen[f"epoch {epoch}"] = batches
    return seen


def _noise_cases() -> list[Case]:
    def case(num_workers, hint, preview=False, persistent=False, seed=5, loader_seed=0,
             epochs=2):
        settings = f"num_workers={num_workers}" + (", persistent_workers=True" * persistent)
        return Case({"seed": seed, "num_workers": num_workers, "preview": preview,
                     "persistent": persistent, "loader_seed": loader_seed, "epochs": epochs},
                    description=(f"WorkerSafeNoise({seed}) on 12 blank images, "
                                 f"DataLoader({settings}, shuffle=True, generator seed "
                                 f"{loader_seed}), {'two epochs' if epochs == 2 else 'one epoch'}"
                                 + (", one sample read in the main process first" * preview)),
                    hint=hint)

    return [
        case(0, "no workers: get_worker_info() is None, so draw from a generator seeded with "
                "the seed given to __init__, made once and then used on and on (the second "
                "epoch continues its stream); return a new tensor, so that the dataset's "
                "images stay zeros"),
        case(2, "in a worker, seed the generator with minidataloader.get_worker_info().seed "
                "(this check runs minidataloader's DataLoader, whose workers answer "
                "minidataloader's get_worker_info; torch's says None there): workers get "
                "different seeds, so no noise pattern repeats", epochs=1),
        case(3, "the main process used the transform first, and each worker starts with a "
                "copy of it: a generator that already exists was made for ANOTHER seed. "
                "Remember which seed your generator was made from, and make a new one when "
                "this process's seed differs", preview=True, seed=11, loader_seed=1, epochs=1),
        case(2, "persistent workers keep their seed from one epoch to the next: keep drawing "
                "from the same generator (do not make a new one for the same seed), or the "
                "second epoch repeats the first", persistent=True, loader_seed=3),
    ]


register(Exercise(
    reference=solutions.WorkerSafeNoise,
    cases=_noise_cases,
    run=_use_noise,
    compare=lambda expected, got: difference(expected, got, tolerance=(1e-5, 1e-6)),
    hint=("in __call__, ask get_worker_info() which process you are in: the main process "
          "uses self.seed, a worker its own seed. Keep the generator and the seed it was made "
          "from, and make a new one only when the seed differs (a worker's copy was made for "
          "the main process). Return the image plus 0.1 times noise drawn from it"),
    allowed=("Dataset", "IterableDataset", "Sampler", "get_worker_info"),
    time_limit=4.0,
    rules=(
        Rule("the main process: seeded with `seed`, used on and on; the images untouched",
             (1,)),
        # "persistent workers keep drawing" is no rule of its own: a transform cannot tell
        # one epoch from the next, so code that makes a new generator for the same seed does
        # so within an epoch too, and repeats its noise there (case 2)
        Rule("workers: seeded with their own seed when first needed, then used on and on "
             "(several epochs with persistent workers), no repeats",
             (2, 4)),
        Rule("a copied generator made for another seed is replaced",
             (3,)),
    ),
    goals=(5,),
))


# ---------------------------------------------------------------------------------------
# Your loader, assembled from your pieces: workers that persist, and the pinning path


class Shaken(mdl.Dataset):
    """Sample i is ``(i, a number drawn from torch's global generator)``: read in a worker,
    the number shows how that worker was seeded and how many samples it read before."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(f"index {i} out of range for {self.n} samples")
        return i, torch.randint(0, 2**20, ())

    def __repr__(self):
        return f"a dataset of {self.n} samples (i, a number drawn where it is read)"


def torch_assembled(dataset, batch_size=1, shuffle=False, drop_last=False, generator=None,
                    num_workers=0, persistent_workers=False, pin_fn=None,
                    multiprocessing_context=None):
    """The oracle: torch's DataLoader with the same arguments, each batch it yields through
    ``pin_fn`` (where torch pins it, on a machine with an accelerator)."""
    with _quiet_loader_warnings():
        loader = TorchLoader(dataset, batch_size=batch_size, shuffle=shuffle,
                             drop_last=drop_last, generator=generator, num_workers=num_workers,
                             persistent_workers=persistent_workers,
                             multiprocessing_context=multiprocessing_context)
    if pin_fn is not None:
        loader._pin_memory_fn = pin_fn
    return loader


def _use_loader(implementation, case: Case) -> dict:
    spec = dict(case.inputs)
    size, epochs, stop_after = spec.pop("size"), spec.pop("epochs"), spec.pop("stop_after")
    generator_seed = spec.pop("generator_seed")
    generator = None if generator_seed is None else torch.Generator().manual_seed(generator_seed)
    if spec.pop("pinned"):
        spec["pin_fn"] = mark_pinned
    with _quiet_loader_warnings():
        loader = implementation(Shaken(size), generator=generator, **spec)
        seen = {"len(loader)": len(loader)}
        for epoch in range(1, epochs + 1):
            batches = iter(loader)
            seen[f"epoch {epoch}: torch.rand(1) drawn between iter(loader) and the first "
                 f"batch"] = torch.rand(1)
            if epoch == 1 and stop_after is not None:
                seen["epoch 1, left after"] = list(itertools.islice(batches, stop_after))
                continue
            seen[f"epoch {epoch}"] = take(batches, size + 1)
        seen["torch.rand(2) afterwards (the global generator)"] = torch.rand(2)
        if generator is not None:
            seen["torch.rand(2, generator=generator) afterwards"] = torch.rand(
                2, generator=generator)
    del batches, loader  # workers that persist stop with the loader's iterator
    return seen


def _loader_cases() -> list[Case]:
    def case(hint, tier, size=10, batch_size=3, shuffle=True, drop_last=False,
             generator_seed=None, num_workers=2, persistent_workers=False, pinned=False,
             epochs=2, stop_after=None):
        arguments = {"size": size, "batch_size": batch_size, "shuffle": shuffle,
                     "drop_last": drop_last, "generator_seed": generator_seed,
                     "num_workers": num_workers, "persistent_workers": persistent_workers,
                     "pinned": pinned, "multiprocessing_context": "fork" if num_workers else None,
                     "epochs": epochs, "stop_after": stop_after}
        shown = [f"batch_size={batch_size}", f"shuffle={shuffle}"]
        shown += ["drop_last=True"] * drop_last
        shown += [f"generator=torch.Generator().manual_seed({generator_seed})"] * (
            generator_seed is not None)
        shown += [f"num_workers={num_workers}"]
        shown += ["persistent_workers=True"] * persistent_workers
        shown += ["pin_fn=mark_pinned"] * pinned
        left = (f"; the first epoch left after {stop_after} batches (break)"
                if stop_after is not None else "")
        return Case(arguments, hint=hint, tier=tier,
                    description=f"AssembledLoader({Shaken(size)!r}, {', '.join(shown)}); "
                                f"{epochs} epochs{left}")

    return [
        case("no workers: your SingleProcessIterator; without a pin thread every batch goes "
             "through pin_fn in this process, as it is handed out", 2, num_workers=0,
             pinned=True, generator_seed=0),
        case("workers that do not persist: a new MultiProcessIterator every epoch, so a new "
             "base seed (from the global generator: no generator here) and new workers", 2),
        case("persistent workers: ONE MultiProcessIterator for the whole run, made by the "
             "first iter(); every later iter() resets it (no new base seed: each worker's "
             "generator goes on where it stopped)", 3, persistent_workers=True,
             generator_seed=1, epochs=3),
        case("persistent workers and a pin thread: each batch through pin_fn once, in the pin "
             "thread your iterator starts when the loader has a _pin_memory_fn", 3,
             persistent_workers=True, pinned=True, drop_last=True, size=11, epochs=3),
        case("an epoch left after two batches (break) with persistent workers: the next iter() "
             "resets the same iterator, whose handshake throws away what the last epoch left "
             "in flight", 3, persistent_workers=True, generator_seed=2, stop_after=2, epochs=3),
        case("three workers, no generator: len(loader) and the batches as torch's", 1,
             num_workers=3, batch_size=4, size=13, shuffle=False),
        # one worker returns its results in the order it was given the tasks: what the last
        # epoch left in flight comes before the new epoch's first batch, whatever the timing
        case("one persistent worker, an epoch left after one batch (break): the next iter() "
             "resets the same iterator, whose handshake throws away what the last epoch left "
             "in flight (those results come first: one worker works in order)", 3,
             num_workers=1, persistent_workers=True, size=8, batch_size=2, generator_seed=3,
             stop_after=1, epochs=2),
    ]


register(Exercise(
    reference=solutions.AssembledLoader,
    cases=_loader_cases,
    run=_use_loader,
    hint=("your iterators take the loader and read what they need from it: give them every "
          "attribute they read; persistent workers keep one iterator and reset it; without "
          "workers, pin in this process"),
    oracle=torch_assembled,
    # your own pieces, not the loader they already make: assemble it yourself
    forbidden=(*LOADER_INTERNALS, "myloader.DataLoader", "myloader.dataloader.DataLoader"),
    time_limit=20.0,  # the reference takes 3 s on an idle machine
    expected_from="torch: its `DataLoader`, each batch through `pin_fn`; the learner's own pieces, not their `DataLoader`",
    rules=(
        Rule("without workers: the single-process iterator, each batch through `pin_fn` in the main process",
             (1,)),
        Rule("workers that do not persist: a new iterator (and base seed) every epoch",
             (2, 6)),
        Rule("persistent workers: one iterator, reset at later epochs (no new base seed; the workers' generators go on)",
             (3, 4, 5, 7)),
        Rule("with workers, `pin_fn` reaches the iterator's pin thread (`_pin_memory_fn`)",
             (4,)),
        Rule("an epoch left after `break`: the next one resets the same iterator",
             (5, 7)),
        Rule("every generator where torch's leaves it (`len` draws nothing): the global draws at "
             "`iter()`, between `iter()` and the first batch, and afterwards",
             (1, 2, 3, 4, 5, 6, 7)),
    ),
    goals=(3, 5),
))


# ---------------------------------------------------------------------------------------
# Check yourself

def _base_seeds_of_persistent_workers() -> int:
    """The real thing: torch's loader with persistent workers, three epochs, the base seeds
    its iterators draw in this process counted."""
    from minidataloader_course.chapters.ch13.capstone import seed_draws

    with _quiet_loader_warnings():
        loader = DataLoader(range(8), batch_size=4, num_workers=2, persistent_workers=True)
        with seed_draws() as counts:
            for _ in range(3):
                list(loader)
    del loader
    return counts["__init__", "_MultiProcessingDataLoaderIter"]


register(Prediction(
    "ch13-persistent-base-seeds", measure=_base_seeds_of_persistent_workers,
    why="one: the first epoch makes the iterator and its workers, which draws the base seed; "
        "the later epochs reset that iterator and draw none",
    mistakes={3: "a new iterator draws a base seed, but with persistent workers the loader "
                 "keeps its iterator: the second and third epochs reset it, without a draw",
              0: "the workers need a seed: the first iterator draws one, in the main process",
              2: "one base seed per worker? No: one per iterator; each worker adds its id"},
    goals=(3,),
))

register(Choice(
    "ch13-augmentation-proves-seeds", answer="c", why={
        "a": "the order of the samples comes from the sampler, in the main process: the same "
             "order with different worker seeds would give different shifts, and losses",
        "b": "RandomShift runs where the sample is read: with num_workers=2, in the workers",
        "d": "fork or spawn, torch seeds each worker with base_seed + worker_id: the start "
             "method does not decide the shifts",
    }, goals=(1, 2)))

register(Choice(
    "ch13-three-workers", answer="b", why={
        "a": "batch 0 goes to worker 0 with two workers or three, seeded base_seed + 0 both "
             "times: its shifts, and its loss, are the same",
        "c": "batch 2 goes to worker 2 with three workers, but to worker 0 with two: its "
             "shifts differ already",
        "d": "the samples of each batch are the same, but the shifts of a batch depend on the "
             "worker that reads it",
    }, goals=(2,)))

register(Choice(
    "ch13-torch-file", answer="b", why={
        "a": "dataloader.py starts the workers and talks to them, but what runs inside one is "
             "elsewhere",
        "c": "signal_handling.py notices dead workers from the main process; it seeds nothing",
        "d": "sampler.py makes the indices, in the main process",
    }, goals=(4,)))
