"""Chapter 11 (performance): the exercises and their hidden cases.

Timings cannot be checked (they change from run to run), so the exercises work on what
measurements give: a benchmark report, a sweep's results, the events of a trace. Two build
components: the fastest loader of all for a table in memory, which must give the same
batches as a shuffling DataLoader, and a batch sampler that gives the workers batches of
equal cost.
"""

from __future__ import annotations

import random

import torch
from torch.utils.data import DataLoader, RandomSampler, TensorDataset

from minidataloader_course.chapters.ch11 import solution as solutions
from minidataloader_course.chapters.ch11.performance import text_lengths
from minidataloader_course.checker.framework import Case, Exercise, Rule, register, take
from minidataloader_course.checker.questions import Choice, Prediction
from minidataloader_course.shared.compare import close

# ---------------------------------------------------------------------------------------
# 1. Reading a benchmark report


def _row(workload: str, torch_s: float, mini_s: float) -> dict:
    return {"workload": workload, "measures": "epoch", "torch_s": torch_s, "mini_s": mini_s,
            "speed_ratio": torch_s / mini_s, "pairs": 9}


def _report(*rows) -> dict:
    return {"benchmark": "minidataloader vs torch.utils.data", "quick": False,
            "machine": {"cpus_usable": 2, "torch": "2.13.0"}, "workloads": list(rows)}


def _verdict_cases() -> list[Case]:
    def case(report, noise, hint):
        rows = ", ".join(f"{r['workload']}: torch {r['torch_s']} s, minidataloader "
                         f"{r['mini_s']} s" for r in report["workloads"])
        return Case({"report": report, "noise": noise},
                    description=f"workloads {rows or '(none)'}; noise={noise}", hint=hint)

    return [
        case(_report(_row("tiny-w0", 0.20, 0.10), _row("io-w4", 0.10, 0.20)), 0.1,
             "torch_s / mini_s above 1 + noise: minidataloader took less time (faster); "
             "below 1 / (1 + noise): torch was faster"),
        case(_report(_row("tiny-w2", 1.05, 1.0), _row("large-w2", 1.0, 1.05)), 0.1,
             "a difference of 5% is within noise=0.1: both are 'a tie'"),
        case(_report(_row("tiny-w2", 1.05, 1.0), _row("large-w2", 1.0, 1.05)), 0.01,
             "with noise=0.01 a 5% difference is no longer a tie"),
        case(_report(_row("a", 0.5, 0.5)), 0.0, "equal times are a tie, whatever the noise"),
        case(_report(), 0.1, "no workloads: an empty dict"),
        case(_report(_row("first-batch-fork", 0.3, 0.25), _row("unordered-w2", 0.8, 1.2),
                     _row("epoch-start-fresh", 0.4, 0.41)), 0.1,
             "use each workload's name as the key, and the words exactly: "
             "'minidataloader faster', 'torch faster' or 'a tie'"),
        case(_report(_row("io-w2", 0.905, 1.0)), 0.1,
             "a ratio of 0.905 is below 1 / (1 + noise) = 0.909, though above 1 - noise = 0.9: "
             "torch faster. The thresholds are not symmetric around 1"),
        case(_report({**_row("tiny-w4", 0.2, 0.1), "speed_ratio": 1.0}), 0.1,
             "the row's stored speed_ratio (1.0) disagrees with its times: compute the ratio "
             "from torch_s and mini_s"),
    ]


register(Exercise(
    reference=solutions.benchmark_verdicts,
    cases=_verdict_cases,
    hint=("for each row of report['workloads'], ratio = torch_s / mini_s; compare it with "
          "1 + noise and with 1 / (1 + noise)"),
    rules=(
        Rule("`torch_s / mini_s` against `1 + noise` and `1 / (1 + noise)`, the three wordings",
             (1, 6)),
        Rule("within the noise: a tie; equal times a tie",
             (2, 3, 4)),
        Rule("no workloads",
             (5,)),
        Rule("the thresholds are not symmetric around 1: `1 / (1 + noise)`, not `1 - noise`",
             (7,)),
        Rule("the ratio computed from the times, not read from a stored `speed_ratio`",
             (8,)),
    ),
    goals=(1,),
))


