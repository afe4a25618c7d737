"""Chapter 6 (workers and queues): the exercises, their hidden cases and the check-yourself
items.

The worker loop is checked in a thread of the checker's child process (and once in a real
forked worker); the multi-process iterator, in each of its four steps, on real worker
processes against torch's iterator for a loader made of the same parts: the machinery is
``multiprocess_cases``, which chapters 7 to 14 share. The bookkeeping tables run torch's own
iterator with scripted arrivals (``bookkeeping.py``).
"""

from __future__ import annotations

import time

import torch.utils.data as tud

from minidataloader_course.chapters.ch06 import bookkeeping, step1, step2, step3
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
from minidataloader_course.checker.framework import Case, Exercise, Rule, register
from minidataloader_course.checker.questions import Choice, Prediction

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
# 2. The multi-process iterator, in four steps (a piece of the learner's loader; chapters 7
# to 10 grow it). Each step is an exercise of its own, registered in the chapter's order
# (NOTE [ A piece grown in steps ]); the last keeps the plain name, and its check is the
# whole piece's: the one milestones use.

STEP_NAMES = ("MultiProcessIterator, one worker", "MultiProcessIterator, several workers",
              "MultiProcessIterator, in order", "MultiProcessIterator")


def _one_worker_cases() -> list[Case]:
    one = {"num_workers": 1}
    return [
        iterator_case(("numbers", 10), {"batch_size": 3, **one},
                      "start one process running your worker_loop, send it tasks (batch "
                      "number, indices) and hand out what it sends back, in order; at the end, "
                      "raise StopIteration and stop the worker (None on its index queue, then "
                      "join it)"),
        iterator_case(("numbers", 10), {"batch_size": 4, "shuffle": True, "generator": 1,
                                        "drop_last": True, **one},
                      "the tasks come from loader.batch_sampler, in its order; draw the base "
                      "seed first, from loader.generator, as your SingleProcessIterator does"),
        iterator_case(("numbers", 10), {"batch_size": 3, "shuffle": True, **one},
                      "without a generator, the base seed is one int64 draw from the global "
                      "generator, made when the iterator is made, before any index is taken"),
        iterator_case(("numbers", 4), {"batch_size": None, **one},
                      "batch_size=None: the loader has no batch_sampler; take the indices from "
                      "loader.sampler, and tell worker_loop auto_collation=False"),
        iterator_case(("numbers", 0), {"batch_size": 2, **one},
                      "an empty dataset: nothing to send; the first next() raises "
                      "StopIteration, and the worker is stopped"),
    ]


register(Exercise(
    reference=step1.MultiProcessIterator,
    name=STEP_NAMES[0],
    oracle=TorchIterator,
    cases=_one_worker_cases,
    run=use_iterator,
    hint="make the worker when the iterator is made; each next() hands out the batch that "
         "comes back, and sends the next task; at the end, stop the worker",
    forbidden=ITERATOR_PIECES,
    time_limit=6.0,
    piece="dataloader.MultiProcessIterator",
    expected_from="torch: its iterator, with one worker",
    rules=(
        Rule("one process running `worker_loop`; the batches handed out; `StopIteration` at the end, the worker stopped",
             (1, 5)),
        Rule("the tasks from the batch sampler, in its order",
             (1, 2)),
        Rule("the base seed drawn when the iterator is made, from the loader's generator or the global one",
             (1, 2, 3), parity="one int64 draw, before the first index"),
        Rule("`batch_size=None`: the sampler's indices, `auto_collation=False`",
             (4,)),
    ),
    goals=(2, 6),
))


def in_number_order(batches: list) -> list:
    """An epoch's batches sorted by their samples, the processes that read them named again
    in that order: what an iterator that hands batches out as they arrive must match."""
    described = [b for b in batches if isinstance(b, tuple)]
    others = [b for b in batches if not isinstance(b, tuple)]
    names: dict[str, str] = {}
    renamed = []
    for indices, readers in sorted(described, key=lambda batch: batch[0]):
        for reader in readers:
            if reader.startswith("worker process") and reader not in names:
                names[reader] = f"worker process {len(names) + 1}"
        renamed.append((indices, sorted(names.get(reader, reader) for reader in readers)))
    return renamed + others


def _use_iterator_any_order(implementation, case: Case) -> dict:
    """``use_iterator``, each epoch's batches compared as a collection (step 2 hands them
    out as they arrive; torch's come in order)."""
    seen = use_iterator(implementation, case)
    return {key: in_number_order(value) if key.startswith("epoch ") else value
            for key, value in seen.items()}


