"""Chapter 8 (epochs and persistent workers): the exercises and their hidden cases."""

from __future__ import annotations

import queue

import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

from minidataloader_course.chapters.ch08 import persistent_iterator
from minidataloader_course.chapters.ch08 import solution as solutions
from minidataloader_course.chapters.ch08.pool import ToyPool, interrupted_epoch
from minidataloader_course.chapters.multiprocess_cases import (
    ITERATOR_PIECES,
    WORKER_PIECES,
    Numbers,
    Readers,
    TorchIterator,
    iterator_case,
    loader_arguments,
    message_class,
    more_workers_than_cpus_is_fine,
    one_epoch,
    run_worker,
    start_thread,
    tasks_text,
    use_iterator,
    workers_for_a_check,
)
from minidataloader_course.checker.framework import Case, Exercise, Rule, register, take
from minidataloader_course.checker.questions import Choice, Prediction
from minidataloader_course.shared.compare import close
from minidataloader_course.shared.processes import children

# ---------------------------------------------------------------------------------------
# Start-up time over a run


def _startup_cases() -> list[Case]:
    def case(epochs, start_s, persistent, resume_s, hint):
        return Case({"epochs": epochs, "start_s": start_s, "persistent": persistent,
                     "resume_s": resume_s}, hint=hint)

    return [
        case(10, 2.0, False, 0.0, "without persistent workers, every epoch starts its workers"),
        case(10, 2.0, True, 0.0, "persistent workers start once, for the first epoch"),
        case(10, 2.0, True, 0.001, "every epoch after the first pays for a resume handshake"),
        case(1, 0.05, True, 0.001, "a single epoch: no handshake, one start either way"),
        case(1, 0.05, False, 0.001, "resume_s only counts with persistent workers"),
        case(100, 0.08, False, 0.0, "100 epochs, 100 starts"),
        case(0, 2.0, True, 0.001, "no epoch, no workers: 0.0"),
    ]


register(Exercise(
    reference=solutions.startup_seconds,
    cases=_startup_cases,
    compare=close(rtol=1e-9, atol=1e-12),
    hint=("without persistent workers: epochs * start_s; with them: start_s once, plus resume_s "
          "for each epoch after the first; 0.0 for no epoch"),
    rules=(
        Rule("without persistence: a start per epoch",
             (1, 5, 6)),
        Rule("with it: one start, then a handshake per later epoch",
             (2, 3, 4)),
        Rule("no epoch: 0.0 (a float)",
             (7,)),
    ),
    goals=(1,),
))


# ---------------------------------------------------------------------------------------
# Worker seeds, epoch after epoch


def _seed_hint(workers: int, epochs: int, persistent: bool) -> str:
    if persistent and workers == 0:
        return ("persistent workers need workers: the DataLoader refuses persistent_workers=True "
                "with num_workers=0 (ValueError), and so does your function")
    if epochs == 0:
        return "no epoch: an empty list"
    if workers == 0:
        return "no workers: one empty list per epoch"
    if persistent:
        return ("persistent workers: the loader keeps one iterator, which drew its base seed "
                "once, in the first epoch: every epoch has the same seeds")
    return ("every epoch makes a new iterator, which draws a new base seed from the "
            "generator: worker w's seed is that base seed + w")


class WorkerSeeds(Dataset):
    """Sample w is the seed of the worker that reads it (with batch_size=1, worker w reads
    sample w): a real loader tells the seeds of its workers."""

    def __init__(self, num_workers: int):
        self.num_workers = num_workers

    def __len__(self):
        return self.num_workers

    def __getitem__(self, index):
        return get_worker_info().seed


def _torch_seeds_by_epoch(generator_seed, num_workers, epochs, persistent):
    """torch's answer: the seeds its workers get, read from real workers, epoch by epoch."""
    with more_workers_than_cpus_is_fine():
        loader = DataLoader(WorkerSeeds(num_workers), batch_size=1, collate_fn=lambda b: b[0],
                            **workers_for_a_check(num_workers), persistent_workers=persistent,
                            generator=torch.Generator().manual_seed(generator_seed))
        return [list(loader) for _ in range(epochs)]


