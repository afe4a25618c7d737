"""The capstone's two training runs (chapter 13), written once for either library.

Each ``train_*`` function takes ``data``: a module with the names of ``torch.utils.data``,
that is ``torch.utils.data`` itself or ``minidataloader``. Everything else (data, model,
loss, optimiser, seeds) is the same, so two runs that differ only in ``data`` must give the
same losses, bit for bit, and leave the random number generators in the same state.

Importable, so that worker processes started with spawn or forkserver find the transform
(a class defined in a notebook they would not find).
"""

from __future__ import annotations

import collections
import contextlib
import random
import sys
from dataclasses import dataclass, field

import numpy as np
import torch

from minidataloader_course.shared.compare import seed_everything
from minidataloader_course.shared.diabetes import DiabetesDataset, Standardize, diabetes_model
from minidataloader_course.shared.digits import DigitsDataset


class RandomShift:
    """Moves a digit (uint8, 1 x H x W) by up to ``max_shift`` pixels up or down
    and left or right, fills the uncovered edge with black, and returns floats
    from 0 to 1.

    The shift is drawn from the global torch generator. In a worker process that
    generator is seeded with ``base_seed + worker_id``, so the shifts differ from
    worker to worker and from epoch to epoch, and repeat exactly when the
    loader's generator is seeded again."""

    def __init__(self, max_shift: int = 1):
        self.max_shift = max_shift

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        m = self.max_shift
        dy, dx = torch.randint(-m, m + 1, (2,)).tolist()
        padded = torch.nn.functional.pad(image.float() / 255, (m, m, m, m))
        height, width = image.shape[-2:]
        return padded[..., m - dy:m - dy + height, m - dx:m - dx + width]

    def __repr__(self):
        return f"RandomShift(max_shift={self.max_shift})"


def to_floats(image: torch.Tensor) -> torch.Tensor:
    """The evaluation transform: no shift, the same scale as :class:`RandomShift`."""
    return image.float() / 255


def digits_model() -> torch.nn.Module:
    """A small classifier for 8x8 digits; dropout draws from the global generator too."""
    return torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Dropout(0.2),
        torch.nn.Linear(64, 10),
    )


@dataclass
class Run:
    """What a training run leaves behind: the loss of every step, the validation accuracy
    after every epoch, and the next numbers each random number generator gives."""

    losses: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    drawn_after: dict = field(default_factory=dict)


def draw_after(generator: torch.Generator | None = None) -> dict:
    """The next numbers the script would draw: from torch's global generator, from
    ``random`` and numpy's global generators, and from ``generator`` if given."""
    drawn = {"torch.rand": torch.rand(3).tolist(), "random.random": random.random(),
             "np.random.rand": float(np.random.rand())}
    if generator is not None:
        drawn["torch.rand(generator=...)"] = torch.rand(
            3, generator=generator).tolist()
    return drawn


@contextlib.contextmanager
def seed_draws():
    """Count, inside the block, the 64-bit seeds drawn in this process the way the loaders
    draw them (``torch.empty((), dtype=torch.int64).random_(...)``), by who drew them: a
    ``Counter`` of ``(function, class of its self)``, such as ``("__init__",
    "_SingleProcessDataLoaderIter")`` for an iterator's base seed or ``("__iter__",
    "RandomSampler")`` for the seed of a sampler without a generator. (Workers draw in
    processes of their own, and are not counted.)"""
    counts = collections.Counter()
    original = torch.Tensor.random_

    def counting(tensor, *args, **kwargs):
        if tensor.dim() == 0 and tensor.dtype == torch.int64:
            caller = sys._getframe(1)
            if caller.f_code.co_name == "_new_base_seed":
                # the package's iterator asks its loader for the draw (a hook the stateful
                # loader overrides): count it where torch draws it, in the iterator
                caller = caller.f_back
            owner = caller.f_locals.get("self")
            counts[caller.f_code.co_name, type(owner).__name__] += 1
        return original(tensor, *args, **kwargs)

    torch.Tensor.random_ = counting
    try:
        yield counts
    finally:
        del torch.Tensor.random_  # torch's own method, inherited, again


