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
#     were made                                      w's that the main process CONSUMED
#   the pulls in flight: dispatched, not yet
#     yielded
#   whose turn is next: the worker after the
#     one whose batch was yielded last
#
#   time --------------------------------------------------------------------------->
#   yielded        b0(w0) b1(w1) b2(w0) b3(w1) | state_dict()
#   in flight                                  | b4(w0: arrived, parked) b5(w1: fetching)
#                                              | b6(w0: queued)          b7(w1: queued)
#   saved for w0:  its state after b2          (it had fetched b4 too: that is not saved)
#   saved for w1:  its state after b3
#   saved stream:  8 pulls; pulls 4..7 in flight; next in turn: w0 (b3 came from w1)
#
# The loader keeps this state current as batches are consumed -- each yielded batch
# updates the few parts that moved -- so state_dict() hands over what is there, also after
# `break` or `del` has ended the iterator (and, without persistent workers, its workers);
# only what a dataset or sampler of the main process must be asked for (its own
# state_dict()) is asked when the state is taken.
#
# Resuming (a new process): iter() draws no base seed (the saved one is used); each new
# worker seeds itself from it, runs worker_init_fn, then its keeper puts back the saved
# state (stateful/worker.py). The sampler is replayed -- only indices, no data: its
# generators and the global RNG are set to their state at the first pull, the 8 pulls are
# made again, the global RNG is put back -- and the pulls that were in flight are
# dispatched first, in order, starting with the worker whose turn it was. That is the
# uninterrupted run's dispatch again: round robin gives b4..b7 to w0, w1, w0, w1. (With an
# IterableDataset the pulls are placeholders and nothing is replayed: every worker goes on
# with its own stream, a worker whose stream end was consumed ends at once, and round robin
# over the workers still streaming gives the same batches in the same order.) Nothing
# yielded before the checkpoint is read again; the batches in flight were never delivered,
# so they are fetched again, by the same workers, from the same states.
#
# Random numbers: everything the resume itself causes is drawn from saved states and then
# undone. The global RNGs of the main process belong to the training script: it saves them
# next to the model (rng_states()) and puts them back before resuming. (A dataset's own
# load_state_dict may restore them too, without workers: that restore stands.)

from __future__ import annotations

import collections
import copy
import itertools
import sys
from typing import Any, TypeVar

import torch

from .. import _tracing
from ..dataloader import DataLoader, _MultiProcessingDataLoaderIter, _SingleProcessDataLoaderIter
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
    fingerprint,
    generator_state,
    set_generator_state,
    set_torch_rng_state,
    torch_rng_state,
)
from .worker import _Keeper, _Reported

T_co = TypeVar("T_co", covariant=True)

_OURS = (SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler,
         BatchSampler, DistributedSampler)
_TORCH = [("torch.utils.data.sampler", name) for name in (
    "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
    "BatchSampler")] + [("torch.utils.data.distributed", "DistributedSampler")]
_REPLAYABLE = ("SequentialSampler", "RandomSampler", "BatchSampler", "SubsetRandomSampler",
               "WeightedRandomSampler", "DistributedSampler")


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


def _stream_mode(chain: list, iterable: bool) -> str:
    """How the index stream is restored: 'placeholders' (an IterableDataset's: nothing to
    restore), 'protocol' (a Stateful sampler restores what its iteration depends on, then
    the pulls are replayed), 'replay' (the pulls are replayed), 'unknown' (a sampler the
    loader does not know: decided when the epoch's iterator exists, see _StatefulIter)."""
    if iterable:
        return "placeholders"
    if any(isinstance(sampler, Stateful) for sampler in chain):
        return "protocol"
    known = set().union(*map(_known, _REPLAYABLE))
    if all(isinstance(s, (list, tuple, range)) or type(s).__iter__ in known for s in chain):
        return "replay"
    return "unknown"


class _Batches:
    """``iter(BatchSampler(sampler, batch_size, drop_last))``, drawing as torch's does,
    with the sampler's iterator in sight (``sampler_iter()``): when that iterator is
    Stateful, its state is the stream's position."""

    def __init__(self, batch_sampler) -> None:
        self.sampler = batch_sampler.sampler
        self.batch_size, self.drop_last = batch_sampler.batch_size, batch_sampler.drop_last
        self._iterator = None

    def __iter__(self):
        return self

    def sampler_iter(self):
        if self._iterator is None:  # at the first pull, as a BatchSampler's generator does
            self._iterator = iter(self.sampler)
        return self._iterator

    def __next__(self) -> list:
        batch = list(itertools.islice(self.sampler_iter(), self.batch_size))
        if not batch or (self.drop_last and len(batch) < self.batch_size):
            raise StopIteration
        return batch


