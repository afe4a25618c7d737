"""Chapter 6 (workers and queues): the exercises and their hidden cases.

The worker loop is checked in a thread of the checker's child process (and once in a real
forked worker), the multi-process iterator on real worker processes against torch's iterator
for a loader made of the same parts: the machinery is ``multiprocess_cases``, which chapters 7
to 14 share.
"""

from __future__ import annotations

import time

import torch.utils.data as tud

from minidataloader_course.chapters.ch06 import solution as solutions
from minidataloader_course.chapters.multiprocess_cases import (
    ITERATOR_PIECES,
    WORKER_PIECES,
    CorruptAt,
    Numbers,
    TorchIterator,
    iterator_case,
    more_workers_than_cpus_is_fine,
    run_worker,
    tasks_text,
    use_iterator,
    when_idle,
)
from minidataloader_course.checker.framework import Case, Exercise, Rule, TooManyItems, register
from minidataloader_course.checker.questions import Choice, Prediction

# ---------------------------------------------------------------------------------------
# Running the reader's loop in a thread


# ---------------------------------------------------------------------------------------
# 1. The worker loop (a piece of the learner's loader; chapters 7, 8 and 10 grow it)


class Uncollatable:
    """A sample the cases' collate_fn refuses."""

    def __repr__(self):
        return "Uncollatable()"


def gather(samples):
    """The collate_fn of the cases: the samples of a batch as a tuple."""
    if any(isinstance(sample, Uncollatable) for sample in samples):
        raise TypeError("collate_fn cannot batch an Uncollatable sample")
    return tuple(samples)


SQUARES = tuple(i * i for i in range(10))


def _worker_cases() -> list[Case]:
    def case(tasks, hint, dataset=SQUARES, in_a_process=False):
        where = "in a real worker process (fork), " if in_a_process else ""
        data = "squares 0, 1, 4, …, 81" if dataset is SQUARES else repr(dataset)
        return Case({"dataset": dataset, "tasks": tuple(tasks), "in_a_process": in_a_process},
                    description=f"{where}dataset: {data}; index queue: {tasks_text(tasks)}",
                    hint=hint)

    return [
        case([(0, (0, 1)), (1, (2, 3)), None],
             "make a MapFetcher(dataset, auto_collation, collate_fn, drop_last) once; then take "
             "a task, fetch its batch, put (batch_number, batch) on the result queue; stop at "
             "None"),
        case([None], "None first: the loop ends at once and sends nothing"),
        case([(0, (1,)), None, (1, (2,))],
             "stop at the None sentinel: the task after it must stay unread in the queue"),
        case([(7, (9,)), (3, (0, 1, 2))],
             "send each batch with the batch number of its task (7, then 3), not a count of "
             "your own; the check puts None after these tasks"),
        case([(0, (0, 1)), (1, (2, 3)), (2, (4,)), None],
             "a sample that raises must not end the worker: catch the exception, put "
             "(batch_number, the exception) on the result queue, and go on with the next task",
             dataset=CorruptAt(6, 2)),
        case([(0, (0, 1)), (1, (2, 3)), None],
             "collating can fail too (here collate_fn raises TypeError on sample 3): keep the "
             "whole fetch inside the try, and send the exception as that batch",
             dataset=(0, 1, 4, Uncollatable())),
        case([(0, (0, 1, 2)), (1, (3, 4)), None],
             "the same loop must work in a worker process, with multiprocessing queues",
             in_a_process=True),
    ]


def _use_worker_loop(implementation, case: Case) -> dict:
    tasks = list(case.inputs["tasks"])
    if None not in tasks:
        tasks.append(None)  # the check's own sentinel after the tasks
    # dataset, [queues and done_event], auto_collation, collate_fn, drop_last, base_seed,
    # init_fn, worker_id, num_workers
    arguments = (case.inputs["dataset"], True, gather, False, 0, None, 0, 1)
    return run_worker(implementation, arguments, tasks, case.inputs["in_a_process"])


