"""Milestone 5: the learner's ``DataLoader(num_workers=0)`` is torch's, on over a hundred random
configurations and on chapter 1's training run."""

from __future__ import annotations

import random

import torch
import torch.utils.data

from minidataloader_course.checker.milestone_data import (
    DATASETS,
    drawn_afterwards,
    loader_arguments,
    two_epochs,
)
from minidataloader_course.checker.milestones import Milestone, Suite, register_milestone
from minidataloader_course.shared.diabetes import DiabetesDataset, Standardize, diabetes_model

CONFIGURATIONS = 128


def random_configuration(rng: random.Random) -> dict:
    """One loader configuration, as plain data (see ``_data.loader_arguments``)."""
    size = rng.choice([0, 1, 5, 16, 37])
    kind = rng.choice(["map", "batched", "stream"])
    arguments: dict = {"batch_size": rng.choice([None, 1, 3, 8, 64])}
    if arguments["batch_size"] is not None:
        arguments["drop_last"] = rng.random() < 0.3
    if kind != "stream" and size:
        how = rng.choice(["order", "shuffle", "shuffle", "sampler", "batch_sampler"])
        if how == "shuffle":
            arguments["shuffle"] = True
        elif how == "sampler":
            arguments["sampler"] = [rng.randrange(size) for _ in range(rng.randint(1, 20))]
        elif how == "batch_sampler":
            arguments = {"batch_sampler": [[rng.randrange(size) for _ in range(rng.randint(1, 4))]
                                           for _ in range(rng.randint(1, 6))]}
    if rng.random() < 0.5:
        arguments["generator"] = rng.randrange(2**31)
    if rng.random() < 0.15:
        arguments["collate_fn"] = "as_list" if "batch_size" not in arguments or \
            arguments["batch_size"] is not None else "numbers_only"
    return {"dataset": kind, "size": size, "arguments": arguments}


# Configurations every loader must refuse, as torch does (the exception's type is compared).
REFUSED = [
    {"dataset": "map", "size": 5, "arguments": {"shuffle": True, "sampler": [0, 1]}},
    {"dataset": "map", "size": 5, "arguments": {"batch_sampler": [[0]], "batch_size": 2}},
    {"dataset": "map", "size": 5, "arguments": {"batch_size": None, "drop_last": True}},
    {"dataset": "stream", "size": 5, "arguments": {"shuffle": True}},
    {"dataset": "map", "size": 5, "arguments": {"batch_size": 0}},
    {"dataset": "map", "size": 5, "arguments": {"num_workers": -1}},
    {"dataset": "map", "size": 5, "arguments": {"prefetch_factor": 2}},
    {"dataset": "map", "size": 5, "arguments": {"timeout": 5}},
]


def built_then_two_epochs(data, spec: dict) -> dict:
    """``two_epochs``, after building the loader once on its own: an exception the constructor
    raises is told from one its epoch raises (torch builds a loader with a timeout and no
    workers, and refuses it only at ``iter(loader)``)."""
    try:
        data.DataLoader(DATASETS[spec["dataset"]](spec["size"]),
                        **loader_arguments(spec["arguments"]))
    except NotImplementedError:
        raise  # a piece not written yet: the runner says so
    except Exception as error:
        return {"refused when built": type(error).__name__}
    return two_epochs(data, spec)


def configurations() -> list[dict]:
    rng = random.Random(5)
    return [random_configuration(rng) for _ in range(CONFIGURATIONS)] + REFUSED


def describe_configuration(spec: dict) -> str:
    shown = []
    for name, value in spec["arguments"].items():
        if name == "generator":
            value = f"torch.Generator().manual_seed({value})"
        elif name == "collate_fn":
            value = f"{value} (a function of the reader's)"
        else:
            value = repr(value)
        shown.append(f"{name}={value}")
    dataset = DATASETS[spec["dataset"]](spec["size"])
    return f"DataLoader({dataset!r}{''.join(', ' + s for s in shown)}); two epochs"


def train_diabetes(data, spec: dict) -> dict:
    """Chapter 1's network on the diabetes table, with ``data.DataLoader`` for training:
    the loss of every step, and the random numbers drawn afterwards."""
    torch.manual_seed(0)
    dataset = DiabetesDataset()
    train_set, _ = torch.utils.data.random_split(dataset, [0.8, 0.2],
                                                 generator=torch.Generator().manual_seed(0))
    dataset.transform = Standardize.fit(dataset.features[train_set.indices])
    generator = None if spec["generator"] is None else torch.Generator().manual_seed(
        spec["generator"])
    loader = data.DataLoader(train_set, batch_size=spec["batch_size"], shuffle=True,
                             generator=generator)
    model = diabetes_model()
    criterion = torch.nn.BCELoss(reduction="mean")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.3)
    losses = []
    for _ in range(spec["epochs"]):
        for inputs, labels in loader:
            loss = criterion(model(inputs), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return {"the loss of every step": losses, "random numbers drawn afterwards":
            drawn_afterwards()}


def describe_training(spec: dict) -> str:
    order = (f"shuffled by torch.Generator().manual_seed({spec['generator']})"
             if spec["generator"] is not None else "shuffled from the global generator")
    return (f"{spec['epochs']} epochs of chapter 1's diabetes network, batches of "
            f"{spec['batch_size']}, {order}")


register_milestone(Milestone(
    number=5,
    goals={"ch05": (6,)},
    title="your DataLoader(num_workers=0) against torch's",
    suites=[
        Suite(name=f"{CONFIGURATIONS + len(REFUSED)} configurations",
              cases=configurations, observe=built_then_two_epochs, describe=describe_configuration,
              time_limit=30.0,
              hint="compare with torch's loader on this configuration, one part at a time: "
                   "the sampler, the batch sampler, the collate function, the base seed"),
        Suite(name="the diabetes network, loss for loss",
              cases=lambda: [{"epochs": 4, "batch_size": 32, "generator": 0},
                             {"epochs": 4, "batch_size": 32, "generator": None}],
              observe=train_diabetes, describe=describe_training, time_limit=30.0,
              hint="the same batches give the same losses: a loss that differs from the first "
                   "step on means a different first batch"),
    ],
))
