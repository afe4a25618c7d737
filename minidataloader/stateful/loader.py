"""StatefulDataLoader: a DataLoader that can save where it is in an epoch and resume there,
in a new process, exactly -- the same remaining batches, worker seeds and random states as
a run that was never interrupted. Until a state is loaded it *is* a DataLoader: for the
same seeds its batches are torch's.

    loader = StatefulDataLoader(dataset, batch_size=32, shuffle=True, num_workers=4)
    for step, batch in enumerate(loader):
        ...
        if step % 1000 == 0:
            torch.save({"loader": loader.state_dict(), "rng": rng_states(), ...}, path)

    # a new process, after a crash:
    checkpoint = torch.load(path)
    set_rng_states(checkpoint["rng"])  # the training loop's own random numbers
    loader = StatefulDataLoader(dataset, batch_size=32, shuffle=True, num_workers=4)
    loader.load_state_dict(checkpoint["loader"])
    for batch in loader:  # the rest of the interrupted epoch
        ...
"""

# NOTE [ What a checkpoint holds, and who holds it ]
# After batch k has been yielded, the pipeline is already further on: the sampler has been
# asked for more indices, and workers have fetched (or are fetching) batches k+1, k+2, ...
# A checkpoint must describe the run as of batch k, not as of now. Who knows what:
#
#   main process                                   worker w (one process each)
#   ------------                                   ---------------------------
#   epochs started; the loader's generators        its random states: torch, random, numpy
#   the base seed (worker w's seed: base + w)      its dataset copy's state (Stateful)
#   the index stream: the random states it         its stream's position: the state of
#     draws from, as they were at its first          the iterator iter(dataset) returned
#     pull (a Stateful sampler: its state          ...each reported with every result,
#     before iter()), and how many pulls             and saved as of the last result of
#     were made                                      w's that the main process YIELDED
#   the batches in flight: dispatched, not
#     yet yielded, and which worker has each
#   whose turn it is next (round robin)
#
#   time --------------------------------------------------------------------------->
#   yielded        b0(w0) b1(w1) b2(w0) b3(w1) | state_dict()
#   in flight                                  | b4(w0: arrived, parked) b5(w1: fetching)
#                                              | b6(w0: queued)          b7(w1: queued)
#   saved for w0:  its state after b2          (it had fetched b4 too: that is not saved)
#   saved for w1:  its state after b3
#   saved stream:  8 pulls; b4..b7 in flight, to w0, w1, w0, w1
#
# Resuming (a new process): iter() draws no base seed (the saved one is used); each new
# worker seeds itself from it, runs worker_init_fn, then its keeper puts back the saved
# state (stateful/worker.py). The sampler is replayed -- only indices, no data: its
# generators and the global RNG are set to their state at the first pull, the 8 pulls are
# made again, the global RNG is put back -- and b4..b7 are dispatched again to w0, w1, w0,
# w1. Nothing yielded before the checkpoint is read again; the batches in flight were never
# delivered, so they are fetched again, by the same workers, from the same states.
#
# Random numbers: everything the resume itself causes is drawn from saved states and then
# undone. The global RNGs of the main process belong to the training script: it saves them
# next to the model (rng_states()) and puts them back before resuming.

from __future__ import annotations

import collections
import copy
import sys
import weakref
from typing import Any, TypeVar

import torch

