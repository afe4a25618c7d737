"""Chapter 4 (collate): model solutions."""

import copy
import dataclasses
from collections.abc import Mapping

import numpy as np
import torch
from torch.utils.data import Dataset

from minidataloader.collate import collate


def default_collate(batch):
    elem = batch[0]  # every sample has the structure of the first one
    if isinstance(elem, torch.Tensor):
        return torch.stack(batch)  # a new first dimension: the batch
    if isinstance(elem, np.ndarray):
        return torch.stack([torch.as_tensor(array) for array in batch])
    if isinstance(elem, (np.bool_, np.number)):  # numpy numbers: their own dtype
        return torch.as_tensor(batch)
    if isinstance(elem, float):
        return torch.tensor(batch, dtype=torch.float64)
    if isinstance(elem, int):  # bool is an int too: True, False give a bool tensor
        return torch.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch  # no tensor holds text: a list of the batch's strings
    if isinstance(elem, Mapping):
        collated = copy.copy(elem)  # the same type: a dict, an OrderedDict, ...
        collated.update({key: default_collate([sample[key] for sample in batch])
                         for key in elem})
        return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(default_collate(list(field)) for field in zip(*batch)))
    if isinstance(elem, (tuple, list)):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("every sample must have the same number of fields")
        # zip(*batch) transposes: field 0 of every sample, then field 1, ...
        return [default_collate(list(field)) for field in zip(*batch)]
    raise TypeError(f"cannot collate samples of type {type(elem).__name__}")


def default_convert(data):
    if isinstance(data, np.ndarray) and data.dtype.kind in "SUO":
        return data  # strings or objects: no tensor can hold them
    if isinstance(data, (np.ndarray, np.bool_, np.number)):  # arrays, numbers
        return torch.as_tensor(data)
    if isinstance(data, Mapping):
        converted = copy.copy(data)  # the same type: a dict, an OrderedDict, ...
        converted.update({key: default_convert(value) for key, value in data.items()})
        return converted
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple
        return type(data)(*(default_convert(item) for item in data))
    if isinstance(data, (tuple, list)):
        return [default_convert(item) for item in data]
    return data  # tensors, Python numbers, strings: unchanged


def pad_collate(batch):
    sequences = [sequence for sequence, label in batch]
    lengths = torch.tensor([len(sequence) for sequence in sequences])
    longest = int(lengths.max())
    first = sequences[0]
    padded = first.new_zeros((len(batch), longest, *first.shape[1:]))  # same dtype, zeros
    for row, sequence in enumerate(sequences):
        padded[row, :len(sequence)] = sequence
    labels = torch.tensor([label for sequence, label in batch])
    return padded, lengths, labels


def collate_dataclass(batch, *, collate_fn_map=None):
    first = batch[0]
    fields = {}
    for field in dataclasses.fields(first):
        values = [getattr(sample, field.name) for sample in batch]
        # collate each field with the same map: a field may hold tensors, dicts, dataclasses
        fields[field.name] = collate(values, collate_fn_map=collate_fn_map)
    return type(first)(**fields)


class FastTableDataset(Dataset):
    def __init__(self, features, labels):
        self.features = features
        self.labels = labels

    def __getitem__(self, index):
        return self.features[index], self.labels[index]

    def __len__(self):
        return len(self.labels)

    def __getitems__(self, indices):
        features = self.features[indices]  # one gather for the whole batch
        labels = self.labels[indices]
        return list(zip(features, labels))  # still a list of (features, label) samples