register(Exercise(
    reference=solutions.worker_loop,
    cases=_worker_cases,
    run=_use_worker_loop,
    hint=("make the fetcher once; then loop forever: task = index_queue.get(); if it is None, "
          "return; otherwise fetch the batch and put (batch_number, batch) on result_queue"),
    forbidden=WORKER_PIECES,
    time_limit=5.0,
    piece="worker.worker_loop",
    rules=(
        Rule("a fetcher made once; fetch, put `(batch_number, batch)`; return at `None`, leaving later tasks unread",
             (1, 2, 3)),
        Rule("the task's own batch number",
             (4,)),
        Rule("an exception from reading or collating is sent as the batch, and the loop goes on",
             (5, 6)),
        Rule("works in a real worker process with multiprocessing queues",
             (7,)),
    ),
    goals=(2, 6),
))


# ---------------------------------------------------------------------------------------
# 2. Which worker, and when


def _schedule_hint(num_batches: int, num_workers: int, prefetch_factor: int) -> str:
    in_flight = num_workers * prefetch_factor
    if num_batches <= in_flight:
        return (f"{prefetch_factor} x {num_workers} = {in_flight} tasks are sent by iter(), "
                f"and the epoch has only {num_batches} batches: all are sent by iter() (None)")
    return (f"iter() sends the first {prefetch_factor} x {num_workers} = {in_flight} batches; "
            f"after that, batch k is sent when batch k - {in_flight} is handed out; workers "
            f"take turns: batch k goes to worker k % {num_workers}")


register(Exercise(
    reference=solutions.dispatch_schedule,
    cases=lambda: [Case({"num_batches": n, "num_workers": w, "prefetch_factor": p},
                        hint=_schedule_hint(n, w, p))
                   for n, w, p in [(10, 2, 2), (10, 1, 2), (10, 4, 1), (3, 2, 2), (12, 3, 2),
                                   (0, 2, 2), (9, 2, 3), (5, 1, 1), (8, 4, 2)]],
    hint="the worker is batch % num_workers; the trigger is None for the first "
         "prefetch_factor * num_workers batches, then batch - prefetch_factor * num_workers",
    forbidden=WORKER_PIECES,
    expected_from="reference; the chapter traces torch's",
    rules=(
        Rule("round robin; the first `prefetch_factor × num_workers` sent by `iter()`, then batch *k* when *k − that* is handed out",
             (1, 2, 3, 4, 5, 6, 7, 8, 9), note="short epochs: 4, 6, 9"),
    ),
    goals=(2,),
))


# ---------------------------------------------------------------------------------------
# 3. Samples loaded before the loop takes a batch


def _ahead_hint(n: int, b: int, workers: int, factor, drop_last: bool) -> str:
    if workers == 0:
        return "num_workers=0: nothing is loaded until next() asks for the first batch"
    hint = (f"prefetch_factor counts batches per worker: iter() sends {factor} x {workers} = "
            f"{factor * workers} batches of up to {b} samples")
    full, leftover = divmod(n, b)
    batches = full + (1 if leftover and not drop_last else 0)
    if batches < factor * workers:
        hint += f", but the epoch has only {batches} batch{'es' * (batches != 1)}"
        if leftover:
            hint += (f" (the last one, {leftover} samples, is dropped)" if drop_last
                     else f" (the last one holds {leftover} samples)")
    return hint


AHEAD = [(64, 4, 2, 2, False), (64, 4, 2, 3, False), (10, 4, 2, 2, False), (10, 4, 2, 2, True),
         (100, 32, 4, 2, False), (1000, 32, 0, None, False), (768, 32, 2, 2, False),
         (5, 10, 1, 2, False), (5, 10, 1, 2, True), (50, 8, 3, 1, False), (0, 4, 2, 2, False)]

