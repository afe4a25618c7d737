"""Milestone 10: the learner's ``DataLoader`` when things go wrong, as torch's: a worker's
exception arrives with its type and the worker's traceback, a killed worker is reported
within seconds, ``timeout`` raises, and after ``break``, ``del``, an exception or the end of
an epoch no worker process is left."""

from __future__ import annotations

import time
import warnings

import torch.utils.data

from minidataloader_course.checker.milestone_data import Faulty
from minidataloader_course.checker.milestones import Milestone, Suite, register_milestone
from minidataloader_course.shared.processes import children

TRACEBACK = "Traceback (most recent call last)"


def _loader(data, spec: dict, dataset):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return data.DataLoader(dataset, batch_size=spec["batch_size"],
                               num_workers=spec["num_workers"], timeout=spec.get("timeout", 0),
                               multiprocessing_context="fork")


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


def describe_failure(spec: dict) -> str:
    dataset = Faulty(spec["size"], spec.get("at"), spec.get("fault", "ValueError"))
    timeout = f", timeout={spec['timeout']}" if spec.get("timeout") else ""
    what = f"; the loop {spec['how']}" if "how" in spec else "; one epoch"
    return (f"DataLoader({dataset!r}, batch_size={spec['batch_size']}, "
            f"num_workers={spec['num_workers']}{timeout}){what}")


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
        Suite(name="no worker left behind",
              cases=lambda: [{"how": how, "size": 12, "batch_size": 2, "num_workers": 2}
                             for how in ("break", "del", "an exception", "the end")],
              observe=left_behind, describe=describe_failure, time_limit=30.0,
              hint="the end of an epoch shuts the workers down, and so does __del__ when the "
                   "iterator goes away (after break, del, or an exception)"),
    ],
))