# ---------------------------------------------------------------------------------------
# 2. Choosing num_workers from a sweep


def _sweep_cases() -> list[Case]:
    def case(speeds, tolerance, hint):
        return Case({"samples_per_s": speeds, "tolerance": tolerance}, hint=hint)

    return [
        case({0: 300.0, 1: 550.0, 2: 1000.0, 4: 1050.0}, 0.1,
             "2 workers give 1000 samples/s, within 10% of the best (1050): 2 is enough"),
        case({0: 300.0, 1: 550.0, 2: 1000.0, 4: 1050.0}, 0.01,
             "with tolerance=0.01 only the best itself is good enough"),
        case({0: 900.0, 2: 400.0, 4: 380.0}, 0.1,
             "here the workers cost more than they bring: 0 workers is the fastest"),
        case({4: 100.0, 2: 95.0, 8: 101.0, 0: 20.0}, 0.1,
             "the dict is not sorted: look at every entry, and return the smallest number "
             "of workers that is good enough"),
        case({3: 10.0}, 0.1, "one setting measured: it is the answer"),
        case({3: 449.0, 0: 400.0, 2: 500.0, 1: 450.0}, 0.1,
             "good enough means at least (1 - tolerance) * best: 450 is, 449 is not"),
    ]


register(Exercise(
    reference=solutions.fewest_workers,
    cases=_sweep_cases,
    hint=("find the best speed with max(), keep the settings whose speed is at least "
          "(1 - tolerance) times it, and return the smallest of their num_workers"),
    rules=(
        Rule("the smallest `num_workers` reaching `(1 - tolerance) × best`, in an unsorted dict",
             (1, 2, 3, 4, 5, 6), note="boundary: 6"),
    ),
    goals=(2,),
))


# ---------------------------------------------------------------------------------------
# 3. How long the training loop waited


def _events(*steps, start=0, end=None) -> list[dict]:
    """Main-loop events of one epoch: ``steps`` are (yielded, step_start, step_end) times
    in ms; the trace's own event names and nanoseconds."""
    records = [{"event": "epoch_start", "t_ns": start * 1_000_000}]
    for batch, (yielded, step_start, step_end) in enumerate(steps):
        records += [{"event": "yielded", "batch": batch, "t_ns": yielded * 1_000_000},
                    {"event": "step_start", "batch": batch, "t_ns": step_start * 1_000_000},
                    {"event": "step_end", "batch": batch, "t_ns": step_end * 1_000_000}]
    if end is not None:
        records.append({"event": "epoch_end", "t_ns": end * 1_000_000})
    return records


def _describe_events(records: list[dict]) -> str:
    return "; ".join(f"{r['event']}" + (f" {r['batch']}" if "batch" in r else "")
                     + f" at {r['t_ns'] / 1e6:g} ms" for r in records)


def _wait_cases() -> list[Case]:
    def case(records, hint):
        return Case({"records": records}, description=_describe_events(records), hint=hint)

    return [
        case(_events((30, 30, 40), (55, 55, 65), end=70),
             "the loop waited 30 ms for batch 0 (from epoch_start) and 15 ms for batch 1 "
             "(from the end of step 0): 0.045 s"),
        case(_events((5, 5, 50), (50, 50, 95), (95, 95, 140), end=141),
             "the batches were ready when asked for: only the first wait (5 ms) counts"),
        case(_events((10, 12, 20), (21, 21, 30), start=2, end=31),
             "a wait starts when the loop is free to ask: at epoch_start (2 ms), or when a "
             "step ends; the time between yielded and step_start is not waiting for data"),
        case(_events(start=0, end=10),
             "no batch at all: no waiting for a batch (the wait for the end of the epoch "
             "does not count)"),
        case(_events((1000, 1000, 1001), (3000, 3000, 3001), end=4000),
             "the result is in seconds, not nanoseconds: divide by 1e9"),
        case([{"event": "epoch_start", "t_ns": 0},
              {"event": "yielded", "batch": 0, "t_ns": 10_000_000},
              {"event": "yielded", "batch": 1, "t_ns": 20_000_000},
              {"event": "step_start", "batch": 1, "t_ns": 20_000_000},
              {"event": "step_end", "batch": 1, "t_ns": 30_000_000},
              {"event": "yielded", "batch": 2, "t_ns": 45_000_000},
              {"event": "epoch_end", "t_ns": 50_000_000}],
             "a wait ends at the yielded that answers it: the loop took batch 0 and asked "
             "again without a step, so batch 1's yielded ends no wait (forget the time the "
             "loop became free once it is counted): 0.010 + 0.015 s"),
    ]