from .. import _tracing
from ..dataloader import (
    DataLoader,
    _InfiniteConstantSampler,
    _MultiProcessingDataLoaderIter,
    _SingleProcessDataLoaderIter,
)
from ..distributed import DistributedSampler
from ..fetch import _DatasetKind
from ..sampler import (
    BatchSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from .state import (
    FORMAT,
    VERSION,
    StateDictError,
    Stateful,
    check,
    checksum,
    fingerprint,
    generator_state,
    rng_states,
    set_generator_state,
    set_rng_states,
)
from .worker import _Keeper, _Reported

T_co = TypeVar("T_co", covariant=True)

_OURS = (SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler,
         BatchSampler, DistributedSampler, _InfiniteConstantSampler)
_TORCH = [("torch.utils.data.sampler", name) for name in (
    "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
    "BatchSampler")] + [("torch.utils.data.distributed", "DistributedSampler"),
                        ("torch.utils.data.dataloader", "_InfiniteConstantSampler")]


def _torch_class(module: str, name: str):
    """torch's class ``module.name`` if that module is loaded (never importing it)."""
    return getattr(sys.modules.get(module), name, None)


def _known(name: str) -> set:
    """The ``__iter__`` functions of our sampler class ``name`` and of torch's: a sampler
    whose ``__iter__`` is one of these draws only from the RNGs a replay restores."""
    found = {cls.__iter__ for cls in _OURS if cls.__name__ == name}
    found |= {getattr(_torch_class(module, cls), "__iter__", None) for module, cls in _TORCH
              if cls == name} - {None}
    return found


def _sampler_chain(index_sampler) -> list:
    """The samplers the index stream is made of, outermost first (a batch sampler, then the
    sampler it groups)."""
    chain = [index_sampler]
    while type(chain[-1]).__iter__ in _known("BatchSampler"):
        chain.append(chain[-1].sampler)
    return chain


def _stream_mode(chain: list, fast_forward: bool) -> str:
    """How the index stream is restored: 'placeholders' (an IterableDataset's: nothing to
    restore), 'protocol' (a Stateful sampler restores what its iteration depends on, then
    the pulls are replayed), 'replay' (the pulls are replayed)."""
    if type(chain[-1]).__iter__ in _known("_InfiniteConstantSampler"):
        return "placeholders"
    if any(isinstance(sampler, Stateful) for sampler in chain):
        return "protocol"
    known = set().union(*map(_known, ("SequentialSampler", "RandomSampler", "BatchSampler",
                                      "SubsetRandomSampler", "WeightedRandomSampler",
                                      "DistributedSampler")))
    unknown = [s for s in chain if not isinstance(s, (list, tuple, range))
               and type(s).__iter__ not in known]
    if unknown and not fast_forward:
        raise TypeError(
            f"StatefulDataLoader cannot save the position of {type(unknown[0]).__name__}: it "
            "has no state_dict()/load_state_dict() (the Stateful protocol), and it is not one "
            "of the samplers whose order the loader knows how to replay. Give it the two "
            "methods, or pass fast_forward=True to replay its indices from the start of the "
            "epoch (exact only if its order depends on nothing but its generator and the "
            "global torch RNG)")
    return "replay"


class StatefulDataLoader(DataLoader[T_co]):
    """A :class:`~minidataloader.DataLoader` with ``state_dict()`` and ``load_state_dict()``:
    save the position in an epoch, and resume there -- in this process or another one --
    with the same remaining batches, worker seeds and random states as an uninterrupted run.

    Takes DataLoader's arguments, and:

    ``fast_forward`` (default False): a part without the :class:`Stateful` protocol is
        restored by running it again from the start of the epoch and skipping what was
        delivered -- an unknown sampler's indices are drawn again, an IterableDataset's
        stream is re-read (in each worker; the batches are thrown away). Without it such a
        part is refused with a message, because the loader cannot know that re-running it
        gives the same stream. (The built-in samplers need no fast-forward: their indices
        are replayed exactly, which costs no data reads.)
    ``snapshot_every_n_steps``: accepted for torchdata compatibility and ignored: every
        state here is exact, whenever it is taken.

    See NOTE [ What a checkpoint holds, and who holds it ].
    """

    def __init__(self, dataset, *args, fast_forward: bool = False,
                 snapshot_every_n_steps: int | None = 1, **kwargs) -> None:
        super().__init__(dataset, *args, **kwargs)
        if not isinstance(fast_forward, bool):
            raise TypeError(f"fast_forward should be True or False, got {fast_forward!r}")
        self.fast_forward = fast_forward
        self._chain = _sampler_chain(self._index_sampler)
        self._stream_mode = _stream_mode(self._chain, fast_forward)
        self._resume = None  # a loaded state, for the next iter()
        self._restoring = None  # the state the iterator being built restores
        self._live = None  # weak reference to the current iterator (if it does not persist)
        self._epoch_rng = None  # see _new_base_seed
        self._epochs = 0  # iter() calls, a resumed epoch counted once

    # --- hooks of the core -------------------------------------------------------------

    def _get_iterator(self):
        self._restoring, self._resume = self._resume, None
        try:
            if self.num_workers == 0:
                return _StatefulSingleProcessIter(self)
            self.check_worker_number_rationality()
            return _StatefulMultiProcessingIter(self)
        finally:
            self._restoring = None

    def _new_base_seed(self) -> int:
        if self._restoring is not None and self._restoring["base_seed"] is not None:
            return self._restoring["base_seed"]  # resuming: drawn long ago, not again
        seed = super()._new_base_seed()
        if (self.fast_forward and self.num_workers == 0
                and self._dataset_kind == _DatasetKind.Iterable):
            # A fast-forward without workers re-reads the stream from the random states the
            # epoch's iter(dataset) saw: these.
            self._epoch_rng = rng_states()
        return seed

    def __iter__(self):
        resume = self._resume
        if resume is not None and resume["epoch"] is not None:
            self._epochs = resume["epochs_started"] - 1  # the epoch resumed: not a new one
        iterator = super().__iter__()
        self._epochs += 1
        if not self.persistent_workers:
            self._live = weakref.ref(iterator)
        return iterator

    # --- the state -----------------------------------------------------------------------

    def _generators(self) -> list[torch.Generator]:
        """The generators the loader and its samplers draw from, each once."""
        found = [self.generator] + [getattr(sampler, "generator", None) for sampler in self._chain]
        unique = []
        for generator in found:
            if isinstance(generator, torch.Generator) and not any(generator is g for g in unique):
                unique.append(generator)
        return unique

    def _distributed(self) -> list:
        """The DistributedSamplers of the chain: their ``epoch`` shapes the stream."""
        return [sampler for sampler in self._chain
                if type(sampler).__iter__ in _known("DistributedSampler")]

    def _chain_target(self):
        """The Stateful sampler of the chain (the outermost one)."""
        return next(sampler for sampler in self._chain if isinstance(sampler, Stateful))

    def _current_iterator(self):
        if self.persistent_workers:
            return self._iterator
        return self._live() if self._live is not None else None

    def state_dict(self) -> dict[str, Any]:
        """Where this loader is: plain data for ``torch.save``, to give ``load_state_dict``
        of a loader built the same way (in this process or another one)."""
        if self._resume is not None:  # loaded and not used yet: still the position
            return dict(self._resume)
        iterator = self._current_iterator()
        state = {
            "format": FORMAT, "version": VERSION,
            "loader": fingerprint(self, self._chain),
            "epochs_started": self._epochs,
            "generators": [generator_state(g) for g in self._generators()],
            "sampler_epochs": [sampler.epoch for sampler in self._distributed()],
            "sampler": (copy.deepcopy(self._chain_target().state_dict())
                        if self._stream_mode == "protocol" else None),
            "dataset": (copy.deepcopy(self.dataset.state_dict())
                        if isinstance(self.dataset, Stateful) else None),
            "base_seed": None, "epoch": None, "workers": None,
        }
        if iterator is not None:
            iterator._save(state)
        state["checksum"] = checksum(state)
        # (not `epoch`: a trace numbers its epochs itself, from the start of the recording)
        _tracing.emit("checkpoint", epochs_started=state["epochs_started"],
                      yielded=(state["epoch"] or {}).get("yielded"))
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Make the next ``iter(loader)`` continue from ``state_dict`` (what ``state_dict()``
        returned, here or in another process). A state from a loader built differently, from
        another version, or altered, raises :class:`StateDictError` saying what differs."""
        check(state_dict, self, self._chain)
        if self._iterator is not None:  # persistent workers of another position: stop them
            self._iterator._shutdown_workers()
            self._iterator = None
        self._live = None
        for generator, saved in zip(self._generators(), state_dict["generators"]):
            set_generator_state(generator, saved)
        for sampler, epoch in zip(self._distributed(), state_dict["sampler_epochs"]):
            sampler.epoch = epoch
        if state_dict["sampler"] is not None:  # as it was before the epoch's iter()
            self._chain_target().load_state_dict(state_dict["sampler"])
        if state_dict["dataset"] is not None:
            self.dataset.load_state_dict(state_dict["dataset"])
        self._epochs = state_dict["epochs_started"]
        resumes = state_dict["epoch"] is not None or state_dict["workers"] is not None
        self._resume = state_dict if resumes else None


class _StatefulIter:
    """What both stateful iterators add to the core's: the index stream counted, its random
    states snapshotted at its first pull, and replayed on resume (see the NOTE above)."""

    def _begin_stream(self, loader: StatefulDataLoader, restore: dict | None) -> None:
        """A new epoch's stream; called before the core's iter(sampler)."""
        self._mode = loader._stream_mode
        self._chain = loader._chain
        self._generator_list = loader._generators()
        self._distributed = loader._distributed()
        self._target = loader._chain_target() if self._mode == "protocol" else None
        self._pulled = 0
        self._started = False  # the epoch's first pull has happened
        self._snapshot = None  # the random states at the first pull
        self._exhausted = False  # the sampler said StopIteration
        self._finished = False
        self._plan = restore["epoch"] if restore is not None else None
        if restore is not None:
            self._sampler_start = restore["sampler"]
        elif self._target is not None:  # what this epoch's iteration depends on
            self._sampler_start = copy.deepcopy(self._target.state_dict())
        if self._plan is not None:  # the position is the saved one, replayed at the next pull
            self._pulled, self._exhausted = self._plan["pulled"], self._plan["exhausted"]
            self._started = self._plan["started"]
        if self._started:
            self._snapshot = {"torch": self._plan["torch_rng"],
                              "generators": restore["generators"],
                              "sampler_epochs": restore["sampler_epochs"]}

    def _next_index(self):
        if self._plan is not None:
            self._replay_stream()
        if not self._started:
            self._started = True
            self._snapshot = {"torch": torch.get_rng_state().numpy().tobytes(),
                              "generators": [generator_state(g) for g in self._generator_list],
                              "sampler_epochs": [s.epoch for s in self._distributed]}
            self._first_pull(None)
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            self._exhausted = True
            raise
        self._pulled += 1
        return index

    def _first_pull(self, plan: dict | None) -> None:
        """Called before the epoch's first pull, or before a resumed epoch's next one."""

    def _replay_stream(self) -> list:
        """Resuming: make the epoch's pulls again -- indices only, drawn from the random
        states saved at the first pull, then the training loop's global RNG put back -- and
        return ``(batch, worker, pull, index)`` for each batch that was in flight, in order."""
        plan, self._plan = self._plan, None
        _tracing.emit("restore", yielded=plan["yielded"],
                      in_flight=[batch for batch, _, _ in plan["in_flight"]])
        if not plan["started"]:
            return []  # the first pull is still to come: it happens as it would have
        self._first_pull(plan)
        keep = {pull: (batch, worker) for batch, pull, worker in plan["in_flight"]}
        if self._mode == "placeholders":  # an IterableDataset's: every pull is the same
            index = next(iter(self._chain[0]))
            pulls = [(pull, index) for pull in sorted(keep)]
        else:
            pulls = self._pull_again(plan, keep)
        if plan["exhausted"]:
            self._sampler_iter = iter(())
        return [(*keep[pull], pull, index) for pull, index in pulls]

    def _pull_again(self, plan: dict, keep: dict) -> list:
        user_rng = torch.get_rng_state()
        try:
            # The generators and DistributedSampler epochs were set by load_state_dict.
            torch.set_rng_state(torch.frombuffer(bytearray(self._snapshot["torch"]),
                                                 dtype=torch.uint8))
            if self._target is not None:
                self._target.load_state_dict(self._sampler_start)
            self._sampler_iter = iter(self._chain[0])
            pulls = []
            for pull in range(plan["pulled"]):
                try:
                    index = next(self._sampler_iter)
                except StopIteration:
                    raise StateDictError(
                        f"the sampler gave {pull} batches of indices this epoch, but "
                        f"{plan['pulled']} had been taken when the state was saved: its order "
                        "is not reproducible from the state") from None
                if pull in keep:
                    pulls.append((pull, index))
            if plan["exhausted"]:  # it had said StopIteration: what it did then, it does now
                for _ in self._sampler_iter:
                    raise StateDictError("the sampler gives more batches of indices this "
                                         "epoch than when the state was saved: its order is "
                                         "not reproducible from the state")
            return pulls
        finally:
            torch.set_rng_state(user_rng)  # the training loop's RNG: as it was

    def __next__(self):
        try:
            return super().__next__()
        except StopIteration:
            self._finished = True
            raise

    def _stream_state(self, in_flight: list) -> dict:
        """The index stream's part of a mid-epoch state; ``in_flight`` lists
        ``[batch, pull, worker]`` for the batches dispatched and not yet yielded."""
        epoch = {"yielded": self._num_yielded, "started": self._started,
                 "pulled": self._pulled, "exhausted": self._exhausted, "in_flight": in_flight}
        if self._started:
            epoch["torch_rng"] = self._snapshot["torch"]
        return epoch

    def _save(self, state: dict) -> None:
        """Fill in the iterator's part of ``state``: the epoch in progress, if any."""
        if self._finished:
            return
        state["epoch"] = self._epoch_state()
        state["base_seed"] = self._base_seed  # drawn at this epoch's iter(): not again
        if self._target is not None:
            state["sampler"] = self._sampler_start
        if self._started:  # as they were at the first pull: the replay moves them
            state["generators"] = self._snapshot["generators"]
            state["sampler_epochs"] = self._snapshot["sampler_epochs"]


class _StatefulSingleProcessIter(_StatefulIter, _SingleProcessDataLoaderIter):
    """num_workers=0: no prefetch, so the position is the pulls made, and the dataset (in
    this process) is asked for its state when the state is taken."""

    def __init__(self, loader: StatefulDataLoader) -> None:
        restore = loader._restoring
        plan = restore["epoch"] if restore is not None else None
        self._fast_forward = loader.fast_forward
        self._begin_stream(loader, restore)
        user_rng = rng_states()
        super().__init__(loader)  # makes the fetcher: iter(dataset) for an IterableDataset
        self._epoch_rng = loader._epoch_rng
        if plan is None:
            return
        if self._dataset_kind == _DatasetKind.Iterable:
            if "iterator" in plan:
                self._dataset_fetcher.dataset_iter.load_state_dict(plan["iterator"])
            elif not isinstance(self._dataset, Stateful):
                self._fast_forward_stream(plan)
            self._dataset_fetcher.ended = plan["ended"]
        set_rng_states(user_rng)  # whatever iter(dataset) or a re-reading drew: undone
        self._num_yielded = plan["yielded"]

    def _fast_forward_stream(self, plan: dict) -> None:
        """Make the stream again from the random states the epoch's iter(dataset) saw, and
        re-read the batches taken from it so far, throwing them away."""
        self._epoch_rng = plan["epoch_rng"]
        set_rng_states(self._epoch_rng)
        fetcher = self._dataset_fetcher = _DatasetKind.create_fetcher(
            self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
            self._drop_last)
        placeholder = next(iter(self._index_sampler))
        for _ in range(plan["pulled"]):
            try:
                fetcher.fetch(placeholder)
            except Exception:  # noqa: BLE001 - the end of the stream, or an error, as before
                pass

    def _epoch_state(self) -> dict:
        epoch = self._stream_state([])
        dataset = self._dataset
        if self._dataset_kind == _DatasetKind.Iterable:
            iterator = self._dataset_fetcher.dataset_iter
            if iterator is not dataset and isinstance(iterator, Stateful):
                epoch["iterator"] = copy.deepcopy(iterator.state_dict())
            elif not isinstance(dataset, Stateful):
                if not self._fast_forward:
                    raise _no_protocol(dataset)
                epoch["epoch_rng"] = self._epoch_rng
            epoch["ended"] = self._dataset_fetcher.ended
        return epoch


def _no_protocol(dataset) -> TypeError:
    return TypeError(
        f"the IterableDataset {type(dataset).__name__} cannot save its position: neither it "
        "nor the iterator its __iter__ returns has state_dict()/load_state_dict() (the "
        "Stateful protocol). Implement them (state_dict() says how far the stream has got; "
        "after load_state_dict() the next iter() continues from there), or pass "
        "fast_forward=True to StatefulDataLoader to resume by re-reading the stream")


class _WorkerCycle:
    """``itertools.cycle(range(n))`` that can say whose turn is next, and can be told which
    worker gets the next task (a batch in flight, dispatched again on resume)."""

    def __init__(self, n: int, start: int = 0) -> None:
        self.n, self.next_worker, self.forced = n, start, None

    def __iter__(self):
        return self

    def __next__(self) -> int:
        if self.forced is not None:
            worker, self.forced = self.forced, None
            return worker
        worker = self.next_worker
        self.next_worker = (worker + 1) % self.n
        return worker


class _StatefulMultiProcessingIter(_StatefulIter, _MultiProcessingDataLoaderIter):
    """Workers: each result comes with its worker's state after it (a _Reported).

    NOTE [ A worker's state, as of what was consumed ]
    The state kept for a worker is the one that came with its last result the main process
    has consumed: a batch yielded, an error raised, the end of its stream. Results arrive
    early (parked in the reorder buffer) but one worker's results are consumed in the order
    it sent them, so its reports -- which hold only what changed -- are applied in that
    order, each when its result is consumed:

        worker 1 sends     b1 + s1    b3 + s3    end + s5      (s: its state after it)
        main receives      b1         b3 (early: parked)  end (worker 1 retires at once)
        main yields        b0  b1  b2  b3
        state kept for 1   ..  s1  s1  s5: b3 consumed, and the end right behind it

    A checkpoint between b1 and b3 saves s1: worker 1 is restored to it and fetches b3
    again; the end of its stream, received but not consumed, is found again too."""

    def __init__(self, loader: StatefulDataLoader) -> None:
        restore = loader._restoring
        workers = restore["workers"] if restore is not None else None
        n = loader.num_workers
        self._committed = [w["state"] for w in workers] if workers else [None] * n
        self._base = [w["base"] for w in workers] if workers else [None] * n
        self._retire_on_resume = [w["retired"] for w in workers] if workers else [False] * n
        self._retired = [False] * n  # the end of its stream was consumed this epoch
        self._pending = [collections.deque() for _ in range(n)]  # received, not consumed
        self._pull_of = {}  # batch number -> pull number
        self._redispatch = collections.deque()
        self._sent_at_checkpoint = None
        self._fast_forward = loader.fast_forward
        self._placeholder = (next(iter(loader._index_sampler))
                             if loader._dataset_kind == _DatasetKind.Iterable else None)
        records = ([{"state": state, "base": base} for state, base in zip(self._committed,
                                                                          self._base)]
                   if workers else [None] * n)  # None: a worker that starts afresh
        self._keepers = {worker_id: _Keeper(worker_id, records[worker_id], self._placeholder)
                         for worker_id in range(n)}  # see NOTE [ The keeper hook ]
        self._begin_stream(loader, restore)
        super().__init__(loader)  # starts the workers, dispatches the first batches
        if restore is not None and restore["epoch"] is not None:
            self._num_yielded = restore["epoch"]["yielded"]

    def _reset(self, loader, first_iter: bool = False) -> None:
        if not first_iter:  # persistent workers, a new epoch
            self._begin_stream(loader, None)
            self._pull_of = {}
        super()._reset(loader, first_iter)
        if not first_iter:
            self._new_epoch_for_workers()

    def _new_epoch_for_workers(self) -> None:
        """Persistent workers acknowledged the new epoch after sending everything of the
        last one (dropped, after a `break`): their states include all of it."""
        for worker_id, pending in enumerate(self._pending):
            for report, _ in pending:
                self._merge(worker_id, report)
            pending.clear()
            if self._committed[worker_id] is not None:
                self._committed[worker_id] = {**self._committed[worker_id], "count": 0,
                                              "started": False}
            self._base[worker_id] = self._committed[worker_id]
        self._retired = [False] * self._num_workers

    def _first_pull(self, plan: dict | None) -> None:
        self._worker_queue_idx_cycle = _WorkerCycle(self._num_workers,
                                                    plan["next_worker"] if plan else 0)
        if plan is None:
            return
        first = min((batch for batch, _, _ in plan["in_flight"]), default=plan["sent"])
        self._rcvd_idx = self._send_idx = first  # batches keep their numbers
        self._sent_at_checkpoint = plan["sent"]
        for worker_id, retired in enumerate(self._retire_on_resume):
            if retired:  # the end of its stream was consumed before the checkpoint
                self._retired[worker_id] = True
                if self._persistent_workers:
                    self._workers_status[worker_id] = False
                else:
                    self._mark_worker_as_unavailable(worker_id)

    def _next_index(self):
        if self._plan is not None:
            self._redispatch.extend(self._replay_stream())
        if self._redispatch:  # a batch in flight at the checkpoint: to the same worker
            batch, worker, pull, index = self._redispatch.popleft()
            self._send_idx = batch
            self._worker_queue_idx_cycle.forced = worker
            self._pull_of[batch] = pull
            return index
        if self._sent_at_checkpoint is not None:  # new batches are numbered on from there
            self._send_idx = max(self._send_idx, self._sent_at_checkpoint)
            self._sent_at_checkpoint = None
        index = super()._next_index()
        self._pull_of[self._send_idx] = self._pulled - 1
        return index

    def _get_data(self):
        idx, data = super()._get_data()
        if isinstance(data, _Reported):
            pending = self._pending[data.worker_id]
            pending.append((data.report, data.is_stream_end()))
            if data.is_stream_end() and len(pending) == 1:  # nothing of it before: consumed
                self._consume(data.worker_id)
            data = data.payload
        return idx, data

    def _merge(self, worker_id: int, report: dict) -> None:
        self._committed[worker_id] = {**(self._committed[worker_id] or {}), **report}

    def _consume(self, worker_id: int) -> None:
        """The worker's oldest result is consumed: its report becomes the saved state; an
        end of stream right behind it is consumed with it (the worker retires)."""
        pending = self._pending[worker_id]
        while pending:
            report, is_end = pending.popleft()
            self._merge(worker_id, report)
            if is_end:
                self._retired[worker_id] = True
            if not (pending and pending[0][1]):
                break

    def _process_data(self, data, worker_id: int, batch: int):
        self._consume(worker_id)
        self._pull_of.pop(batch, None)
        return super()._process_data(data, worker_id, batch)

    def _epoch_state(self) -> dict:
        in_flight = [[batch, self._pull_of[batch], info[0]]
                     for batch, info in sorted(self._task_info.items())
                     if not self._retired[info[0]]]
        epoch = self._stream_state(in_flight)
        epoch["sent"] = self._send_idx
        epoch["next_worker"] = self._worker_queue_idx_cycle.next_worker
        return epoch

    def _save(self, state: dict) -> None:
        super()._save(state)
        in_epoch = state["epoch"] is not None
        if self._dataset_kind == _DatasetKind.Iterable and not self._fast_forward:
            for committed in self._committed:
                if committed is not None and committed["started"] and not (
                        {"dataset", "iterator"} & set(committed)):
                    raise _no_protocol(self._dataset)
        if not in_epoch and not self._persistent_workers:
            return  # the next epoch starts new workers: nothing of these is needed
        state["base_seed"] = self._base_seed
        workers = []
        for worker_id, committed in enumerate(self._committed):
            if committed is not None and not in_epoch:  # the next epoch's iter() is to come
                committed = {**committed, "count": 0, "started": False}
            workers.append({"state": committed, "retired": in_epoch and self._retired[worker_id],
                            "base": self._base[worker_id] if self._fast_forward else None})
        state["workers"] = workers
