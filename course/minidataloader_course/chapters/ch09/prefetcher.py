"""A side-stream prefetcher (chapter 9): while the training step works on batch k, batch
k + 1 is already on its way to the GPU, copied on a CUDA stream of its own.

    for inputs, labels in Prefetcher(loader, "cuda"):   # loader: pin_memory=True
        loss = criterion(model(inputs), labels)
        ...

On any other device (the CPU, or a machine without CUDA) it is a pass-through with the same
interface: it yields the loader's batches moved with ``.to(device)``. So a script written
with it runs everywhere, and overlaps copies where it can.

Why each step is there:

- the copy is queued on ``self.stream`` with ``non_blocking=True``: from pinned memory it
  returns at once, and the copy engine works while the default stream computes;
- before batch k is handed out, the consuming stream waits for the side stream
  (``wait_stream``): the step's kernels, queued after that, start only when the copy is
  done (nobody blocks: the GPU orders them);
- ``record_stream``: batch k's memory was allocated on the side stream. When the loop drops
  the batch, the caching allocator would hand that memory to the next allocation on the
  side stream, the next copy, at once, while the step's kernels may still read it.
  ``record_stream(consumer)`` makes the allocator wait for the consumer's work first;
- the next copy is queued *after* the wait, so the consumer waits for batch k's copy only,
  never for batch k + 1's.

(The pinned source may be freed as soon as the copy is queued: torch's pinned-memory
allocator records the copy and does not reuse the block before it is done.)
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

_END = object()  # the loader has no more batches


def move(batch, device, non_blocking: bool = False):
    """``batch`` with every tensor moved to ``device``, inside the same containers (dicts,
    lists, tuples, namedtuples); anything else is left as it is."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, Mapping):
        return type(batch)({key: move(value, device, non_blocking)
                            for key, value in batch.items()})
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a namedtuple
        return type(batch)(*(move(item, device, non_blocking) for item in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(move(item, device, non_blocking) for item in batch)
    return batch


def record_stream(batch, stream) -> None:
    """Tell the caching allocator that ``stream`` uses every tensor of ``batch``."""
    if isinstance(batch, torch.Tensor):
        batch.record_stream(stream)
    elif isinstance(batch, Mapping):
        for value in batch.values():
            record_stream(value, stream)
    elif isinstance(batch, (list, tuple)):
        for item in batch:
            record_stream(item, stream)


class Prefetcher:
    """Iterates over ``loader``, one batch ahead, copying each batch to ``device`` on a
    side stream (CUDA), or simply moving it (any other device). ``len()`` is the loader's.
    """

    def __init__(self, loader, device="cuda"):
        self.loader = loader
        self.device = torch.device(device)
        on_cuda = self.device.type == "cuda" and torch.cuda.is_available()
        self.stream = torch.cuda.Stream(self.device) if on_cuda else None

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        if self.stream is None:  # nothing to overlap with: a pass-through
            for batch in self.loader:
                yield move(batch, self.device)
            return
        batches = iter(self.loader)
        ahead = self._start_copy(next(batches, _END))
        while ahead is not _END:
            consumer = torch.cuda.current_stream(self.device)
            consumer.wait_stream(self.stream)  # this batch's copy, before the step's kernels
            record_stream(ahead, consumer)  # its memory is not reused under the step
            current, ahead = ahead, self._start_copy(next(batches, _END))
            yield current

    def _start_copy(self, batch):
        """Queue the copy of ``batch`` on the side stream, and return the batch on the GPU
        (whose contents are valid once the side stream gets there)."""
        if batch is _END:
            return _END
        with torch.cuda.stream(self.stream):
            return move(batch, self.device, non_blocking=True)
