"""Chapter 2 (datasets): the exercises and their hidden cases."""

from __future__ import annotations

import gzip
import hashlib
import os
import pathlib
import tempfile
import warnings

import numpy as np
import torch
from torch.utils.data import ConcatDataset, DataLoader, Dataset, random_split

from minidataloader_course.chapters.ch02 import solution as solutions
from minidataloader_course.checker.framework import Case, Exercise, Rule, register, take
from minidataloader_course.checker.questions import Choice, Prediction
from minidataloader_course.shared import data_path
from minidataloader_course.shared.compare import Raised, close


def _outcome(get):
    """``get()``, or what it raised: one wrong index is then one wrong entry, not a lost case.
    NotImplementedError goes on up, so a half-written class still counts as not attempted."""
    try:
        return get()
    except NotImplementedError:
        raise
    except Exception as error:
        return Raised(type(error), str(error))


# ---------------------------------------------------------------------------------------
# A dict of arrays, selected keys


def _arrays_cases() -> list[Case]:
    rng = np.random.default_rng(2)

    def table(rows, extra_rows=None):
        return {"x": rng.normal(size=(rows, 3)).astype(np.float32),
                "y": rng.integers(0, 2, size=rows),
                "id": np.arange(1000, 1000 + (extra_rows or rows))}

    return [
        Case({"arrays": table(10), "keys": ("x", "y")},
             hint="sample i is (arrays['x'][i], arrays['y'][i]): one item per selected key, "
                  "in the order of `keys`"),
        Case({"arrays": table(10)}, description="arrays = {'x', 'y', 'id'}, keys not given",
             hint="without `keys`, the default is ('x', 'y')"),
        Case({"arrays": table(7), "keys": ("y",)},
             hint="one selected key still gives a tuple, of one item: (arrays['y'][i],)"),
        Case({"arrays": table(6), "keys": ("id", "x", "y")},
             hint="return the items in the order of `keys`, not the order of the dict"),
        Case({"arrays": table(5, extra_rows=3), "keys": ("x", "y")},
             hint="only the selected arrays must have the same length: 'id' is not selected "
                  "here, so its different length does not matter"),
        Case({"arrays": {"x": np.zeros((5, 2), np.float32), "y": np.zeros(4, np.int64)},
              "keys": ("x", "y")},
             hint="the selected arrays have different lengths (5 and 4): raise ValueError in "
                  "__init__, before anyone indexes past the end of the shorter one"),
    ]