register(Exercise(
    reference=solutions.waiting_seconds,
    cases=_wait_cases,
    compare=close(rtol=1e-9, atol=1e-12),
    hint=("remember when the loop became free (epoch_start, step_end); at the next "
          "'yielded', add the time since then. Return seconds"),
    forbidden=("minidataloader_course.viz.trace.Trace.summary", "minidataloader_course.viz.trace.Trace._waits"),
    rules=(
        Rule("from `epoch_start` or `step_end` to the next `yielded`, in seconds",
             (1, 2, 3, 5)),
        Rule("no batch",
             (4,)),
        Rule("each wait counted once: a `yielded` with no `epoch_start` or `step_end` since "
             "the last one ends no wait",
             (6,)),
    ),
    goals=(6,),
))


# ---------------------------------------------------------------------------------------
# 4. The fastest loader for a table in memory


def _tables() -> list[Case]:
    generator = torch.Generator().manual_seed(11)
    cases = []
    for rows, columns, batch_size, seed, hint in [
        (10, 3, 4, 0, "shuffle with torch.randperm(n, generator=generator), as RandomSampler "
                      "does with a generator; the last batch holds the 2 rows left over"),
        (12, 2, 4, 1, "12 rows in batches of 4: three full batches"),
        (5, 4, 8, 2, "fewer rows than one batch: one batch of all 5 rows, shuffled"),
        (1, 1, 1, 3, "one row, batches of one"),
        (300, 8, 64, 4, "slice features[indices] and labels[indices] with a tensor of "
                        "indices: one gather per batch"),
        (10, 3, 4, None, "no generator: RandomSampler does not permute with the global "
                         "generator; it draws a 64-bit seed from it "
                         "(torch.empty((), dtype=torch.int64).random_()) and permutes with "
                         "a new generator seeded with that: one draw from the global RNG"),
    ]:
        features = torch.randn(rows, columns, generator=generator)
        labels = torch.randint(0, 10, (rows,), generator=generator)
        given = "no generator" if seed is None else f"a generator seeded with {seed}"
        cases.append(Case(
            {"features": features, "labels": labels, "batch_size": batch_size, "seed": seed},
            description=(f"features: {rows}x{columns} floats, labels: {rows} ints, "
                         f"batch_size={batch_size}, {given}"),
            hint=hint))
    return cases


