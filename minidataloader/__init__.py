"""minidataloader: PyTorch's DataLoader rebuilt from scratch, small enough to read in an afternoon.

``import minidataloader as mdl`` gives the same names as ``torch.utils.data`` and, for the
same seeds, the same batches.
"""

from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from .worker import get_worker_info

__version__ = "0.1.0"

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
    "DistributedSampler", "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler",
    "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler",
    "default_collate", "default_convert", "get_worker_info", "random_split",
]
