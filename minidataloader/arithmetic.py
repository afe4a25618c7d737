"""Epoch arithmetic: how many iterations an epoch has, and what happens to the last batch.

One pure function answers the questions chapter 1 asks (and the explorers draw): with N
samples, batches of B, and ``drop_last``, how many optimizer steps make an epoch, how big
is the last batch, how many samples are never seen, how many steps in E epochs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EpochArithmetic:
    dataset_size: int
    batch_size: int
    drop_last: bool
    epochs: int
    iterations_per_epoch: int  # == len(DataLoader(...)) for a map-style dataset
    last_batch_size: int  # size of the final batch of an epoch (0 if there is none)
    samples_dropped: int  # per epoch, by drop_last
    total_iterations: int  # over all epochs


def epoch_arithmetic(
    dataset_size: int, batch_size: int, drop_last: bool = False, epochs: int = 1
) -> EpochArithmetic:
    """Iterations per epoch, last batch size, samples dropped and total iterations."""
    for name, value, low in (("dataset_size", dataset_size, 0), ("batch_size", batch_size, 1),
                             ("epochs", epochs, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} should be an integer >= {low}, but got {value!r}")
    full, rest = divmod(dataset_size, batch_size)
    if drop_last or rest == 0:
        iterations, last, dropped = full, (batch_size if full else 0), rest if drop_last else 0
    else:
        iterations, last, dropped = full + 1, rest, 0
    return EpochArithmetic(
        dataset_size=dataset_size,
        batch_size=batch_size,
        drop_last=bool(drop_last),
        epochs=epochs,
        iterations_per_epoch=iterations,
        last_batch_size=last,
        samples_dropped=dropped,
        total_iterations=iterations * epochs,
    )
