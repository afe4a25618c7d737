"""Epoch arithmetic: how many iterations an epoch has, and what happens to the last batch.

One pure function answers the questions chapter 1 asks (and the explorers draw): with N
samples, batches of B, and ``drop_last``, how many optimizer steps make an epoch, how big
is the last batch, how many samples are never seen, how many steps in E epochs. Keyword
arguments add the two places where an epoch is split before it is batched:

* ``replicas=R``: ``DistributedSampler`` gives each of R ranks its own share. Every rank
  must take the same number of steps, so the shares are equal: ``ceil(N / R)`` samples
  each, the shortfall padded by repeating samples from the start of the (shuffled) order,
  or with the sampler's own ``drop_last=True``, ``floor(N / R)`` each and the rest cut.
  Each rank then batches its share, so iterations and batch sizes are per rank.

* ``iterable=True, num_workers=W``: an ``IterableDataset`` has no sampler, so the loader
  cannot split it; each worker runs its own copy of ``__iter__`` and batches whatever that
  copy yields. ``sharding`` says how the copies divide the N samples:

  - ``"stride"``: worker w yields samples w, w+W, w+2W, ... (every W-th sample);
  - ``"blocks"``: worker w yields one contiguous block of ``ceil(N / W)`` samples (the last
    blocks may be shorter or empty), as the example in torch's documentation does;
  - ``"none"``: no sharding, so every worker yields all N samples: each sample W times.

  Each worker that ends on an incomplete batch contributes one partial batch, so an epoch
  can hold up to W partial batches. The loader takes batches from the workers in turn
  (worker 0, 1, ..., W-1, 0, 1, ...; a worker that has run dry is skipped), so the partial
  batches arrive near the end, one per worker.

  ``len(loader)`` cannot know any of this: it divides the dataset's ``__len__`` (taken to
  be N here) by the batch size, so for an ``IterableDataset`` it is an estimate.

Map-style datasets read by workers need no option: the workers fetch whole batches that
one sampler planned, so the arithmetic does not change with ``num_workers``.
"""

from __future__ import annotations

from dataclasses import dataclass

SHARDINGS = ("stride", "blocks", "none")


@dataclass(frozen=True)
class EpochArithmetic:
    dataset_size: int
    batch_size: int
    drop_last: bool
    epochs: int
    iterations_per_epoch: int  # batches one training process receives (per rank with replicas)
    last_batch_size: int  # size of the final batch of an epoch (0 if there is none)
    samples_dropped: int  # per epoch, all ranks: cut by the sampler plus incomplete batches
    total_iterations: int  # over all epochs
    replicas: int = 1
    sampler_drop_last: bool = False  # DistributedSampler's own drop_last
    iterable: bool = False
    num_workers: int = 0
    sharding: str = "stride"
    samples_per_stream: tuple[int, ...] = ()  # what each rank, or each iterable worker, batches
    partial_batches: tuple[int, ...] = ()  # sizes of the incomplete batches, in arrival order
    samples_padded: int = 0  # repeats DistributedSampler adds so that all ranks get as many
    samples_duplicated: int = 0  # extra copies when every worker reads the whole dataset
    samples_yielded: int = 0  # samples in all the batches of one epoch, all ranks together
    reported_len: int = 0  # what len(loader) says
    len_is_estimate: bool = False  # True for an IterableDataset: len(dataset) / batch_size
    len_warning: bool = False  # torch warns mid-epoch if len(loader) was called first