register(Exercise(
    reference=solutions.worker_seeds_by_epoch,
    oracle=_torch_seeds_by_epoch,
    cases=lambda: [Case({"generator_seed": s, "num_workers": w, "epochs": e,
                         "persistent": p}, hint=_seed_hint(w, e, p))
                   for s, w, e, p in [(0, 2, 3, False), (0, 2, 3, True), (1, 3, 2, False),
                                      (5, 1, 1, True), (7, 0, 2, False), (3, 2, 0, True),
                                      (11, 4, 2, True), (2, 0, 2, True)]],
    hint=("one generator seeded with generator_seed for the whole run; each base seed is "
          "one int64 draw from it (chapter 5's draw), made for each new iterator: how many "
          "iterators does a run make, with and without persistent workers?"),
    expected_from="torch: seeds read in real workers",
    rules=(
        Rule("a new base seed per epoch without persistence",
             (1, 3, 5)),
        Rule("one base seed with persistent workers",
             (2, 4, 7)),
        Rule("no epoch",
             (6,)),
        Rule("persistent workers without workers: `ValueError`",
             (8,), parity="torch's exception type"),
    ),
    goals=(2,),
))


# ---------------------------------------------------------------------------------------
# The iterator, grown in two steps (NOTE [ A piece grown in steps ]): an iterator that serves
# every epoch of its workers, then the handshake before a later epoch


def _persistent_cases() -> list[Case]:
    persistent = {"num_workers": 2, "persistent_workers": True}
    return [
        iterator_case(("numbers", 8), {"batch_size": 3, "shuffle": True, "generator": 3,
                                       **persistent},
                      "the base seed is drawn once, in __init__ (persistent workers keep their "
                      "seeds); each _reset draws the sampler's new order", epochs=(None, None)),
        iterator_case(("numbers", 10), {"batch_size": 3, "shuffle": True, "generator": 2,
                                        **persistent},
                      "_reset(loader): a new pass over the batch sampler, batch numbers from 0 "
                      "again, nothing in flight, then the prefetch window; the same worker "
                      "processes every epoch", epochs=(None, None, None)),
        iterator_case(("numbers", 6), {"batch_size": 2, "num_workers": 2},
                      "without persistent workers, the end of the epoch still stops them"),
    ]


def _handshake_cases() -> list[Case]:
    # The epoch left early takes no batch at all. Left after one, the batches it left in
    # flight might already sit in its reorder buffer (when batch 0 came last), so whether any
    # reached the next epoch hung on timing; left before the first, worker 0's stale batch 0
    # always comes before its new batch 0, and an iterator without the handshake hands it out.
    persistent = {"num_workers": 2, "persistent_workers": True}
    return [
        iterator_case(("numbers", 10), {"batch_size": 3, "shuffle": True, "generator": 2,
                                        **persistent},
                      "the second epoch is left before its first batch, with every task it "
                      "sent still in flight: before the third sends a task, _reset calls "
                      "resume_workers, and none of them reaches epoch 3",
                      epochs=(None, 0, None)),
        iterator_case(("stream", 7, (1, 1)), {"batch_size": 2, **persistent},
                      "streams start again every epoch: resume_workers gives a worker whose "
                      "stream ended a new fetcher, so it is active again after _reset (do not "
                      "send it None: it stays for the next epoch)",
                      watch=(), epochs=(None, None)),
    ]


register(Exercise(
    reference=persistent_iterator.MultiProcessIterator,
    name="MultiProcessIterator, persistent",
    oracle=TorchIterator,
    cases=_persistent_cases,
    run=use_iterator,
    hint=("make what lives as long as the workers once, in __init__, and what starts an epoch "
          "in _reset(loader, first_iter=False), which __init__ calls with first_iter=True; with "
          "persistent workers, the end of an epoch stops no worker"),
    forbidden=ITERATOR_PIECES,
    time_limit=8.0,
    piece="dataloader.MultiProcessIterator",
    expected_from="torch: its iterator",
    rules=(
        Rule("the base seed drawn once; each `_reset` a new pass of the sampler, batch numbers from 0; the same processes",
             (1, 2)),
        Rule("without persistent workers, the end of the epoch stops them",
             (3,)),
    ),
    goals=(6,),
))


# ---------------------------------------------------------------------------------------
# The DataLoader, grown: one iterator for all epochs when the workers persist


def _use_persistent_loader(implementation, case: Case) -> dict:
    size, arguments, stops = (case.inputs[k] for k in ("size", "arguments", "epochs"))
    dataset = Numbers(size)
    running_before = set(children())  # an earlier case's workers may live on
    torch.manual_seed(0)
    with more_workers_than_cpus_is_fine():
        loader = implementation(dataset, **loader_arguments(arguments))
        readers, iterators, seen = Readers(), [], {}
        for epoch, stop_after in enumerate(stops):
            iterators.append(iter(loader))
            seen[f"epoch {epoch + 1}"] = one_epoch(iterators[-1], readers, 3 * size + 3,
                                                   stop_after)
    seen["iter(loader) gave the same iterator every epoch"] = all(
        it is iterators[0] for it in iterators)
    seen["worker processes still running"] = len(set(children()) - running_before)
    return seen


