"""myloader: your own DataLoader, written a piece at a time in the book's workbooks.

Each piece sits between a ``# >>> piece: <Name>`` line and a ``# <<< piece: <Name>`` line.
A workbook cell that starts with ``%%piece <module>.<Name>`` replaces what is between them;
everything else in these files came with the book. Use it as you use torch.utils.data:

    import myloader
    loader = myloader.DataLoader(dataset, batch_size=32, shuffle=True)

``python -m minidataloader_course status`` lists the pieces and who wrote them.
"""

# The base classes are torch's: your pieces build on them, and datasets written for torch
# work with your loader.
from torch.utils.data import Dataset, IterableDataset, Sampler

from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .sampler import BatchSampler, RandomSampler, SequentialSampler
from .worker import get_worker_info

__all__ = ["Dataset", "IterableDataset", "Sampler", "SequentialSampler", "RandomSampler",
           "BatchSampler", "default_collate", "default_convert", "DataLoader",
           "get_worker_info"]
