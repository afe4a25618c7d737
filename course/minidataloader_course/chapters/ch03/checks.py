"""Chapter 3 (samplers): the exercises and their hidden cases."""

from __future__ import annotations

import collections

import numpy as np
import torch
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    DistributedSampler,
    RandomSampler,
    SequentialSampler,
)

from minidataloader_course.chapters.ch03 import solution as solutions
from minidataloader_course.checker.draws import DRAWS_KEY, compare_with_draws, draws
from minidataloader_course.checker.framework import Case, Exercise, Rule, register, take
from minidataloader_course.checker.questions import Choice, Prediction
from minidataloader_course.shared import data_path
from minidataloader_course.shared.compare import close


def _generator(seed):
    return None if seed is None else torch.Generator().manual_seed(seed)


def _global_rng_afterwards() -> dict:
    """The next global random numbers: they show whether (and how often) a sampler drew from
    the global RNG. (A sampler's own generator shows in the epochs it gives.)"""
    return {"the global RNG afterwards: torch.randint(1000, (3,))":
            torch.randint(1000, (3,)).tolist()}


# ---------------------------------------------------------------------------------------
# SequentialSampler


class Growing:
    """A map-style dataset of ``size`` samples that can grow between epochs."""

    def __init__(self, size: int):
        self.size = size

    def __getitem__(self, index):
        return index

    def __len__(self):
        return self.size

    def __repr__(self):
        return f"a dataset of {self.size} samples"


def _sequential_cases() -> list[Case]:
    def case(size, grows_to, hint):
        later = f"; it grows to {grows_to} samples before epoch 2" if grows_to else ""
        return Case({"size": size, "grows_to": grows_to}, hint=hint,
                    description=f"a dataset of {size} samples{later}; two epochs")

    return [
        case(5, None, "each epoch yields 0, 1, ..., len(data_source) - 1"),
        case(1, None, "one sample: each epoch is [0]"),
        case(0, None, "an empty dataset: each epoch is empty, and len() is 0"),
        case(3, 5, "read len(data_source) when the epoch starts (in __iter__), not in "
                   "__init__: a dataset that grew is read to its new end"),
    ]


def _use_sequential_sampler(implementation, case: Case) -> dict:
    dataset = Growing(case.inputs["size"])
    sampler = implementation(dataset)
    seen = {"len(sampler)": len(sampler), "epoch 1": take(sampler, 100)}
    if case.inputs["grows_to"]:
        dataset.size = case.inputs["grows_to"]
    seen["epoch 2"] = take(sampler, 100)
    seen["len(sampler) after epoch 2"] = len(sampler)
    return seen


register(Exercise(
    reference=solutions.SequentialSampler,
    oracle=SequentialSampler,
    cases=_sequential_cases,
    run=_use_sequential_sampler,
    hint="__iter__ gives the indices 0, 1, ..., len(data_source) - 1 in order; __len__ is "
         "the length of data_source",
    piece="sampler.SequentialSampler",
    expected_from="torch: `SequentialSampler`",
    rules=(
        Rule("`0, 1, …, len - 1` every epoch; `len`",
             (1, 2)),
        Rule("an empty dataset: empty epochs, `len` 0",
             (3,)),
        Rule("`len(data_source)` read when the epoch starts: a dataset that grew is read to its end",
             (4,), parity="when len() is read"),
    ),
    goals=(1, 2),
))


# ---------------------------------------------------------------------------------------
# RandomSampler, draw for draw

LOOK = "run draws() around a few epochs of torch's RandomSampler and of yours, and compare"

# The concept, then torch's draws: RandomSampler is checked twice. Its first cases look only
# at what any correct random sampler shows: each epoch a permutation (or independent draws
# with replacement), another order every epoch, a generator that decides everything when it
# is given, the global generator when it is not. Its later cases compare the draws themselves
# with torch's, call for call: those rules carry `parity`, so a learner with a sampler of
# their own design is told that the concept is right and which of torch's details are left.


