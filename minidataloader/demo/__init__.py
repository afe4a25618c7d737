"""Demo datasets for the book: importable, so worker processes started with spawn or
forkserver (which re-import what they run) find them — a class defined in a notebook they
would not find.

- :mod:`minidataloader.demo.diabetes`: the Pima Indians diabetes table (chapter 1 on).
- :mod:`minidataloader.demo.digits`: an image-folder dataset of 8x8 handwritten digits.

They read the repository's ``data/`` folder (made by ``data/make_data.py``).
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