class _Position:
    """Where the current epoch is. Its iterator keeps ``state`` current as batches are
    consumed; the loader holds the position, not the iterator, so the state outlives a
    `break` (and the workers do not). ``ask(state)``: the state with what must be asked of
    a dataset or sampler of the main process when the state is taken (None: nothing).
    ``refusal``: the error a state taken now raises (a position that would be lost).
    ``between``: once the epoch has ended (``state`` None), what persistent workers carry
    into the next one."""

    __slots__ = ("state", "ask", "refusal", "between")

    def __init__(self) -> None:
        self.state = self.ask = self.refusal = self.between = None


class StatefulDataLoader(DataLoader[T_co]):
    """A :class:`~minidataloader.DataLoader` with ``state_dict()`` and ``load_state_dict()``:
    save the position in an epoch, and resume there -- in this process or another one --
    with the same remaining batches, worker seeds and random states as an uninterrupted run.

    Takes DataLoader's arguments, and:

    ``fast_forward`` (default False): a part without the :class:`Stateful` protocol is
        restored by running it again from the start of the epoch and skipping what was
        delivered -- an unknown sampler's indices are drawn again, an IterableDataset's
        stream is re-read (in each worker; the batches are thrown away). Without it, a state
        taken in the middle of an epoch of such a part is refused with a message, because
        the loader cannot know that re-running it gives the same stream. (The built-in
        samplers need no fast-forward: their indices are replayed exactly, which costs no
        data reads. At the start or the end of an epoch nothing needs one.)
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
        self._stream_mode = _stream_mode(self._chain,
                                         self._dataset_kind == _DatasetKind.Iterable)
        self._resume = None  # a loaded state, for the next iter()
        self._restoring = None  # the state the iterator being built restores
        self._position = None  # the current epoch's _Position
        self._epochs = 0  # iter() calls, a resumed epoch counted once

    # --- hooks of the core (NOTE [ Hooks for the stateful loader ]) ---------------------

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
        return super()._new_base_seed()

    def __iter__(self):
        resume = self._resume
        if resume is not None and resume["epoch"] is not None:
            self._epochs = resume["epochs_started"] - 1  # the epoch resumed: not a new one
        self._epochs += 1
        try:
            return super().__iter__()
        except BaseException:
            self._epochs -= 1
            raise

    # --- the state -----------------------------------------------------------------------

    def _generators(self) -> list:
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

    def state_dict(self) -> dict[str, Any]:
        """Where this loader is: plain data for ``torch.save`` (and, when what the dataset
        and sampler save is plain too, for ``json.dumps``), to give ``load_state_dict`` of a
        loader built the same way (in this process or another one). Taken after ``break``
        it is where the loop stopped. Do not edit it: it is the loader's own data."""
        if self._resume is not None:  # loaded and not used yet: still the position
            return self._resume
        position = self._position
        if position is not None and position.state is not None:
            if position.refusal is not None:
                raise position.refusal
            state = position.state if position.ask is None else position.ask(position.state)
        else:
            state = self._between_epochs(position)
        # (not `epoch`: a trace numbers its epochs itself, from the start of the recording;
        # and only when tracing: the event's fields cost more than the rest of this call)
        if _tracing.enabled:
            _tracing.emit("checkpoint", epochs_started=state["epochs_started"],
                          yielded=(state["epoch"] or {}).get("yielded"))
        return state

    def _between_epochs(self, position: _Position | None) -> dict:
        """The state with no epoch under way: what the next iter() starts from."""
        state = {
            "format": FORMAT, "version": VERSION,
            "loader": fingerprint(self, self._chain),
            "epochs_started": self._epochs,
            "generators": [generator_state(g) for g in self._generators()],
            "sampler_epochs": [sampler.epoch for sampler in self._distributed()],
            "sampler": (copy.deepcopy(self._chain_target().state_dict())
                        if self._stream_mode == "protocol" else None),
            "dataset": (copy.deepcopy(self.dataset.state_dict())
                        if self.num_workers == 0 and isinstance(self.dataset, Stateful)
                        else None),
            "base_seed": None, "epoch": None, "workers": None,
        }
        if position is not None and position.between is not None:
            state.update(position.between)
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Make the next ``iter(loader)`` continue from ``state_dict`` (what ``state_dict()``
        returned, here or in another process). A state from a loader built differently, from
        another version, or cut short, raises :class:`StateDictError` saying what differs."""
        check(state_dict, self, self._chain)
        self._iterator = None  # persistent workers of another position: let them go
        self._position = None
        for generator, saved in zip(self._generators(), state_dict["generators"]):
            set_generator_state(generator, saved)
        for sampler, epoch in zip(self._distributed(), state_dict["sampler_epochs"]):
            sampler.epoch = epoch
        if state_dict["sampler"] is not None:  # as it was before the epoch's iter()
            self._chain_target().load_state_dict(state_dict["sampler"])
        if state_dict["dataset"] is not None:  # before iter(dataset), as torchdata does
            self.dataset.load_state_dict(state_dict["dataset"])
        self._epochs = state_dict["epochs_started"]
        resumes = state_dict["epoch"] is not None or state_dict["workers"] is not None
        self._resume = state_dict if resumes else None


def _no_protocol(dataset) -> TypeError:
    return TypeError(
        f"the IterableDataset {type(dataset).__name__} cannot save its position in the middle "
        "of an epoch: neither it nor the iterator its __iter__ returns has state_dict()/"
        "load_state_dict() (the Stateful protocol). Implement them (state_dict() says how far "
        "the stream has got; after load_state_dict() the stream continues from there), take "
        "the state between epochs, or pass fast_forward=True to StatefulDataLoader to resume "
        "by re-reading the stream")


def _not_replayable(sampler) -> TypeError:
    return TypeError(
        f"StatefulDataLoader cannot save the position of {type(sampler).__name__} in the "
        "middle of an epoch: neither it nor the iterator its __iter__ returns has "
        "state_dict()/load_state_dict() (the Stateful protocol), and it is not one of the "
        "samplers whose order the loader knows how to replay. Give it (or its iterator) the "
        "two methods, take the state between epochs, or pass fast_forward=True to replay its "
        "indices from the start of the epoch (exact only if its order depends on nothing but "
        "its generator and the global torch RNG)")


def _asking(iterator):
    """``ask`` for a Stateful sampler iterator: its state after the newest pull, when the
    state is taken (the pulls in flight travel as indices)."""
    def ask(state: dict) -> dict:
        epoch = {**state["epoch"], "sampler_iter": copy.deepcopy(iterator.state_dict())}
        return {**state, "epoch": epoch}

    return ask


class _StatefulIter:
    """What both stateful iterators add to the core's: the index stream counted, its random
    states snapshotted at its first pull and replayed on resume, and the epoch's position
    kept current (see the NOTE above)."""

    def _begin_stream(self, loader: StatefulDataLoader, restore: dict | None) -> None:
        """A new epoch's stream; called before the core's iter(sampler)."""
        self._mode = loader._stream_mode
        self._chain = loader._chain
        self._generator_list = loader._generators()
        self._distributed = loader._distributed()
        self._target = loader._chain_target() if self._mode == "protocol" else None
        self._fast_forward = loader.fast_forward
        self._replayable = True  # False: an unknown sampler, no Stateful iterator
        self._pulled = 0
        self._started = False  # the epoch's first pull has happened
        self._snapshot = None  # the random states at the first pull
        self._exhausted = False  # the sampler said StopIteration
        self._plan = restore["epoch"] if restore is not None else None
        if restore is not None:
            self._sampler_start = restore["sampler"]
        else:  # what this epoch's iteration depends on
            self._sampler_start = (copy.deepcopy(self._target.state_dict())
                                   if self._target is not None else None)
        if self._plan is not None:  # the position is the saved one, replayed at the next pull
            self._pulled, self._exhausted = self._plan["pulled"], self._plan["exhausted"]
            self._started = self._plan["started"]
        if self._started:
            self._snapshot = {"torch": self._plan["torch_rng"],
                              "generators": restore["generators"],
                              "sampler_epochs": restore["sampler_epochs"]}
        self._fingerprint = fingerprint(loader, self._chain)
        self._started_epochs = loader._epochs
        self._position = loader._position = _Position()

    def _random_states(self) -> dict:
        """What the index stream draws from: torch's global RNG, the generators, the
        DistributedSamplers' epochs."""
        return {"torch": torch_rng_state(),
                "generators": [generator_state(g) for g in self._generator_list],
                "sampler_epochs": [s.epoch for s in self._distributed]}

    def _fixed(self) -> dict:
        """The parts of the state that stay as they are for the rest of the epoch."""
        snapshot = self._snapshot or self._random_states()  # (before the first pull: now)
        return {"format": FORMAT, "version": VERSION, "loader": self._fingerprint,
                "epochs_started": self._started_epochs,
                "generators": snapshot["generators"],
                "sampler_epochs": snapshot["sampler_epochs"],
                "sampler": self._sampler_start, "dataset": None, "base_seed": self._base_seed}

    def _pull(self):
        """One pull from the index stream."""
        if not self._started:
            self._started = True
            self._snapshot = self._random_states()
            self._resolve_stream()
            self._fixed_parts = self._fixed()
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            self._exhausted = True
            raise
        self._pulled += 1
        return index

    def _resolve_stream(self) -> None:
        """At the epoch's first pull: a sampler the loader does not know keeps its position
        in its iterator if that is Stateful ('iterator'); else it can only be replayed."""
        if self._mode != "unknown":
            return
        if type(self._chain[0]).__iter__ in _known("BatchSampler"):
            self._sampler_iter = _Batches(self._chain[0])
        if isinstance(self._stream_iterator(), Stateful):
            self._mode = "iterator"
        else:
            self._mode, self._replayable = "replay", self._fast_forward

    def _stream_iterator(self):
        """The iterator whose state is the stream's position, in the 'iterator' mode."""
        if isinstance(self._sampler_iter, _Batches):
            return self._sampler_iter.sampler_iter()
        return self._sampler_iter

    def _replay_stream(self) -> list:
        """Resuming: make the epoch's pulls again -- indices only, drawn from the random
        states saved at the first pull, then the training loop's global RNG put back -- and
        return ``(pull, index)`` for each pull that was in flight, in order."""
        plan, self._plan = self._plan, None
        _tracing.emit("restore", yielded=plan["yielded"],
                      in_flight=[batch for batch, _, _ in plan["in_flight"]])
        if not plan["started"]:
            return []  # the first pull is still to come: it happens as it would have
        user_rng = torch_rng_state()
        try:
            set_torch_rng_state(self._snapshot["torch"])
            self._resolve_stream()
            self._fixed_parts = self._fixed()
            if self._mode == "placeholders":  # an IterableDataset's: every pull is the same
                return []
            if self._mode == "iterator":  # its position is its state, after the last pull
                self._stream_iterator().load_state_dict(plan["sampler_iter"])
                return [(pull, index) for (_, pull, _), index
                        in zip(plan["in_flight"], plan.get("in_flight_indices", []))]
            return self._pull_again(plan)
        finally:
            set_torch_rng_state(user_rng)  # the training loop's RNG: as it was

    def _pull_again(self, plan: dict) -> list:
        # The generators and DistributedSampler epochs were set by load_state_dict, and a
        # Stateful sampler was given its state before iter().
        keep = {pull for _, pull, _ in plan["in_flight"]}
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

    def _stream_state(self, in_flight: list) -> dict:
        """The index stream's part of a mid-epoch state; ``in_flight`` lists
        ``[batch, pull, worker]`` for the batches dispatched and not yet yielded."""
        epoch = {"yielded": self._num_yielded, "started": self._started,
                 "pulled": self._pulled, "exhausted": self._exhausted, "in_flight": in_flight}
        if self._started:
            epoch["torch_rng"] = self._snapshot["torch"]
        return epoch

    def __next__(self):
        try:
            data = super().__next__()
        except StopIteration:
            self._position.state = None
            self._position.between = self._carried_over()
            raise
        except Exception:  # raised in its turn: consumed, as a batch is
            self._update()
            raise
        self._update()
        return data

    def _carried_over(self) -> dict | None:
        """What the next epoch needs of this one, when it has ended."""
        return None


