"""What a stateful loader adds inside each worker process: a keeper that restores the
worker's saved position when it starts, and reports the worker's state with every result.

The core worker loop (minidataloader/worker.py) calls the keeper at two points -- see
NOTE [ The keeper hook ] there:

    fetcher = keeper.create_fetcher(...)        at start-up, and at each new epoch
    data_queue.put((i, keeper.report(data)))    every result: a batch, an error, or the
                                                end of an IterableDataset's stream
"""

from __future__ import annotations

import copy

from ..fetch import _DatasetKind
from ..pin_memory import pin_memory
from ..worker import _ExceptionWrapper, _IterableDatasetStopIteration
from .state import Stateful, rng_states, set_rng_states


class _Reported:
    """A worker's result with the worker's state after producing it (``report``).

    It travels through the pin-memory thread like a batch: ``pin_memory()`` pins the
    batch inside and leaves the report alone."""

    __slots__ = ("worker_id", "report", "payload")

    def __init__(self, worker_id: int, report: dict, payload) -> None:
        self.worker_id, self.report, self.payload = worker_id, report, payload

    def is_stream_end(self) -> bool:
        return isinstance(self.payload, _IterableDatasetStopIteration)

    def pin_memory(self) -> _Reported:
        payload = self.payload
        if not isinstance(payload, (_ExceptionWrapper, _IterableDatasetStopIteration)):
            try:
                payload = pin_memory(payload)
            except Exception:
                payload = _ExceptionWrapper("in the pin-memory thread")
        return _Reported(self.worker_id, self.report, payload)


class _Keeper:
    """Lives in worker ``worker_id``. ``record`` is what the main process saved for this
    worker (``{"state": ..., "base": ...}``), or None for a worker that starts afresh.

    A report holds the worker's state after the result it travels with:

        count      fetches of this epoch so far (a fast-forward re-does that many)
        stream_end this result is the end of the worker's stream
        started    True: taken after this epoch's fetcher was made (iter(dataset) ran)
        rng        torch, random and numpy states -- only when they changed since the
                   last report, so a dataset that draws nothing costs a comparison
        dataset    dataset.state_dict(), if the dataset is Stateful
        iterator   the state of the iterator iter(dataset) returned, if it is Stateful
        ended      the fetcher's flag: the stream ran dry inside the last batch
    """

    def __init__(self, worker_id: int, record: dict | None, placeholder) -> None:
        self.worker_id = worker_id
        self.record = record
        self.placeholder = placeholder  # what an IterableDataset's batches are asked with
        self.dataset = self.fetcher = self.last_rng = None
        self.count = 0

    def create_fetcher(self, kind, dataset, auto_collation, collate_fn, drop_last):
        """Like ``_DatasetKind.create_fetcher``; the first time, restores the saved state."""
        def create():
            return _DatasetKind.create_fetcher(kind, dataset, auto_collation, collate_fn,
                                               drop_last)

        record, self.record = self.record, None  # a saved position applies once, at start-up
        state = record and record["state"]
        self.dataset, self.count = dataset, 0
        if state is None:
            fetcher = create()
        elif not state["started"]:
            # Saved before this epoch's iter(dataset): restore, then let it run as it did.
            if "rng" in state:
                set_rng_states(state["rng"])
            if "dataset" in state:
                dataset.load_state_dict(state["dataset"])
            fetcher = create()
        else:
            fetcher = self._resume(state, record["base"], create, kind)
        self.fetcher = fetcher
        self.last_rng = rng_states()
        return fetcher

    def _resume(self, state: dict, base: dict | None, create, kind):
        """Saved in the middle of an epoch: the stream's position comes from the protocol
        (dataset first, then iter(), then the iterator), or from re-reading it (fast-forward);
        the random states are put back last, undoing whatever iter() or the re-reading drew."""
        if "dataset" in state:
            self.dataset.load_state_dict(state["dataset"])
        iterable = kind == _DatasetKind.Iterable
        if iterable and "dataset" not in state and "iterator" not in state:
            fetcher = self._fast_forward(state, base, create)
        else:
            fetcher = create()
            if "iterator" in state:
                fetcher.dataset_iter.load_state_dict(state["iterator"])
        if iterable:
            fetcher.ended = state["ended"]
        if "rng" in state:
            set_rng_states(state["rng"])
        self.count = state["count"]
        return fetcher

    def _fast_forward(self, state: dict, base: dict | None, create):
        """Re-read the ``count`` batches this worker had fetched this epoch, from the random
        states it had when the epoch began, and throw them away."""
        if base is not None and "rng" in base:
            set_rng_states(base["rng"])
        expected = state.get("rng", rng_states())
        fetcher = create()
        for done in range(state["count"]):
            try:
                fetcher.fetch(self.placeholder)
            except StopIteration:
                if not (done == state["count"] - 1 and state["stream_end"]):
                    raise RuntimeError(
                        f"fast-forward: worker {self.worker_id}'s stream ended after {done} "
                        f"batches, but it had produced {state['count']} when the state was "
                        "saved: the dataset yields less than it did") from None
            except Exception:  # noqa: BLE001 - it failed in the first run too, as it will here
                pass
        if rng_states() != expected:
            raise RuntimeError(
                f"fast-forward: after re-reading {state['count']} batches, worker "
                f"{self.worker_id}'s random states differ from those saved, so its next batches "
                "would differ too: the dataset does not draw the same random numbers for the "
                "same seeds. Make it Stateful (state_dict/load_state_dict) instead")
        return fetcher

    def report(self, data) -> _Reported:
        self.count += 1
        report = {"count": self.count, "started": True,
                  "stream_end": isinstance(data, _IterableDatasetStopIteration)}
        rng = rng_states()
        if rng != self.last_rng:
            report["rng"] = self.last_rng = rng
        # deep copies: the queue pickles later, in another thread, while the dataset runs on
        if isinstance(self.dataset, Stateful):
            report["dataset"] = copy.deepcopy(self.dataset.state_dict())
        iterator = getattr(self.fetcher, "dataset_iter", None)
        if iterator is not None:
            if iterator is not self.dataset and isinstance(iterator, Stateful):
                report["iterator"] = copy.deepcopy(iterator.state_dict())
            report["ended"] = self.fetcher.ended
        return _Reported(self.worker_id, report, data)