def _random_cases() -> list[Case]:
    def concept(n, replacement, num_samples, seed, hint):
        inputs = {"kind": "concept", "data_source": list(range(n)),
                  "replacement": replacement, "num_samples": num_samples, "seed": seed}
        where = f"a generator seeded with {seed}" if seed is not None else "no generator"
        return Case(inputs, hint=hint, description=(
            f"data_source = list(range({n})), replacement={replacement}, "
            f"num_samples={num_samples}, {where}; three epochs, their indices only"))

    def draws_case(n, replacement, num_samples, seed, hint, tier=None):
        inputs = {"kind": "draws", "data_source": list(range(n)), "replacement": replacement,
                  "num_samples": num_samples, "seed": seed}
        where = f"a generator seeded with {seed}" if seed is not None else "no generator"
        return Case(inputs, hint=hint, tier=tier, description=(
            f"data_source = list(range({n})), replacement={replacement}, "
            f"num_samples={num_samples}, {where}; three epochs, draw for draw"))

    return [
        concept(10, False, None, 0, "each epoch is a new order of all the indices, each once, "
                                    "drawn only from the generator you were given: two "
                                    "samplers with generators seeded alike give the same "
                                    "epochs, and the global generator is not touched"),
        concept(10, False, None, None, "without a generator, draw from torch's global "
                                       "generator, so that torch.manual_seed makes the epochs "
                                       "reproducible (and another seed changes them)"),
        concept(7, False, 17, 1, "num_samples=17 of 7 samples: two whole passes over the "
                                 "indices, then 3 indices of one more pass, all different"),
        concept(7, False, 3, 2, "num_samples=3 of 7 samples: 3 different indices"),
        concept(5, True, 70, 4, "replacement=True: every index is drawn independently, so an "
                                "epoch of 70 from 5 samples repeats them unevenly"),
        concept(1, False, None, 5, "a single sample: every epoch is [0]"),
        concept(0, False, None, 6, "an empty dataset has nothing to sample: raise ValueError "
                                   "in __init__"),
        draws_case(10, False, None, 0, f"draw what torch's sampler draws, when it draws it: "
                                       f"{LOOK} (with the same generator)", tier=1),
        draws_case(10, False, None, None,
                   "without a generator: what does torch draw from the global generator, and "
                   "where do its permutations come from? (a new generator's first row shows "
                   "its seed)", tier=2),
        draws_case(7, False, 17, 1, "num_samples=17 of 7 samples: count torch's permutations "
                                    "per epoch in the log, and which of their indices it "
                                    "yields", tier=2),
        draws_case(7, False, 3, 2, "num_samples=3 of 7 samples: which of torch's draws give "
                                   "the 3 indices?", tier=2),
        draws_case(5, True, None, 3, "replacement=True: torch draws with another call, in "
                                     "pieces: look at the calls and their sizes", tier=2),
        draws_case(5, True, 70, 4, "replacement=True, num_samples=70: how many calls, of "
                                   "which sizes?", tier=3),
        draws_case(1, False, None, 5, "a single sample: every epoch is [0], drawn as torch "
                                      "draws it"),
    ]


def _three_epochs(sampler, limit: int) -> list:
    return [take(sampler, limit) for _ in range(3)]


