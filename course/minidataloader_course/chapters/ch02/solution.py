"""Chapter 2 (datasets): model solutions."""

import gzip
import math

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, Subset


class KeyedArraysDataset(Dataset):
    def __init__(self, arrays, keys=("x", "y")):
        self.arrays = arrays
        self.keys = tuple(keys)
        lengths = {key: len(arrays[key]) for key in self.keys}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"arrays of different lengths: {lengths}")

    def __getitem__(self, index):
        return tuple(self.arrays[key][index] for key in self.keys)

    def __len__(self):
        return len(self.arrays[self.keys[0]])


class CsvDataset(Dataset):
    def __init__(self, path, label):
        with open(path) as file:
            columns = file.readline().strip().split(",")  # the header
        # skiprows=1: the header is text, not numbers;
        # ndmin=2: a file with a single data row still gives a table
        table = np.loadtxt(path, delimiter=",", skiprows=1,
                           dtype=np.float32, ndmin=2)
        where = columns.index(label)
        features = np.delete(table, where, axis=1)  # the other columns
        self.features = torch.from_numpy(features)
        self.labels = torch.from_numpy(table[:, [where]])  # a column

    def __getitem__(self, index):
        return self.features[index], self.labels[index]

    def __len__(self):
        return len(self.labels)


class ConcatenatedDataset(Dataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __len__(self):
        return sum(len(dataset) for dataset in self.datasets)

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise ValueError(f"index {index} is below -{len(self)}")
            index += len(self)  # -1 is the last sample
        for dataset in self.datasets:
            if index < len(dataset):
                return dataset[index]
            index -= len(dataset)  # skip this dataset's samples
        raise IndexError("index out of range")


def split_dataset(dataset, lengths, generator=None):
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:  # fractions
        for fraction in lengths:
            if not 0 <= fraction <= 1:
                raise ValueError(f"fraction {fraction} not in [0, 1]")
        sizes = [math.floor(n * fraction) for fraction in lengths]
        for i in range(n - sum(sizes)):  # deal out the leftovers
            sizes[i % len(sizes)] += 1
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError(f"lengths add up to {sum(lengths)}, not {n}")
    order = torch.randperm(n, generator=generator).tolist()
    splits, start = [], 0
    for length in lengths:
        splits.append(Subset(dataset, order[start:start + length]))
        start += length
    return splits


def dataset_style(scenario):
    answers = {
        "a": "map",       # a table in memory: any row, any time
        "b": "iterable",  # a socket has no row numbers and no end
        "c": "map",       # files listed in a CSV: open file number i
        "d": "iterable",  # one gzip file is read from the start
        "e": "map",       # a sampler needs indices to weight
        "f": "iterable",  # a simulator makes samples on request
    }
    return answers[scenario]


class CsvStream(IterableDataset):
    def __init__(self, path, label):
        self.path = path
        self.label = label

    def __iter__(self):
        opener = gzip.open if str(self.path).endswith(".gz") else open
        with opener(self.path, "rt") as file:
            columns = next(file).strip().split(",")
            where = columns.index(self.label)
            for line in file:  # one line at a time, never all at once
                values = [float(value) for value in line.split(",")]
                label = values.pop(where)
                yield (torch.tensor(values, dtype=torch.float32),
                       torch.tensor([label], dtype=torch.float32))
