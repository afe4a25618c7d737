"""minidataloader: PyTorch's DataLoader rebuilt from scratch, small enough to read in an afternoon.

``import minidataloader as mdl`` gives the same names as ``torch.utils.data`` and, for the
same seeds, the same batches.
"""

__version__ = "0.1.0"