def accuracy(model: torch.nn.Module, loader, threshold: float | None = None) -> float:
    """The share of correct predictions over ``loader``: above ``threshold`` for a single
    probability, the largest score otherwise."""
    model.eval()
    correct = count = 0
    with torch.no_grad():
        for inputs, labels in loader:
            outputs = model(inputs)
            if threshold is None:
                predicted = outputs.argmax(dim=1)
            else:
                predicted = (outputs > threshold).float()
            correct += (predicted == labels).sum().item()
            count += len(labels)
    model.train()
    return correct / count


def fit(model, criterion, optimizer, train_loader, val_loader, epochs: int,
        threshold: float | None = None) -> Run:
    """The training loop both runs share: ``epochs`` passes over ``train_loader``, one
    optimiser step per batch, then the accuracy on ``val_loader`` (see :func:`accuracy`)."""
    run = Run()
    for _ in range(epochs):
        for inputs, labels in train_loader:
            loss = criterion(model(inputs), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            run.losses.append(loss.item())
        run.accuracy.append(accuracy(model, val_loader, threshold))
    return run


def pinned_by(loader, pin_fn):
    """The loader, on the pinning path with ``pin_fn`` as its pin function (chapter 9's
    hook, ``_pin_memory_fn``): a machine without an accelerator takes that path too."""
    if pin_fn is not None:
        loader._pin_memory_fn = pin_fn
    return loader


def train_diabetes(data, epochs: int = 10, num_workers: int = 2,
                   seed: int = 0, multiprocessing_context=None, pin_fn=None) -> Run:
    """Chapter 1's diabetes network, every random draw from torch's global
    generator: the split, the starting weights, each epoch's shuffle and the
    loader's base seeds. The workers persist from one epoch to the next.
    ``pin_fn``: the training loader pins its batches with it (see :func:`pinned_by`)."""
    seed_everything(seed)
    dataset = DiabetesDataset()
    train_set, val_set = data.random_split(dataset, [0.8, 0.2])
    dataset.transform = Standardize.fit(dataset.features[train_set.indices])
    train_loader = pinned_by(data.DataLoader(
        train_set, batch_size=32, shuffle=True, num_workers=num_workers,
        persistent_workers=num_workers > 0, pin_memory=pin_fn is not None,
        multiprocessing_context=multiprocessing_context), pin_fn)
    val_loader = data.DataLoader(val_set, batch_size=64)
    model = diabetes_model()
    criterion = torch.nn.BCELoss(reduction="mean")  # not size_average=True
    optimizer = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9)
    run = fit(model, criterion, optimizer, train_loader, val_loader, epochs, threshold=0.5)
    run.drawn_after = draw_after()
    return run


def train_digits(data, epochs: int = 3, num_workers: int = 2,
                 seed: int = 0, multiprocessing_context=None,
                 persistent_workers: bool = False, pin_fn=None) -> Run:
    """A digits classifier on 80% of the images, each shifted at random in the
    loader's workers, validated on the other 20%. The split and the shuffles come
    from a generator of the script's own; the starting weights and dropout from
    the global one. ``pin_fn``: the training loader pins its batches with it."""
    seed_everything(seed)
    generator = torch.Generator().manual_seed(seed)
    shifted = DigitsDataset(transform=RandomShift())
    plain = DigitsDataset(transform=to_floats)
    train_rows, val_rows = data.random_split(range(len(plain)), [0.8, 0.2],
                                             generator=generator)
    train_set = data.Subset(shifted, train_rows.indices)
    val_set = data.Subset(plain, val_rows.indices)
    train_loader = pinned_by(data.DataLoader(
        train_set, batch_size=32, shuffle=True, generator=generator,
        num_workers=num_workers, persistent_workers=persistent_workers,
        pin_memory=pin_fn is not None,
        multiprocessing_context=multiprocessing_context), pin_fn)
    val_loader = data.DataLoader(val_set, batch_size=100)
    model = digits_model()
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    run = fit(model, criterion, optimizer, train_loader, val_loader, epochs)
    run.drawn_after = draw_after(generator)
    return run
