"""Chapter 14 (checkpoint and resume mid-epoch): the exercises and their hidden cases.

Where torch's behaviour is the rule, the expected values come from torch: the batches a
``DataLoader`` gives from a generator's state (``remaining_batches``), and which batches
its workers have been sent at a checkpoint (``batches_in_flight``, observed in real forked
workers). The sampler's state and the workers' states follow the book's design, which the
chapter proves on the package's ``StatefulDataLoader``.
"""

from __future__ import annotations

import copy
import random

import numpy as np
import torch
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    RandomSampler,
    SequentialSampler,
    default_collate,
    get_worker_info,
)

from minidataloader.stateful import StatefulDataLoader
from minidataloader_course.chapters.ch14 import solution as solutions
from minidataloader_course.chapters.ch14.resume import through_a_file
from minidataloader_course.chapters.multiprocess_cases import (
    more_workers_than_cpus_is_fine,
    workers_for_a_check,
)
from minidataloader_course.checker.framework import (
    Case,
    Exercise,
    Rule,
    TooManyItems,
    register,
    take,
)
from minidataloader_course.checker.questions import Choice, Prediction
from minidataloader_course.learner.stubs.resumable import random_states, set_random_states
from minidataloader_course.shared.compare import seed_everything
from minidataloader_course.shared.resumable_training import NoisySamples

# The package's finished pieces: what each exercise rebuilds.
STATEFUL = ("minidataloader.stateful.StatefulDataLoader",
            "minidataloader.stateful.loader.StatefulDataLoader")


# ---------------------------------------------------------------------------------------
# A sampler that saves its state


def _use_sampler(implementation, case: Case) -> dict:
    n, seed, before = case.inputs["n"], case.inputs["seed"], case.inputs["epochs_before"]
    kind = case.inputs["kind"]
    if kind == "in a StatefulDataLoader":
        return _resumed_loader(implementation, n, seed)
    sampler = implementation(range(n), seed=seed)
    for _ in range(before):
        list(sampler)
    state = sampler.state_dict()
    if kind == "changes nothing":
        sampler.state_dict()
        return {"the next 3 epochs of a sampler asked for its state twice":
                [list(sampler) for _ in range(3)]}
    seen = {}
    if kind == "a snapshot":  # the original goes on before the state is loaded
        seen["the original's next 2 epochs"] = [list(sampler) for _ in range(2)]
    if kind == "through a file":
        state = through_a_file(state)
    resumed = implementation(range(n), seed=seed)  # built the same way
    resumed.load_state_dict(state)
    seen["the next 3 epochs after load_state_dict"] = [list(resumed) for _ in range(3)]
    return seen


def _resumed_loader(implementation, n: int, seed: int) -> dict:
    """Three epochs of batches of 3 through the package's StatefulDataLoader, uninterrupted;
    then a checkpoint after 2 batches of the second epoch, resumed by a new loader and a new
    sampler built the same way."""
    def make():
        return StatefulDataLoader(range(n), batch_size=3,
                                  sampler=implementation(range(n), seed=seed))

    loader = make()
    whole = [[batch.tolist() for batch in loader] for _ in range(3)]
    loader = make()
    list(loader)
    iterator = iter(loader)
    next(iterator), next(iterator)
    state = through_a_file(loader.state_dict())
    del iterator
    resumed = make()
    resumed.load_state_dict(state)
    rest = [[batch.tolist() for batch in resumed] for _ in range(2)]
    return {"the uninterrupted run's epochs 2 and 3 from batch 3 on": [whole[1][2:], whole[2]],
            "the resumed run's": rest}


def _sampler_cases() -> list[Case]:
    def case(kind, n, seed, before, hint):
        return Case({"kind": kind, "n": n, "seed": seed, "epochs_before": before}, hint=hint,
                    description=f"a sampler of range({n}), seed={seed}, {before} epochs run, then "
                                f"state_dict(){'' if kind == 'in memory' else ' ' + kind}, loaded "
                                f"by a new sampler built the same way")

    return [
        case("in memory", 6, 0, 0, "a state taken before the first epoch: the next epoch is "
             "the warm-up, in order, then shuffled ones"),
        case("in memory", 6, 0, 1, "after the warm-up: save the epoch counter, or the resumed "
             "sampler warms up again"),
        case("in memory", 8, 3, 3, "save the generator's state (generator.get_state()) and put "
             "it back (generator.set_state(...)): its permutations depend on how much it has "
             "drawn"),
        # before "a snapshot", whose original also runs on after state_dict(): a state_dict()
        # that draws fails here first, with the hint that names its mistake
        case("changes nothing", 9, 5, 2, "state_dict() changes nothing: the sampler's next "
             "epochs are those it would have given without the call"),
        case("a snapshot", 8, 1, 2, "a state is a snapshot: the original sampler runs on after "
             "state_dict(), and the state must still give the epochs that followed it. Save "
             "copies (get_state() returns one), never the generator object itself"),
        case("through a file", 7, 2, 2, "the state goes through torch.save and torch.load, "
             "which reads only plain data (numbers, strings, tensors, lists, dicts), not a "
             "torch.Generator or a numpy array"),
        case("in a StatefulDataLoader", 10, 4, 0, "StatefulDataLoader asks the sampler for "
             "state_dict() before each epoch's iter() and gives it back with load_state_dict() "
             "when it resumes; the position inside the epoch is the loader's to restore"),
    ]