def _use_map_dataset(implementation, case: Case) -> dict:
    """What a training loop sees of a map-style dataset: its length, samples at the start,
    middle and end, and a batch."""
    dataset = implementation(**case.inputs)
    size = len(dataset)
    seen = {"len(dataset)": size}
    for index in sorted({0, size // 2, size - 1}):
        seen[f"dataset[{index}]"] = _outcome(lambda index=index: dataset[index])
    seen["the first batch of DataLoader(dataset, batch_size=4)"] = next(
        iter(DataLoader(dataset, batch_size=4)))
    return seen


register(Exercise(
    reference=solutions.KeyedArraysDataset,
    cases=_arrays_cases,
    run=_use_map_dataset,
    hint=("__getitem__ gives one value per selected key, from that key's array at the index, "
          "as a tuple in the order of the keys; __len__ is the length of a selected array"),
    rules=(
        Rule("a tuple of the selected arrays' items, in the order of `keys`; `len`; read by a `DataLoader`",
             (1, 4)),
        Rule("`keys` defaults to `(\"x\", \"y\")`",
             (2,)),
        Rule("one key still gives a tuple",
             (3,)),
        Rule("only the selected arrays must agree in length; otherwise `ValueError` in `__init__`",
             (5, 6)),
    ),
    goals=(1, 2),
))


# ---------------------------------------------------------------------------------------
# CSV files (written once into the temp folder; the name is a hash of the content)


def _csv_file(text: str) -> str:
    folder = pathlib.Path(tempfile.gettempdir()) / "minidataloader-exercises"
    folder.mkdir(exist_ok=True)
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.csv"
    if not path.exists():
        partial = path.with_suffix(f".{os.getpid()}.part")
        partial.write_text(text)
        os.replace(partial, path)  # atomic: a check running at the same time sees all or nothing
    return str(path)


def _csv_text(columns: list[str], rows: np.ndarray) -> str:
    lines = [",".join(columns)] + [",".join(f"{v:g}" for v in row) for row in rows]
    return "\n".join(lines) + "\n"


def _csv_cases(stream: bool = False) -> list[Case]:
    rng = np.random.default_rng(3)
    with gzip.open(data_path("diabetes.csv.gz"), "rt") as file:
        diabetes = file.read()
    middle = np.column_stack([rng.normal(5, 1, 6).round(2), rng.integers(0, 3, 6),
                              rng.normal(1, 0.3, 6).round(3)])
    first = np.column_stack([rng.integers(0, 2, 9), rng.normal(size=(9, 2)).round(4)])
    return [
        Case({"path": _csv_file(diabetes), "label": "Outcome"},
             description="path = the diabetes table as a plain CSV file, label='Outcome'",
             hint=("the first line is the header (column names): read it with next(file) "
                   "before the loop, and use it to find the label's column" if stream else
                   "the first line is the header (column names): skip it when you read the "
                   "numbers, but use it to find the label's column")),
        Case({"path": _csv_file(_csv_text(["length", "species", "width"], middle)),
              "label": "species"},
             description="path = a CSV with columns length,species,width; label='species'",
             hint="the label column is in the middle here: the features are all the OTHER "
                  "columns, in file order"),
        Case({"path": _csv_file(_csv_text(["y", "x1", "x2"], first)), "label": "y"},
             description="path = a CSV with columns y,x1,x2; label='y'",
             hint="the label is the first column here"),
        Case({"path": _csv_file("a,b,target\n1.5,-2,1\n"), "label": "target"},
             description="path = a CSV with a header and ONE data row; label='target'",
             hint=("a file with one data row gives exactly one sample" if stream else
                   "with a single data row, np.loadtxt returns a 1-D array: pass ndmin=2 "
                   "(pandas.read_csv has no such trap)")),
    ]


CSV_HINT = ("read the header line for the column names; read the numbers with "
            "np.loadtxt(path, delimiter=',', skiprows=1, dtype=np.float32, ndmin=2) or "
            "pandas.read_csv(path); features are float32 of shape (columns - 1,), the label "
            "float32 of shape (1,)")

register(Exercise(
    reference=solutions.CsvDataset,
    cases=_csv_cases,
    run=_use_map_dataset,
    compare=close(rtol=1e-6, atol=0.0),  # numpy and pandas may round the last float32 bit apart
    hint=CSV_HINT,
    time_limit=3.0,
    rules=(
        Rule("the header names the columns; float32 features of every other column, in file order; label `(1,)` float32",
             (1,)),
        Rule("the label column anywhere",
             (2, 3)),
        Rule("a file with one data row",
             (4,)),
    ),
    goals=(2, 3),
))


GROWING = "a CSV file that grows while it is read: rows are appended after the first sample"
TWO_PASSES = ("a CSV file of 3 rows, label='y'; one stream read twice (two epochs), then by a "
              "DataLoader")


def _stream_cases() -> list[Case]:
    return [*_csv_cases(stream=True),
            Case({"path": GROWING, "label": "y"}, description=GROWING,
                 hint="read the file line by line while you yield (for line in file): a stream "
                      "that reads the whole file first misses what is written later, and "
                      "cannot read a file larger than memory"),
            Case({"path": TWO_PASSES, "label": "y"}, description=TWO_PASSES,
                 hint="open the file in __iter__, not in __init__: a file opened once is used "
                      "up after the first pass, and every epoch must read it from its start "
                      "again")]


def _use_two_passes(implementation) -> dict:
    """The same stream object, read again: each ``iter()`` is a new epoch."""
    path = _csv_file("x1,x2,y\n1,2,0\n3,4,1\n5,6,0\n")
    dataset = implementation(path, "y")
    seen = {f"pass {number}": _outcome(lambda: take(iter(dataset), limit=10))
            for number in (1, 2)}
    seen["then the batches of DataLoader(dataset, batch_size=2)"] = _outcome(
        lambda: take(DataLoader(dataset, batch_size=2), limit=10))
    return seen


def _use_growing_file(implementation) -> dict:
    """Rows appended to the file after the first sample must come out too, as from a log
    being written: only a reader that reads as it yields sees them."""
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "growing.csv"
        path.write_text("x1,x2,y\n1,2,0\n3,4,1\n")
        samples = iter(implementation(str(path), "y"))
        first = [next(samples)]
        with open(path, "a") as file:
            file.write("5,6,0\n7,8,1\n")
        return {"samples": first + take(samples, limit=10)}


def _use_stream(implementation, case: Case) -> dict:
    if case.inputs["path"] == GROWING:
        return _use_growing_file(implementation)
    if case.inputs["path"] == TWO_PASSES:
        return _use_two_passes(implementation)
    dataset = implementation(**case.inputs)
    with open(case.inputs["path"]) as file:
        rows = sum(1 for _ in file) - 1
    samples = take(iter(dataset), limit=rows)
    seen = {"number of samples": len(samples)}
    for index in sorted({0, len(samples) // 2, len(samples) - 1} if samples else ()):
        seen[f"sample {index}"] = samples[index]
    # A new stream: a second pass over the same one is the last case's (its own hint).
    seen["the first batch of DataLoader(dataset, batch_size=4)"] = _outcome(
        lambda: next(iter(DataLoader(implementation(**case.inputs), batch_size=4))))
    return seen


register(Exercise(
    reference=solutions.CsvStream,
    cases=_stream_cases,
    run=_use_stream,
    compare=close(rtol=1e-6, atol=0.0),
    hint=("subclass IterableDataset; in __iter__, open the file, read the header line with "
          "next(file), then for each remaining line yield (features, label) as float32 "
          "tensors of shapes (columns - 1,) and (1,)"),
    time_limit=3.0,
    rules=(
        Rule("the same pairs as `CsvDataset`, yielded line by line",
             (1, 2, 3, 4)),
        Rule("a new pass every `__iter__`: the file opened in `__iter__` (the second pass)",
             (6,)),
        Rule("read while yielding, never the whole file: rows written after the first sample come out too",
             (5,)),
    ),
    goals=(5,),
))


# ---------------------------------------------------------------------------------------
# Concatenation with negative indices


def _concat_cases() -> list[Case]:
    def case(datasets, description, hint, beyond=""):
        return Case({"datasets": datasets, "beyond": beyond}, description=description,
                    hint=hint)

    return [
        case([[10, 11, 12], [20, 21]], "datasets = [[10, 11, 12], [20, 21]]",
             "index 3 is the first sample of the second dataset: subtract the length of "
             "every dataset you skip. A negative index first becomes index + len(self)"),
        case([[1, 2], [], [3, 4, 5]], "datasets = [[1, 2], [], [3, 4, 5]]",
             "an empty dataset in the middle holds no samples: skip it"),
        case([range(100, 104)], "datasets = [range(100, 104)]",
             "a single dataset: index i is its sample i"),
        case([["a"], range(7, 9), [torch.tensor(5.0)]],
             "datasets = [['a'], range(7, 9), [tensor(5.)]]",
             "negative indices count from the end of the WHOLE concatenation: -1 is the last "
             "sample of the last dataset"),
        case([[10, 11, 12], [20, 21]],
             "datasets = [[10, 11, 12], [20, 21]]; indices past the end", beyond="past",
             hint="an index past the end raises IndexError, as a list does"),
        case([[10, 11, 12], [20, 21]],
             "datasets = [[10, 11, 12], [20, 21]]; negative indices below -len", beyond="below",
             hint="a negative index below -len(self) raises ValueError (torch's choice of "
                  "type), and does not wrap around"),
    ]


def _use_concat(implementation, case: Case) -> dict:
    dataset = implementation(case.inputs["datasets"])
    size = len(dataset)
    seen = {"len(dataset)": size}
    beyond = {"past": (size, size + 1), "below": (-size - 1, -size - 5)}
    if case.inputs["beyond"]:
        for index in beyond[case.inputs["beyond"]]:
            seen[f"dataset[{index}]"] = _outcome(lambda index=index: dataset[index])
    else:
        for index in range(-size, size):
            seen[f"dataset[{index}]"] = _outcome(lambda index=index: dataset[index])
    return seen


register(Exercise(
    reference=solutions.ConcatenatedDataset,
    oracle=ConcatDataset,
    cases=_concat_cases,
    run=_use_concat,
    hint=("a negative index first becomes index + len(self); an index past the end raises "
          "IndexError, and a negative index below -len(self) raises ValueError, as torch's "
          "ConcatDataset does"),
    expected_from="torch: `ConcatDataset`",
    rules=(
        Rule("indices run through the datasets end to end; empty ones are skipped",
             (1, 2, 3)),
        Rule("negative indices count from the end of the whole",
             (1, 4)),
        Rule("past the end: `IndexError`",
             (5,)),
        Rule("below `-len`: `ValueError`, as torch raises",
             (6,), parity="torch's exception type"),
    ),
    goals=(4,),
))


# ---------------------------------------------------------------------------------------
# random_split with lengths and fractions


def _split_cases() -> list[Case]:
    def case(n, lengths, seed, hint):
        return Case({"dataset": list(range(100, 100 + n)), "lengths": lengths, "seed": seed},
                    description=(f"dataset = [100, 101, …, {99 + n}] ({n} samples), "
                                 f"lengths={lengths}, generator seeded with {seed}"
                                 if seed is not None else
                                 f"dataset = {n} samples, lengths={lengths}, no generator"),
                    hint=hint)

    return [
        case(10, [3, 7], 42, "whole numbers are the lengths themselves: one permutation of "
                             "all indices, cut into pieces of 3 and 7"),
        case(30, [0.3, 0.3, 0.4], 3, "fractions that add up to 1 become whole lengths that "
                                     "add up to the dataset's size: here 9, 9 and 12"),
        case(768, [0.8, 0.2], 0, "fractions: 768 * 0.8 = 614.4 -> 614 and 768 * 0.2 = 153.6 "
                                 "-> 153 (floor), and the one left over goes to the first split"),
        case(5, [0.5, 0.5], 1, "floor gives [2, 2]; the 1 sample left over goes to the first "
                               "split: [3, 2]"),
        case(10, [1 / 3, 1 / 3, 1 / 3], 2, "floor gives [3, 3, 3]; deal the remainder out one "
                                           "each, from the first split on"),
        case(100, [0.29, 0.71], 7, "100 * 0.29 is 28.999999999999996 in floating point, so "
                                   "floor gives 28: compute floor(n * fraction) as it comes "
                                   "and deal the remainder out round-robin"),
        case(4, [0.9, 0.1], 4, "floor gives [3, 0], the remainder makes it [4, 0]: an empty "
                               "split is allowed (torch warns)"),
        case(8, [6, 2], None, "without a generator, draw the permutation from torch's global "
                              "generator: torch.randperm(n) with no generator argument"),
        case(10, [4, 4], 5, "4 + 4 is not 10: raise ValueError"),
        case(10, [1.2, -0.2], 6, "these add up to 1, so they are fractions, but 1.2 and -0.2 "
                                 "are not between 0 and 1: raise ValueError"),
    ]


def _use_split(implementation, case: Case) -> dict:
    seed = case.inputs["seed"]
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warning about an empty split is not compared
        splits = implementation(case.inputs["dataset"], case.inputs["lengths"],
                                generator=generator)
    seen = {
        "what it returns": type(splits).__name__,
        "the length of each split": [len(split) for split in splits],
        "the samples of each split": [[split[i] for i in range(len(split))] for split in splits],
    }
    # The permutation drawn exactly once: any other draw shifts what the script draws next.
    if generator is not None:
        seen["the generator afterwards: torch.randint(1000, (3,), generator=generator)"] = (
            torch.randint(1000, (3,), generator=generator).tolist())
    seen["the global RNG afterwards: torch.randint(1000, (3,))"] = (
        torch.randint(1000, (3,)).tolist())
    return seen


register(Exercise(
    reference=solutions.split_dataset,
    oracle=random_split,
    cases=_split_cases,
    run=_use_split,
    hint=("fractions (adding up to 1) become floor(n * fraction) samples each, plus one each "
          "for the leftovers, from the first split on; then ONE torch.randperm(n, "
          "generator=generator), cut into consecutive pieces, each a Subset, in a list"),
    allowed=("Dataset", "IterableDataset", "Sampler", "Subset"),
    time_limit=3.0,
    expected_from="torch: `random_split`",
    rules=(
        Rule("whole lengths, one permutation cut in order, a list of `Subset`s",
             (1,)),
        Rule("fractions become whole lengths that add up to the dataset's size",
             (2,)),
        Rule("torch's rounding: floor each, deal the leftovers from the first split on",
             (3, 4, 5, 6, 7), parity="torch's rounding"),
        Rule("no generator: the global generator",
             (8,)),
        Rule("lengths that do not add up, fractions outside [0, 1]: `ValueError`",
             (9, 10)),
        Rule("the permutation drawn exactly once: the generator and the global RNG afterwards as torch leaves them",
             (1, 2, 3, 4, 5, 6, 7, 8), parity="draws"),
    ),
    goals=(4,),
))


# ---------------------------------------------------------------------------------------
# Map-style or iterable-style?

_SCENARIOS = {
    "a": ("the diabetes table, 768 rows loaded into memory from a CSV file",
          "every row is in memory and has a number: sample i is row i"),
    "b": ("sensor readings arriving over a network socket for as long as the program runs",
          "a socket has no sample numbers and no end: you can only ask for the next reading"),
    "c": ("50,000 photos in a folder, with an annotations CSV listing each file and its label",
          "the CSV numbers the files: sample i opens file i, in any order"),
    "d": ("a 200 GB text corpus in ONE gzip file (gzip can only be read from the start)",
          "reaching line i means decompressing everything before it: read it as a stream"),
    "e": ("an imbalanced table where a WeightedRandomSampler must draw rare classes more often",
          "samplers produce indices; only a map-style dataset takes indices"),
    "f": ("game positions produced by a simulator, as many as training asks for",
          "there is no fixed set to index: each sample is made when the next one is asked for"),
}


register(Exercise(
    reference=solutions.dataset_style,
    cases=lambda: [Case({"scenario": key}, description=f"scenario {key!r}: {text}",
                        hint=f"{why}; answer 'map' or 'iterable'")
                   for key, (text, why) in _SCENARIOS.items()],
    run=lambda implementation, case: implementation(case.inputs["scenario"]),
    hint="map-style when you can fetch sample i directly; iterable when you can only read on",
    rules=(
        Rule("map-style when sample *i* can be fetched directly, iterable when one can only read on",
             (1, 2, 3, 4, 5, 6)),
    ),
    goals=(5,),
))


# ---------------------------------------------------------------------------------------
# Check yourself


class _BothMethods(Dataset):
    """Five squares, with __getitem__ and __getitems__; it counts the calls of each."""

    def __init__(self):
        self.calls = {"__getitem__": 0, "__getitems__": 0}

    def __len__(self):
        return 5

    def __getitem__(self, index):
        self.calls["__getitem__"] += 1
        return index * index

    def __getitems__(self, indices):
        self.calls["__getitems__"] += 1
        return [index * index for index in indices]


def _getitem_calls() -> int:
    dataset = _BothMethods()
    list(DataLoader(dataset, batch_size=2))
    return dataset.calls["__getitem__"]


register(Prediction(
    "ch02-getitems-calls", measure=_getitem_calls,
    why="a dataset with __getitems__ is asked for each batch in one call, with the list of "
        "the batch's indices",
    mistakes={5: "5 calls would be one per sample: that is what happens without "
                 "__getitems__; with it, the loader never calls __getitem__",
              3: "3 is the number of batches, so of __getitems__ calls; __getitem__ is not "
                 "called at all"},
    goals=(1,),
))

register(Choice(
    "ch02-images-in-init", answer="b", why={
        "a": "the images could be far larger than the memory: __init__ reads only the "
             "annotations table, and each image is opened when it is asked for",
        "c": "transform gets the image only; the label has its own target_transform",
        "d": "the transforms belong to the dataset: they run in __getitem__, on each sample, "
             "before the loader collates",
    }, goals=(2,)))


def _genfromtxt_rows() -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return int(np.genfromtxt(data_path("diabetes.csv.gz"), delimiter=",").shape[0])


register(Prediction(
    "ch02-genfromtxt-rows", measure=_genfromtxt_rows,
    why="np.genfromtxt does not stop at the header: it turns each value it cannot read into "
        "nan, so the header becomes one more row",
    mistakes={768: "768 is the number of data rows; np.genfromtxt reads the header too, as a "
                   "row of nan",
              767: "the header is not skipped, and no data row is lost"},
    goals=(3,),
))


def _split_sizes() -> list[int]:
    pieces = random_split(range(11), [0.5, 0.25, 0.25],
                          generator=torch.Generator().manual_seed(0))
    return [len(piece) for piece in pieces]


register(Prediction(
    "ch02-split-fractions", measure=_split_sizes, prompt_text="a list of three sizes",
    why="each piece gets floor(fraction × 11): 5, 2 and 2; the 2 samples left over are dealt "
        "out one each, from the first piece on",
    mistakes={(5, 2, 2): "5, 2 and 2 add up to 9: the 2 samples that flooring leaves over are "
                         "dealt out too",
              (6, 3, 3): "6, 3 and 3 add up to 12, one more than the dataset has",
              (5, 3, 3): "the leftovers go one each to the first pieces first: the first piece "
                         "gets one, then the second"},
    goals=(4,),
))

register(Choice(
    "ch02-stream-two-workers", answer="b", why={
        "a": "the loader cannot share out a stream: it can deal out indices, and a stream has "
             "none, so each worker reads its own copy of the whole stream",
        "c": "workers read streams; they just cannot split them without your help",
        "d": "nothing makes each worker skip lines unless __iter__ does it (chapter 7 shows "
             "how, with get_worker_info)",
    }, goals=(5,)))