def _random_concept(implementation, inputs: dict) -> dict:
    """What any correct random sampler shows, whatever it draws: the shape of each epoch, a
    new order every epoch, and where its randomness comes from."""
    data, n = inputs["data_source"], len(inputs["data_source"])
    settings = {"replacement": inputs["replacement"], "num_samples": inputs["num_samples"]}
    limit = 2 * max(n, inputs["num_samples"] or 0) + 10

    def make(generator):
        return implementation(data, generator=generator, **settings)

    seed = inputs["seed"]
    before = torch.get_rng_state()
    sampler = make(_generator(seed))
    epochs = _three_epochs(sampler, limit)
    seen = {"len(sampler)": len(sampler),
            "indices per epoch": [len(epoch) for epoch in epochs],
            "every index in range(len(data_source))": all(
                type(i) is int and 0 <= i < n for epoch in epochs for i in epoch)}
    counts = [sorted(collections.Counter(epoch).values()) for epoch in epochs]
    if inputs["replacement"]:
        seen["indices drawn independently (uneven counts)"] = [
            len(set(count)) > 1 for count in counts]
    else:
        seen["how often each index comes, per epoch (sorted)"] = counts
    if len(epochs[0]) >= 10:  # shorter epochs may repeat by chance, torch's too
        seen["another order every epoch"] = len({tuple(epoch) for epoch in epochs}) == 3
    if seed is not None:
        seen["a sampler with a generator seeded alike gives the same epochs"] = (
            _three_epochs(make(_generator(seed)), limit) == epochs)
        seen["the global generator untouched"] = torch.equal(before, torch.get_rng_state())
    else:
        torch.manual_seed(11)
        again = _three_epochs(make(None), limit)
        torch.manual_seed(11)
        seen["after the same torch.manual_seed, the same epochs"] = (
            _three_epochs(make(None), limit) == again)
        torch.manual_seed(12)
        seen["after another torch.manual_seed, other epochs"] = (
            _three_epochs(make(None), limit) != again)
    return seen


def _use_random_sampler(implementation, case: Case) -> dict:
    """The concept cases (their indices only), or torch's draws: three epochs, each marked
    where it starts (``iter``), where its first index comes and where it ends."""
    inputs = case.inputs
    if inputs["kind"] == "concept":
        return _random_concept(implementation, inputs)
    generator = _generator(inputs["seed"])
    named = {"the sampler's generator": generator} if generator is not None else {}
    limit = 2 * max(len(inputs["data_source"]), inputs["num_samples"] or 0) + 10
    with draws(**named) as log:
        sampler = implementation(inputs["data_source"], replacement=inputs["replacement"],
                                 num_samples=inputs["num_samples"], generator=generator)
        seen = {"len(sampler)": len(sampler)}
        for epoch in (1, 2, 3):
            iterator = iter(sampler)
            log.mark(f"epoch {epoch}: iter(sampler)")
            first = next(iterator)
            log.mark(f"epoch {epoch}: the first index")
            seen[f"epoch {epoch}"] = [first] + take(iterator, limit)
            log.mark(f"epoch {epoch}: the end")
    seen[DRAWS_KEY] = log.rows
    return seen | _global_rng_afterwards()


register(Exercise(
    reference=solutions.RandomSampler,
    oracle=RandomSampler,
    cases=_random_cases,
    run=_use_random_sampler,
    compare=compare_with_draws(),
    piece="sampler.RandomSampler",
    hint=f"the indices come from torch's draws: {LOOK}",
    expected_from="torch: `RandomSampler`",
    rules=(
        Rule("each epoch: a new order of all the indices, each once",
             (1, 6)),
        Rule("a generator decides everything: seeded alike, the same epochs; the global generator untouched",
             (1,)),
        Rule("no generator: the global generator, so `torch.manual_seed` makes the epochs reproducible",
             (2,)),
        Rule("`num_samples`: whole passes over the indices, then part of one more",
             (3, 4)),
        Rule("with replacement: indices drawn independently",
             (5,)),
        Rule("an empty dataset: `ValueError`",
             (7,)),
        Rule("torch's draws, call for call: a permutation per epoch, then the head's, drawn even when empty",
             (8, 14), parity="draw order"),
        Rule("no generator: one seed from the global generator per epoch, at the first index, for a new generator",
             (9,), parity="the seed's draw"),
        Rule("`num_samples`: the head is the first `num_samples % n` indices of one more permutation",
             (10, 11), parity="the head's indices"),
        Rule("with replacement: `randint` in chunks of 32, then the rest",
             (12, 13), parity="chunks of 32"),
    ),
    goals=(2,),
))