def _persistent_loader_cases() -> list[Case]:
    def case(size, arguments, hint, epochs=(None, None, None)):
        shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
        return Case({"size": size, "arguments": tuple(arguments.items()), "epochs": epochs},
                    description=f"DataLoader(a dataset of {size} samples (i, pid), {shown}); "
                                f"{len(epochs)} epochs" + (", the second left after one batch"
                                                            if epochs[1] is not None else ""),
                    hint=hint)

    return [
        case(8, {"batch_size": 3, "num_workers": 2, "persistent_workers": True},
             "persistent_workers=True: the first iter() makes the MultiProcessIterator and "
             "the loader keeps it; every later iter() calls its _reset(loader) and returns "
             "the same iterator"),
        case(6, {"batch_size": 2, "num_workers": 2},
             "without persistent workers, every iter() makes a new iterator, with new workers"),
        case(6, {"batch_size": 2}, "num_workers=0: the SingleProcessIterator, as in chapter 5"),
    ]


register(Exercise(
    reference=solutions.DataLoader,
    name="DataLoader, persistent",
    oracle=DataLoader,
    cases=_persistent_loader_cases,
    run=_use_persistent_loader,
    hint=("__init__ as in chapter 5; __iter__: without workers a SingleProcessIterator, without "
          "persistent workers a new MultiProcessIterator; with them, make one the first time "
          "and keep it on the loader, then call its _reset(loader) at every later epoch"),
    forbidden=ITERATOR_PIECES + ("minidataloader.dataloader.DataLoader",
                                 "torch.utils.data.dataloader.DataLoader"),
    time_limit=8.0,
    piece="dataloader.DataLoader",
    expected_from="torch: `DataLoader`",
    rules=(
        Rule("`persistent_workers=True`: one iterator kept, `_reset` at every later `iter()`, the same processes",
             (1,)),
        Rule("otherwise a new iterator per epoch; `num_workers=0` as in chapter 5",
             (2, 3)),
    ),
    goals=(6,),
))


# ---------------------------------------------------------------------------------------
# The resume handshake of a toy pool


def _label(message) -> str:
    if isinstance(message, tuple) and len(message) == 2:
        first, second = message
        if type(first).__name__ == "Resume":
            return f"an acknowledgement from worker {second}"
        if isinstance(second, str):
            return second
    return repr(message)


DEAD_WAIT_S = 2.0


def _with_a_dead_worker(implementation, pool: ToyPool, dead: int) -> dict:
    """The handshake run in a thread, worker ``dead`` ended: it must raise RuntimeError, not
    wait for an acknowledgement that cannot come."""
    pool.stop_worker(dead)
    thread, outcome = start_thread(implementation, (pool.index_queues, pool.result_queue,
                                                    pool.workers), name="handshake")
    thread.join(DEAD_WAIT_S)  # a thread still waiting is left behind: it is a daemon
    if thread.is_alive():
        return {"within 2 s, resume_workers": "was still waiting for an acknowledgement"}
    raised = outcome.get("raised")
    # NotImplementedError is a RuntimeError too: a stub's, not an answer
    if isinstance(raised, RuntimeError) and not isinstance(raised, NotImplementedError):
        return {"within 2 s, resume_workers": "raised RuntimeError"}
    if "raised" in outcome:  # anything else is the outcome, as in every case
        raise outcome["raised"]
    return {"within 2 s, resume_workers": "returned"}


def _task_text(task) -> str:
    if isinstance(task, type):  # a ToyPool answers it, a real worker could not
        return f"the class {task.__name__} itself, not an instance {task.__name__}()"
    return "Resume()" if type(task).__name__ == "Resume" else repr(task)


def _recording(put, record: list):
    def recorded_put(item, *args, **kwargs):
        record.append(_task_text(item))
        return put(item, *args, **kwargs)

    return recorded_put


