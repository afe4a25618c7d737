"""A keeper: what a stateful loader adds where batches are fetched -- inside each worker
process, or in the main process without workers. It makes the fetcher, first putting back
a saved position, and (in a worker) reports the worker's state with every result.

The core calls it at two points -- see NOTE [ The keeper hook ] in minidataloader/worker.py:

    fetcher = keeper.create_fetcher(...)        at start-up, and at each new epoch
    data_queue.put((i, keeper.report(data)))    every result of a worker: a batch, an error,
                                                or the end of an IterableDataset's stream
"""

from __future__ import annotations

import copy

from ..fetch import _DatasetKind
from ..pin_memory import pin_memory
from ..worker import _ExceptionWrapper, _is_error, _is_stream_end
from .state import Stateful, encode_rng_states, raw_rng_states, rng_states, set_rng_states


class _Reported:
    """A worker's result with the worker's state after producing it (``report``).

    It travels through the pin-memory thread like a batch: ``pin_memory()`` pins the
    batch inside and leaves the report alone."""

    __slots__ = ("worker_id", "report", "payload")

    def __init__(self, worker_id: int, report: dict, payload) -> None:
        self.worker_id, self.report, self.payload = worker_id, report, payload

    def is_stream_end(self) -> bool:
        return _is_stream_end(self.payload)

    def pin_memory(self) -> _Reported:
        payload = self.payload
        if not (_is_error(payload) or _is_stream_end(payload)):
            try:
                payload = pin_memory(payload)
            except Exception:
                payload = _ExceptionWrapper("in the pin-memory thread")
        return _Reported(self.worker_id, self.report, payload)