def _use_sliced_batches(implementation, case: Case) -> dict:
    inputs = dict(case.inputs)
    seed = inputs.pop("seed")
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    batches = implementation(**inputs, generator=generator)
    n, b = len(inputs["labels"]), inputs["batch_size"]
    return {"batches": take(batches, limit=-(-n // b) + 1),  # an endless generator: a verdict
            "the global RNG afterwards: torch.randint(1000, (3,))":
                torch.randint(1000, (3,)).tolist()}


def _torch_batches(features, labels, batch_size, generator=None):
    """torch's answer: a DataLoader over the table, in RandomSampler's order (the loader's
    own base seed comes from a generator of its own, so that only the sampler draws from the
    global RNG)."""
    sampler = RandomSampler(range(len(labels)), generator=generator)
    loader = DataLoader(TensorDataset(features, labels), batch_size=batch_size,
                        sampler=sampler, generator=torch.Generator())
    return (tuple(batch) for batch in loader)


register(Exercise(
    reference=solutions.sliced_batches,
    oracle=_torch_batches,
    cases=_tables,
    run=_use_sliced_batches,
    hint=("draw one permutation, as RandomSampler does (with the generator, or without one "
          "from a generator seeded by one draw from the global generator), then yield the "
          "tuple (features[idx], labels[idx]) for each slice idx of batch_size indices"),
    expected_from="torch: a `DataLoader` with `RandomSampler`",
    rules=(
        Rule("`RandomSampler`'s order from the generator, tuples of slices, the last smaller batch",
             (1, 2, 3, 4, 5)),
        Rule("no generator: a 64-bit seed drawn from the global generator, then a generator of its own (the global RNG afterwards is compared)",
             (6,), parity="RandomSampler's seed draw without a generator"),
    ),
    goals=(8,),
))


# ---------------------------------------------------------------------------------------
# 5. A batch sampler that gives every worker the same work


def _budget_cases() -> list[Case]:
    def case(lengths, max_tokens, seed, hint, description=None):
        return Case({"lengths": lengths, "max_tokens": max_tokens, "seed": seed},
                    description=description or (f"lengths={lengths}, max_tokens={max_tokens}, "
                                                f"generator seeded with {seed}"),
                    hint=hint)

    tail = text_lengths(600, seed=17)  # most a few dozen tokens, a few several hundred
    rng = random.Random(4)
    return [
        case(tail, 2048, 0,
             "shuffle the indices with the generator, sort them by length, fill each batch "
             "while its padded size, len(batch) * its longest sample, stays within max_tokens; "
             "then yield the batches in a random order",
             description=f"600 lengths from {min(tail)} to {max(tail)} tokens (most a few "
                         f"dozen), max_tokens=2048, generator seeded with 0"),
        case([10] * 25, 64, 1,
             "every sample has 10 tokens: 6 fit in 64 (60 tokens), 7 do not (70): batches of "
             "6, and one of the 1 left over"),
        case([16] * 8, 64, 2,
             "a batch may fill max_tokens exactly: 4 samples of 16 tokens are 64, they fit"),
        case([1] * 10 + [50], 60, 3,
             "a batch costs its padded size, len(batch) * its longest sample, not the sum of "
             "its lengths: ten samples of 1 token and one of 50 padded together are 11 * 50 = "
             "550 tokens"),
        case([rng.randint(1, 40) for _ in range(9)], 64, 4,
             "build the batches from the generator only: two samplers with generators seeded "
             "alike give the same batches, and the global RNG is not touched"),
        case([5, 300, 20], 256, 5,
             "a sample longer than max_tokens can never fit in a batch: raise ValueError in "
             "__init__"),
        case(tail[:200], 1024, None,
             "without a generator, shuffle with torch's global generator: a script that calls "
             "torch.manual_seed gets the same batches every time",
             description="200 lengths, max_tokens=1024, no generator"),
        case([rng.randint(1, 40) for _ in range(30)], 96, 6,
             "len(sampler) draws nothing: counting the batches by running an epoch draws "
             "from the generator, and the next epoch then gets other batches. Count them "
             "from the lengths alone",
             description="30 lengths from 1 to 40 tokens, max_tokens=96, generator seeded "
                         "with 6; len(sampler) asked between the two epochs"),
    ]


def _padded(batch, lengths) -> int:
    return len(batch) * max(lengths[i] for i in batch)


def _use_budget_sampler(implementation, case: Case) -> dict:
    """What a training loop observes over two epochs, and what the workers and the step get."""
    lengths, max_tokens, seed = (case.inputs[k] for k in ("lengths", "max_tokens", "seed"))
    n = len(lengths)

    def sampler(lengths):
        generator = None if seed is None else torch.Generator().manual_seed(seed)
        return implementation(lengths, max_tokens, generator=generator)

    first_sampler, twin_sampler = sampler(lengths), sampler(list(lengths))
    if seed is None:
        torch.manual_seed(0)
    first, second = take(first_sampler, n + 1), take(first_sampler, n + 1)
    if seed is None:
        torch.manual_seed(0)
    twin = take(twin_sampler, n + 1)
    seen = {
        "every index exactly once, in each epoch":
            [sorted(i for batch in epoch for i in batch) for epoch in (first, second)]
            == [list(range(n))] * 2,
        "every batch is a list of indices": all(type(b) is list for b in first + second),
        "batches whose padded size (len(batch) * longest) is over max_tokens":
            sorted(p for p in (_padded(b, lengths) for b in first + second) if p > max_tokens),
        "batch sizes, largest first (each batch filled while the next sample fits)":
            sorted((len(batch) for batch in first), reverse=True),
        "len(sampler): the number of batches in an epoch": len(first_sampler),
    }
    if n >= 100:  # enough batches that a shuffled order is never sorted by chance
        longest = [max(lengths[i] for i in batch) for batch in first]
        seen["the batches in a random order, not sorted by length"] = (
            longest not in (sorted(longest), sorted(longest, reverse=True)))
        seen["another order in the next epoch"] = first != second
        # without the shuffle before sorting, samples of equal length always meet in the
        # same batches: only the order of the batches would change
        seen["other batches in the next epoch (equal lengths shuffled before sorting)"] = (
            sorted(map(sorted, first)) != sorted(map(sorted, second)))
    if case.description.endswith("between the two epochs"):
        # a len() that runs an epoch to count its batches moves the generator on
        generators = [torch.Generator().manual_seed(seed) for _ in range(2)]
        without, counted = (implementation(lengths, max_tokens, generator=generator)
                            for generator in generators)
        take(without, n + 1), take(counted, n + 1)
        len(counted)
        seen["the second epoch with len(sampler) asked before it, as without"] = (
            take(counted, n + 1) == take(without, n + 1))
        seen["the generator's state afterwards, as without len(sampler)"] = torch.equal(
            generators[1].get_state(), generators[0].get_state())
    if seed is None:
        seen["torch.manual_seed(0) first: the same batches again"] = first == twin
        torch.manual_seed(1)
        seen["torch.manual_seed(1) instead: other batches"] = (
            take(sampler(lengths), n + 1) != first)
    else:
        seen["the same batches from a generator seeded alike"] = first == twin
        seen["the global RNG afterwards: torch.randint(1000, (3,))"] = (
            torch.randint(1000, (3,)).tolist())
    return seen


register(Exercise(
    reference=solutions.TokenBudgetBatchSampler,
    cases=_budget_cases,
    run=_use_budget_sampler,
    hint=("shuffle with the generator, sort by length, start a new batch when "
          "(len(batch) + 1) * the next sample's length would pass max_tokens, and yield the "
          "batches in an order drawn from the generator"),
    time_limit=4.0,
    expected_from="reference, by properties",
    rules=(
        Rule("every index once per epoch, in lists of indices",
             (1, 2, 3, 4, 5, 7)),
        Rule("no batch's padded size (`len(batch) × longest`) over `max_tokens`; reaching it exactly is fine; padded, not summed",
             (1, 3, 4)),
        Rule("filled in length order for as long as the next sample fits (the batch sizes); `len` counts the batches",
             (1, 2, 3, 4, 5, 7)),
        Rule("the batches in a random order, another one each epoch",
             (1, 7)),
        Rule("generators seeded alike give the same batches; the global RNG untouched",
             (1, 2, 3, 4, 5)),
        Rule("no generator: torch's global generator (seeding it repeats the batches)",
             (7,)),
        Rule("a sample longer than `max_tokens`: `ValueError`",
             (6,)),
        Rule("shuffled before sorting: samples of equal length meet in other batches each epoch",
             (1, 7)),
        Rule("`len` draws nothing: the next epoch's batches and the generator's state as without it",
             (8,)),
    ),
    goals=(7,),
))


# ---------------------------------------------------------------------------------------
# Check yourself


class TorchThreads:
    """Every sample is the size of torch's thread pool in the process that reads it."""

    def __len__(self):
        return 2

    def __getitem__(self, index):
        return torch.get_num_threads()


def _torch_threads_in_a_worker() -> int:
    loader = DataLoader(TorchThreads(), batch_size=None, num_workers=1,
                        multiprocessing_context="fork")
    return max(loader)


register(Prediction(
    "ch11-torch-threads", measure=_torch_threads_in_a_worker,
    why="torch calls torch.set_num_threads(1) at the start of every worker: W workers with "
        "a pool of threads each would compete for the cores",
    mistakes={0: "a worker runs torch with a pool of one thread, not none"},
    goals=(3,),
))

register(Choice(
    "ch11-blas-env", answer="c", why={
        "a": "the variable is set, but too late: the BLAS library read it when numpy was "
             "imported, in the main process, before the fork",
        "b": "torch sets its own pool to 1 thread in a worker; numpy's BLAS pool is not its "
             "to set",
        "d": "the variable does not reach the main process at all: worker_init_fn runs in "
             "the worker",
    }, goals=(3,)))

register(Choice(
    "ch11-timeout-spawn", answer="b", why={
        "a": "the timeout bounds the wait for each batch, the first one included, not the "
             "epoch",
        "c": "the timeout is the same with every start method; spawn makes the first wait "
             "longer",
        "d": "a timeout ends the for loop with a RuntimeError; the sample is not skipped",
    }, goals=(4,)))

register(Choice(
    "ch11-shared-memory", answer="a", why={
        "b": "pickled bytes are copied at least twice, through a pipe: out of the worker and "
             "into the main process; shared memory is written once, and mapped",
        "c": "shared memory holds the batch, not the dataset: the dataset is copied into the "
             "worker by fork (or pickled, with spawn)",
        "d": "a batch in shared memory is a tensor like any other; the main process reads it "
             "where the worker wrote it",
    }, goals=(5,)))

class Measured(list):
    """A measurement shown as a plain list of MB, rounded to the nearest 8 (what a
    prediction names), with the medians it was rounded from (``exact``) and the margin a
    prediction may miss them by (``margin``, MB)."""

    def __init__(self, values=(), exact=None, margin=0.0):
        super().__init__(values)
        self.exact = list(self) if exact is None else exact
        self.margin = margin


ARRAY_MB = 64


def _private_megabytes() -> Measured:
    """The real thing: a worker's USS, from /proc, before and after it read (or wrote) every
    page of a 64 MB tensor made in the main process; three fresh workers each."""
    import os
    import statistics

    from minidataloader_course.chapters.ch11.performance import private_megabytes

    if not os.path.exists("/proc/self/smaps_rollup"):  # not Linux: the model, said so
        return Measured([0, ARRAY_MB], [0.0, float(ARRAY_MB)], margin=0.1 * ARRAY_MB)
    found = private_megabytes(ARRAY_MB, repeats=3)
    exact = [statistics.median(found["reading"]), statistics.median(found["writing"])]
    spread = max(max(values) - min(values) for values in found.values())
    return Measured([8 * round(x / 8) for x in exact], exact,
                    margin=max(0.1 * ARRAY_MB, 3 * spread))


def _within_the_margin(expected: Measured, got) -> str | None:
    if (not isinstance(got, (list, tuple)) or len(got) != 2
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in got)):
        return "predict two numbers, in MB: [reading, writing]"
    for what, measured, predicted in zip(("reading", "writing"), expected.exact, got):
        if abs(predicted - measured) > expected.margin:
            return (f"{what}: you predicted {predicted} MB, the worker's USS grew by "
                    f"{measured:.1f} MB (a prediction within {expected.margin:.0f} MB passes)")
    return None


register(Prediction(
    "ch11-memory-per-worker", measure=_private_megabytes, compare=_within_the_margin,
    prompt_text="two numbers, in MB: [reading, writing]",
    why="a forked worker shares its parent's pages until one of them writes to a page: "
        "reading the tensor copies nothing (its USS hardly grows), writing to every page "
        "copies every page into the worker (all 64 MB become its own)",
    mistakes={(ARRAY_MB, ARRAY_MB): "reading maps the parent's pages, it does not copy them: "
                                    "only a write makes a page the worker's own",
              (0, 0): "a write to a shared page copies it first (copy-on-write): after "
                      "writing to every page the worker owns all of them",
              (0, ARRAY_MB // 2): "every element is written, so every page is copied: "
                                  "the whole tensor"},
    goals=(9,),
))
