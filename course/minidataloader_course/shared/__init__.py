"""What the book runs besides the loader: datasets, a chapter's experiments, and tools for
the chapters' cells. Everything is in modules, not notebook cells, so that worker processes
started with spawn or forkserver (which re-import what they run) find it.

A module named ``chNN_*`` is chapter NN's experiment; every other module is reusable.

Datasets, used across chapters, tests, the benchmark and the visuals:

- :mod:`~minidataloader_course.shared.diabetes`: the Pima Indians diabetes table (chapter 1 on);
- :mod:`~minidataloader_course.shared.digits`: an image folder of 8x8 handwritten digits (chapter 2 on);
- :mod:`~minidataloader_course.shared.lines`: the lines of a text file as a stream;
- :mod:`~minidataloader_course.shared.synthetic`: slow, failing and self-describing datasets for the
  chapters on workers (``SlowDataset``, ``FlowDataset``, ``SeedsObserver``,
  ``CountingStream``, ``FaultyDataset``).

Tools:

- :mod:`~minidataloader_course.shared.compare`: one scenario with both libraries, compared
  (``seed_everything``, ``outcome``, ``same``, ``error_text``);
- :mod:`~minidataloader_course.shared.processes`: watching processes from ``/proc`` (chapter 10,
  the multi-process tests);
- :mod:`~minidataloader_course.shared.notebook`: cell time limits, captured stderr, HTML columns;
- :mod:`~minidataloader_course.shared.try_it`: the workbooks' try-it cells' time limit, and the
  worker processes they started stopped at the end (``with try_it(30):``);
- :mod:`~minidataloader_course.shared.resumable_training`: a training script that checkpoints
  mid-epoch, can be killed at any moment and resumes exactly (chapter 14, its tests).

Chapters' experiments:

- :mod:`~minidataloader_course.chapters.ch06.workers`: ``Squares``, the start-method lesson's dataset;
- :mod:`~minidataloader_course.chapters.ch07.randomness`: augmentations and the generators they draw from;
- :mod:`~minidataloader_course.chapters.ch08.epochs`: what persistent workers keep between epochs;
- :mod:`~minidataloader_course.chapters.ch08.memory`: copy-on-read, per worker;
- :mod:`~minidataloader_course.chapters.ch08.pool`: a toy worker pool with threads;
- :mod:`~minidataloader_course.chapters.ch09.prefetcher`: copying the next batch to the GPU on a side
  stream (a pass-through elsewhere);
- :mod:`~minidataloader_course.chapters.ch10.failing`: datasets and worker functions that fail;
- :mod:`~minidataloader_course.chapters.ch10.scenarios`: failures that need a process of their own;
- :mod:`~minidataloader_course.chapters.ch10.messages`: the failure messages, explained;
- :mod:`~minidataloader_course.chapters.ch11.performance`: datasets and memory measurements;
- :mod:`~minidataloader_course.chapters.ch12.distributed`: real ranks over loopback;
- :mod:`~minidataloader_course.chapters.ch13.capstone`: two training runs, written once for either
  library;
- :mod:`~minidataloader_course.chapters.ch14.resume`: checkpoints and resumes compared with the
  uninterrupted run, a run killed with SIGKILL and resumed, a checkpoint in the queue-flow
  view.

The datasets read the course's ``data/`` folder: in a clone, a link to the repository's
``data/`` (made by ``data/make_data.py``); in an installed course, the copies it ships.
"""

from __future__ import annotations

import pathlib

DATA_DIR = pathlib.Path(__file__).resolve().parents[1] / "data"


def data_path(name: str) -> pathlib.Path:
    """The path of ``data/<name>``, with an error that says what to do if it is missing."""
    path = DATA_DIR / name
    if not path.exists():
        raise FileNotFoundError(
            f"{path} does not exist. The course reads the data files it ships (in a clone of "
            f"the repository, course/minidataloader_course/data links to data/): reinstall "
            f"the course, regenerate the files with `python data/make_data.py` in a clone, or "
            f"pass the file's location explicitly.")
    return path
