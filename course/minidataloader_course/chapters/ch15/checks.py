"""Chapter 15 (an open capstone): the exercises and their hidden cases.

The collate function and the loader's settings are the learner's to choose, so their checks
observe properties rather than one right answer: a padded batch may be wider than its
longest recording; the settings are any that give torch's batches (torch's ``DataLoader``
run with the learner's own settings and collate function is the oracle) within the
stated bounds. The throughput target is milestone 15's."""

from __future__ import annotations

import tempfile
import warnings

import torch
from torch.utils.data import DataLoader

from minidataloader_course.chapters.ch15 import solution as solutions
from minidataloader_course.chapters.ch15.recordings import Recordings, make_recordings
from minidataloader_course.chapters.multiprocess_cases import HAS_FORK
from minidataloader_course.checker.framework import Case, Exercise, Rule, register
from minidataloader_course.checker.questions import Choice

FINISHED = ("minidataloader.stateful.StatefulDataLoader",
            "minidataloader.stateful.loader.StatefulDataLoader")
KEYS = ["index", "label", "length", "signal"]

# ---------------------------------------------------------------------------------------
# What padding costs


def _padding_cases() -> list[Case]:
    def case(lengths, batch_size, hint):
        return Case({"lengths": tuple(lengths), "batch_size": batch_size}, hint=hint,
                    description=f"padding_share({list(lengths)}, batch_size={batch_size})")

    return [
        case([4, 2, 3, 1], 2, "two batches: [4, 2] pads 2 to 4, [3, 1] pads 1 to 3: 4 of 14 "
             "elements are padding"),
        case([5, 5, 5], 3, "no padding at all: 0.0"),
        case([10, 2, 2], 2, "the last batch is short (one recording): it is padded to its own "
             "longest, which is itself"),
        case([1, 100], 1, "batches of one are never padded"),
        case([1, 100], 2, "one long recording makes the short one 99 elements of padding"),
        case([], 4, "no recordings, no elements: 0.0"),
        case(list(range(16, 129, 7)), 4, "sorted by length, neighbours are close: little "
             "padding"),
    ]


register(Exercise(
    reference=solutions.padding_share,
    cases=_padding_cases,
    hint=("cut the lengths into batches of batch_size, in order; each batch holds "
          "len(batch) * max(batch) elements, of which sum(batch) are real"),
    rules=(
        Rule("each batch padded to its own longest; the share of all the elements",
             (1, 5, 7)),
        Rule("a short last batch is a batch too",
             (3,)),
        Rule("no padding, or nothing at all: `0.0`",
             (2, 4, 6)),
    ),
    goals=(1,),
))


# ---------------------------------------------------------------------------------------
# The collate function


def _samples(lengths, labels, indices, seed: int = 0) -> list[dict]:
    generator = torch.Generator().manual_seed(seed)
    return [{"signal": torch.randn(length, generator=generator), "label": label,
             "index": index} for length, label, index in zip(lengths, labels, indices)]


def _batch_facts(batch, samples) -> dict:
    """What a batch of ``samples`` must be, whatever its width: described."""
    if not isinstance(batch, dict):
        return {"a dict": f"got {type(batch).__name__}"}
    facts = {"its keys": sorted(batch)}
    signal = batch.get("signal")
    if not isinstance(signal, torch.Tensor) or signal.dim() != 2:
        facts["signal"] = f"not a 2-D tensor: {type(signal).__name__}"
        return facts
    longest = max(len(sample["signal"]) for sample in samples)
    facts["signal: dtype, rows"] = [str(signal.dtype), signal.shape[0]]
    facts["signal: at least as wide as the longest recording"] = signal.shape[1] >= longest
    rows = []
    for row, sample in zip(signal, samples):
        n = len(sample["signal"])
        rows.append("its values, then zeros" if torch.equal(row[:n], sample["signal"].to(
            row.dtype)) and not row[n:].any() else "not its values followed by zeros")
    facts["each row"] = rows
    for key in ("length", "label", "index"):
        facts[key] = batch.get(key)
    return facts


