"""Chapter 5 (the loader, single-process): model solutions."""

from torch.utils.data import IterableDataset


def check_loader_arguments(dataset, batch_size=1, shuffle=None, sampler=None,
                           batch_sampler=None, num_workers=0, drop_last=False, timeout=0,
                           prefetch_factor=None, persistent_workers=False):
    if num_workers < 0:
        raise ValueError(f"num_workers should be >= 0, got {num_workers}")
    if timeout < 0:
        raise ValueError(f"timeout should be >= 0, got {timeout}")
    if prefetch_factor is not None and num_workers == 0:
        raise ValueError("prefetch_factor counts batches per worker: it needs num_workers > 0")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError(f"prefetch_factor should be >= 0, got {prefetch_factor}")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers needs num_workers > 0")
    if isinstance(dataset, IterableDataset):  # a stream decides its own order
        if shuffle not in (None, False):
            raise ValueError("an IterableDataset cannot be shuffled by the loader")
        if sampler is not None or batch_sampler is not None:
            raise ValueError("an IterableDataset takes no sampler and no batch_sampler")
    if sampler is not None and shuffle:
        raise ValueError("pass sampler or shuffle=True, not both")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("a batch_sampler replaces batch_size, shuffle, sampler, drop_last")
    elif batch_size is None:
        if drop_last:
            raise ValueError("batch_size=None makes no batches: there is no last one to drop")
    else:  # the loader builds a BatchSampler, which checks its own arguments
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer, got {batch_size!r}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be True or False, got {drop_last!r}")
    if timeout != 0 and num_workers == 0:
        # torch accepts it in the constructor and raises AssertionError at iter(loader)
        raise AssertionError("timeout waits for worker processes: it needs num_workers > 0")


def loader_len(dataset, batch_size=1, sampler=None, batch_sampler=None, drop_last=False):
    if isinstance(dataset, IterableDataset):
        count = len(dataset)  # a guess the stream makes; TypeError if it has no __len__
    elif batch_sampler is not None:
        return len(batch_sampler)  # it decides the batches: it knows how many
    elif sampler is not None:
        count = len(sampler)  # the sampler, not the dataset, sets the number of samples
    else:
        count = len(dataset)
    if batch_size is None:
        return count  # no batching: one item per sample
    if drop_last:
        return count // batch_size
    return -(-count // batch_size)  # ceil(count / batch_size)


class StreamFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.stream = iter(dataset)  # one pass over the stream for the whole epoch
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, possibly_batched_index):
        if not self.auto_collation:  # batch_size=None: one sample at a time
            return self.collate_fn(next(self.stream))  # StopIteration ends the epoch
        batch = []
        for _ in possibly_batched_index:  # only its length matters: the indices are None
            try:
                batch.append(next(self.stream))
            except StopIteration:
                break
        if not batch or (self.drop_last and len(batch) < len(possibly_batched_index)):
            raise StopIteration  # the stream has ended: so has the epoch
        return self.collate_fn(batch)


class SingleProcessIterator:
    def __init__(self, dataset, batch_sampler, collate_fn):
        self.dataset = dataset
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn
        self.batches_of_indices = iter(batch_sampler)  # the order of this epoch

    def __iter__(self):
        return self

    def __next__(self):
        indices = next(self.batches_of_indices)  # StopIteration here ends the epoch
        if getattr(self.dataset, "__getitems__", None):
            samples = self.dataset.__getitems__(indices)  # the whole batch in one call
        else:
            samples = [self.dataset[index] for index in indices]
        return self.collate_fn(samples)

    def __len__(self):
        return len(self.batch_sampler)
