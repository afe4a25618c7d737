"""Chapter 14 (checkpoint and resume mid-epoch): the exercises and their hidden cases.

Where torch's behaviour is the rule, the expected values come from torch: the batches a
``DataLoader`` gives from a generator's state (``remaining_batches``), and which batches
its workers have been sent at a checkpoint (``batches_in_flight``, observed in real forked
workers). The sampler's state and the workers' states follow the book's design, which the
chapter proves on the package's ``StatefulDataLoader``.
"""

from __future__ import annotations

import itertools
import random

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from minidataloader.stateful import StatefulDataLoader
from minidataloader_course.chapters.ch14 import solution as solutions
from minidataloader_course.chapters.ch14.resume import through_a_file
from minidataloader_course.chapters.multiprocess_cases import (
    more_workers_than_cpus_is_fine,
    workers_for_a_check,
)
from minidataloader_course.checker.framework import Case, Exercise, Rule, register
from minidataloader_course.checker.questions import Choice, Prediction

# The package's finished pieces: what each exercise rebuilds.
STATEFUL = ("minidataloader.stateful.StatefulDataLoader",
            "minidataloader.stateful.loader.StatefulDataLoader")


# ---------------------------------------------------------------------------------------
# The rest of an epoch, from the generator's state at its start


def _state(seed: int, epochs_served: int = 0) -> torch.Tensor:
    """The state of a generator seeded with ``seed`` after serving ``epochs_served``
    shuffled epochs of a DataLoader over 20 samples."""
    generator = torch.Generator().manual_seed(seed)
    for _ in range(epochs_served):
        for _ in DataLoader(range(20), batch_size=4, shuffle=True, generator=generator):
            pass
    return generator.get_state()


def _remaining_cases() -> list[Case]:
    def case(n, batch_size, drop_last, consumed, hint, seed=0, served=0):
        used = f" after {served} epochs" if served else ""
        return Case({"generator_state": _state(seed, served), "n": n, "batch_size": batch_size,
                     "drop_last": drop_last, "consumed": consumed}, hint=hint,
                    description=f"the state of a generator seeded with {seed}{used}, n={n}, "
                                f"batch_size={batch_size}, drop_last={drop_last}, "
                                f"consumed={consumed}")

    return [
        case(10, 3, False, 0, "consumed=0: the whole epoch. iter(loader) draws the base seed "
             "from the generator (one 64-bit number) before the RandomSampler draws its "
             "permutation, torch.randperm(n, generator=...)"),
        case(10, 3, False, 2, "skip the first `consumed` batches; the last, smaller batch stays "
             "(drop_last=False)"),
        case(10, 3, True, 1, "drop_last=True: the incomplete last batch is dropped"),
        case(10, 3, False, 4, "every batch was consumed: an empty list"),
        case(10, 5, False, 7, "consumed past the end of the epoch: an empty list"),
        case(3, 4, True, 0, "drop_last=True with fewer samples than a batch: no batch at all"),
        case(1, 1, False, 0, "one sample: one batch, [[0]]", seed=5),
        case(50, 8, False, 3, "start from the saved state itself (generator.set_state), not "
             "from a generator seeded anew: this one had served two epochs", seed=3, served=2),
        case(100, 16, True, 5, "100 samples, batches of 16: 6 full batches, 5 consumed",
             seed=2**40 + 7),
    ]


def _torch_remaining(generator_state, n, batch_size, drop_last, consumed):
    generator = torch.Generator()
    generator.set_state(generator_state)
    loader = DataLoader(range(n), batch_size=batch_size, shuffle=True, drop_last=drop_last,
                        generator=generator)
    return [batch.tolist() for batch in itertools.islice(loader, consumed, None)]


