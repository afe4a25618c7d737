"""Milestone 10: the learner's ``DataLoader`` when things go wrong, as torch's: a worker's
exception arrives with its type and the worker's traceback, a killed worker is reported
within seconds (in an epoch, or between two epochs of persistent workers), ``timeout``
raises, Ctrl-C ends the loop with one ``KeyboardInterrupt`` and no worker's traceback, and
after ``break``, ``del``, an exception or the end of an epoch no worker process is left."""

from __future__ import annotations

import gc
import os
import signal
import tempfile
import threading
import time
import warnings

import torch.utils.data

from minidataloader_course.checker.milestone_data import Faulty
from minidataloader_course.checker.milestones import Milestone, Suite, register_milestone
from minidataloader_course.shared.processes import children

TRACEBACK = "Traceback (most recent call last)"


def _loader(data, spec: dict, dataset):
    more = {"persistent_workers": True} if spec.get("persistent") else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return data.DataLoader(dataset, batch_size=spec["batch_size"],
                               num_workers=spec["num_workers"], timeout=spec.get("timeout", 0),
                               multiprocessing_context="fork", **more)


NOTICED_WITHIN_S = 10.0


def _error(error: Exception, started: float, oracle: bool) -> dict:
    text = str(error)
    error.__traceback__ = None  # torch's error and its iterator sit in a cycle through it
    # A bound, not a measurement of torch: under fork torch hears of a death at once (its
    # SIGCHLD handler), but on a busy machine its own time can pass any bound, and a learner
    # who is faster than torch that day must still pass.
    quick = oracle or time.monotonic() - started < NOTICED_WITHIN_S
    return {"raised": type(error).__name__,
            "its message holds the worker's traceback": TRACEBACK in text,
            "it says 'timed out'": "timed out" in text,
            f"within {NOTICED_WITHIN_S:.0f} s": quick}


def failing_epoch(data, spec: dict) -> dict:
    """One epoch of a dataset whose sample ``at`` fails: the batches, the error where it
    comes (described), the batches after it if the loader goes on, and the worker processes
    still running once the iterator is deleted."""
    before = set(children())
    dataset = Faulty(spec["size"], spec["at"], spec["fault"])
    iterator = iter(_loader(data, spec, dataset))
    dataset.started.set()
    seen = {"batches": []}
    while True:
        started = time.monotonic()
        try:
            indices, _ = next(iterator)
        except StopIteration:
            break
        except Exception as error:
            seen["batches"].append(_error(error, started, oracle=data is torch.utils.data))
            if spec["fault"] in ("SIGKILL", "slow"):
                break  # the loader cannot go on
            continue
        seen["batches"].append(indices.tolist())
    del iterator
    seen["worker processes still running once the iterator is deleted"] = len(
        set(children()) - before)
    return seen


def _scenario(loader, how: str) -> None:
    if how == "break":
        for _ in loader:
            break
    elif how == "del":
        iterator = iter(loader)
        next(iterator)
        del iterator
    elif how == "an exception":
        try:
            for _ in loader:
                raise ValueError("the training loop failed")
        except ValueError:
            pass
    else:  # the end of an epoch
        for _ in loader:
            pass


def left_behind(data, spec: dict) -> dict:
    """The worker processes still running right after a loop leaves its loader."""
    before = set(children())
    loader = _loader(data, spec, Faulty(spec["size"]))
    _scenario(loader, spec["how"])
    return {f"worker processes still running after {spec['how']}": len(
        set(children()) - before)}


