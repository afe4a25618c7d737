"""What the book runs besides the loader: datasets, a chapter's experiments, and tools for
the chapters' cells. Everything is in modules, not notebook cells, so that worker processes
started with spawn or forkserver (which re-import what they run) find it.

A module named ``chNN_*`` is chapter NN's experiment; every other module is reusable.

Datasets, used across chapters, tests, the benchmark and the visuals:

- :mod:`~minidataloader.demo.diabetes`: the Pima Indians diabetes table (chapter 1 on);
- :mod:`~minidataloader.demo.digits`: an image folder of 8x8 handwritten digits (chapter 2 on);
- :mod:`~minidataloader.demo.lines`: the lines of a text file as a stream;
- :mod:`~minidataloader.demo.synthetic`: slow, failing and self-describing datasets for the
  chapters on workers (``SlowDataset``, ``FlowDataset``, ``SeedsObserver``,
  ``CountingStream``, ``FaultyDataset``).

Tools:

- :mod:`~minidataloader.demo.compare`: one scenario with both libraries, compared
  (``seed_everything``, ``outcome``, ``same``, ``error_text``);
- :mod:`~minidataloader.demo.processes`: watching processes from ``/proc`` (chapter 10,
  the multi-process tests);
- :mod:`~minidataloader.demo.notebook`: cell time limits, captured stderr, HTML columns;
- :mod:`~minidataloader.demo.resumable_training`: a training script that checkpoints
  mid-epoch, can be killed at any moment and resumes exactly (chapter 14, its tests).

Chapters' experiments:

- :mod:`~minidataloader.demo.ch02_memory`: copy-on-read, per worker;
- :mod:`~minidataloader.demo.ch06_workers`: ``Squares``, the start-method lesson's dataset;
- :mod:`~minidataloader.demo.ch07_randomness`: augmentations and the generators they draw from;
- :mod:`~minidataloader.demo.ch08_epochs`: what persistent workers keep between epochs;
- :mod:`~minidataloader.demo.ch08_pool`: a toy worker pool with threads;
- :mod:`~minidataloader.demo.ch09_prefetcher`: copying the next batch to the GPU on a side
  stream (a pass-through elsewhere);
- :mod:`~minidataloader.demo.ch10_failing`: datasets and worker functions that fail;
- :mod:`~minidataloader.demo.ch10_scenarios`: failures that need a process of their own;
- :mod:`~minidataloader.demo.ch10_messages`: the failure messages, explained;
- :mod:`~minidataloader.demo.ch11_performance`: datasets and memory measurements;
- :mod:`~minidataloader.demo.ch12_distributed`: real ranks over loopback;
- :mod:`~minidataloader.demo.ch13_capstone`: two training runs, written once for either
  library;
- :mod:`~minidataloader.demo.ch14_resume`: checkpoints and resumes compared with the
  uninterrupted run, a run killed with SIGKILL and resumed, a checkpoint in the queue-flow
  view.

The datasets read the repository's ``data/`` folder (made by ``data/make_data.py``).
"""

from __future__ import annotations

import pathlib

DATA_DIR = pathlib.Path(__file__).resolve().parents[2] / "data"


def data_path(name: str) -> pathlib.Path:
    """The path of ``data/<name>``, with an error that says what to do if it is missing."""
    path = DATA_DIR / name
    if not path.exists():
        raise FileNotFoundError(
            f"{path} does not exist. minidataloader.demo reads the data/ folder of the "
            f"minidataloader repository, next to the package folder: work from a clone of "
            f"the repository (installed with `pip install -e .`), regenerate the files with "
            f"`python data/make_data.py`, or pass the file's location explicitly.")
    return path
