"""What a milestone is: the suites that check a learner's assembled loader against torch's,
declared by a chapter's ``milestone.py`` with :func:`register_milestone`. The runner is
``minidataloader_course.milestones``; ``minidataloader_course.catalog`` finds every chapter's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from minidataloader_course.checker.framework import BASE_CLASSES

# What the learner's loader may not call, beyond the public loader pieces every exercise
# forbids: the internals of torch's loader and of the package.
LOADER_INTERNALS = tuple(
    f"{prefix}.{name}"
    for prefix, names in [
        ("torch.utils.data.dataloader", ["_SingleProcessDataLoaderIter",
                                         "_MultiProcessingDataLoaderIter"]),
        ("torch.utils.data._utils.fetch", ["_MapDatasetFetcher", "_IterableDatasetFetcher"]),
        ("torch.utils.data._utils.collate", ["collate", "default_collate", "default_convert"]),
        ("torch.utils.data._utils.worker", ["_worker_loop"]),
        ("torch.utils.data._utils.pin_memory", ["pin_memory", "_pin_memory_loop"]),
        ("minidataloader.dataloader", ["_SingleProcessDataLoaderIter",
                                       "_MultiProcessingDataLoaderIter"]),
        ("minidataloader.fetch", ["_MapDatasetFetcher", "_IterableDatasetFetcher"]),
        ("minidataloader.collate", ["collate"]),
        ("minidataloader.worker", ["_worker_loop"]),
        ("minidataloader.pin_memory", ["pin_memory", "_pin_memory_loop"]),
    ]
    for name in names)


@dataclass
class Suite:
    """One check of the assembled loader: torch's and the learner's, case by case.

    cases      a factory of plain, picklable specs (one per case)
    observe    ``observe(data, spec)`` -> what a user observes; ``data`` is
               ``torch.utils.data`` or the learner's package (anything with a
               ``DataLoader``). An exception escaping it is the observation (compared by
               type). It runs with the global RNGs seeded alike for both.
    describe   ``describe(spec)`` -> the case in words, for the verdict
    allowed    the public loader pieces the learner's code may call (``Exercise.allowed``)
    look_at    where to look when a case differs, said instead of swapping the reference
               pieces in one at a time (NOTE [ How a milestone runs ], step 3): for a suite
               whose every case is a long measurement, where the swaps would take minutes
    suspects   pieces (``"module.Name"``) the diagnosis of a failing case swaps first: those
               the suite is about, so that a slow case is not run again for every piece
    """

    name: str
    cases: Callable[[], list]
    observe: Callable[[Any, Any], Any]
    describe: Callable[[Any], str]
    time_limit: float = 30.0
    hint: str = ""
    allowed: tuple[str, ...] = BASE_CLASSES
    look_at: str = ""
    suspects: tuple[str, ...] = ()


@dataclass
class Milestone:
    """``number`` is the chapter whose workbook ends with it: the pieces of chapters up to
    that one are checked first, then the suites. ``goals``: the learning goals it assesses,
    by chapter (``{"ch06": (3, 4)}``, numbered from 1 in each chapter's box)."""

    number: int
    title: str
    suites: list[Suite] = field(default_factory=list)
    goals: dict[str, tuple[int, ...]] = field(default_factory=dict)


MILESTONES: dict[int, Milestone] = {}


def register_milestone(milestone: Milestone) -> Milestone:
    MILESTONES[milestone.number] = milestone
    return milestone