def _several_workers_cases() -> list[Case]:
    return [
        iterator_case(("numbers", 10), {"batch_size": 3, "num_workers": 2},
                      "start num_workers processes, and deal the tasks in turn: task k goes to "
                      "worker k % num_workers (round robin); at the end, stop every worker"),
        iterator_case(("numbers", 30), {"batch_size": 3, "num_workers": 2,
                                        "prefetch_factor": 2},
                      "making the iterator sends prefetch_factor * num_workers tasks (4 "
                      "batches of 3: 12 samples read before the first next()); each batch "
                      "handed out sends one more task, no more", watch=("prefetch",)),
        iterator_case(("numbers", 30), {"batch_size": 2, "num_workers": 3,
                                        "prefetch_factor": 1},
                      "prefetch_factor counts batches per worker: 1 x 3 = 3 tasks are sent "
                      "when the iterator is made (6 samples), then one per batch handed out",
                      watch=("prefetch",)),
        iterator_case(("numbers", 8, 0), {"batch_size": 2, "num_workers": 2},
                      "batch 0 is slow: the others arrive first; in this step, hand each batch "
                      "out as it arrives, every batch once, and stop when none is in flight"),
        iterator_case(("numbers", 5), {"batch_size": 2, "num_workers": 3,
                                       "prefetch_factor": 2},
                      "a short epoch: 3 batches, fewer than prefetch_factor * num_workers; "
                      "send what the sampler has, and stop when it is exhausted",
                      watch=("prefetch",)),
        iterator_case(("numbers", 0), {"batch_size": 2, "num_workers": 2},
                      "an empty dataset: the first next() raises StopIteration, and every "
                      "worker is stopped"),
    ]


register(Exercise(
    reference=step2.MultiProcessIterator,
    name=STEP_NAMES[1],
    oracle=TorchIterator,
    cases=_several_workers_cases,
    run=_use_iterator_any_order,
    hint="one index queue per worker and one result queue for all; send prefetch_factor * "
         "num_workers tasks when the iterator is made, in turn, and one more per batch handed "
         "out",
    forbidden=ITERATOR_PIECES,
    time_limit=8.0,
    piece="dataloader.MultiProcessIterator",
    expected_from="torch: its iterator; the batches compared in any order",
    rules=(
        Rule("`num_workers` processes; task *k* to worker *k* mod `num_workers` (round robin)",
             (1, 4)),
        Rule("`prefetch_factor × num_workers` tasks sent when the iterator is made, one more per batch handed out",
             (2, 3, 5)),
        Rule("every batch handed out once, in any order; `StopIteration` when none is in flight, every worker stopped",
             (1, 4, 5, 6)),
    ),
    goals=(2, 3, 6),
))


def _in_order_cases() -> list[Case]:
    return [
        iterator_case(("numbers", 10), {"batch_size": 3, "num_workers": 2},
                      "hand the batches out in the sampler's order: keep a batch that arrives "
                      "before its turn in a reorder buffer"),
        iterator_case(("numbers", 8, 0), {"batch_size": 2, "num_workers": 2},
                      "batch 0 is slow, and the batches after it arrive first: keep them in the "
                      "reorder buffer, and hand everything out in order"),
        iterator_case(("numbers", 8, None, None, (2, 3)), {"batch_size": 2, "num_workers": 2},
                      "hand batch 0 out as soon as it arrives: do not wait for the results of "
                      "other batches first", watch=("gate",)),
        iterator_case(("numbers", 30, 0), {"batch_size": 3, "num_workers": 2,
                                           "prefetch_factor": 2},
                      "a batch waiting in the reorder buffer is still in flight: send one task "
                      "per batch handed out, not per batch received (12 samples read before "
                      "the first next(), 15 after it)", watch=("prefetch",)),
        iterator_case(("numbers", 0), {"batch_size": 2, "num_workers": 2},
                      "an empty dataset: the first next() raises StopIteration, and every "
                      "worker is stopped"),
    ]