# ---------------------------------------------------------------------------------------
# BatchSampler


def _batch_cases() -> list[Case]:
    def case(sampler, batch_size, drop_last, hint, description=None):
        return Case({"sampler": sampler, "batch_size": batch_size, "drop_last": drop_last},
                    hint=hint, description=description)

    return [
        case(range(10), 3, False, "10 indices in batches of 3: three full batches and a last "
                                  "one of 1"),
        case(range(10), 3, True, "drop_last=True: the incomplete last batch is not yielded, "
                                 "and len() does not count it"),
        case([5, 3, 8, 1, 0, 9, 2], 2, False, "keep the sampler's order: batches are "
                                              "consecutive runs of the indices it yields"),
        case("shuffled", 4, False, "iterate over the sampler again in every __iter__: a random "
                                   "sampler gives a new order every epoch",
             description="sampler = RandomSampler(range(10)) with its own generator, "
                         "batch_size=4, drop_last=False; two epochs"),
        case(range(6), 3, True, "6 indices in batches of 3: two full batches, nothing dropped"),
        case(range(2), 5, True, "fewer indices than one batch with drop_last=True: no batch "
                                "at all, and len() is 0"),
        case(range(0), 2, False, "an empty sampler gives no batches"),
        case(range(5), 0, False, "a batch size of 0 can never fill a batch: raise ValueError "
                                 "in __init__"),
        case(range(5), 2.5, False, "batch_size must be an int: 2.5 raises ValueError"),
        case(range(5), True, False, "True is an int in Python (isinstance(True, int)), but "
                                    "torch's BatchSampler refuses a bool as batch_size: "
                                    "ValueError"),
        case(range(5), 2, None, "drop_last must be True or False: None raises ValueError"),
    ]


def _use_batch_sampler(implementation, case: Case) -> dict:
    sampler = case.inputs["sampler"]
    if sampler == "shuffled":
        sampler = RandomSampler(range(10), generator=torch.Generator().manual_seed(7))
    batches = implementation(sampler, batch_size=case.inputs["batch_size"],
                             drop_last=case.inputs["drop_last"])
    limit = len(sampler) + 1
    return {"len(batch_sampler)": len(batches), "epoch 1": take(batches, limit),
            "epoch 2": take(batches, limit)}


register(Exercise(
    reference=solutions.BatchSampler,
    oracle=BatchSampler,
    cases=_batch_cases,
    run=_use_batch_sampler,
    piece="sampler.BatchSampler",
    hint=("collect the sampler's indices into a list and yield it when it holds batch_size of "
          "them; __len__ rounds up, or down with drop_last; __init__ refuses a batch_size that "
          "is not a positive int (bools included) and a drop_last that is not a bool"),
    expected_from="torch: `BatchSampler`",
    rules=(
        Rule("lists of `batch_size` in the sampler's order; the last shorter one unless `drop_last`; `len` counts what is yielded",
             (1, 2, 3, 5, 6, 7)),
        Rule("a new pass over the sampler every epoch",
             (4,)),
        Rule("`batch_size` a positive int; `drop_last` a bool: else `ValueError`",
             (8, 9, 11)),
        Rule("`len()` iterates nothing: a random sampler's epochs after it are as without it",
             (4,)),
        Rule("`True` refused as a batch size, as torch refuses it",
             (10,), parity="a bool is no batch size"),
    ),
    goals=(1, 5),
))


# ---------------------------------------------------------------------------------------
# Weights for balanced sampling