register(Exercise(
    reference=solutions.samples_loaded_ahead,
    cases=lambda: [Case({"dataset_size": n, "batch_size": b, "num_workers": w,
                         "prefetch_factor": p, "drop_last": d}, hint=_ahead_hint(n, b, w, p, d))
                   for n, b, w, p, d in AHEAD],
    hint="add up the sizes of the first prefetch_factor * num_workers batches of the epoch",
    forbidden=WORKER_PIECES,
    expected_from="reference; the chapter measures torch's",
    rules=(
        Rule("`prefetch_factor` batches per worker, of their real sizes",
             (1, 2, 7, 10)),
        Rule("short epochs, the last smaller batch, `drop_last`",
             (3, 4, 5, 8, 9, 11)),
        Rule("no workers: nothing",
             (6,)),
    ),
    goals=(3,),
))


# ---------------------------------------------------------------------------------------
# 4. The reorder buffer


def _arrival_cases() -> list[Case]:
    def case(order, hint, in_order=True):
        arrivals = tuple((n, f"batch {n}") for n in order)
        return Case({"arrivals": arrivals, "in_order": in_order}, hint=hint,
                    description=f"batches arrive in the order {list(order)}, in_order={in_order}")

    return [
        case([0, 1, 2, 3], "already in order: yield each one as it arrives"),
        case([1, 0, 2], "batch 1 arrives first: keep it until batch 0 is there, then yield "
                        "both, 0 then 1"),
        case([2, 1, 0, 3], "nothing can go out before batch 0; then 0, 1 and 2 go out at once"),
        case([0, 3, 1, 2, 5, 4], "yield each batch as soon as its turn comes: 0 at once, 1 "
                                 "when it arrives, then 2 together with the waiting 3"),
        case([4, 3, 2, 1, 0], "all reversed: the buffer holds 4 batches before 0 arrives"),
        case([], "no batch at all: yield nothing"),
        case([2, 0, 1], "in_order=False: yield every batch the moment it arrives", in_order=False),
        case([0], "one batch"),
    ]


def _use_reorder(implementation, case: Case) -> list:
    """What the training loop sees: each batch, and how many arrivals had been read when it
    came out (a buffer that waits for more than it needs is too late)."""
    arrivals = case.inputs["arrivals"]
    read = 0

    def feed():
        nonlocal read
        for arrival in arrivals:
            read += 1
            yield arrival

    limit = len(arrivals) + 10
    seen = []
    for batch in implementation(feed(), in_order=case.inputs["in_order"]):
        if len(seen) == limit:
            raise TooManyItems(limit)
        seen.append({"batch": batch, "arrivals read": read})
    return seen


register(Exercise(
    reference=solutions.reorder_batches,
    cases=_arrival_cases,
    run=_use_reorder,
    hint=("keep a dict batch number -> batch and the number you must yield next; after each "
          "arrival, yield from the dict while it holds that number"),
    forbidden=WORKER_PIECES,
    rules=(
        # no arrival, nothing: part of this rule, for no plausible mistake yields something
        # from nothing while getting the other cases right
        Rule("in number order, each as soon as it can go (arrivals read are compared); no arrival, nothing",
             (1, 2, 3, 4, 5, 6, 8)),
        Rule("`in_order=False`: as they arrive",
             (7,)),
    ),
    goals=(4,),
))


# ---------------------------------------------------------------------------------------
# 5. The multi-process iterator (a piece of the learner's loader; chapters 7 to 10 grow it)


