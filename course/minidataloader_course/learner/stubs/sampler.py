"""Samplers: which indices an epoch reads, in what order, in which batches (chapter 3)."""

import torch
from torch.utils.data import Sampler


# >>> piece: SequentialSampler (chapter 3)
class SequentialSampler(Sampler):
    def __init__(self, data_source):
        raise NotImplementedError  # keep the data source

    def __iter__(self):
        raise NotImplementedError  # 0, 1, ..., len(data_source) - 1

    def __len__(self):
        raise NotImplementedError  # the number of indices an epoch yields
# <<< piece: SequentialSampler


# >>> piece: RandomSampler (chapter 3)
class RandomSampler(Sampler):
    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        raise NotImplementedError  # keep the arguments; check num_samples

    def __iter__(self):
        raise NotImplementedError  # one epoch of indices, drawn as torch draws them

    def __len__(self):
        raise NotImplementedError  # num_samples
# <<< piece: RandomSampler


# >>> piece: BatchSampler (chapter 3)
class BatchSampler(Sampler):
    def __init__(self, sampler, batch_size, drop_last):
        raise NotImplementedError  # check batch_size and drop_last; keep the sampler

    def __iter__(self):
        raise NotImplementedError  # lists of batch_size indices from one pass of the sampler

    def __len__(self):
        raise NotImplementedError  # the number of batches
# <<< piece: BatchSampler