class _Keeper:
    """Lives in worker ``worker_id`` (None: the main process, without workers). ``record``
    is what was saved for it (``{"state": ..., "base": ...}``), or None to start afresh.

    A worker's state, as each report gives it (only what changed since the last one):

        count      fetches of this epoch so far (a fast-forward re-does that many)
        stream_end this result is the end of the worker's stream
        started    True: taken after this epoch's fetcher was made (iter(dataset) ran)
        rng        torch, random and numpy states -- only when they changed since the
                   last report, so a dataset that draws nothing costs a comparison
        dataset    dataset.state_dict(), if the dataset is Stateful (and not its own
                   iterator)
        iterator   the state of the iterator iter(dataset) returned, if it is Stateful
        ended      the fetcher's flag: the stream ran dry inside the last batch

    The main process's own random states belong to the training script: without workers
    a keeper restores none, and undoes what iter(dataset) or a fast-forward drew -- but not
    what the dataset's own load_state_dict (or its iterator's) restored.
    """

    def __init__(self, worker_id: int | None, record: dict | None, placeholder) -> None:
        self.worker_id = worker_id
        self.record = record
        self.placeholder = placeholder  # what an IterableDataset's batches are asked with
        self.dataset = self.fetcher = self.last_rng = self.base = None
        self.count = 0

    def create_fetcher(self, kind, dataset, auto_collation, collate_fn, drop_last):
        """Like ``_DatasetKind.create_fetcher``; the first time, restores the saved state."""
        def create():
            return _DatasetKind.create_fetcher(kind, dataset, auto_collation, collate_fn,
                                               drop_last)

        record, self.record = self.record, None  # a saved position applies once, at start-up
        state = record and record["state"]
        self.dataset, self.count = dataset, 0
        in_main = self.worker_id is None
        if in_main and kind == _DatasetKind.Iterable:  # what iter(dataset) sees at the
            # epoch's start: a fast-forward starts there
            self.base = record["base"]["rng"] if record is not None else rng_states()
        if state is None:
            fetcher = create()
        elif in_main:
            fetcher = self._resume_in_main(state, record["base"], create, kind)
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
        self.last_rng = raw_rng_states()
        return fetcher

    def _resume(self, state: dict, base: dict | None, create, kind):
        """A worker saved in the middle of an epoch: the stream's position comes from the
        protocol (dataset first, then iter(), then the iterator), or from re-reading it
        (fast-forward); the random states are put back last, undoing whatever iter() or the
        re-reading drew."""
        if "dataset" in state:
            self.dataset.load_state_dict(state["dataset"])
        iterable = kind == _DatasetKind.Iterable
        if iterable and "dataset" not in state and "iterator" not in state:
            fetcher = self._fast_forward(state, base, create)
        else:
            fetcher = create()
            if "iterator" in state:
                fetcher.dataset_iter.load_state_dict(state["iterator"])
        if iterable:  # a stream whose end was consumed stays at its end
            fetcher.ended = state["ended"] or state["stream_end"]
        if "rng" in state:
            set_rng_states(state["rng"])
        self.count = state["count"]
        return fetcher

    def _resume_in_main(self, state: dict, base: dict | None, create, kind):
        """Without workers (a map-style dataset's state was restored by load_state_dict):
        iter(dataset) or a fast-forward may draw from the training script's random states,
        and that is undone; the iterator's own load_state_dict comes after, and whatever it
        restores stays."""
        kept = rng_states()
        if (kind == _DatasetKind.Iterable and "iterator" not in state
                and not isinstance(self.dataset, Stateful)):
            fetcher = self._fast_forward(state, base, create)
        else:
            fetcher = create()
        set_rng_states(kept)
        if "iterator" in state:
            fetcher.dataset_iter.load_state_dict(state["iterator"])
        if kind == _DatasetKind.Iterable:
            fetcher.ended = state["ended"]
        self.count = state["count"]
        return fetcher

    def _fast_forward(self, state: dict, base: dict | None, create):
        """Re-read the ``count`` batches fetched this epoch, from the random states the
        epoch began with, and throw them away. In a worker, its random states must then be
        those saved (the main process's move on with the training loop: not checked)."""
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
                        f"fast-forward: {self._who()}'s stream ended after {done} batches, "
                        f"but it had produced {state['count']} when the state was saved: the "
                        "dataset yields less than it did") from None
            except Exception:  # noqa: BLE001 - it failed in the first run too, as it will here
                pass
        if self.worker_id is not None and rng_states() != expected:
            raise RuntimeError(
                f"fast-forward: after re-reading {state['count']} batches, {self._who()}'s "
                "random states differ from those saved, so its next batches would differ "
                "too: the dataset does not draw the same random numbers for the same seeds. "
                "Make it Stateful (state_dict/load_state_dict) instead")
        return fetcher

    def _who(self) -> str:
        return "the main process" if self.worker_id is None else f"worker {self.worker_id}"

    def stream_state(self) -> dict:
        """The stream's part of the state, asked when a state is taken: the iterator's
        state (when it is Stateful; a dataset that is its own iterator saves here, to be
        restored after iter()), and the fetcher's end flag."""
        part = {"ended": getattr(self.fetcher, "ended", False)}
        iterator = getattr(self.fetcher, "dataset_iter", None)
        if isinstance(iterator, Stateful):
            part["iterator"] = copy.deepcopy(iterator.state_dict())
        return part

    def report(self, data) -> _Reported:
        """In a worker: ``data`` with the worker's state after producing it."""
        self.count += 1
        report = {"count": self.count, "started": True, "stream_end": _is_stream_end(data)}
        rng = raw_rng_states()
        if rng != self.last_rng:
            self.last_rng = rng
            report["rng"] = encode_rng_states(rng)
        # deep copies: the queue pickles later, in another thread, while the dataset runs on
        iterator = getattr(self.fetcher, "dataset_iter", None)
        if isinstance(self.dataset, Stateful) and iterator is not self.dataset:
            report["dataset"] = copy.deepcopy(self.dataset.state_dict())
        if iterator is not None:
            report.update(self.stream_state())
        return _Reported(self.worker_id, report, data)