def _gone_within(pids: set[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while pids & set(children()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not pids & set(children())


def killed_between_epochs(data, spec: dict) -> dict:
    """Persistent workers, one of them killed (SIGKILL) once the first epoch has ended; then
    the second epoch. torch hears of the death at once (its SIGCHLD handler raises where the
    main process is), a learner's loader when ``iter()`` waits for the workers to resume:
    either way a ``RuntimeError`` within seconds, never a hang."""
    before = set(children())
    loader = _loader(data, spec, Faulty(spec["size"]))
    seen = {"first epoch": [indices.tolist() for indices, _ in loader]}
    # the first started: torch joins it first at shutdown, so that its SIGCHLD handler
    # finds it reaped when the other exits
    victim = min(set(children()) - before)
    started = time.monotonic()
    try:
        os.kill(victim, signal.SIGKILL)
        _gone_within({victim}, 5.0)
        seen["second epoch"] = [indices.tolist() for indices, _ in loader]
    except Exception as error:
        seen["second epoch"] = _error(error, started, oracle=data is torch.utils.data)
        seen["second epoch"].pop("its message holds the worker's traceback")
        seen["second epoch"].pop("it says 'timed out'")
    del loader
    # the course's iterator keeps its loader (self.loader): the two are a cycle that only
    # the collector frees, where torch's iterator copies what it needs from the loader
    gc.collect()
    seen["worker processes still running once the loader is deleted"] = len(
        set(children()) - before)
    return seen


class _Stderr:
    """File descriptor 2 sent to a file while the scenario runs: the workers, forked
    meanwhile, write their tracebacks there too."""

    def __enter__(self):
        self.file = tempfile.TemporaryFile()
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.seek(0)
        self.text = self.file.read().decode("utf-8", "replace")
        self.file.close()


LEFT_WITHIN_S = 5.0


def interrupted(data, spec: dict) -> dict:
    """Ctrl-C in the middle of an epoch, as a terminal or a Jupyter kernel's interrupt sends
    it: SIGINT to every worker and to the main process (the whole process group, but for the
    checker around it), while the main process waits in ``next()``."""
    before = set(children())
    loader = _loader(data, spec, Faulty(spec["size"], spec["at"], "slow", seconds=30.0))
    seen = {}
    with _Stderr() as stderr:
        try:
            iterator = iter(loader)
            seen["batches before Ctrl-C"] = [next(iterator)[0].tolist()]
            workers = set(children()) - before

            def ctrl_c():
                for pid in workers:
                    os.kill(pid, signal.SIGINT)
                # to the main thread itself, as a terminal's SIGINT most often lands: its wait
                # is interrupted, not only flagged for when it wakes up
                signal.pthread_kill(main, signal.SIGINT)

            main = threading.get_ident()

            threading.Timer(0.3, ctrl_c).start()  # while the main process waits for a batch
            for indices, _ in iterator:
                seen["batches before Ctrl-C"].append(indices.tolist())
            seen["the main process raised"] = "nothing"
        except KeyboardInterrupt:
            seen["the main process raised"] = "KeyboardInterrupt"
        iterator = None
        seen[f"no worker left {LEFT_WITHIN_S:.0f} s later"] = _gone_within(
            set(children()) - before, LEFT_WITHIN_S)
    seen["tracebacks on stderr"] = stderr.text.count(TRACEBACK)
    return seen


def describe_failure(spec: dict) -> str:
    dataset = Faulty(spec["size"], spec.get("at"), spec.get("fault", "ValueError"),
                     spec.get("seconds", 1.5))
    timeout = f", timeout={spec['timeout']}" if spec.get("timeout") else ""
    what = f"; the loop {spec['how']}" if "how" in spec else spec.get("what", "; one epoch")
    persistent = ", persistent_workers=True" if spec.get("persistent") else ""
    return (f"DataLoader({dataset!r}, batch_size={spec['batch_size']}, "
            f"num_workers={spec['num_workers']}{timeout}{persistent}){what}")


def _case(fault, at, num_workers=2, size=10, batch_size=2, **more) -> dict:
    return {"fault": fault, "at": at, "num_workers": num_workers, "size": size,
            "batch_size": batch_size, **more}


register_milestone(Milestone(
    number=10,
    goals={"ch10": (6, 9)},
    title="your DataLoader when things go wrong",
    suites=[
        Suite(name="an exception in a worker",
              cases=lambda: [_case("ValueError", 5), _case("KeyError", 2, num_workers=1),
                             _case("TwoArgumentError", 6, num_workers=3)],
              observe=failing_epoch, describe=describe_failure, time_limit=30.0,
              hint="the worker sends the error's type and its traceback as text; the main "
                   "process raises rebuild_exception(...) in that batch's turn, and the epoch "
                   "can go on"),
        Suite(name="a worker that dies, a sample that never comes",
              cases=lambda: [_case("SIGKILL", 0), _case("SIGKILL", 3, num_workers=1),
                             _case("slow", 4, timeout=0.4)],
              observe=failing_epoch, describe=describe_failure, time_limit=30.0,
              hint="read through get_result: it raises RuntimeError when a worker is dead, "
                   "or when nothing came within loader.timeout"),
        Suite(name="persistent workers killed between two epochs",
              cases=lambda: [_case("ValueError", None, persistent=True,
                                   what="; worker 0 killed (SIGKILL) after the first epoch, "
                                        "then a second epoch")],
              observe=killed_between_epochs, describe=describe_failure, time_limit=30.0,
              hint="iter() resumes the workers (resume_workers): while it waits for their "
                   "acknowledgements it looks at them, and raises RuntimeError when one is "
                   "dead, as get_result does"),
        Suite(name="Ctrl-C in the middle of an epoch",
              cases=lambda: [_case("slow", 3, size=8, seconds=30.0,
                                   what="; SIGINT to the workers and the main process (Ctrl-C) "
                                        "while it waits for batch 1")],
              observe=interrupted, describe=describe_failure, time_limit=30.0,
              hint="each worker catches its KeyboardInterrupt and leaves quietly (except "
                   "KeyboardInterrupt: pass around its loop); the main process's "
                   "KeyboardInterrupt ends the loop, and the iterator's __del__ shuts the "
                   "workers down"),
        Suite(name="no worker left behind",
              cases=lambda: [{"how": how, "size": 12, "batch_size": 2, "num_workers": 2}
                             for how in ("break", "del", "an exception", "the end")],
              observe=left_behind, describe=describe_failure, time_limit=30.0,
              hint="the end of an epoch shuts the workers down, and so does __del__ when the "
                   "iterator goes away (after break, del, or an exception)"),
    ],
))
