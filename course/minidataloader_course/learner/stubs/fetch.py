"""Fetchers: the samples of one batch, read from the dataset (chapter 5)."""


# >>> piece: MapFetcher (chapter 5)
class MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        raise NotImplementedError  # keep what fetch needs

    def fetch(self, possibly_batched_index):
        raise NotImplementedError  # the collated samples of these indices
# <<< piece: MapFetcher


# >>> piece: IterableFetcher (chapter 5)
class IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        raise NotImplementedError  # keep what fetch needs

    def fetch(self, possibly_batched_index):
        raise NotImplementedError  # the next batch of the stream, or StopIteration
# <<< piece: IterableFetcher