def _iterator_cases() -> list[Case]:
    numbers = ("numbers", 10)
    return [
        iterator_case(numbers, {"batch_size": 3, "num_workers": 2},
                      "start num_workers processes running worker_loop, send batch k to worker "
                      "k % num_workers, and hand the batches out in order (one that arrives "
                      "early waits in the reorder buffer); at the end, raise StopIteration, "
                      "and stop the workers (None each, then join them)"),
        iterator_case(("numbers", 8, 0), {"batch_size": 2, "num_workers": 2},
                      "batch 0 is slow, and the batches after it arrive first: keep them in the "
                      "reorder buffer, and hand everything out in order"),
        iterator_case(("numbers", 30), {"batch_size": 3, "num_workers": 2,
                                        "prefetch_factor": 2},
                      "__init__ sends prefetch_factor * num_workers tasks (4 batches of 3: 12 "
                      "samples read before the first next()); each batch handed out sends one "
                      "more task, no more", watch=("prefetch",)),
        iterator_case(numbers, {"batch_size": 4, "num_workers": 3, "shuffle": True,
                                "generator": 1, "drop_last": True, "prefetch_factor": 1},
                      "the order is the batch sampler's: iterate loader.batch_sampler once per "
                      "epoch; draw the base seed first, from loader.generator, as in chapter 5"),
        iterator_case(numbers, {"batch_size": 3, "num_workers": 2, "shuffle": True},
                      "without a generator, the base seed is one int64 draw from the global "
                      "generator (chapter 5's draw, with generator=None), made in __init__, "
                      "before any index is taken from the sampler"),
        iterator_case(("numbers", 4), {"batch_size": None, "num_workers": 2},
                      "batch_size=None: the loader has no batch_sampler; iterate its sampler, "
                      "and tell worker_loop auto_collation=False"),
        iterator_case(("numbers", 8, None, None, (2, 3)), {"batch_size": 2, "num_workers": 2},
                      "hand batch 0 out as soon as it arrives: do not wait for the results of "
                      "other batches first", watch=("gate",)),
        iterator_case(("numbers", 12, 0), {"batch_size": 2, "num_workers": 2,
                                           "in_order": False},
                      "in_order=False: hand out whatever arrives first (here batch 0 is slow, "
                      "so it is not first); every batch still comes once",
                      watch=("unordered",)),
        iterator_case(("numbers", 16, None, 5), {"batch_size": 2, "num_workers": 2},
                      "a worker sends an exception in place of batch 2: raise it when batch 2's "
                      "turn comes, after sending the next task, so that the epoch can go on"),
        iterator_case(("numbers", 0), {"batch_size": 2, "num_workers": 2},
                      "an empty dataset: no task to send; the first next() raises StopIteration "
                      "and the workers are stopped"),
        iterator_case(("numbers", 12, None, 0, (), "sleep"),
                      {"batch_size": 1, "num_workers": 2, "prefetch_factor": 2,
                       "in_order": False},
                      "in_order=False: a task goes to the next worker in turn that has fewer "
                      "than prefetch_factor tasks not yet handed out; while worker 0 is held up "
                      "by sample 0 with 2 tasks, every new task goes to the other worker",
                      watch=("unordered", "held")),
        iterator_case(("numbers", 30, None, 2), {"batch_size": 3, "num_workers": 2,
                                                 "prefetch_factor": 2},
                      "batch 0 is an exception: handing it out (raising it) sends one more "
                      "task first, as any batch handed out does (12 samples read before the "
                      "first next(), 15 after it); raise after sending it",
                      watch=("prefetch",)),
    ]


register(Exercise(
    reference=solutions.MultiProcessIterator,
    oracle=TorchIterator,
    cases=_iterator_cases,
    run=use_iterator,
    hint=("__init__: the index iterator and the base seed as in chapter 5, then the queues and "
          "the workers, then prefetch_factor * num_workers tasks; __next__: the batch numbered "
          "next, from the reorder buffer or the result queue"),
    forbidden=ITERATOR_PIECES,
    time_limit=9.0,  # 12 cases, each starting real worker processes
    piece="dataloader.MultiProcessIterator",
    expected_from="torch: its iterator",
    rules=(
        Rule("`num_workers` processes, batch *k* to worker *k* mod `num_workers`, batches in order; `StopIteration` at the end, workers stopped",
             (1, 10)),
        # case 1 too: its workers race, and its batches often arrive out of order
        Rule("early batches wait in the reorder buffer",
             (1, 2)),
        Rule("`prefetch_factor × num_workers` tasks from `__init__`, one more per batch handed out",
             (3,)),
        Rule("the batch sampler's order; the base seed drawn in `__init__`, from the loader's generator or the global one",
             (4, 5)),
        Rule("`batch_size=None`: the sampler, `auto_collation=False`",
             (6,)),
        Rule("a batch is handed out as soon as it arrives (samples of batch 1 wait for it)",
             (7,)),
        Rule("`in_order=False`: as they arrive, each once",
             (8,)),
        Rule("a worker's exception raised in its turn, after the next task is sent; the epoch goes on",
             (9, 12)),
        Rule("`in_order=False`: a task only to a worker with fewer than `prefetch_factor` tasks not yet handed out",
             (11,)),
    ),
    goals=(2, 6),
))


