"""Your loader on the capstone's recordings (chapter 15): recordings of varying length, on a
slow disk. The collate function and the settings are yours to choose; milestone 15 checks
them against torch, measures them, and resumes them."""

import torch

from .resumable import StatefulDataLoader


# >>> piece: collate_recordings (chapter 15)
def collate_recordings(samples):
    raise NotImplementedError  # one batch: signals padded, their lengths, labels, indices
# <<< piece: collate_recordings


# >>> piece: capstone_loader (chapter 15)
def capstone_loader(dataset, generator):
    raise NotImplementedError  # your StatefulDataLoader, with the settings you choose
# <<< piece: capstone_loader
