"""The Pima Indians diabetes data as a map-style dataset: chapter 1's first full example.

768 women of Pima heritage, 8 measurements each, and ``Outcome`` (1 = diabetes diagnosed
within five years). In this table a 0 in Glucose, BloodPressure, SkinThickness, Insulin or BMI
means "not measured"; the book keeps them, as the usual copies of the data do.
"""

from __future__ import annotations

import gzip

import numpy as np
import torch

from minidataloader.dataset import Dataset
from minidataloader_course.shared import data_path


def read_columns(path=None) -> list[str]:
    """The column names: the CSV's header row."""
    with gzip.open(path or data_path("diabetes.csv.gz"), "rt") as file:
        return file.readline().strip().split(",")


class DiabetesDataset(Dataset):
    """Sample ``i`` is ``(features, label)``: the 8 measurements of row ``i`` as a float32
    tensor of shape (8,), and its Outcome as a float32 tensor of shape (1,) (the shape of one
    row of the model's output, which ``BCELoss`` compares it with).

    ``transform``, if given, is applied to the features of each sample as it is read.
    """

    def __init__(self, path=None, transform=None):
        # np.loadtxt reads .gz files itself; skiprows=1 skips the header row, which is text
        table = np.loadtxt(path or data_path("diabetes.csv.gz"), delimiter=",", skiprows=1,
                           dtype=np.float32)
        self.features = torch.from_numpy(table[:, :-1])
        self.labels = torch.from_numpy(table[:, -1:])  # -1: keeps the column: shape (768, 1)
        self.transform = transform

    def __getitem__(self, index):
        features = self.features[index]
        if self.transform is not None:
            features = self.transform(features)
        return features, self.labels[index]

    def __len__(self):
        return len(self.labels)


class Standardize:
    """``x -> (x - mean) / std``, per feature: puts every measurement on the same scale,
    whatever its unit, so that no feature drowns the others.

    Fit it on the training samples only: statistics that saw the validation samples would
    leak them into training.
    """

    def __init__(self, mean: torch.Tensor, std: torch.Tensor):
        self.mean, self.std = mean, std

    @classmethod
    def fit(cls, features: torch.Tensor) -> Standardize:
        return cls(features.mean(dim=0), features.std(dim=0))

    def __call__(self, features: torch.Tensor) -> torch.Tensor:
        return (features - self.mean) / self.std

    def __repr__(self):
        return f"Standardize(over {self.mean.numel()} features)"


def diabetes_model() -> torch.nn.Module:
    """Chapter 1's network: 8 -> 6 -> 4 -> 1, a sigmoid after each layer."""
    return torch.nn.Sequential(
        torch.nn.Linear(8, 6), torch.nn.Sigmoid(),
        torch.nn.Linear(6, 4), torch.nn.Sigmoid(),
        torch.nn.Linear(4, 1), torch.nn.Sigmoid(),
    )