def _weight_cases() -> list[Case]:
    table = np.loadtxt(data_path("diabetes.csv.gz"), delimiter=",", skiprows=1)
    diabetes = torch.from_numpy(table[:, -1].astype(np.int64))
    return [
        Case({"labels": diabetes}, description="labels = the 768 Outcome labels of the "
                                               "diabetes table (500 zeros, 268 ones)",
             hint="a sample of class c weighs 1 / (number of samples of class c), as a "
                  "float64 tensor (.double())"),
        Case({"labels": torch.tensor([0, 0, 0, 1])},
             hint="three samples of class 0 weigh 1/3 each, the one of class 1 weighs 1"),
        Case({"labels": torch.tensor([2, 0, 1, 1, 2, 2])},
             hint="three classes: every class's weights add up to 1"),
        Case({"labels": torch.tensor([1, 1, 1])}, hint="a single class, 1: 1/3 each (no sample of class 0: labels need not be 0, 1, "
                  "2, …)"),
        Case({"labels": torch.tensor([0, 3, 3])},
             hint="labels need not be 0, 1, 2, …: classes 1 and 2 have no samples here"),
    ]


register(Exercise(
    reference=solutions.balanced_weights,
    cases=_weight_cases,
    run=lambda implementation, case: implementation(case.inputs["labels"]),
    compare=close(rtol=1e-9, atol=0.0),
    hint=("torch.bincount(labels) counts the samples of each class; index it with labels to "
          "get each sample's class count, and return 1 / count as a float64 tensor "
          "(.double())"),
    rules=(
        Rule("float64, `1 / count of the sample's class`",
             (1, 2, 3, 4)),
        Rule("labels need not be 0, 1, 2, …",
             (4, 5)),
    ),
    goals=(4,),
))


# ---------------------------------------------------------------------------------------
# A bucketing batch sampler, checked by its properties


def padding(batches: list, lengths) -> int:
    """Positions a padding collate adds: every sample is padded to its batch's longest."""
    return sum(max(lengths[i] for i in batch) * len(batch) - sum(lengths[i] for i in batch)
               for batch in batches if batch)


def _bucket_cases() -> list[Case]:
    rng = np.random.default_rng(5)
    spread = [int(x) for x in rng.lognormal(3.5, 0.7, 1000).round() + 1]
    return [
        Case({"lengths": spread, "batch_size": 32, "seed": 0},
             description="1,000 lengths from 2 to a few hundred, batch_size=32",
             hint="sort the indices by length (after shuffling them), cut the sorted list into "
                  "batches, then shuffle the order of the batches"),
        Case({"lengths": [int(x) for x in rng.integers(1, 60, 10)], "batch_size": 3,
              "seed": 1},
             hint="10 samples in batches of 3: three full batches and one of 1, in some order"),
        Case({"lengths": [int(x) for x in rng.integers(1, 100, 64)], "batch_size": 16,
              "seed": 2}, hint="64 samples in batches of 16: four full batches"),
        Case({"lengths": [5] * 20, "batch_size": 6, "seed": 3},
             hint="all lengths equal: no padding at all, whatever the batches"),
        Case({"lengths": [7], "batch_size": 4, "seed": 4}, hint="a single sample: one batch"),
        Case({"lengths": [int(x) for x in rng.integers(1, 40, 11)], "batch_size": 4, "seed": 6,
              "len between epochs": True},
             description="11 lengths, batch_size=4; len(sampler) asked between two epochs",
             hint="len() only counts: it must not draw from the generator (iterating the "
                  "sampler to count its batches would), or the next epoch changes"),
    ]