# ---------------------------------------------------------------------------------------
# Check yourself

register(Choice(
    "ch06-why-processes", answer="b", why={
        "a": "threads share all the memory of their process, the dataset included; it is "
             "processes that each need their own copy",
        "c": "a thread starts far faster than a process (chapter 8 measures what a worker "
             "process costs to start)",
        "d": "workers do not use the GPU at all: they read and collate samples on the CPU",
    }, goals=(1,)))

register(Choice(
    "ch06-more-workers", answer="c", why={
        "a": "four workers can load four times as many batches per second, but the loop "
             "cannot take them faster than one per training step",
        "b": "50 / 20 would be the gain if the step waited for each batch to load; one "
             "worker loads in parallel with the step, and already keeps up",
    }, goals=(1,)))


def _reads_before_the_first_batch() -> int:
    """Samples torch's workers read after iter(loader), before any next()."""
    dataset = Numbers(100)
    with more_workers_than_cpus_is_fine():
        iterator = iter(tud.DataLoader(dataset, batch_size=8, num_workers=3,
                                       prefetch_factor=2, multiprocessing_context="fork"))
        deadline = time.monotonic() + 20
        while dataset.reads.value == 0 and time.monotonic() < deadline:
            time.sleep(0.02)  # the workers are starting
        reads = when_idle(dataset.reads, settle=0.5, limit=20)
        del iterator  # stops the workers
    return reads


register(Prediction(
    "ch06-samples-before-first-batch", measure=_reads_before_the_first_batch,
    why="iter(loader) sends prefetch_factor x num_workers tasks, each a whole batch: "
        "2 x 3 batches of 8 samples",
    mistakes={6: "6 is the number of tasks sent; each task is a batch of 8 samples",
              16: "every worker gets prefetch_factor batches, and there are 3 workers",
              24: "prefetch_factor counts batches per worker: 2 for each of the 3 workers",
              0: "the workers start reading when iter(loader) sends the first tasks, without "
                 "waiting for next()"},
    goals=(3,),
))

register(Choice(
    "ch06-head-of-line", answer="b", why={
        "a": "that is what in_order=False does; with in_order=True batch 1 must wait until "
             "batch 0 has been handed out",
        "c": "a batch that arrives early is kept, in the reorder buffer, not dropped",
        "d": "batch 1 is loaded by another worker, at the same time as batch 0: it is ready "
             "long before batch 0, and only waits for its turn",
    }, goals=(4,)))

register(Choice(
    "ch06-notebook-class", answer="c", why={
        "a": "the dataset pickles fine (its class travels as the name __main__.Squares); it "
             "is the worker that cannot find that name when it unpickles",
        "b": "a spawned worker is a fresh interpreter, not a copy of the notebook's process: "
             "it cannot import the notebook's __main__",
        "d": "the loader does not fall back to the main process: the worker's failure ends "
             "the epoch with an error",
    }, goals=(5,)))

register(Choice(
    "ch06-main-guard", answer="b", why={
        "a": "the guard changes nothing about speed: it decides what a worker runs when it "
             "loads the script",
        "c": "the imports at the top of the script run in every spawned worker, guard or "
             "not: the worker imports torch anyway",
        "d": "a forked worker is a copy of the main process and never runs the script; the "
             "guard matters with spawn and forkserver",
    }, goals=(5,)))
