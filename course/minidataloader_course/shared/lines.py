"""An iterable-style dataset: the lines of a text file, read one at a time
(chapter 2).

The file is never read whole: memory stays flat however large it is, and the
first sample arrives before the last line has been read. The price is that
there is no ``dataset[i]``: the file can only be read on from where it is.
"""

from __future__ import annotations

import gzip

import torch

from minidataloader.dataset import IterableDataset


class LineStream(IterableDataset):
    """Each line of a text file (gzip-compressed if its name ends in ``.gz``)
    is one sample: the line without its newline, or ``parse(line)``. The
    first ``skip`` lines (a header, say) are not samples.

    Every ``iter()`` opens the file again and starts from the top: one pass
    per epoch. With worker processes, each worker iterates a copy of the
    whole stream (chapter 7 shows how to share it out).
    """

    def __init__(self, path, parse=None, skip=0):
        self.path = path
        self.parse = parse
        self.skip = skip

    def __iter__(self):
        opener = gzip.open if str(self.path).endswith(".gz") else open
        with opener(self.path, "rt") as file:
            for number, line in enumerate(file):
                if number < self.skip:
                    continue
                line = line.rstrip("\n")
                yield line if self.parse is None else self.parse(line)


def diabetes_row(line: str) -> tuple[torch.Tensor, torch.Tensor]:
    """One data line of the diabetes CSV as ``(features, label)``: float32
    tensors of shapes (8,) and (1,), as ``DiabetesDataset`` gives them. A
    module-level function, so that spawned workers can unpickle it."""
    values = [float(value) for value in line.split(",")]
    row = torch.tensor(values, dtype=torch.float32)
    return row[:-1], row[-1:]