register(Exercise(
    reference=step3.MultiProcessIterator,
    name=STEP_NAMES[2],
    oracle=TorchIterator,
    cases=_in_order_cases,
    run=use_iterator,
    hint="remember which batch number is due next; a batch that arrives before its turn "
         "waits in a dict until its number is due",
    forbidden=ITERATOR_PIECES,
    time_limit=8.0,
    piece="dataloader.MultiProcessIterator",
    expected_from="torch: its iterator",
    rules=(
        Rule("the batches in the sampler's order; early ones wait in the reorder buffer; `StopIteration` at the end",
             (1, 2, 5)),
        Rule("a batch is handed out as soon as its turn comes (samples of batch 1 wait for it)",
             (3,)),
        Rule("a batch in the buffer is still in flight: one task per batch handed out",
             (4,)),
    ),
    goals=(4, 6),
))


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
                      "making the iterator sends prefetch_factor * num_workers tasks (4 batches "
                      "of 3: 12 samples read before the first next()); each batch handed out "
                      "sends one more task, no more", watch=("prefetch",)),
        iterator_case(numbers, {"batch_size": 4, "num_workers": 3, "shuffle": True,
                                "generator": 1, "drop_last": True, "prefetch_factor": 1},
                      "the order is the batch sampler's: iterate loader.batch_sampler once per "
                      "epoch; draw the base seed first, from loader.generator, as in chapter 5"),
        iterator_case(numbers, {"batch_size": 3, "num_workers": 2, "shuffle": True},
                      "without a generator, the base seed is one int64 draw from the global "
                      "generator (chapter 5's draw, with generator=None), made when the "
                      "iterator is made, before any index is taken from the sampler"),
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
                      "turn comes, so that the epoch can go on after it"),
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
    hint=("with in_order=False, hand out whatever arrives, and deal a task only to a worker "
          "with room; a batch that is an exception is raised in its turn, after the next task "
          "is sent"),
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
        Rule("`prefetch_factor × num_workers` tasks when the iterator is made, one more per batch handed out",
             (3,)),
        Rule("the batch sampler's order; the base seed drawn when the iterator is made, from the loader's generator or the global one",
             (4, 5)),
        Rule("`batch_size=None`: the sampler, `auto_collation=False`",
             (6,)),
        Rule("a batch is handed out as soon as it arrives (samples of batch 1 wait for it)",
             (7,)),
        Rule("`in_order=False`: as they arrive, each once",
             (8,)),
        Rule("a worker's exception raised in its batch's turn; the epoch goes on",
             (9,)),
        Rule("`in_order=False`: a task only to a worker with fewer than `prefetch_factor` tasks not yet handed out",
             (11,), parity="which worker takes a task out of order"),
        Rule("the next task sent before a worker's exception is raised",
             (12,), parity="the task sent before the raise"),
    ),
    goals=(2, 4, 6),
))


# ---------------------------------------------------------------------------------------
# The bookkeeping tables: after each next(), what torch's iterator has sent, which batch is
# due, what waits in the buffer, what each worker has in flight (bookkeeping.py: torch's own
# iterator, the arrivals scripted).

_TABLE = "a list of tuples, one per row"

register(Prediction(
    "ch06-bookkeeping-one-worker", measure=bookkeeping.one_worker_table, prompt_text=_TABLE,
    why="with one task ahead, making the iterator sends task 0; each next() hands out the "
        "batch due and sends one more task while the sampler has one: (1, 0), (2, 1), (3, 2); "
        "the last next() finds the sampler exhausted and sends nothing: (3, 3)",
    goals=(2,),
))

register(Prediction(
    "ch06-bookkeeping-round-robin", measure=bookkeeping.round_robin_table, prompt_text=_TABLE,
    why="making the iterator sends 2 x 2 = 4 tasks in turn: worker 0 gets 0 and 2, worker 1 "
        "gets 1 and 3; each next() hands one batch out, which leaves its worker's list, and "
        "sends the next task to the next worker in turn (4 to worker 0, 5 to worker 1, 6 to "
        "worker 0); after batch 6 the sampler is exhausted, and nothing more is sent",
    goals=(2, 3),
))

register(Prediction(
    "ch06-bookkeeping-reorder", measure=bookkeeping.reorder_table, prompt_text=_TABLE,
    why="the first next() reads 1 and 3 into the buffer before 0 arrives, hands 0 out and "
        "sends task 4; the second takes 1 from the buffer and sends task 5 (the last); the "
        "third reads 2 and hands it out; the fourth takes 3 from the buffer; the fifth reads 5 "
        "into the buffer, then 4, and hands 4 out",
    goals=(4,),
))

register(Prediction(
    "ch06-bookkeeping-out-of-order", measure=bookkeeping.out_of_order_table,
    prompt_text=_TABLE,
    why="with in_order=False each next() hands out whatever arrives first: 1, 3, 4, then 0. "
        "Worker 0 keeps its two tasks (0 and 2) while it is held up on batch 0, so it has no "
        "room: every new task (4, 5, 6) goes to worker 1; once 0 is handed out, worker 0 has "
        "room again and takes task 7",
    goals=(4,),
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