def _use_resume(implementation, case: Case) -> dict:
    """The reader's handshake on a ToyPool (threads), whose workers acknowledge any Resume,
    the reader's own included."""
    workers = case.inputs["num_workers"]
    pool = ToyPool(workers)
    try:
        tasks = 2 * workers  # prefetch_factor=2: two batches in flight per worker
        received = interrupted_epoch(pool, tasks)
        if case.inputs.get("dead") is not None:
            return _with_a_dead_worker(implementation, pool, case.inputs["dead"])
        sent = [[] for _ in pool.index_queues]
        for index_queue, record in zip(pool.index_queues, sent):
            index_queue.put = _recording(index_queue.put, record)
        try:
            dropped = implementation(pool.index_queues, pool.result_queue, pool.workers)
        finally:
            for index_queue in pool.index_queues:
                del index_queue.put  # the queue's own put again
        old = {f"epoch 0, batch {b}" for b in range(tasks)} - {_label(m) for m in received}
        returned = [_label(m) for m in dropped] if isinstance(dropped, (list, tuple)) else []
        for batch in range(workers):  # the new epoch's first round of tasks
            pool.dispatch(1, batch)
        new = []
        for _ in range(workers):
            try:
                new.append(_label(pool.receive(timeout=1.0)))
            except queue.Empty:
                break
    finally:
        pool.close()
    return {
        "put on each worker's index queue": sent,
        "what it returned is a": type(dropped).__name__,
        "stale batches it did not return": sorted(old - set(returned)),
        "what else it returned": sorted(label for label in returned if label not in old),
        "the new epoch's first messages": sorted(new),
    }


def _resume_cases() -> list[Case]:
    cases = [Case({"num_workers": w},
                  description=f"a ToyPool of {w} worker(s), epoch 0 left after its first "
                              f"result with {2 * w} batches dispatched, the last one slow to "
                              "fetch")
             for w in (1, 2, 3)]
    cases.append(Case({"num_workers": 2, "dead": 1},
                      description="a ToyPool of 2 workers, epoch 0 left after its first result "
                                  "with 4 batches dispatched; worker 1 ended (died) before the "
                                  "handshake",
                      hint="a dead worker never acknowledges: wait for each message with "
                           "result_queue.get(timeout=0.1), and each time the wait times out, "
                           "raise RuntimeError if one of the workers is not is_alive()"))
    return cases


register(Exercise(
    reference=solutions.resume_workers,
    cases=_resume_cases,
    run=_use_resume,
    hint=("put a Resume() in every index queue, then take messages from the result queue "
          "until one acknowledgement (Resume(), worker_id) per worker has come: everything "
          "else you take on the way is a stale batch, to return in a list"),
    time_limit=4.0,
    piece="dataloader.resume_workers",
    rules=(
        Rule("a `Resume()` per worker; messages until every acknowledgement; the stale batches returned in a list; the next epoch sees none of them",
             (1, 2, 3)),
        Rule("a dead worker: `RuntimeError` within a second or so, never a wait for ever",
             (4,)),
    ),
    goals=(4,),
))


# ---------------------------------------------------------------------------------------
# The worker loop, grown: it answers Resume


class Counting(IterableDataset):
    """A stream of ``n`` numbers that counts (in its own copy) how often it was started."""

    def __init__(self, n: int):
        self.n, self.started = n, 0

    def __iter__(self):
        self.started += 1
        return iter([(i, self.started) for i in range(self.n)])


def _resume_worker_cases() -> list[Case]:
    def case(dataset, tasks, hint, in_a_process=True):
        where = "in a real worker process (fork), " if in_a_process else ""
        shown = (f"the squares of 0..{dataset[1] - 1}" if dataset[0] == "squares" else
                 f"a stream of {dataset[1]} numbers, each with how often the stream was started")
        return Case({"dataset": dataset, "tasks": tuple(tasks), "in_a_process": in_a_process},
                    description=f"{where}worker 0 of 1; dataset: {shown}; index queue: "
                                f"{tasks_text(tasks)}", hint=hint)

    resume = "RESUME"  # a Resume() of the learner's own worker.py, put in by the run
    return [
        case(("squares", 6), [(0, (0, 1)), resume, (0, (2, 3)), None],
             "a Resume() in the index queue: put (the Resume, worker_id) on the result queue, "
             "after everything sent before, and go on with the tasks of the new epoch",
             in_a_process=False),
        case(("stream", 3), [(0, (None, None)), (1, (None, None)), (2, (None, None)), resume,
                             (0, (None, None)), (1, (None, None)), None],
             "after a Resume, make a new fetcher (a stream starts again: iter(dataset)), and "
             "forget that the last epoch's stream ended"),
        case(("stream", 2), [(0, (None, None)), resume, resume, (0, (None,)), None],
             "every Resume is acknowledged, even with no task in between"),
    ]


