"""An image-folder dataset: ``data/digits/`` holds PNG files and ``annotations.csv``
(file name, label), the layout most custom image datasets have.

The images are 8x8 grey levels from scikit-learn's handwritten digits (see
``data/make_data.py``). torchvision is not needed: Pillow reads the files.
"""

from __future__ import annotations

import csv
import pathlib

import numpy as np
import torch
from PIL import Image

from minidataloader.dataset import Dataset
from minidataloader_course.shared import data_path


class DigitsDataset(Dataset):
    """Sample ``i`` is ``(image, label)``: a uint8 tensor of shape (1, 8, 8) (channels,
    height, width, as torchvision's ``read_image`` gives) and an int from 0 to 9.

    Only the list of files is read up front; each image is opened when it is asked for, as
    a dataset too big for memory would do. ``transform`` and ``target_transform``, if
    given, are applied to the image and the label of each sample.
    """

    def __init__(self, root=None, transform=None, target_transform=None):
        self.root = pathlib.Path(root) if root is not None else data_path("digits")
        with open(self.root / "annotations.csv", newline="") as file:
            rows = list(csv.DictReader(file))
        self.files = [row["file"] for row in rows]
        self.labels = [int(row["label"]) for row in rows]
        self.transform = transform
        self.target_transform = target_transform

    def __getitem__(self, index):
        with Image.open(self.root / self.files[index]) as image:
            pixels = np.array(image, dtype=np.uint8)
        image = torch.from_numpy(pixels).unsqueeze(0)  # add the channel dimension
        label = self.labels[index]
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            label = self.target_transform(label)
        return image, label

    def __len__(self):
        return len(self.files)