register(Exercise(
    reference=solutions.WarmupShuffleSampler,
    cases=_sampler_cases,
    run=_use_sampler,
    hint=("state_dict() returns {'epoch': ..., 'generator': self.generator.get_state()}; "
          "load_state_dict() puts both back"),
    forbidden=STATEFUL,
    time_limit=3.0,
    expected_from="reference; the chapter resumes it in `StatefulDataLoader`",
    rules=(
        # the StatefulDataLoader's resume is no rule of its own: the loader saves and sets
        # back the sampler's `generator` itself, and relies on the sampler for the rest, the
        # epoch counter; a round trip right in memory (cases 1 to 6) is right in the loader
        Rule("the epoch counter is saved: the warm-up is not repeated, in memory and in a "
             "`StatefulDataLoader` checkpointed mid-epoch",
             (1, 2, 7)),
        Rule("the generator's state is saved and set back",
             (3,)),
        Rule("a snapshot: valid after the sampler goes on (never the generator object)",
             (5,)),
        Rule("plain data: through `torch.save` and `torch.load(weights_only=True)`",
             (6,)),
        Rule("`state_dict()` changes nothing",
             (4,)),
    ),
    goals=(4,),
))


# ---------------------------------------------------------------------------------------
# The batches in flight at a checkpoint