def _use_resume_worker(implementation, case: Case) -> dict:
    resume = message_class(implementation, "Resume")
    tasks = [resume() if task == "RESUME" else task for task in case.inputs["tasks"]]
    kind, n = case.inputs["dataset"]
    dataset = tuple(i * i for i in range(n)) if kind == "squares" else Counting(n)
    # dataset, [queues and done_event], auto_collation, collate_fn, drop_last, base_seed,
    # init_fn, worker_id, num_workers
    arguments = (dataset, True, list, False, 7, None, 0, 1)
    seen = run_worker(implementation, arguments, tasks, case.inputs["in_a_process"])
    if not case.inputs["in_a_process"]:
        seen["tasks left unread"] = "(not compared)"
    return seen


register(Exercise(
    reference=solutions.worker_loop,
    name="worker_loop, resumed",
    cases=_resume_worker_cases,
    run=_use_resume_worker,
    hint=("if isinstance(task, Resume): put (task, worker_id) on the result queue, make a new "
          "fetcher, set ended back to False, and continue"),
    forbidden=WORKER_PIECES,
    allowed=("Dataset", "IterableDataset", "Sampler", "get_worker_info"),
    time_limit=5.0,
    piece="worker.worker_loop",
    rules=(
        Rule("a `Resume` acknowledged with `(Resume, worker_id)` after what was sent before; tasks go on",
             (1, 3)),
        Rule("a new fetcher after a `Resume`: a stream starts again",
             (2,)),
    ),
    goals=(6,),
))


# ---------------------------------------------------------------------------------------
# The iterator's second step: the handshake before a later epoch


register(Exercise(
    reference=solutions.MultiProcessIterator,
    name="MultiProcessIterator, the handshake",
    oracle=TorchIterator,
    cases=_handshake_cases,
    run=use_iterator,
    hint=("before a later epoch sends any task, _reset calls resume_workers with the index "
          "queues, the result queue and the workers"),
    forbidden=ITERATOR_PIECES,
    time_limit=8.0,
    piece="dataloader.MultiProcessIterator",
    expected_from="torch: its iterator",
    rules=(
        Rule("after an epoch left early, the handshake first: nothing it left in flight reaches the next",
             (1,)),
        Rule("a stream starts again every epoch; its worker is active again (no `None` for it)",
             (2,)),
    ),
    goals=(4, 6),
))


# ---------------------------------------------------------------------------------------
# State that reaches persistent workers


def _use_curriculum(implementation, case: Case) -> dict:
    n, workers, persistent, levels = (case.inputs[k] for k in
                                      ("n", "num_workers", "persistent", "levels"))
    dataset = implementation(n)
    with more_workers_than_cpus_is_fine():
        arguments = workers_for_a_check(workers)
        loader = DataLoader(dataset, batch_size=2, collate_fn=list, **arguments,
                            persistent_workers=persistent and arguments["num_workers"] > 0)
        seen = {}
        for level in levels:
            dataset.set_level(level)
            batches = take(loader, n + 1)
            seen[f"after set_level({level})"] = [sample for batch in batches for sample in batch]
    return seen


def _curriculum_cases() -> list[Case]:
    def case(workers, persistent, levels, hint):
        return Case({"n": 4, "num_workers": workers, "persistent": persistent,
                     "levels": levels},
                    description=f"CurriculumDataset(4), DataLoader(batch_size=2, num_workers="
                                f"{workers}, persistent_workers={persistent}), set_level "
                                f"before each epoch: {', '.join(map(str, levels))}",
                    hint=hint)

    return [
        case(0, False, (0.25, 0.75), "without workers the main process fetches: sample i is "
             "(i, level) with level a Python float"),
        case(2, True, (0.0, 0.5, 1.0), "persistent workers hold copies made before the first "
             "epoch: the level must live in memory they share with the main process, made "
             "in __init__ (multiprocessing.Value('d'), or a tensor after .share_memory_())"),
        case(1, False, (0.5, 1.0), "new workers each epoch copy the dataset again: this works "
             "with shared memory too"),
    ]


