"""Wrong variants of every reference solution: the mistakes a beginner plausibly makes,
written as changes to the solution's source (which ``answers.solution_source`` takes out of
the package). The check must refuse each one with a verdict that names the broken rule:
``says`` are words the verdict must contain.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    exercise: str
    mistake: str  # what the beginner got wrong
    changes: tuple[tuple[str, str], ...]  # (text of the solution, what it becomes)
    says: tuple[str, ...]  # words the verdict must contain: the rule it names

    @property
    def id(self) -> str:
        return f"{self.exercise}: {self.mistake}"


def m(exercise: str, mistake: str, changes, *says: str) -> Mutant:
    return Mutant(exercise, mistake, tuple(changes), says)


CH01 = [
    m("iterations_per_epoch", "forgets the incomplete last batch",
      [("return full_batches + 1", "return full_batches")],
      "drop_last=False", "one last, smaller batch"),
    m("iterations_per_epoch", "divides with / (a float)",
      [("full_batches = dataset_size // batch_size", "full_batches = dataset_size / batch_size")],
      "a float"),
    m("iterations_per_epoch", "ignores drop_last",
      [("if drop_last or dataset_size % batch_size == 0:", "if dataset_size % batch_size == 0:")],
      "drop_last=True", "thrown away"),
    m("last_batch_size", "returns 0 for a last batch that is full",
      [("if drop_last or leftover == 0:", "if drop_last:")],
      "batch size divides the dataset size"),
    m("last_batch_size", "forgets that drop_last can drop the only batch",
      [("if dataset_size == 0 or (drop_last and dataset_size < batch_size):",
        "if dataset_size == 0:")],
      "no batch at all"),
    m("epochs_for_steps", "rounds down",
      [("return -(-steps // per_epoch)", "return steps // per_epoch")],
      "fall short"),
    m("epochs_for_steps", "divides by zero instead of raising ValueError",
      [("if per_epoch == 0:", "if per_epoch < 0:")],
      "raise ValueError", "ZeroDivisionError"),
    m("batch_indices", "ignores drop_last",
      [("if batch and not drop_last:", "if batch:")],
      "drop_last=True"),
    m("batch_indices", "forgets the last, smaller batch",
      [("if batch and not drop_last:\n        yield batch", "if batch and not drop_last:\n        pass")],
      "one last, smaller batch"),
    m("batch_indices", "yields tuples",
      [("            yield batch\n", "            yield tuple(batch)\n")],
      "as a list of indices", "tuple"),
    m("TabularDataset", "gives the label as a number, not a column",
      [("self.labels = table[:, -1:]", "self.labels = table[:, -1]")],
      "expected shape [1]", "table[:, -1:]"),
    m("TabularDataset", "keeps the label among the features",
      [("self.features = table[:, :-1]", "self.features = table")],
      "shape", "table[:, :-1]"),
]


CH02 = [
    m("KeyedArraysDataset", "returns a list, not a tuple",
      [("return tuple(self.arrays[key][index] for key in self.keys)",
        "return [self.arrays[key][index] for key in self.keys]")],
      "expected a tuple", "got a list"),
    m("KeyedArraysDataset", "compares the lengths of every array, selected or not",
      [("lengths = {key: len(arrays[key]) for key in self.keys}",
        "lengths = {key: len(arrays[key]) for key in arrays}")],
      "only the selected arrays must have the same length"),
    m("CsvDataset", "forgets ndmin=2",
      [("dtype=np.float32, ndmin=2)", "dtype=np.float32)")],
      "ndmin=2"),
    m("CsvDataset", "gives the label as a number, not a column",
      [("table[:, [where]]", "table[:, where]")],
      "expected shape [1], got shape []"),
    m("CsvDataset", "reads float64",
      [("dtype=np.float32, ndmin=2)", "dtype=np.float64, ndmin=2)")],
      "expected dtype torch.float32, got torch.float64"),
    m("ConcatenatedDataset", "forgets negative indices",
      [("            index += len(self)  # -1 is the last sample\n", "")],
      "index + len(self)"),
    m("ConcatenatedDataset", "wraps an index below -len around instead of raising ValueError",
      [("            if -index > len(self):\n                raise ValueError(f\"index {index} is below -{len(self)}\")\n", "")],
      "raises ValueError", "expected it to raise ValueError"),
    m("ConcatenatedDataset", "returns None past the end",
      [('raise IndexError("index out of range")', "return None")],
      "raises IndexError"),
    m("split_dataset", "rounds fractions instead of taking the floor",
      [("sizes = [math.floor(n * fraction) for fraction in lengths]",
        "sizes = [round(n * fraction) for fraction in lengths]")],
      "floor"),
    m("split_dataset", "deals the leftovers out from the last split",
      [("sizes[i % len(sizes)] += 1", "sizes[-1 - i % len(sizes)] += 1")],
      "goes to the first split"),
    m("split_dataset", "shuffles with the global generator",
      [("torch.randperm(n, generator=generator)", "torch.randperm(n)")],
      "one permutation"),
    m("CsvStream", "parses the header as a row of numbers",
      [("columns = next(file).strip().split(\",\")",
        "columns = open(self.path).readline().strip().split(\",\")")],
      "header", "next(file)"),
    m("CsvStream", "gives the label as a number, not a column",
      [("torch.tensor([label], dtype=torch.float32)", "torch.tensor(label, dtype=torch.float32)")],
      "expected shape [1], got shape []"),
    m("CsvStream", "opens the file once, in __init__",
      [("        self.label = label\n", "        self.label = label\n        self.file = open(path)\n"),
       ('with opener(self.path, "rt") as file:', "for file in [self.file]:")],
      "second pass"),
    m("dataset_style", "takes a weighted sampler for a stream",
      [('"e": "map",', '"e": "iterable",')],
      "only a map-style dataset takes indices"),
    m("dataset_style", "takes one big gzip file for map-style",
      [('"d": "iterable",', '"d": "map",')],
      "read it as a stream"),
]


CH03 = [
    m("MyRandomSampler", "draws the permutations from the global generator",
      [("rng = torch.Generator().manual_seed(int(seed))", "rng = None")],
      "ONE seed from the global RNG"),
    m("MyRandomSampler", "skips the empty head's permutation",
      [("head = torch.randperm(n, generator=rng).tolist()\n            yield from head[:self.num_samples % n]",
        "if self.num_samples % n:\n                yield from torch.randperm(n, generator=rng).tolist()[:self.num_samples % n]")],
      "one more permutation for the (empty) head"),
    m("MyRandomSampler", "accepts an empty dataset",
      [("if not isinstance(num_samples, int) or num_samples <= 0:", "if num_samples < 0:")],
      "raise ValueError"),
    m("MyBatchSampler", "counts the dropped batch in len()",
      [("        if self.drop_last:\n            return len(self.sampler) // self.batch_size\n", "")],
      "len() does not count it"),
    m("MyBatchSampler", "reads the sampler once, in __init__",
      [("        self.sampler = sampler\n", "        self.sampler = sampler\n        self.indices = list(sampler)\n"),
       ("for index in self.sampler:", "for index in self.indices:")],
      "iterate over the sampler again in every __iter__"),
    m("MyBatchSampler", "takes True for a batch size",
      [("isinstance(batch_size, bool) or ", "")],
      "refuses a bool"),
    m("MyBatchSampler", "does not check drop_last",
      [("        if not isinstance(drop_last, bool):\n", "        if drop_last not in (None, True, False):\n")],
      "drop_last must be True or False"),
    m("balanced_weights", "returns float32 weights",
      [("counts[labels].double()", "counts[labels].float()")],
      "expected dtype torch.float64"),
    m("balanced_weights", "divides the class count by the number of samples",
      [("return 1.0 / counts[labels].double()", "return counts[labels].double() / len(labels)")],
      "1 / (number of samples of class c)"),
    m("BucketBatchSampler", "does not sort by length",
      [("by_length = sorted(shuffled, key=lambda i: self.lengths[i])", "by_length = shuffled")],
      "padding"),
    m("BucketBatchSampler", "draws from the global generator",
      [("shuffled = torch.randperm(n, generator=self.generator).tolist()",
        "shuffled = torch.randperm(n).tolist()")],
      "seeded alike"),
    m("BucketBatchSampler", "forgets the incomplete batch in len()",
      [("        if len(self.lengths) % self.batch_size:\n            batches += 1  # the incomplete batch\n", "")],
      "len(sampler)"),
    m("EpochSeededSampler", "reseeds the global generator",
      [("generator = torch.Generator().manual_seed(seed)", "torch.manual_seed(seed)\n        generator = None")],
      "global RNG"),
    m("EpochSeededSampler", "ignores the epoch",
      [("seed = self.seed + self.epoch", "seed = self.seed")],
      "seed + epoch"),
]

CH04 = [
    m("my_default_collate", "returns a plain dict for any mapping",
      [("        collated = copy.copy(elem)  # the same type: a dict, an OrderedDict, ...\n"
        "        collated.update({key: my_default_collate([sample[key] for sample in batch])\n"
        "                         for key in elem})\n        return collated",
        "        return {key: my_default_collate([sample[key] for sample in batch]) for key in elem}")],
      "a mapping keeps its type", "OrderedDict"),
    m("my_default_collate", "cannot collate numpy numbers",
      [("    if isinstance(elem, (np.bool_, np.number)):  # numpy numbers: their own dtype\n"
        "        return torch.as_tensor(batch)\n", "")],
      "numpy numbers become one tensor"),
    m("my_default_collate", "turns Python floats into float32",
      [("return torch.tensor(batch, dtype=torch.float64)", "return torch.tensor(batch)")],
      "float64"),
    m("my_default_collate", "lets zip cut samples of different lengths",
      [("        if any(len(sample) != len(elem) for sample in batch):\n"
        "            raise RuntimeError(\"every sample must have the same number of fields\")\n", "")],
      "raise RuntimeError"),
    m("my_default_collate", "checks for tuples before namedtuples",
      [("    if isinstance(elem, tuple) and hasattr(elem, \"_fields\"):  # a namedtuple\n"
        "        return type(elem)(*(my_default_collate(list(field)) for field in zip(*batch)))\n", "")],
      "a namedtuple keeps its type"),
    m("my_default_convert", "returns a plain dict for any mapping",
      [("        converted = copy.copy(data)  # the same type: a dict, an OrderedDict, ...\n"
        "        converted.update({key: my_default_convert(value) for key, value in data.items()})\n"
        "        return converted",
        "        return {key: my_default_convert(value) for key, value in data.items()}")],
      "a mapping keeps its type"),
    m("my_default_convert", "converts only numpy arrays, not numpy numbers",
      [("(np.ndarray, np.bool_, np.number)", "np.ndarray")],
      "numpy numbers"),
    m("my_default_convert", "tries to make a tensor of an array of strings",
      [("    if isinstance(data, np.ndarray) and data.dtype.kind in \"SUO\":\n"
        "        return data  # strings or objects: no tensor can hold them\n", "")],
      "array of strings"),
    m("my_default_convert", "keeps tuples as tuples",
      [("    if isinstance(data, (tuple, list)):\n        return [my_default_convert(item) for item in data]",
        "    if isinstance(data, (tuple, list)):\n        return type(data)(my_default_convert(item) for item in data)")],
      "a tuple becomes a LIST"),
    m("pad_collate", "pads with float zeros whatever the dtype",
      [("padded = first.new_zeros((len(batch), longest, *first.shape[1:]))",
        "padded = torch.zeros((len(batch), longest, *first.shape[1:]))")],
      "keeps the int64 dtype"),
    m("pad_collate", "returns a list",
      [("return padded, lengths, labels", "return [padded, lengths, labels]")],
      "expected a tuple"),
    m("pad_collate", "pads with ones",
      [("first.new_zeros(", "first.new_ones(")],
      "pad every sequence with zeros"),
    m("collate_dataclass", "does not pass collate_fn_map on",
      [("collate(values, collate_fn_map=collate_fn_map)", "collate(values)")],
      "collate_fn_map=collate_fn_map"),
    m("collate_dataclass", "returns a dict of fields",
      [("return type(first)(**fields)", "return fields")],
      "DigitSample"),
    m("FastTableDataset", "calls __getitem__ for every index",
      [("        features = self.features[indices]  # one gather for the whole batch\n"
        "        labels = self.labels[indices]\n"
        "        return list(zip(features, labels))  # still a list of (features, label) samples",
        "        return [self[i] for i in indices]")],
      "calls while the loader made that batch"),
    m("FastTableDataset", "returns the two batch tensors, not a list of samples",
      [("return list(zip(features, labels))", "return features, labels")],
      "a list of (features, label) tuples"),
]