def _use_collate(implementation, case: Case) -> dict:
    samples = _samples(*(case.inputs[k] for k in ("lengths", "labels", "indices")))
    return _batch_facts(implementation(samples), samples)


def _collate_cases() -> list[Case]:
    def case(lengths, labels, indices, hint):
        return Case({"lengths": tuple(lengths), "labels": tuple(labels),
                     "indices": tuple(indices)}, hint=hint,
                    description=f"{len(lengths)} samples: signals of lengths {list(lengths)}, "
                                f"labels {list(labels)}, indices {list(indices)}")

    return [
        case([3, 5, 2], [1, 0, 3], [7, 2, 9], "pad every signal with zeros to (at least) the "
             "longest, one row per sample, in order"),
        case([4], [2], [0], "a batch of one recording: one row"),
        case([6, 6, 6], [0, 1, 2], [3, 4, 5], "equal lengths: nothing to pad"),
        case([2, 2, 9], [3, 3, 1], [11, 10, 12], "the longest is the last"),
        case([16, 128, 40, 77], [0, 3, 2, 1], [5, 1, 8, 0], "length, label and index: int64 "
             "tensors (torch.tensor of Python ints makes them), in the samples' order"),
    ]


register(Exercise(
    reference=solutions.collate_recordings,
    cases=_collate_cases,
    run=_use_collate,
    hint=("a zero tensor of (number of samples, longest length), each signal copied into the "
          "start of its row; length, label and index with torch.tensor"),
    piece="capstone.collate_recordings",
    time_limit=2.0,
    rules=(
        Rule("a dict of `signal`, `length`, `label`, `index`",
             (1,)),
        Rule("`signal`: a row per sample, its values then zeros, at least as wide as the "
             "longest",
             (1, 2, 3, 4)),
        Rule("`length`, `label`, `index`: int64 tensors, in the samples' order",
             (1, 5)),
        Rule("`signal` is float32, as the recordings are",
             (1, 3)),
    ),
    goals=(1,),
))


# ---------------------------------------------------------------------------------------
# The loader and its settings


def _torch_alike(loader, dataset, seed: int):
    """torch's DataLoader with the learner's loader's settings and collate function."""
    more = {}
    if loader.num_workers:
        more = {"prefetch_factor": loader.prefetch_factor,
                "multiprocessing_context": "fork" if HAS_FORK else None}
    return DataLoader(dataset, batch_size=loader.batch_size, shuffle=True,
                      drop_last=loader.drop_last, num_workers=loader.num_workers,
                      collate_fn=loader.collate_fn, in_order=getattr(loader, "in_order", True),
                      generator=torch.Generator().manual_seed(seed), **more)


def _plain(batch):
    if isinstance(batch, dict):
        return {key: _plain(value) for key, value in sorted(batch.items())}
    return batch.tolist() if isinstance(batch, torch.Tensor) else batch


def _use_capstone_loader(implementation, case: Case) -> dict:
    seed = case.inputs["seed"]
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*worker processes")
        dataset = Recordings(make_recordings(folder, n=case.inputs["n"]), read_ms=0)
        generator = torch.Generator().manual_seed(seed)
        loader = implementation(dataset, generator)
        seen = {"a loader with state_dict() and load_state_dict()":
                callable(getattr(loader, "state_dict", None))
                and callable(getattr(loader, "load_state_dict", None)),
                "shuffled by the generator given": getattr(loader, "generator", None)
                is generator and type(getattr(loader, "sampler", None)).__name__
                == "RandomSampler",
                "batch_size from 8 to 64, drop_last=False, persistent_workers=False":
                isinstance(loader.batch_size, int) and 8 <= loader.batch_size <= 64
                and not loader.drop_last and not getattr(loader, "persistent_workers", False)}
        if loader.num_workers and HAS_FORK:
            loader.multiprocessing_context = "fork"  # quick to start, for a check
        theirs = _torch_alike(loader, dataset, seed)
        epochs = case.inputs["epochs"]
        mine = [[_plain(batch) for batch in loader] for _ in range(epochs)]
        expected = [[_plain(batch) for batch in theirs] for _ in range(epochs)]
        seen["the batches of torch's DataLoader with your settings"] = (
            mine == expected or _first_difference(expected, mine))
        first = next(iter(theirs))
        samples = [dataset[i] for i in first["index"].tolist()]
        seen["a batch, checked"] = _batch_facts(loader.collate_fn(samples), samples)
    return seen