def _use_bucket_sampler(implementation, case: Case) -> dict:
    lengths, batch_size, seed = (case.inputs[key] for key in ("lengths", "batch_size", "seed"))
    n, copy = len(lengths), list(lengths)
    generator, twin_generator = (torch.Generator().manual_seed(seed) for _ in range(2))
    sampler = implementation(lengths, batch_size, generator=generator)
    twin = implementation(copy, batch_size, generator=twin_generator)
    if case.inputs.get("len between epochs"):
        # the same two epochs, with and without a len() between them
        take(sampler, n + 1)
        counted = len(sampler)
        second = take(sampler, n + 1)
        twin_epochs = [take(twin, n + 1), take(twin, n + 1)]  # no len() between them
        return {"len(sampler)": counted,
                "the next epoch, as without len() before it": second == twin_epochs[1],
                "the generator's state afterwards, as without len()":
                    torch.equal(generator.get_state(), twin_generator.get_state())}
    first, second = take(sampler, n + 1), take(sampler, n + 1)
    shuffled = torch.randperm(n, generator=torch.Generator().manual_seed(99)).tolist()
    random_batches = [shuffled[i:i + batch_size] for i in range(0, n, batch_size)]
    wasted, random_wasted = padding(first, lengths), padding(random_batches, lengths)
    return {
        "len(sampler)": len(sampler),
        "number of batches in an epoch": len(first),
        "every batch is a list of indices": all(type(b) is list for b in first + second),
        "every index exactly once, in each epoch":
            [sorted(i for batch in epoch for i in batch) for epoch in (first, second)]
            == [list(range(n))] * 2,
        "batch sizes, largest first": sorted((len(batch) for batch in first), reverse=True),
        "padding": ("at most half that of random batches" if wasted <= random_wasted / 2 else
                    f"{wasted} padded positions, random batches of this size need "
                    f"{random_wasted}"),
        "another order in the next epoch": first != second,
        "the same batches from a generator seeded alike": first == take(twin, n + 1),
    }


register(Exercise(
    reference=solutions.BucketBatchSampler,
    cases=_bucket_cases,
    run=_use_bucket_sampler,
    hint=("shuffle the indices with torch.randperm(n, generator=self.generator), sort them by "
          "length, cut into batches of batch_size, and yield the batches in a random order"),
    expected_from="reference, by properties",
    rules=(
        Rule("every index once per epoch, batch sizes, `len`",
             (1, 2, 3, 4, 5)),
        Rule("padding at most half that of random batches",
             (1, 3)),
        Rule("another order next epoch; the same batches for a generator seeded alike",
             (1, 2, 3)),
        Rule("`len()` draws nothing: the next epoch and the generator's state are as without it",
             (6,)),
    ),
    goals=(5,),
))


# ---------------------------------------------------------------------------------------
# set_epoch: the order of an epoch from (seed, epoch) alone


def _epoch_cases() -> list[Case]:
    return [Case({"data_source": list(range(n)), "seed": seed},
                 hint=hint) for n, seed, hint in [
        (10, 0, "the order of epoch e is torch.randperm(n, generator=torch.Generator()"
                ".manual_seed(seed + epoch)): a generator of its own, so that the global "
                "RNG does not change"),
        (6, 42, "until set_epoch is called, the epoch is 0; iterating again without "
                "set_epoch repeats the same order"),
        (1, 7, "a single sample"),
        (25, 3, "use a generator of your own: do not reseed or draw from the global RNG "
                "(torch.manual_seed would change the random numbers of the training loop)"),
    ]]


def _use_epoch_sampler(implementation, case: Case) -> dict:
    sampler = implementation(case.inputs["data_source"], seed=case.inputs["seed"])
    limit = len(case.inputs["data_source"]) + 1
    seen = {"len(sampler)": len(sampler), "before any set_epoch": take(sampler, limit),
            "again, without set_epoch": take(sampler, limit)}
    for epoch in (1, 2, 0):
        sampler.set_epoch(epoch)
        seen[f"after set_epoch({epoch})"] = take(sampler, limit)
    return seen | _global_rng_afterwards()


def _one_replica(data_source, seed=0):
    """torch's answer: a DistributedSampler of one replica shuffles by (seed, epoch) alone."""
    return DistributedSampler(data_source, num_replicas=1, rank=0, seed=seed)


