"""Chapter 1 (epochs, batches and iterations): the exercises and their hidden cases."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import BatchSampler, DataLoader, SequentialSampler

from minidataloader_course.chapters.ch01 import solution as solutions
from minidataloader_course.checker.framework import Case, Exercise, Rule, register, take
from minidataloader_course.checker.questions import Choice, Prediction

FINISHED_PIECE = ("minidataloader_course.viz.arithmetic.epoch_arithmetic",)

# (dataset_size, batch_size, drop_last): the chapter's example, sizes that divide and sizes
# that do not, a dataset smaller than one batch, an empty one, batch size 1; last, sizes
# beyond 2**53, where a float no longer holds every integer: `/` and `math.ceil` go wrong.
SIZES = [
    (12800, 128, False), (1000, 64, False), (1000, 64, True), (768, 32, False),
    (614, 32, True), (7, 3, False), (7, 3, True), (999, 1000, False), (999, 1000, True),
    (1000, 1000, True), (0, 32, False), (5, 1, False), (2**53 + 1, 2, False),
    (2**60 - 1, 4, True),
]
BEYOND_FLOATS = 2**53


def _size_hint(dataset_size: int, batch_size: int, drop_last: bool) -> str:
    if dataset_size > BEYOND_FLOATS:
        return (f"a dataset of {dataset_size:,} samples, more than 2**53: a float cannot hold "
                f"every integer this large, so `/` and `math.ceil` round; use integer "
                f"arithmetic only (`//` and `%`)")
    if dataset_size == 0:
        return "an empty dataset gives no batches at all"
    if dataset_size % batch_size == 0:
        return "here the batch size divides the dataset size: every batch is full"
    if drop_last and dataset_size < batch_size:
        return ("drop_last=True with fewer samples than one batch: the only batch is "
                "incomplete and dropped, so the epoch has no batch at all")
    if drop_last:
        return ("drop_last=True: the incomplete batch at the end is thrown away, "
                "so only full batches count")
    return ("drop_last=False: the samples left over at the end still form one last, "
            "smaller batch, and it counts as an iteration")


def _size_cases() -> list[Case]:
    return [Case({"dataset_size": n, "batch_size": b, "drop_last": d}, hint=_size_hint(n, b, d))
            for n, b, d in SIZES]


# torch's answers: what its DataLoader and BatchSampler do with the same sizes


def _torch_batches(dataset_size, batch_size, drop_last=False):
    return BatchSampler(SequentialSampler(range(dataset_size)), batch_size, drop_last)


def _torch_iterations(dataset_size, batch_size, drop_last=False):
    return len(DataLoader(range(dataset_size), batch_size=batch_size, drop_last=drop_last))


def _torch_last_batch_size(dataset_size, batch_size, drop_last=False):
    if dataset_size > BEYOND_FLOATS:
        # Too many batches to list: every batch before the last is full, so the last one
        # holds what the others leave.
        count = _torch_iterations(dataset_size, batch_size, drop_last)
        return batch_size if drop_last else dataset_size - (count - 1) * batch_size
    batches = list(_torch_batches(dataset_size, batch_size, drop_last))
    return len(batches[-1]) if batches else 0


register(Exercise(
    reference=solutions.iterations_per_epoch,
    oracle=_torch_iterations,
    cases=_size_cases,
    hint="full batches are dataset_size // batch_size; the remainder is dataset_size % batch_size",
    forbidden=FINISHED_PIECE,
    expected_from="torch: `len(DataLoader)`",
    rules=(
        Rule("the batch size divides the dataset size: only full batches",
             (1, 4, 10, 12)),
        Rule("`drop_last=False`: the leftover makes one more, smaller batch",
             (2, 6, 8)),
        Rule("`drop_last=True`: the incomplete batch is dropped, also when it is the only one",
             (3, 5, 7, 9)),
        Rule("an empty dataset has no batch",
             (11,)),
        Rule("integer arithmetic only: exact beyond 2**53",
             (13, 14)),
    ),
    goals=(2, 3),
))

register(Exercise(
    reference=solutions.last_batch_size,
    oracle=_torch_last_batch_size,
    cases=_size_cases,
    hint="the remainder dataset_size % batch_size is the size of the incomplete batch",
    forbidden=FINISHED_PIECE,
    expected_from="torch: the last batch of a `BatchSampler`",
    rules=(
        Rule("a full last batch when the size divides, or with `drop_last`",
             (1, 3, 4, 5, 7, 10, 12, 14)),
        Rule("the remainder otherwise",
             (2, 6, 8, 13)),
        Rule("0 when there is no batch: empty, or `drop_last` with fewer samples than a batch",
             (9, 11)),
    ),
    goals=(3,),
))


def _steps_cases() -> list[Case]:
    cases = [
        (10_000, 12800, 128, False, "100 iterations an epoch: 10,000 steps are 100 epochs"),
        (1000, 1000, 64, False, "16 iterations an epoch: 62 epochs fall short of 1,000 steps"),
        (1000, 1000, 64, True, "drop_last=True: 15 iterations an epoch"),
        (100, 12800, 128, False, "exactly one epoch"),
        (101, 12800, 128, False, "one step more than an epoch needs a second epoch"),
        (0, 100, 10, False, "no steps need no epochs"),
        (50, 999, 1000, False, "one iteration an epoch (a single, incomplete batch)"),
        (2**53 + 1, 10, 10, False,
         "one iteration an epoch and more than 2**53 steps: a float cannot hold every integer "
         "this large, so `/` and `math.ceil` round; use integers only, -(-a // b)"),
    ]
    result = [Case({"steps": s, "dataset_size": n, "batch_size": b, "drop_last": d}, hint=h)
              for s, n, b, d, h in cases]
    result.append(Case(
        {"steps": 5, "dataset_size": 10, "batch_size": 32, "drop_last": True},
        hint=("with drop_last=True, 10 samples in batches of 32 make no iteration at all: "
              "no number of epochs reaches 5 steps, so raise ValueError")))
    return result


register(Exercise(
    reference=solutions.epochs_for_steps,
    cases=_steps_cases,
    hint=("round up: a partly used epoch is still an epoch you must start. With integers, "
          "ceil(a / b) is -(-a // b)"),
    forbidden=FINISHED_PIECE,
    rules=(
        Rule("round up: a partly used epoch counts",
             (2, 3, 5, 7)),
        Rule("exact multiples, and 0 steps",
             (1, 4, 6)),
        Rule("an epoch without iterations raises `ValueError`",
             (9,)),
        Rule("integers only: exact beyond 2**53",
             (8,)),
    ),
    goals=(3,),
))


def _torch_batch_generator(dataset_size, batch_size, drop_last=False):
    yield from _torch_batches(dataset_size, batch_size, drop_last)


def _batches(implementation, case: Case) -> dict:
    result = implementation(**case.inputs)
    # The statement asks for a generator: a list of every batch at once is refused. Any
    # iterator (a generator expression, an iterator class) yields lazily as one does.
    kind = ("a generator (an iterator)" if isinstance(result, Iterator)
            else f"a {type(result).__name__}, not a generator")
    # At most one more batch than samples: an endless generator is stopped there.
    return {"the call returns": kind,
            "its batches": take(result, limit=case.inputs["dataset_size"] + 1)}


register(Exercise(
    reference=solutions.batch_indices,
    oracle=_torch_batch_generator,
    cases=lambda: [
        Case({"dataset_size": n, "batch_size": b, "drop_last": d},
             hint=_size_hint(n, b, d) + "; `yield` each batch as a list of indices: a "
                                        "generator, not a function that returns a list")
        for n, b, d in [(10, 3, False), (10, 3, True), (0, 4, False), (6, 3, False),
                        (2, 5, False), (2, 5, True), (1, 1, False), (100, 32, True)]],
    run=_batches,
    hint="collect indices into a list; yield it when it holds batch_size of them",
    expected_from="torch: `BatchSampler(SequentialSampler)`",
    rules=(
        Rule("lists of consecutive indices, full batches",
             (1, 2, 4, 7)),
        Rule("the last, smaller batch unless `drop_last`",
             (1, 5)),
        Rule("`drop_last` drops it, even the only one",
             (2, 6, 8)),
        Rule("an empty dataset yields nothing",
             (3,)),
        Rule("a generator: calling it returns an iterator, not a list",
             (1, 2, 3, 4, 5, 6, 7, 8)),
    ),
    goals=(3,),
))


def _tables() -> list[Case]:
    generator = torch.Generator().manual_seed(1)
    cases = []
    for rows, columns in [(5, 3), (8, 9), (1, 2), (4, 2)]:
        table = torch.randn(rows, columns, generator=generator)
        table[:, -1] = torch.randint(0, 2, (rows,), generator=generator).float()
        cases.append(Case(
            {"table": table},
            description=(f"table = a {rows}×{columns} float32 tensor: {columns - 1} feature "
                         f"column{'s' * (columns > 2)}, then the label column")))
    return cases


def _use_dataset(implementation, case: Case) -> dict:
    """What a training loop sees of the dataset: its length, samples, and a batch."""
    dataset = implementation(case.inputs["table"])
    size = len(dataset)
    seen = {"len(dataset)": size}
    for index in sorted({0, size // 2, size - 1}):
        seen[f"dataset[{index}]"] = dataset[index]
    seen["the first batch of DataLoader(dataset, batch_size=4)"] = next(
        iter(DataLoader(dataset, batch_size=4)))
    return seen


register(Exercise(
    reference=solutions.TabularDataset,
    cases=_tables,
    run=_use_dataset,
    hint=("features: every column but the last, table[:, :-1]; label: the last column kept "
          "as a column, table[:, -1:], so each label has shape (1,). Return (features, label)"),
    rules=(
        Rule("features `(columns - 1,)`, label `(1,)`, `len` = rows, read by a `DataLoader`; not built on `TensorDataset`",
             (1, 2, 3, 4), note="one column of features: 3, 4; one row: 3"),
    ),
    goals=(4,),
))


# ---------------------------------------------------------------------------------------
# Check yourself

register(Choice(
    "ch01-layers", answer="b", why={
        "a": "the dataset answers squares[i] for each index it is asked for; it never decides "
             "how many indices a batch holds",
        "c": "the iterator fetches the indices the batch sampler lists: the lists are made "
             "before it reads anything",
        "d": "collating stacks whatever samples it is given: the size of the batch was decided "
             "before",
    }, goals=(1,)))

register(Choice(
    "ch01-why-mini-batches", answer="b", why={
        "a": "torch accepts batch_size=1 (and chapter 1 trains with it at the end)",
        "c": "batches of one give the most updates per epoch: one per sample",
        "d": "one sample at a time needs the least memory per step",
    }, goals=(2,)))


def _samples_dropped() -> int:
    loader = DataLoader(range(1030), batch_size=32, drop_last=True)
    return 1030 - sum(len(batch) for batch in loader)


register(Prediction(
    "ch01-samples-dropped", measure=_samples_dropped,
    why="1030 samples make 32 full batches of 32 (1024 samples); drop_last=True drops the "
        "samples left over",
    mistakes={32: "32 is the number of full batches (and the batch size); the question asks "
                  "for the samples that form no batch",
              0: "with drop_last=True the incomplete batch is dropped: its samples are not "
                 "used in that epoch",
              26: "26 samples would fill the last batch; the 6 that are there are dropped"},
    goals=(3,),
))

register(Choice(
    "ch01-batchnorm-last-batch", answer="b", why={
        "a": "1025 % 64 is 1: the last batch holds a single row, and BatchNorm1d in training "
             "mode cannot compute a variance from one value per channel",
        "c": "the loader never pads: the last batch holds what is left over",
        "d": "in evaluation mode batch normalisation uses its running statistics, and takes a "
             "batch of one row",
    }, goals=(3,)))

register(Choice(
    "ch01-evaluation-order", answer="b", why={
        "a": "evaluation changes no weight: the mean loss and the accuracy over the whole set "
             "are the same in any order",
        "c": "a Subset is a dataset like any other: a shuffled loader can read it",
        "d": "the validation loader reads as many batches as it needs: here batches of 64",
    }, goals=(4,)))