def _first_difference(expected, got) -> str:
    for epoch, (a, b) in enumerate(zip(expected, got)):
        if len(a) != len(b):
            return f"epoch {epoch + 1}: {len(b)} batches, torch's has {len(a)}"
        for number, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return f"epoch {epoch + 1}, batch {number}: not torch's"
    return "another number of epochs"


def _capstone_cases() -> list[Case]:
    return [Case({"n": 128, "seed": seed, "epochs": epochs}, hint=hint,
                 description=f"your capstone_loader(Recordings(128 recordings, no waiting), "
                             f"torch.Generator().manual_seed({seed})), {epochs} epoch(s), "
                             "against torch's DataLoader with the same settings and "
                             "collate_fn")
            for seed, epochs, hint in [
                (0, 2, "return your StatefulDataLoader (myloader.resumable), shuffle=True with the "
                    "generator given, your collate_recordings, batch_size from 8 to 64"),
                (7, 1, "your loader's batches must be torch's for the same settings: the base "
                    "seed, the order and the workers' seeds as chapters 5 to 8 built them")]]


register(Exercise(
    reference=solutions.capstone_loader,
    cases=_capstone_cases,
    run=_use_capstone_loader,
    hint=("StatefulDataLoader(dataset, batch_size=..., shuffle=True, num_workers=..., "
          "collate_fn=collate_recordings, generator=generator): the numbers are yours"),
    forbidden=FINISHED,
    piece="capstone.capstone_loader",
    time_limit=9.0,
    expected_from="torch: its `DataLoader` with your settings and collate function",
    rules=(
        Rule("your `StatefulDataLoader`, shuffled by the generator given",
             (1,)),
        Rule("within bounds: `batch_size` 8 to 64, every sample every epoch, no persistent "
             "workers",
             (1,)),
        Rule("torch's batches for the same settings, epoch after epoch, padded as "
             "`collate_recordings` must make them",
             (1, 2)),
    ),
    goals=(2, 4),
))


# ---------------------------------------------------------------------------------------
# Check yourself

register(Choice(
    "ch15-sorted-batches", answer="b", why={
        "a": "the recordings are the same, but sorted they fall into the same batches every "
             "epoch, each of one length: the batches are no longer a random sample",
        "c": "padding works on any batch; sorted batches simply need little of it",
        "d": "a worker reads a whole batch whatever its recordings; sorting changes which "
             "recordings go together, not who reads them",
    }, goals=(1,)))

register(Choice(
    "ch15-why-a-ratio", answer="a", why={
        "b": "both are easy: the point is what the number depends on",
        "c": "without workers the loader is as slow as its reads; with workers how much faster "
             "depends on your settings: the target asks you to reach three times",
        "d": "the target is about your loader against itself without workers, not torch's",
    }, goals=(3,)))

register(Choice(
    "ch15-batches-per-worker", answer="b", why={
        "a": "a worker reads a whole batch; 128 recordings in batches of 64 are 2 batches, so "
             "only 2 workers ever have one",
        "c": "the two batches go to workers 0 and 1, which read at the same time",
        "d": "workers take batches, not recordings: a batch's recordings are read one after "
             "the other by one worker",
    }, goals=(2,)))

register(Choice(
    "ch15-trace-reading", answer="a", why={
        "b": "the loop waits for data: the steps are short, the reads are not",
        "c": "a higher prefetch_factor lets workers read ahead, but when they are busy all "
             "the time there is no idle time to fill",
        "d": "the collate function pads a few hundred values: nothing next to the reads the "
             "trace shows",
    }, goals=(2, 3)))
