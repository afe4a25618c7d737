"""Chapter 3 (samplers): model solutions."""

import torch
from torch.utils.data import Sampler


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        # len() is read when the epoch starts: a dataset that grew is read to its new end
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    def __init__(self, data_source, replacement=False, num_samples=None,
                 generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self.generator = generator
        if num_samples is None:
            num_samples = len(data_source)
        if not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"num_samples must be a positive int, "
                             f"got {num_samples!r}")
        self.num_samples = num_samples

    def __len__(self):
        return self.num_samples

    def __iter__(self):
        n = len(self.data_source)
        rng = self.generator
        if rng is None:  # one global draw seeds a generator of our own
            seed = torch.empty((), dtype=torch.int64).random_().item()
            rng = torch.Generator().manual_seed(int(seed))
        if self.replacement:  # independent draws, 32 at a time
            chunks, rest = divmod(self.num_samples, 32)
            for size in [32] * chunks + [rest]:
                draws = torch.randint(n, (size,), generator=rng)
                yield from draws.tolist()
        else:  # whole permutations, then the head of one more (drawn
            # even when the head is empty)
            for _ in range(self.num_samples // n):
                yield from torch.randperm(n, generator=rng).tolist()
            head = torch.randperm(n, generator=rng).tolist()
            yield from head[:self.num_samples % n]


class BatchSampler(Sampler):
    def __init__(self, sampler, batch_size, drop_last):
        # True is an int too (isinstance(True, int)), but no batch size
        if (not isinstance(batch_size, int) or isinstance(batch_size, bool)
                or batch_size <= 0):
            raise ValueError(f"batch_size must be a positive int, "
                             f"got {batch_size!r}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last must be True or False, "
                             f"got {drop_last!r}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for index in self.sampler:  # a new pass every epoch
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        batches = len(self.sampler) // self.batch_size
        if len(self.sampler) % self.batch_size:
            batches += 1  # the incomplete batch at the end
        return batches


def balanced_weights(labels):
    counts = torch.bincount(labels)  # counts[c]: samples with label c
    return 1.0 / counts[labels].double()  # a class's weights sum to 1


class BucketBatchSampler(Sampler):
    def __init__(self, lengths, batch_size, generator=None):
        self.lengths = lengths
        self.batch_size = batch_size
        self.generator = generator

    def __iter__(self):
        # shuffle, then sort by length: samples of similar length end
        # up together, those of equal length in a new order each epoch
        n = len(self.lengths)
        shuffled = torch.randperm(n, generator=self.generator).tolist()
        by_length = sorted(shuffled, key=lambda i: self.lengths[i])
        batches = [by_length[start:start + self.batch_size]
                   for start in range(0, n, self.batch_size)]
        # then shuffle the batches: not all the short ones first
        order = torch.randperm(len(batches), generator=self.generator)
        for i in order.tolist():
            yield batches[i]

    def __len__(self):
        batches = len(self.lengths) // self.batch_size
        if len(self.lengths) % self.batch_size:
            batches += 1  # the incomplete batch
        return batches


class EpochSeededSampler(Sampler):
    def __init__(self, data_source, seed=0):
        self.data_source = data_source
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        # a generator of its own, seeded from (seed, epoch) alone: the
        # order depends on nothing else; the global RNG is never touched
        seed = self.seed + self.epoch
        generator = torch.Generator().manual_seed(seed)
        n = len(self.data_source)
        return iter(torch.randperm(n, generator=generator).tolist())

    def __len__(self):
        return len(self.data_source)