register(Exercise(
    reference=solutions.remaining_batches,
    cases=_remaining_cases,
    oracle=_torch_remaining,
    hint=("set a new generator to the saved state, draw the base seed, then one permutation "
          "of n; cut it into batches (drop the short last one with drop_last) and skip the "
          "first `consumed`"),
    forbidden=STATEFUL,
    expected_from="torch: `DataLoader(range(n), shuffle=True)` with a generator set to the state",
    rules=(
        Rule("from a generator set to the saved state: the base seed, then the permutation",
             (1, 7, 8, 9), note="a used generator: 8"),
        Rule("skip the `consumed` batches; the last, smaller batch stays",
             (2,)),
        Rule("`drop_last` drops the incomplete last batch, also the only one",
             (3, 6, 9)),
        Rule("nothing left: an empty list",
             (4, 5)),
    ),
    goals=(3,),
))


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
# What each worker's saved state is


def _report(worker: int, count: int, rng: bool = True, extra: dict | None = None) -> dict:
    """A worker's report: what changed since its last one."""
    report = {"count": count}
    if rng:
        report["rng"] = f"w{worker}-{count}"
    return {**report, **(extra or {})}


def _random_arrivals(rng: random.Random, num_batches: int, num_workers: int) -> list:
    """Round robin results, arriving in an order that keeps each worker's own order."""
    queues = [[b for b in range(num_batches) if b % num_workers == w] for w in range(num_workers)]
    counts, arrivals = [0] * num_workers, []
    while any(queues):
        worker = rng.choice([w for w in range(num_workers) if queues[w]])
        batch = queues[worker].pop(0)
        counts[worker] += 1
        arrivals.append((batch, worker, _report(worker, counts[worker], rng.random() < 0.6,
                                                {"dataset": {"seen": counts[worker]}}
                                                if rng.random() < 0.3 else None)))
    return arrivals


def _states_cases() -> list[Case]:
    rng = random.Random(14)

    def case(received, yielded, num_workers, hint):
        return Case({"received": received, "yielded": yielded, "num_workers": num_workers},
                    hint=hint)

    one = [(0, 0, _report(0, 1)), (1, 0, _report(0, 2)), (2, 0, _report(0, 3, rng=False))]
    early = [(0, 0, _report(0, 1)), (1, 1, _report(1, 1)), (3, 1, _report(1, 2)),
             (2, 0, _report(0, 2))]
    crossed = [(1, 1, _report(1, 1)), (0, 0, _report(0, 1)), (2, 0, _report(0, 2))]
    return [
        case(one, 3, 1, "a report holds only what changed since the worker's last one: the "
             "state is its reports merged in order, later values winning"),
        case(early, 3, 2, "batch 3 was received early, but not yielded (it waits in the "
             "reorder buffer): it does not count, the resume fetches it again"),
        case([(0, 0, _report(0, 1)), (2, 0, _report(0, 2))], 1, 3, "a worker none of whose "
             "batches was yielded: None (it restarts from its seed)"),
        case(early, 0, 2, "nothing yielded yet: every worker None"),
        case(crossed, 2, 2, "results of different workers arrive in any order; each worker's "
             "own arrive in the order it sent them"),
        case([(0, 0, _report(0, 1, extra={"dataset": {"seen": 1}})), (1, 1, _report(1, 1)),
              (2, 0, _report(0, 2)), (3, 1, _report(1, 2, rng=False))], 4, 2,
             "a key a later report does not repeat keeps the value an earlier report set"),
        case(_random_arrivals(rng, 23, 3), 17, 3, "23 batches over 3 workers, 17 yielded"),
        case(_random_arrivals(rng, 12, 4), 12, 4, "every batch yielded: every report counts"),
    ]


register(Exercise(
    reference=solutions.worker_states,
    cases=_states_cases,
    hint=("for each received (batch, worker, report) with batch < yielded, merge the report "
          "into that worker's state: {**state, **report}; None for a worker with none"),
    forbidden=STATEFUL,
    expected_from="reference; the chapter compares it with the package's saved states",
    rules=(
        Rule("reports merged in order, later values winning, keys not repeated kept",
             (1, 6)),
        Rule("only yielded batches count: one received early (reorder buffer) does not",
             (2, 7)),
        Rule("`None` for a worker none of whose batches was yielded",
             (3, 4)),
        Rule("different workers' results interleave",
             (2, 5, 7, 8)),
    ),
    goals=(2,),
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
