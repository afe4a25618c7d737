"""Fetchers: from what the sampler yields to one collated batch. The main process uses
them when ``num_workers=0``; each worker process uses its own otherwise."""

from __future__ import annotations


class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        fetcher = _MapDatasetFetcher if kind == _DatasetKind.Map else _IterableDatasetFetcher
        return fetcher(dataset, auto_collation, collate_fn, drop_last)


class _BaseDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation  # True: indices come in lists, one per batch
        self.collate_fn = collate_fn
        self.drop_last = drop_last


class _MapDatasetFetcher(_BaseDatasetFetcher):
    def fetch(self, possibly_batched_index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[possibly_batched_index])
        # a dataset can opt out of batched fetching with `__getitems__ = None`
        if hasattr(self.dataset, "__getitems__") and self.dataset.__getitems__:
            data = self.dataset.__getitems__(possibly_batched_index)
        else:
            data = [self.dataset[idx] for idx in possibly_batched_index]
        return self.collate_fn(data)


class _IterableDatasetFetcher(_BaseDatasetFetcher):
    """Reads one stream for the whole epoch. The sampler only says how many samples make a
    batch (its lists are placeholders); the stream decides when the epoch ends."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last) -> None:
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        self.dataset_iter = iter(dataset)
        self.ended = False  # the stream ran dry inside a short last batch: next time, stop

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in possibly_batched_index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(possibly_batched_index)):
            raise StopIteration
        return self.collate_fn(data)