register(Exercise(
    reference=solutions.CurriculumDataset,
    cases=_curriculum_cases,
    run=_use_curriculum,
    hint=("keep the level in shared memory made in __init__; set_level writes it, and "
          "__getitem__ returns (i, level) with level as a float"),
    time_limit=5.0,
    rules=(
        Rule("`(i, level)` with `level` a float",
             (1,)),
        Rule("the level in shared memory made in `__init__`: persistent workers see `set_level`",
             (2, 3)),
    ),
    goals=(5,),
))


# ---------------------------------------------------------------------------------------
# Check yourself

register(Choice(
    "ch08-when-persistence-pays", answer="b", why={
        "a": "without persistence the workers start again at every epoch, not once: the "
             "saving is one start per epoch after the first",
        "c": "an epoch's loading (2 minutes) is not made faster: only the 4 s start of each "
             "epoch after the first goes away",
        "d": "persistence helps with every start method, spawn most of all: a spawned "
             "worker's start is the costly one",
    }, goals=(1,)))

register(Choice(
    "ch08-what-is-kept", answer="d", why={
        "a": "the process is the very thing persistence keeps: no new process, nothing to "
             "import again",
        "b": "the worker's copy of the dataset lives as long as its process: what the worker "
             "changed in it is still changed in the next epoch",
        "c": "a persistent worker is not seeded again: its generators go on from where the "
             "last epoch left them",
    }, goals=(2,)))


def _seeds_of_a_persistent_run() -> int:
    with more_workers_than_cpus_is_fine():
        loader = DataLoader(WorkerSeeds(2), batch_size=1, collate_fn=lambda b: b[0],
                            **workers_for_a_check(2), persistent_workers=True,
                            generator=torch.Generator().manual_seed(0))
        return len({seed for _ in range(3) for seed in loader})


register(Prediction(
    "ch08-persistent-seeds", measure=_seeds_of_a_persistent_run,
    why="persistent workers are seeded once, when they start: 2 workers, 2 seeds, whatever "
        "the number of epochs",
    mistakes={6: "6 would be 3 epochs of 2 new workers; persistent workers start, and are "
                 "seeded, once",
              3: "the seeds belong to the workers, not to the epochs",
              1: "every worker gets a seed of its own: base seed + worker id"},
    goals=(2,),
))

register(Choice(
    "ch08-copy-on-read", answer="b", why={
        "a": "reading a Python object changes its reference count: that is a write, and each "
             "written page is copied for the worker that wrote it",
        "c": "each worker writes the reference counts in its own process, so each gets its "
             "own copy of the pages it touched",
        "d": "the batches are small, but the dataset's pages are copied too, as the workers "
             "read its objects",
    }, goals=(3,)))

register(Choice(
    "ch08-spawn-copies", answer="b", why={
        "a": "without reference counts, forked workers share the array; a spawned worker "
             "shares nothing: it receives the dataset pickled and rebuilds it",
        "c": "torch moves a tensor's storage into shared memory when it is pickled for "
             "another process; a numpy array is copied like anything else",
        "d": "the copy arrives with the pickled dataset, when the worker starts, before it "
             "reads a sample",
    }, goals=(3,)))

register(Choice(
    "ch08-why-wait-for-ack", answer="b", why={
        "a": "persistent workers are not restarted: the processes are still there",
        "c": "a persistent worker is not seeded again at the handshake: its generators go on",
        "d": "a worker's index queue holds tasks while the worker is busy: it could receive "
             "them at any time",
    }, goals=(4,)))


class EpochReporter(Dataset):
    """Every sample is the epoch that ``set_epoch`` last gave this copy of the dataset."""

    def __init__(self, n: int):
        self.n, self.epoch = n, 0

    def set_epoch(self, epoch: int):
        self.epoch = epoch

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return self.epoch


def _epoch_seen_by_persistent_workers() -> int:
    dataset = EpochReporter(8)
    with more_workers_than_cpus_is_fine():
        loader = DataLoader(dataset, batch_size=2, **workers_for_a_check(2),
                            persistent_workers=True)
        for epoch in range(3):
            dataset.set_epoch(epoch)
            seen = {value for batch in loader for value in batch.tolist()}
    return max(seen)


register(Prediction(
    "ch08-stale-epoch", measure=_epoch_seen_by_persistent_workers,
    why="the workers copied the dataset before the first epoch, when its epoch was 0; "
        "set_epoch changes the main process's object only",
    mistakes={2: "set_epoch(2) changed the dataset of the main process; the persistent "
                 "workers read their own copies, made before the first epoch",
              1: "no epoch's set_epoch reaches persistent workers: their copies were made "
                 "once, before the first epoch"},
    goals=(5,),
))