register(Exercise(
    reference=solutions.EpochSeededSampler,
    oracle=_one_replica,
    cases=_epoch_cases,
    run=_use_epoch_sampler,
    hint=("remember the epoch in set_epoch; in __iter__, seed a NEW torch.Generator with "
          "seed + epoch and return iter(torch.randperm(n, generator=it).tolist())"),
    expected_from="torch: `DistributedSampler` of one replica",
    rules=(
        Rule("epoch 0 until `set_epoch`; the same order when iterated again",
             (1, 2)),
        Rule("the order of epoch *e* from a new generator seeded with `seed + epoch`",
             (1, 3)),
        Rule("the global generator untouched (compared afterwards)",
             (1, 2, 3, 4)),
    ),
    goals=(6,),
))


# ---------------------------------------------------------------------------------------
# Check yourself


def _batches_of_a_list_sampler() -> int:
    loader = DataLoader(list("abcdefghij"), batch_size=2, sampler=[3, 1, 4, 1, 5],
                        collate_fn=list)
    return len(list(loader))


register(Prediction(
    "ch03-list-sampler-batches", measure=_batches_of_a_list_sampler,
    why="the sampler decides what an epoch reads: its five indices (the repeated 1 is read "
        "twice) in batches of 2 make two full batches and a last one of 1; the dataset's ten "
        "samples do not count",
    mistakes={5: "5 is the number of indices the sampler yields; the loader groups them in "
                 "batches of 2",
              10: "with a sampler, the dataset's size no longer decides the length of an "
                  "epoch: the sampler's indices do",
              2: "the last, smaller batch counts too (drop_last is False)"},
    goals=(1,),
))


def _permutations_for_25() -> int:
    generator = torch.Generator().manual_seed(0)
    sampler = RandomSampler(range(10), num_samples=25, generator=generator)
    with draws(g=generator) as log:
        list(sampler)
    return log.calls("g")


register(Prediction(
    "ch03-permutations-for-25", measure=_permutations_for_25,
    why="25 indices of 10 samples: two whole permutations, then the head of one more",
    mistakes={2: "25 // 10 is 2 whole permutations, but the last 5 indices come from a third "
                 "one",
              1: "one permutation has only 10 indices: an epoch of 25 needs more"},
    goals=(2,),
))

register(Choice(
    "ch03-split-by-index", answer="b", why={
        "a": "a sampler decides which indices are read, not only their order: the training "
             "loader never asks for a validation index",
        "c": "a plain list is a sampler too, and it yields its indices in its own order, the "
             "same every epoch",
        "d": "the samplers do the split: both loaders read the same dataset, each only at its "
             "own indices; no Subset is needed",
    }, goals=(3,)))

register(Choice(
    "ch03-weighted-without-replacement", answer="b", why={
        "a": "balancing needs some samples drawn more than once; without replacement each "
             "index can be drawn only once",
        "c": "the weights only change which indices come early: every index is still drawn "
             "once in the epoch, so the share over the epoch cannot change",
        "d": "the sampler accepts replacement=False as long as num_samples is at most the "
             "number of weights",
    }, goals=(4,)))

register(Choice(
    "ch03-shuffle-with-sampler", answer="a", why={
        "b": "a sampler can shuffle: RandomSampler is one, and so is any sampler whose "
             "__iter__ draws an order",
        "c": "the loader never changes the dataset: shuffling is a new order of indices",
        "d": "a sampler works with any batch_size: the BatchSampler groups its indices",
    }, goals=(6,)))

register(Choice(
    "ch03-resume-at-epoch-5", answer="c", why={
        "a": "RandomSampler has no set_epoch: that is the design of a sampler seeded by the "
             "epoch, such as DistributedSampler",
        "b": "a RandomSampler's order of epoch 5 is not made from seed + 5: it comes from "
             "the generator's state after all the draws of epochs 1 to 4",
        "d": "the generator moves on with every epoch: each epoch draws a new permutation",
    }, goals=(6,)))