class _WhoFetched(Dataset):
    """Sample ``i`` is the id of the worker that fetched it."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        return get_worker_info().id


class _CountingBatches:
    """Batch ``b`` is ``[b]``; counts the batches the loader has taken."""

    def __init__(self, n: int) -> None:
        self.n, self.pulled = n, 0

    def __iter__(self):
        for batch in range(self.n):
            self.pulled += 1
            yield [batch]

    def __len__(self) -> int:
        return self.n


def _torch_in_flight(yielded, num_batches, num_workers, prefetch_factor):
    """Observed in torch's DataLoader with real workers: the batches taken from the batch
    sampler after ``yielded`` batches, and which worker fetched each."""
    batches = _CountingBatches(num_batches)
    with more_workers_than_cpus_is_fine():
        loader = DataLoader(_WhoFetched(num_batches), batch_sampler=batches,
                            prefetch_factor=prefetch_factor, timeout=30,
                            **workers_for_a_check(num_workers))
        iterator = iter(loader)
        for _ in range(yielded):
            next(iterator)
        pulled = batches.pulled
        worker_of = {yielded + k: int(batch) for k, batch in enumerate(iterator)}
    return {"pulled": pulled,
            "in_flight": [(batch, worker_of[batch]) for batch in range(yielded, pulled)],
            "next_worker": worker_of.get(pulled, pulled % num_workers)}


def _in_flight_cases() -> list[Case]:
    def case(yielded, num_batches, num_workers, prefetch_factor, hint):
        return Case({"yielded": yielded, "num_batches": num_batches,
                     "num_workers": num_workers, "prefetch_factor": prefetch_factor}, hint=hint)

    return [
        case(0, 10, 2, 2, "right after iter(): prefetch_factor * num_workers batches are in "
             "flight, dealt round robin"),
        case(2, 10, 2, 2, "each batch yielded sends one more: 2 yielded, 2 more sent than at "
             "iter()"),
        case(4, 12, 3, 1, "round robin over 3 workers: batch b goes to worker b % num_workers"),
        case(8, 10, 2, 2, "near the end: never more than num_batches are taken"),
        case(10, 10, 2, 2, "every batch yielded: nothing in flight, and the turn goes on round "
             "robin (next_worker = pulled % num_workers)"),
        case(0, 3, 2, 3, "a short epoch: fewer batches than the prefetch window"),
        case(2, 9, 1, 4, "one worker: it has every batch in flight"),
        case(5, 12, 3, 2, "3 workers, 2 batches each ahead: 5 yielded"),
        case(11, 11, 3, 2, "every batch yielded, 11 over 3 workers: nothing in flight, and the "
             "turn goes on round robin, to worker 11 % 3 = 2 (it does not start over at 0)"),
    ]


register(Exercise(
    reference=solutions.batches_in_flight,
    cases=_in_flight_cases,
    oracle=_torch_in_flight,
    hint=("the loader asks for prefetch_factor tasks per worker at iter(), and one more per "
          "batch yielded, never past the last batch; those asked for and not yet yielded are "
          "in flight, each with the worker round robin gave it to"),
    forbidden=STATEFUL,
    time_limit=5.0,
    expected_from="torch: its `DataLoader` with real workers, observed",
    rules=(
        Rule("`iter()` sends `prefetch_factor × num_workers` batches",
             (1, 6)),
        Rule("each batch yielded sends one more",
             (2, 8)),
        Rule("round robin: batch *b* to worker *b* % `num_workers`",
             (3, 7, 8)),
        Rule("never more than `num_batches`; short epochs",
             (4, 6)),
        Rule("the end: nothing in flight, `next_worker = pulled % num_workers`",
             (5, 9)),
    ),
    goals=(5,),
))


# ---------------------------------------------------------------------------------------
# The learner's loader, resumable (myloader/resumable.py): the pieces, then the loader

RESUMABLE = "resumable"


def _next_draws(generator) -> list[int]:
    """The next three numbers ``generator`` (None: torch's global one) would draw, drawn
    from a copy: where it stands, readably."""
    copy = torch.Generator()
    copy.set_state(torch.get_rng_state() if generator is None else generator.get_state())
    return torch.randint(1000, (3,), generator=copy).tolist()


def _use_resumed_batches(implementation, case: Case) -> dict:
    spec = case.inputs
    generator = None if spec["seed"] is None else torch.Generator().manual_seed(spec["seed"])
    sampler = (RandomSampler(range(spec["n"]), generator=generator) if spec["shuffle"]
               else SequentialSampler(range(spec["n"])))
    batch_sampler = BatchSampler(sampler, spec["batch_size"], spec["drop_last"])
    seen = {"then() was called": 0}

    def then():
        seen["then() was called"] += 1
        seen["when then() was called, the next draws of the generator"] = (
            _next_draws(generator))

    resumed = implementation(batch_sampler, skip=spec["skip"], empty=spec["empty"], then=then)
    before = _next_draws(generator)
    iterator = iter(resumed)
    seen["iter() alone drew random numbers"] = _next_draws(generator) != before
    seen["the batches"] = take(iterator, 1000)
    seen["len()"] = len(resumed)
    return seen


def _resumed_batches_cases() -> list[Case]:
    def case(n, batch_size, skip, empty, hint, seed=3, shuffle=True, drop_last=False):
        source = ("RandomSampler(range({n}), generator=torch.Generator().manual_seed({seed}))"
                  if shuffle and seed is not None else "RandomSampler(range({n})) (torch's "
                  "global generator)" if shuffle else "SequentialSampler(range({n}))")
        return Case({"n": n, "batch_size": batch_size, "skip": skip, "empty": empty,
                     "seed": seed, "shuffle": shuffle, "drop_last": drop_last},
                    description=f"ResumedBatches(BatchSampler({source.format(n=n, seed=seed)}, "
                                f"{batch_size}, drop_last={drop_last}), skip={skip}, "
                                f"empty={empty}, then=...)", hint=hint)

    return [
        case(10, 3, 0, 0, "skip=0, empty=0: one pass of the batch sampler, as it is; then() is "
             "called once, before the first batch, when nothing has been drawn"),
        case(10, 3, 2, 0, "the first `skip` batches are taken from the batch sampler and never "
             "yielded: its permutation is drawn as in the uninterrupted epoch"),
        case(10, 3, 2, 1, "`empty` empty batches [] come first, then the batches from `skip` on"),
        case(7, 2, 0, 2, "two empty batches, then every batch"),
        case(9, 3, 3, 1, "every batch skipped: only the empty ones are left"),
        case(9, 4, 5, 0, "skip past the end: nothing, and no error"),
        case(12, 5, 1, 0, "without a generator the sampler draws its seed from torch's global "
             "generator when it is first pulled: then() comes after that draw", seed=None),
        case(12, 5, 1, 0, "drop_last=True: the batch sampler drops the short batch, so do you",
             drop_last=True, seed=8),
        case(8, 3, 1, 1, "a SequentialSampler draws nothing: the same rules", shuffle=False),
    ]


register(Exercise(
    reference=solutions.ResumedBatches,
    cases=_resumed_batches_cases,
    run=_use_resumed_batches,
    hint=("take the first `skip` batches from the batch sampler at the first next() (never "
          "at iter()), call then(), yield `empty` empty lists, then the rest"),
    forbidden=STATEFUL,
    piece=f"{RESUMABLE}.ResumedBatches",
    time_limit=3.0,
    expected_from="reference, over torch's `BatchSampler`",
    rules=(
        Rule("from batch `skip` on, the batch sampler's own batches, in order; past the "
             "end, none",
             (1, 2, 3, 5, 6, 8)),
        Rule("`empty` empty batches `[]` first",
             (3, 4, 5, 9)),
        Rule("the skipped batches are taken (their random draws happen), then `then()`, "
             "once",
             (2, 7, 9)),
        Rule("`iter()` alone draws nothing: the first `next()` does",
             (1, 7)),
        Rule("`len()` counts what an iteration yields",
             (2, 3, 4, 5, 6)),
    ),
    goals=(3, 5),
))


def _collate_with_noise(samples):
    """A collate_fn that draws: the batch's tensors, plus one number from torch."""
    return torch.stack(samples) + torch.rand(()).item()


def _reseed(worker_id):
    """A worker_init_fn that seeds every generator afresh (as some scripts do)."""
    seed = 1000 + worker_id
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


class _MustNotCollate:
    """A collate_fn an empty task must not call."""

    def __call__(self, samples):
        raise AssertionError("collate_fn was called with an empty list of samples")


def _draws_after(states) -> list:
    """What a process with ``states`` (``random_states()``'s) draws next, from each of its
    three generators; this process's own states are left as they were."""
    saved = random_states()
    try:
        set_random_states(states)
        return [round(torch.rand(()).item(), 6), round(random.random(), 6),
                round(float(np.random.rand()), 6)]
    finally:
        set_random_states(saved)


def _saved_states(seed: int):
    """``random_states()`` of a worker that had drawn a little after being seeded with
    ``seed``: what a checkpoint keeps for a worker."""
    saved = random_states()
    try:
        seed_everything(seed)
        torch.rand(3), random.random(), np.random.rand()
        return through_a_file(random_states())
    finally:
        set_random_states(saved)


def _use_in_the_workers(implementation, case: Case):
    spec = case.inputs
    if spec["workers"] == 0:  # an empty task, in this process
        side = implementation(_MustNotCollate(), None, [None])
        before = _draws_after(random_states())
        made = side.collate([])
        return {"collate([])": made, "random numbers drawn": _draws_after(random_states())
                != before}
    states = [None if seed is None else _saved_states(seed) for seed in spec["states"]]
    collate_fn = _collate_with_noise if spec["collate"] == "_collate_with_noise" else default_collate
    init_fn = _reseed if spec["init"] == "_reseed" else None
    side = implementation(collate_fn, init_fn, states)
    with more_workers_than_cpus_is_fine():
        loader = DataLoader(NoisySamples(spec["n"]), batch_size=2, num_workers=spec["workers"],
                            collate_fn=side.collate, worker_init_fn=side.init,
                            multiprocessing_context="fork", timeout=20,
                            generator=torch.Generator().manual_seed(0))
        seen = []
        for made in take(loader, 50):
            if not (isinstance(made, (tuple, list)) and len(made) == 2):
                return {"what collate returned": f"{type(made).__name__}, not a pair (the "
                                                 "batch, the states)"}
            batch, states = made
            seen.append({"batch": batch.tolist(),
                         "the next draws of the states that came with it": _draws_after(states)})
    return seen


def _in_the_workers_cases() -> list[Case]:
    def case(n, workers, states, hint, collate="default_collate", init="None"):
        saved = ", ".join("None" if s is None else f"the states of a worker seeded with {s}"
                          for s in states)
        return Case({"n": n, "workers": workers, "states": states, "collate": collate,
                     "init": init},
                    description=f"torch's DataLoader({n} samples [i, torch, random, numpy "
                                f"draws], batch_size=2, num_workers={workers}, collate_fn="
                                f"side.collate, worker_init_fn=side.init) with side = "
                                f"InTheWorkers({collate}, {init}, [{saved}])", hint=hint)

    return [
        case(8, 2, (None, None), "collate returns (collate_fn(samples), random_states()): the "
             "worker's states right after the batch is made"),
        case(8, 2, (5, None), "init restores the saved states of a worker that has some: worker "
             "0 goes on from them; worker 1 (None) keeps the seeds its loader gave it"),
        case(8, 2, (None, 7), "worker_init_fn first, then the restore: the restored states win; "
             "a worker without states keeps what worker_init_fn set", init="_reseed"),
        case(6, 1, (9,), "the states come after collate_fn: a collate_fn may draw too",
             collate="_collate_with_noise"),
        Case({"workers": 0}, description="side = InTheWorkers(a collate_fn that must not be "
             "called, None, [None]); side.collate([]) in this process",
             hint="an empty task (no samples) only keeps the turn: (None, None), without "
                  "calling collate_fn or drawing"),
    ]


register(Exercise(
    reference=solutions.InTheWorkers,
    cases=_in_the_workers_cases,
    run=_use_in_the_workers,
    hint=("init: call worker_init_fn (if any), then set_random_states(states[worker_id]) "
          "unless it is None; collate: (collate_fn(samples), random_states()), or (None, None) "
          "for no samples"),
    forbidden=STATEFUL,
    piece=f"{RESUMABLE}.InTheWorkers",
    time_limit=5.0,
    expected_from="reference, in torch's workers",
    rules=(
        Rule("`collate`: the batch and the worker's random states after making it",
             (1, 4)),
        Rule("`init`: `worker_init_fn` first, then the saved states of a worker that has some",
             (2, 3)),
        Rule("a worker whose states are `None` keeps its seeds (and what `worker_init_fn` did)",
             (2, 3)),
        Rule("no samples: `(None, None)`, no `collate_fn`, no draw",
             (5,)),
    ),
    goals=(2,),
))


def _use_track_position(implementation, case: Case) -> dict:
    spec = case.inputs
    yielded, workers = spec["position"]  # immutable in the case: a dict is made for each run
    position = {"yielded": yielded, "workers": list(workers)}
    source = iter(spec["batches"])
    pulled = [0]

    def counted():
        for item in source:
            pulled[0] += 1
            yield item

    batches = implementation(counted(), position, spec["num_workers"])
    seen = []
    while spec["stop"] is None or len(seen) < spec["stop"]:
        try:
            item = next(batches)
        except StopIteration:
            break
        seen.append({"handed out": item, "position then": copy.deepcopy(position),
                     "items taken from batches so far": pulled[0]})
        if len(seen) > 50:
            raise TooManyItems(50)
    return {"each next()": seen, "the position at the end": position}


def _track_cases() -> list[Case]:
    def case(batches, position, num_workers, hint, stop=None):
        shown = {"yielded": position[0], "workers": list(position[1])}
        return Case({"batches": tuple(batches), "position": position,
                     "num_workers": num_workers, "stop": stop}, hint=hint,
                    description=f"track_position({list(batches)}, {shown}, num_workers="
                                f"{num_workers}){f', {stop} batches taken' if stop else ''}")

    def start(workers, yielded=0, states=None):
        return yielded, tuple(states or [None] * workers)

    two = [("b0", "w0 after b0"), ("b1", "w1 after b1"), ("b2", "w0 after b2")]
    return [
        case(["b0", "b1", "b2"], start(0), 0, "without workers the batches are as they come; "
             "yielded counts them, and goes up before each is handed out"),
        case(two, start(2), 2, "with workers, each item is (batch, states): hand out the "
             "batch, and keep the states for worker number % num_workers"),
        case([(None, None), ("b3", "w1 after b3"), ("b4", "w0 after b4")], start(2, 3),
             2, "an empty task (None, None) is skipped, but it keeps its number: the batch "
             "after it is number 1, from worker 1"),
        case([("b5", "w1 after b5")], start(2, 5, ["w0 after b4", "w1 after b3"]), 2,
             "a resumed position: yielded goes on from 5; worker 0's states stay until one "
             "of its batches is handed out"),
        case(two, start(2), 2, "as of what was consumed: the loop has taken 2 batches, so "
             "the position says 2, and nothing of batch 2", stop=2),
        case([("b0", "a"), ("b1", "b"), ("b2", "c"), ("b3", "d")], start(3), 3,
             "three workers: batch 3 comes from worker 0 again"),
    ]


register(Exercise(
    reference=solutions.track_position,
    cases=_track_cases,
    run=_use_track_position,
    hint=("for number, item in enumerate(batches): with workers, unpack (batch, states), "
          "skip it if states is None, else keep states for worker number % num_workers; add "
          "1 to yielded; yield the batch. At the end, position['ended'] = True"),
    forbidden=STATEFUL,
    piece=f"{RESUMABLE}.track_position",
    time_limit=2.0,
    rules=(
        Rule("`yielded` counts the batches handed out, before each is handed out",
             (1, 4, 5)),
        Rule("with workers: a batch's states are kept for worker `number % num_workers`",
             (2, 4, 6)),
        Rule("an empty task is skipped, and keeps its number",
             (3,)),
        Rule("only what the loop has taken: one item at a time",
             (1, 5)),
        Rule("at the end, `position[\"ended\"]` is `True`",
             (1, 2, 3)),
    ),
    goals=(2,),
))


class Uninterrupted:
    """The oracle of the resumable loader's exercises: torch's ``DataLoader``, never
    interrupted (a marker: ``_play_resumed`` runs it)."""


def _step() -> list:
    """A training step's random numbers, from all three global generators."""
    return [round(torch.rand(()).item(), 6), round(random.random(), 6),
            round(float(np.random.rand()), 6)]


def _made(loader_class, spec: dict):
    generator = (None if spec["generator"] is None
                 else torch.Generator().manual_seed(spec["generator"]))
    workers = workers_for_a_check(spec["workers"])
    if spec["workers"]:
        workers.update(prefetch_factor=spec["prefetch"], timeout=20)
    with more_workers_than_cpus_is_fine():
        return loader_class(NoisySamples(spec["n"]), batch_size=spec["batch_size"],
                            shuffle=spec["shuffle"], drop_last=spec["drop_last"],
                            generator=generator, **workers)


def _epoch(loader, limit: int) -> list:
    batches = []
    for batch in loader:
        batches.append(batch.tolist() if isinstance(batch, torch.Tensor) else batch)
        _step()
        if len(batches) > limit:
            raise TooManyItems(limit)
    return batches


def _play_resumed(implementation, case: Case) -> dict:
    """Epochs of a loader with a training loop's draws after every batch; a checkpoint after
    batch ``k`` of epoch ``e`` (``k=None``: after the epoch ended), then a new loader and a
    new training loop resumed from it. torch's DataLoader (the oracle) is never
    interrupted: the same observations, read off its one run."""
    spec = case.inputs
    e, k, epochs, limit = spec["epoch"], spec["k"], spec["epochs"], 3 * spec["n"] + 3
    with more_workers_than_cpus_is_fine():
        if implementation is Uninterrupted:
            loader = _made(DataLoader, spec)
            played = [_epoch(loader, limit) for _ in range(epochs)]
            cut = len(played[e]) if k is None else k
            return {"before the checkpoint": played[:e] + [played[e][:cut]],
                    "the rest of its epoch": played[e][cut:],
                    "the epochs after it": played[e + 1:],
                    "the training loop's next random numbers": _step()}
        loader = _made(implementation, spec)
        before = [_epoch(loader, limit) for _ in range(e)]
        iterator, head = iter(loader), []
        for _ in range(len(loader) if k is None else k):
            batch = next(iterator)
            head.append(batch.tolist() if isinstance(batch, torch.Tensor) else batch)
            _step()
        if k is None:
            take(iterator, 1)  # the end: StopIteration
        before.append(head)
        if spec["break"]:
            del iterator  # the loop broke out: the position stays
        checkpoint = _checkpoint(loader, spec["how"])
        script = through_a_file(random_states())
        if spec["go on"]:  # the first loader goes on after state_dict(): a snapshot stays
            take(iterator, limit)
        checkpoint = through_a_file(checkpoint)
        del loader
        resumed = _made(implementation, spec)
        _resume(resumed, checkpoint, spec["how"])
        set_random_states(script)
        rest = [] if k is None else _epoch(resumed, limit)
        after = [_epoch(resumed, limit) for _ in range(e + 1, epochs)]
        return {"before the checkpoint": before, "the rest of its epoch": rest,
                "the epochs after it": after,
                "the training loop's next random numbers": _step()}


def _checkpoint(loader, how: str) -> dict:
    """The checkpoint of the loader's part (the caller sends it through a file)."""
    if how == "state":
        return loader.state_dict()
    generator = None if loader.generator is None else loader.generator.get_state()
    return {"position": copy.deepcopy(loader.position), "generator": generator}


def _resume(loader, checkpoint: dict, how: str) -> None:
    if how == "state":
        loader.load_state_dict(checkpoint)
        return
    if loader.generator is not None:  # built the same way, its generator where it was
        loader.generator.set_state(checkpoint["generator"])
    loader.resume = checkpoint["position"]


def _resume_case(how, n, batch_size, workers, epoch, k, hint, generator=4, shuffle=True,
                 drop_last=False, prefetch=2, epochs=2, broke=False, go_on=False) -> Case:
    where = (f"after epoch {epoch} ended" if k is None else
             f"after batch {k} of epoch {epoch}{' (the loop broke out there)' * broke}")
    made = (f"StatefulDataLoader or torch's DataLoader({NoisySamples(n)!r}, batch_size="
            f"{batch_size}, shuffle={shuffle}, drop_last={drop_last}, num_workers={workers}"
            f"{f', prefetch_factor={prefetch}' if workers else ''}, generator="
            f"{'None' if generator is None else f'torch.Generator().manual_seed({generator})'})")
    how_text = ("state_dict() through a file, then load_state_dict() into a new loader" if
                how == "state" else "its `position` through a file into a new loader's "
                "`resume` (its generator set to the first one's state)")
    return Case({"how": how, "n": n, "batch_size": batch_size, "workers": workers,
                 "epoch": epoch, "k": k, "generator": generator, "shuffle": shuffle,
                 "drop_last": drop_last, "prefetch": prefetch, "epochs": epochs,
                 "break": broke, "go on": go_on},
                description=f"{made.replace('StatefulDataLoader', 'ResumableEpochs') if how != 'state' else made}, {epochs} epochs "
                            f"with a training loop's draws after each batch; {how_text}, "
                            f"{where}{'; the first loader then goes on' * go_on}",
                hint=hint)


def _resumable_cases() -> list[Case]:
    def case(*args, **kwargs):
        return _resume_case("position", *args, **kwargs)

    return [
        case(14, 4, 0, 0, 2, "no workers: after 2 batches, the rest of the epoch, the next "
             "one and the training loop's random numbers as if never interrupted"),
        case(14, 4, 0, 1, 3, "no generator: the epoch draws from torch's global generator. "
             "Set it back to the epoch's start for the replay, then give the training loop "
             "its own state back before the next batch is read", generator=None),
        case(10, 3, 0, 1, 0, "a position taken right after iter(): the epoch from its first "
             "batch, with its own base seed and order", generator=None),
        case(14, 4, 1, 0, 2, "one worker: resumed, it goes on from its random state as of the "
             "last batch the loop consumed", epochs=1),
        case(18, 4, 2, 0, 3, "two workers, 3 batches consumed: batch 3 was worker 1's. Deal it "
             "to worker 1 again (an empty task to worker 0 first), with the states worker 1 "
             "had after batch 1"),
        case(14, 4, 2, 0, 0, "with workers the whole first window is pulled in iter(), before "
             "the checkpoint: replay its draws from the epoch's start, then give the "
             "training loop its state back", generator=None, epochs=1),
        case(20, 3, 3, 0, 4, "three workers, prefetch_factor=1, no shuffling", shuffle=False,
             prefetch=1, epochs=1),
        case(14, 4, 2, 0, 3, "every batch was handed out, the loop had not seen the end: "
             "nothing is left of that epoch, the next one follows", drop_last=True),
        case(14, 4, 2, 0, None, "a position taken after the epoch ended: the next iter() "
             "starts a new epoch"),
        case(14, 4, 1, 0, 1, "the loop broke out after 1 batch: the position still says where "
             "it stopped", broke=True, epochs=1),
    ]


register(Exercise(
    reference=solutions.ResumableEpochs,
    cases=_resumable_cases,
    run=_play_resumed,
    oracle=Uninterrupted,
    hint=("save the random state the epoch draws from before the base seed is drawn; on "
          "resume, set it back, let ResumedBatches skip what was yielded (and an empty task "
          "per worker turn), restore the training loop's state, and start the workers with "
          "InTheWorkers' init and collate"),
    forbidden=STATEFUL,
    piece=f"{RESUMABLE}.ResumableEpochs",
    time_limit=9.0,
    expected_from="torch: its `DataLoader`, never interrupted",
    rules=(
        Rule("without workers: the rest of the epoch, the next one and the training loop's "
             "random numbers as uninterrupted",
             (1, 2, 3)),
        Rule("the index stream replayed from the random state at the epoch's start, also "
             "torch's global generator, whose draws go back to the training loop",
             (2, 3, 6)),
        Rule("with workers: each batch in flight fetched again by the worker that had it, "
             "from its random state as of its last batch consumed",
             (4, 5, 6, 7)),
        Rule("the epoch over: a new one",
             (8, 9)),
        Rule("`position` is plain data, and still says where the loop stopped after `break`",
             (1, 10)),
    ),
    goals=(3, 5, 6),
))


def _use_stateful(implementation, case: Case):
    spec = case.inputs
    if spec.get("refused") is None:
        return _play_resumed(implementation, case)
    if implementation is Uninterrupted:  # torch has no state to refuse: the book's rule
        implementation = solutions.StatefulDataLoader
    return _refused(implementation, case)


def _refused(implementation, case: Case) -> dict:
    """A state of a loader after 2 batches, changed as the case says, given to a loader."""
    spec = dict(case.inputs)
    loader = _made(implementation, spec)
    iterator = iter(loader)
    next(iterator), next(iterator)
    state = through_a_file(loader.state_dict())
    del iterator
    how, keys = spec["refused"], sorted(state) if isinstance(state, dict) else []
    seen = {}
    if how in ("batch_size", "n", "workers"):
        other = dict(spec, **{how: spec[how] + 1})
        if how == "workers":
            other["workers"] = 1 if spec["workers"] == 0 else spec["workers"] + 1
        seen["given to a loader with another " + how] = _loading(
            _made(implementation, other), state, (spec[how], other[how]))
    elif how == "a key missing":
        for key in keys:
            cut = {name: value for name, value in state.items() if name != key}
            seen[f"without one of its {len(keys)} entries"] = _loading(
                _made(implementation, spec), cut)
    elif how == "a key added":
        seen["with an entry its state_dict does not write"] = _loading(
            _made(implementation, spec), {**state, "edited by hand": 1})
    else:
        seen["a list, not a state"] = _loading(_made(implementation, spec), [1, 2])
    return seen


def _loading(loader, state, values=None) -> str:
    try:
        loader.load_state_dict(state)
    except ValueError as error:
        named = values is None or all(str(v) in str(error) for v in values)
        return "refused with ValueError" + ("" if named else
                                            f", but its message does not name {values}")
    except Exception as error:  # an accident, not a refusal
        return f"{type(error).__name__}: {' '.join(str(error).split())[:120]}"
    return "accepted"


def _stateful_cases() -> list[Case]:
    def case(*args, **kwargs):
        return _resume_case("state", *args, **kwargs)

    def refused(how, hint, workers=0):
        made = _resume_case("state", 12, 3, workers, 0, 2, hint)
        made.inputs["refused"] = how
        made.description = (f"the state of StatefulDataLoader({NoisySamples(12)!r}, "
                            f"batch_size=3, shuffle=True, num_workers={workers}) after 2 "
                            f"batches, through a file, with {how.replace('n', 'dataset length') if how == 'n' else how} changed, given to load_state_dict()")
        return made

    return [
        case(18, 4, 2, 1, 3, "state_dict() in the middle of epoch 1, load_state_dict() in a new "
             "loader: the rest of that epoch and the training loop's random numbers as "
             "uninterrupted"),
        case(14, 4, 0, 0, None, "a state taken between two epochs: the new loader's generator "
             "was seeded afresh, so the state must carry the generator's state"),
        case(10, 3, 2, 0, 0, "a state taken right after iter(): the epoch from its start",
             epochs=1),
        case(14, 4, 2, 0, 2, "a state is a snapshot: the first loader goes on after "
             "state_dict(), and the state still resumes at batch 2", go_on=True, epochs=1),
        case(14, 4, 1, 0, 1, "after break: the state says where the loop stopped",
             broke=True, epochs=1),
        refused("batch_size", "another batch_size: refuse with a ValueError that names both "
                "values (what the state says, what the loader has)"),
        refused("n", "another dataset length: the indices would be another epoch's; refuse, "
                "naming both lengths"),
        refused("workers", "another number of workers: the batches in flight and the "
                "workers' states would go to other workers; refuse, naming both numbers",
                workers=2),
        refused("a key missing", "a state cut short (any of its entries missing) is refused "
                "with ValueError, not a KeyError from deep inside"),
        refused("a key added", "an entry your state_dict never writes: a state from "
                "something else, or edited by hand; refuse it"),
        refused("a list", "not a state at all: refuse it with ValueError"),
    ]


register(Exercise(
    reference=solutions.StatefulDataLoader,
    cases=_stateful_cases,
    run=_use_stateful,
    oracle=Uninterrupted,
    hint=("state_dict: the settings a state fits, the generator's state and a copy of the "
          "position; load_state_dict: refuse what does not fit (ValueError), then set the "
          "generator and resume from the position"),
    forbidden=STATEFUL,
    piece=f"{RESUMABLE}.StatefulDataLoader",
    time_limit=9.0,
    expected_from="torch: its `DataLoader`, never interrupted; the refusals: reference",
    rules=(
        Rule("resumed in a new loader: the rest of the epoch and the training loop's random "
             "numbers as uninterrupted",
             (1, 3, 5)),
        Rule("the generator's state travels in the state: between epochs, the next epoch as "
             "uninterrupted",
             (2,)),
        Rule("a snapshot: valid after the loader goes on; plain data through `torch.save`",
             (4,)),
        Rule("another batch size, dataset length or number of workers: `ValueError` naming "
             "both values",
             (6, 7, 8)),
        Rule("a state cut short, with an entry it never writes, or not a dict: `ValueError`",
             (9, 10, 11)),
    ),
    goals=(6,),
))

# ---------------------------------------------------------------------------------------
# Check yourself


def _batches_kept_by_a_naive_resume() -> int:
    """An epoch of 4 batches, a checkpoint after 2 that saves the generator's state as it is
    then; the resume restores it, starts a new epoch and skips 2 batches. How many of the
    last 2 batches are those of the uninterrupted epoch?"""
    def loader(generator):
        return DataLoader(range(12), batch_size=3, shuffle=True, generator=generator)

    generator = torch.Generator().manual_seed(0)
    epoch = iter(loader(generator))
    first = [next(epoch).tolist() for _ in range(2)]
    saved = generator.get_state()  # the naive checkpoint
    rest = [batch.tolist() for batch in epoch]
    restored = torch.Generator()
    restored.set_state(saved)
    resumed = [batch.tolist() for batch in loader(restored)]
    assert len(first + rest) == len(resumed) == 4
    return sum(a == b for a, b in zip(rest, resumed[2:]))


register(Prediction(
    "ch14-naive-resume", measure=_batches_kept_by_a_naive_resume,
    why="the epoch drew its base seed when it started and its permutation at its first "
        "batch: the generator's state at the checkpoint is after those draws, so the "
        "resumed epoch draws new ones",
    mistakes={2: "the generator moved on at the start of the epoch (base seed, then "
                 "permutation); its state at the checkpoint makes another epoch",
              1: "nothing of the resumed epoch's order comes from the original one: the "
                 "generator's state at the checkpoint gives a new permutation"},
    goals=(1,),
))

register(Choice(
    "ch14-who-holds", answer="d", why={
        "a": "the index stream is drawn in the main process: its sampler and generator are "
             "there",
        "b": "the main process dispatched the batches, and knows which are in flight and "
             "which worker has each",
        "c": "the base seed is drawn by the main process's iterator, and sent to the workers",
    }, goals=(1, 2)))


def _batches_in_flight_after_three() -> int:
    from minidataloader_course.chapters.multiprocess_cases import Numbers, when_idle

    dataset = Numbers(20)
    with more_workers_than_cpus_is_fine():
        epoch = iter(DataLoader(dataset, batch_size=1, num_workers=2, prefetch_factor=2,
                                multiprocessing_context="fork"))
        for _ in range(3):
            next(epoch)
        read = when_idle(dataset.reads, settle=0.5, limit=20)
        del epoch  # stops the workers
    return read - 3


register(Prediction(
    "ch14-in-flight", measure=_batches_in_flight_after_three,
    why="iter() sends prefetch_factor x num_workers = 4 tasks, and every batch yielded sends "
        "one more: after 3 batches, 7 were sent and 4 are in flight",
    mistakes={1: "every batch yielded is replaced by a new task: the number in flight stays "
                 "prefetch_factor x num_workers",
              7: "7 batches were sent; 3 of them have been yielded, the rest are in flight",
              2: "prefetch_factor counts batches per worker: 2 for each of 2 workers"},
    goals=(5,),
))

register(Choice(
    "ch14-sigkill-resume", answer="a", why={
        "b": "the batches in flight at the kill were never trained on: a resume from them "
             "would skip them, and the workers' states were not saved as of them",
        "c": "a restart from the start of the epoch trains twice on what came before the "
             "checkpoint",
        "d": "the optimizer's state, the loader's position and the random states are part of "
             "the run too: without them the next steps differ",
    }, goals=(6,)))

register(Choice(
    "ch14-sampler-state", answer="b", why={
        "a": "a state dict is plain data (numbers, tensors, dicts) that torch.save writes; "
             "the sampler object itself is rebuilt by the resumed script",
        "c": "the indices of this epoch are not enough: the next epochs are drawn from the "
             "generator, whose state would be lost",
        "d": "the generator has drawn since it was seeded: its seed says where it started, "
             "its state where it is",
    }, goals=(4,)))