def _rank_share(dataset_size: int, replicas: int, sampler_drop_last: bool) -> int:
    """Samples DistributedSampler gives each rank."""
    if sampler_drop_last:
        return dataset_size // replicas
    return -(-dataset_size // replicas)  # ceil


def worker_shard(dataset_size: int, worker: int, num_workers: int, sharding: str) -> range:
    """The dataset indices worker ``worker`` of ``num_workers`` yields under ``sharding``."""
    if sharding == "none":
        return range(dataset_size)
    if sharding == "stride":
        return range(worker, dataset_size, num_workers)
    block = -(-dataset_size // num_workers)
    return range(min(worker * block, dataset_size), min((worker + 1) * block, dataset_size))


def _worker_shares(dataset_size: int, num_workers: int, sharding: str) -> tuple[int, ...]:
    """Samples each worker's copy of an IterableDataset yields (one stream if no workers)."""
    if num_workers == 0:
        return (dataset_size,)
    return tuple(len(worker_shard(dataset_size, w, num_workers, sharding))
                 for w in range(num_workers))


def _batches(samples: int, batch_size: int, drop_last: bool) -> tuple[int, int, int]:
    """(number of batches, size of the partial batch or 0, samples dropped) for one stream."""
    full, rest = divmod(samples, batch_size)
    if drop_last:
        return full, 0, rest
    return full + (rest > 0), rest, 0


def epoch_arithmetic(
    dataset_size: int,
    batch_size: int,
    drop_last: bool = False,
    epochs: int = 1,
    *,
    replicas: int = 1,
    sampler_drop_last: bool = False,
    iterable: bool = False,
    num_workers: int = 0,
    sharding: str = "stride",
) -> EpochArithmetic:
    """Iterations per epoch, last batch size(s), samples dropped or padded, total iterations,
    and what ``len(loader)`` reports."""
    for name, value, low in (("dataset_size", dataset_size, 0), ("batch_size", batch_size, 1),
                             ("epochs", epochs, 0), ("replicas", replicas, 1),
                             ("num_workers", num_workers, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} should be an integer >= {low}, but got {value!r}")
    if sharding not in SHARDINGS:
        raise ValueError(f"sharding should be one of {SHARDINGS}, but got {sharding!r}")
    if iterable and replicas > 1:
        raise ValueError("DistributedSampler needs a map-style dataset; an IterableDataset "
                         "splits itself across ranks in its __iter__: use replicas=1")

    padded = duplicated = sampler_cut = 0
    if iterable:
        streams = _worker_shares(dataset_size, num_workers, sharding)
        if num_workers and sharding == "none":
            duplicated = (num_workers - 1) * dataset_size
    else:
        share = _rank_share(dataset_size, replicas, sampler_drop_last)
        streams = (share,) * replicas
        if sampler_drop_last:
            sampler_cut = dataset_size - share * replicas
        else:
            padded = share * replicas - dataset_size

    per_stream = [_batches(samples, batch_size, drop_last) for samples in streams]
    loader_dropped = sum(dropped for _, _, dropped in per_stream)
    if iterable:
        # One process receives every worker's batches, taken from the workers in turn, so
        # a worker's partial batch (its last) arrives in the round of its last batch, and
        # the epoch ends with the busiest worker (the highest-numbered one if several tie).
        iterations = sum(count for count, _, _ in per_stream)
        by_arrival = sorted(range(len(per_stream)), key=lambda w: (per_stream[w][0], w))
        partial = tuple(per_stream[w][1] for w in by_arrival if per_stream[w][1])
        count, rest, _ = per_stream[by_arrival[-1]]
        last = rest or (batch_size if count else 0)
        # len() divides len(dataset) by the batch size, as if one stream held all N samples
        reported, _, _ = _batches(dataset_size, batch_size, drop_last)
    else:
        iterations, rest, _ = per_stream[0]  # every rank batches as many samples
        partial = (rest,) if rest else ()
        last = rest or (batch_size if iterations else 0)
        reported = iterations

    return EpochArithmetic(
        dataset_size=dataset_size,
        batch_size=batch_size,
        drop_last=bool(drop_last),
        epochs=epochs,
        iterations_per_epoch=iterations,
        last_batch_size=last,
        samples_dropped=sampler_cut + loader_dropped,
        total_iterations=iterations * epochs,
        replicas=replicas,
        sampler_drop_last=bool(sampler_drop_last),
        iterable=bool(iterable),
        num_workers=num_workers,
        sharding=sharding,
        samples_per_stream=streams,
        partial_batches=partial,
        samples_padded=padded,
        samples_duplicated=duplicated,
        samples_yielded=sum(streams) - loader_dropped,
        reported_len=reported,
        len_is_estimate=bool(iterable),
        # torch compares the number of *batches* yielded with len(dataset), a sample count
        len_warning=bool(iterable) and iterations > dataset_size,
    )
