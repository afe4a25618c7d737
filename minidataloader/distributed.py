"""DistributedSampler: each of ``num_replicas`` processes reads its own share of the data."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TypeVar

import torch

from .dataset import AssertionValueError, Dataset
from .sampler import Sampler

T_co = TypeVar("T_co", covariant=True)


class DistributedSampler(Sampler[T_co]):
    """Rank ``rank`` of ``num_replicas`` gets every ``num_replicas``-th index, starting at
    ``rank``, of one shared order. Call ``set_epoch(epoch)`` before each epoch to reshuffle.

    Without ``num_replicas``/``rank`` they are read from the initialised process group.
    """

    # NOTE [ Equal shares ]
    # Every rank must take the same number of steps, or the ranks waiting in an all-reduce
    # would hang. So the index list is made divisible by num_replicas: padded by repeating
    # its head (drop_last=False: some samples are seen twice per epoch), or cut at the tail
    # (drop_last=True: some samples are not seen this epoch). All ranks build the same
    # shuffled list from seed + epoch -- no communication needed -- then each takes a stride.
    #
    #   indices  a b c d e a    (5 samples, 3 replicas: padded to 6 with the head)
    #   rank 0   a     d
    #   rank 1     b     e
    #   rank 2       c     a

    def __init__(self, dataset: Dataset, num_replicas: int | None = None,
                 rank: int | None = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = _process_group().get_world_size()
        if rank is None:
            rank = _process_group().get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"rank should be in [0, {num_replicas - 1}] for "
                             f"num_replicas={num_replicas}, got rank={rank}")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas)
                                         / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[T_co]:
        if self.shuffle:
            generator = torch.Generator()
            generator.manual_seed(self.seed + self.epoch)
            indices = torch.randperm(len(self.dataset), generator=generator).tolist()
        else:
            indices = list(range(len(self.dataset)))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        if len(indices) != self.total_size:
            raise AssertionValueError(
                f"the dataset has {len(self.dataset)} samples now, but had a different length "
                "when this DistributedSampler was built; build a new sampler for it")
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Makes the next ``iter()`` shuffle with ``seed + epoch``: call it every epoch, on
        every rank, or each epoch repeats the same order."""
        self.epoch = epoch


def _process_group():
    import torch.distributed as dist

    if not dist.is_available():
        raise RuntimeError("this torch build has no torch.distributed: pass num_replicas and "
                           "rank to DistributedSampler yourself")
    return dist