class _StatefulSingleProcessIter(_StatefulIter, _SingleProcessDataLoaderIter):
    """num_workers=0: no prefetch, so the position is the pulls made; the dataset (in this
    process) and its iterator are asked for their states when the state is taken."""

    def __init__(self, loader: StatefulDataLoader) -> None:
        restore = loader._restoring
        plan = restore["epoch"] if restore is not None else None
        iterable = loader._dataset_kind == _DatasetKind.Iterable
        placeholder = next(iter(loader._index_sampler)) if iterable else None
        self._main = _Keeper(None, plan and plan.get("main"), placeholder)
        self._keepers = {None: self._main}  # see NOTE [ The keeper hook ]
        self._begin_stream(loader, restore)
        super().__init__(loader)  # makes the fetcher, through _keepers[None]
        if plan is not None:
            self._num_yielded = plan["yielded"]
        self._fixed_parts = self._fixed()
        needs_asking = (iterable or isinstance(self._dataset, Stateful)
                        or self._mode in ("unknown", "iterator"))
        self._position.ask = self._ask if needs_asking else None
        self._update()

    def _next_index(self):
        if self._plan is not None:
            self._replay_stream()
        return self._pull()

    def _update(self) -> None:
        self._position.state = {**self._fixed_parts, "epoch": self._stream_state([]),
                                "workers": None}

    def _ask(self, state: dict) -> dict:
        """What the dataset of this process and its iterator say now (the position after
        the last batch yielded: without workers nothing is fetched ahead)."""
        dataset, keeper, epoch = self._dataset, self._main, dict(state["epoch"])
        if not self._replayable and epoch["yielded"]:
            raise _not_replayable(self._chain[-1])
        iterator = getattr(keeper.fetcher, "dataset_iter", None)
        changes = {}
        if isinstance(dataset, Stateful) and iterator is not dataset:
            changes["dataset"] = copy.deepcopy(dataset.state_dict())
        if self._dataset_kind == _DatasetKind.Iterable:
            stream = keeper.stream_state()
            if "iterator" not in stream and not isinstance(dataset, Stateful):
                if not self._fast_forward and epoch["yielded"]:
                    raise _no_protocol(dataset)
            epoch["main"] = {"state": {"count": self._pulled, "started": True,
                                       "stream_end": False, **stream},
                             "base": {"rng": keeper.base}}
        state = {**state, **changes, "epoch": epoch}
        return _asking(self._stream_iterator())(state) if self._mode == "iterator" else state


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
        self._iterable = loader._dataset_kind == _DatasetKind.Iterable
        self._fast_forward = loader.fast_forward
        self._ordered = loader.in_order
        self._committed = [w["state"] for w in workers] if workers else [None] * n
        # a worker's state when the epoch began: what a fast-forward re-reads from
        self._base = ([w["base"] if w["state"] and w["state"]["started"] else w["state"]
                       for w in workers] if workers else [None] * n)
        self._pending = [collections.deque() for _ in range(n)]  # received, not consumed
        self._entries = [self._entry(w) for w in range(n)]
        placeholder = next(iter(loader._index_sampler)) if self._iterable else None
        records = [{"state": w["state"], "base": base} if w["state"] is not None else None
                   for w, base in zip(workers, self._base)] if workers else [None] * n
        self._keepers = {w: _Keeper(w, records[w], placeholder) for w in range(n)}
        self._begin_epoch(loader, restore)
        super().__init__(loader)  # starts the workers, dispatches the first batches
        if self._plan_yielded is not None:
            self._num_yielded = self._plan_yielded
        self._fixed_parts = self._fixed()
        self._update()

    def _begin_epoch(self, loader, restore) -> None:
        self._begin_stream(loader, restore)
        self._plan_yielded = self._plan["yielded"] if self._plan is not None else None
        self._redo = collections.deque()  # (pull, index) in flight at the checkpoint
        self._in_flight = {}  # batch number -> its pull, until yielded
        self._indices = {}  # batch number -> its indices ('iterator' mode)
        self._last_worker = None  # whose batch was yielded last
        self._lost = None  # a stream without protocol, read from: the error a state raises
        self._first_batch = self._next_batch = self._resumed_first_batch(loader.num_workers)

    def _resumed_first_batch(self, n: int) -> int:
        """The number the epoch's first batch gets: 0; when resuming, the number of the
        first batch in flight, which round robin gives to the worker whose turn it was
        (batch b goes to worker b % n: for a stream, the next such number on)."""
        plan = self._plan
        if plan is None:
            return 0
        first = min((batch for batch, _, _ in plan["in_flight"]), default=plan["sent"])
        return first + (plan["turn"] - first) % n

    def _reset(self, loader, first_iter: bool = False) -> None:
        if not first_iter:  # persistent workers, a new epoch
            self._begin_epoch(loader, None)
        super()._reset(loader, first_iter)
        if not first_iter:
            self._new_epoch_for_workers()
            self._fixed_parts = self._fixed()
            self._update()

    def _new_epoch_for_workers(self) -> None:
        """Persistent workers acknowledged the new epoch after sending everything of the
        last one (dropped, after a `break`): their states include all of it."""
        for worker_id, pending in enumerate(self._pending):
            for report, _ in pending:
                self._merge(worker_id, report)
            pending.clear()
            self._committed[worker_id] = _for_next_epoch(self._committed[worker_id])
            self._base[worker_id] = self._committed[worker_id]
            self._entries[worker_id] = self._entry(worker_id)
        self._lost = None  # what was read belongs to the epoch that ended

    def _next_index(self):
        if self._plan is not None:
            self._redo.extend(self._replay_stream())
        if self._redo:  # a pull in flight at the checkpoint: dispatched again first
            pull, index = self._redo.popleft()
        else:
            index = self._pull()
            pull = self._pulled - 1
        if not self._iterable:
            self._in_flight[self._next_batch] = pull
            if self._mode == "iterator":
                self._indices[self._next_batch] = index
        self._next_batch += 1
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
        committed = self._committed[worker_id] = {**(self._committed[worker_id] or {}),
                                                  **report}
        if (self._iterable and not self._fast_forward and self._lost is None
                and not {"dataset", "iterator"} & committed.keys()):
            self._lost = _no_protocol(self._dataset)
        self._entries[worker_id] = self._entry(worker_id)

    def _entry(self, worker_id: int) -> dict:
        base = self._base[worker_id] if self._fast_forward and self._iterable else None
        return {"state": self._committed[worker_id], "base": base}

    def _consume(self, worker_id: int) -> None:
        """The worker's oldest result is consumed: its report becomes the saved state; an
        end of stream right behind it is consumed with it."""
        pending = self._pending[worker_id]
        while pending:
            report, _ = pending.popleft()
            self._merge(worker_id, report)
            if not (pending and pending[0][1]):
                break

    def _process_data(self, data, worker_id: int, batch: int):
        self._consume(worker_id)
        self._in_flight.pop(batch, None)
        self._indices.pop(batch, None)
        self._last_worker = worker_id
        return super()._process_data(data, worker_id, batch)

    def _update(self) -> None:
        n = self._num_workers
        last = self._first_batch - 1 if self._last_worker is None else self._last_worker
        turn = (last + 1) % n
        ordered = self._ordered  # then round robin says who has each batch in flight
        in_flight = [[batch, pull, batch % n if ordered else None]
                     for batch, pull in self._in_flight.items()]
        epoch = self._stream_state(in_flight)
        epoch["sent"] = self._next_batch
        epoch["next_worker"] = self._next_batch % n  # where round robin sends the next batch
        epoch["turn"] = turn  # whose batch comes next: where a resume starts
        if self._mode == "iterator":
            epoch["in_flight_indices"] = list(self._indices.values())
        position = self._position
        position.state = {**self._fixed_parts, "epoch": epoch, "workers": list(self._entries)}
        if self._lost is not None:
            position.refusal = self._lost
        elif not self._replayable and self._num_yielded:
            position.refusal = _not_replayable(self._chain[-1])
        if self._mode == "iterator" and position.ask is None:  # (never this iterator itself:
            position.ask = _asking(self._stream_iterator())   # its workers end with it)

    def _carried_over(self) -> dict | None:
        if not self._persistent_workers:
            return None  # the next epoch starts new workers: nothing of these is needed
        return {"base_seed": self._base_seed,
                "workers": [{"state": _for_next_epoch(committed), "base": None}
                            for committed in self._committed]}


def _for_next_epoch(committed: dict | None) -> dict | None:
    """A persistent worker's state, as the next epoch's iter(dataset) finds it."""
    if committed is None:
        return None
    return {**committed, "count": 0, "started": False, "stream_end": False}
