"""Chapter 10's experiments that need a Python process of their own: a main process that
is killed, Ctrl-C sent to a whole process group, an open-files limit lowered, workers
started with every start method. Each scenario
runs as

    python -m minidataloader_course.chapters.ch10.scenarios SCENARIO

(:func:`start_scenario` starts it, its output piped back), starts loaders of both libraries
(``torch.utils.data`` and ``minidataloader``) and prints what it saw as one JSON line.
"""

from __future__ import annotations

import importlib
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time

from minidataloader_course.chapters.ch10.failing import (
    KilledAtFirstSample,
    ManyTensors,
    send_tensors,
)
from minidataloader_course.shared.compare import error_text
from minidataloader_course.shared.processes import children, running
from minidataloader_course.shared.synthetic import SlowDataset


def library(name: str):
    """``torch.utils.data`` for "torch", ``minidataloader`` for "minidataloader"."""
    return importlib.import_module("torch.utils.data" if name == "torch" else "minidataloader")


LIBRARIES = ("torch", "minidataloader")


def _start_workers(name: str, dataset) -> tuple[object, list[int]]:
    """An epoch of a loader with two workers, started: its iterator and the workers' pids."""
    before = set(children())
    batches = iter(library(name).DataLoader(dataset, batch_size=2, num_workers=2))
    next(batches)  # both workers are running now
    return batches, sorted(set(children()) - before)


def persistent_epochs() -> tuple[dict, dict, dict]:
    """For a Jupyter kernel (chapter 10, Ctrl-C): a long epoch of a loader of each library,
    two persistent forked workers each, started. Returns the loaders, their iterators and
    the workers' pids, by library."""
    loaders, epochs, pids = {}, {}, {}
    for name in LIBRARIES:
        before = set(children())
        loaders[name] = library(name).DataLoader(
            SlowDataset(10**6, seconds=0.05), batch_size=2, num_workers=2,
            persistent_workers=True, multiprocessing_context="fork")
        epochs[name] = iter(loaders[name])
        next(epochs[name])  # both workers are running now
        pids[name] = sorted(set(children()) - before)
    return loaders, epochs, pids


def after_an_interrupt(loaders: dict, pids: dict) -> dict:
    """What an interrupt left of :func:`persistent_epochs`: by library, the workers still
    running, and what the next epoch gives (the loader's persistent iterator, reset), as a
    notebook that runs its training cell again gets it."""
    report = {}
    for name, loader in loaders.items():
        report[name] = {"running": [pid for pid in pids[name] if running(pid)]}
        start = time.monotonic()
        try:
            for _ in loader:
                break
            report[name]["next epoch"] = "a batch"
        except RuntimeError as error:
            report[name]["next epoch"] = error_text(error)
        report[name]["seconds"] = time.monotonic() - start
    return report


def wait_to_be_killed(seconds: float = 300) -> None:
    """Start a loader of each library, with two workers each; print the workers' pids (one
    JSON line), then wait to be killed (at most ``seconds``)."""
    epochs, pids = {}, {}
    for name in LIBRARIES:
        epochs[name], pids[name] = _start_workers(name, range(1000))
    print(json.dumps(pids), flush=True)
    time.sleep(seconds)


def iterate_until_interrupted(seconds: float = 300) -> None:
    """Go through a long epoch of two loaders at once, one of each library, with two
    workers each; print the workers' pids (one JSON line), then go on until Ctrl-C (or
    for at most ``seconds``)."""
    epochs, pids = {}, {}
    for name in LIBRARIES:
        epochs[name], pids[name] = _start_workers(name, SlowDataset(10**6, seconds=0.05))
    print(json.dumps(pids), flush=True)
    end = time.monotonic() + seconds
    for _ in zip(*epochs.values()):
        if time.monotonic() > end:
            break


def reach_the_open_files_limit(limit: int = 256) -> None:
    """Keep everything received, with this process's open-files limit lowered to
    ``limit``: tensors from a bare torch.multiprocessing queue, then the batches of a
    DataLoader with two workers, from each library, under each sharing strategy. Prints
    one JSON object: what each attempt received, or the error that stopped it."""
    import torch.multiprocessing as tmp

    report = {"default strategy": tmp.get_sharing_strategy()}
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    context = tmp.get_context("fork")
    queue, done = context.Queue(), context.Event()
    sender = context.Process(target=send_tensors, args=(queue, 2 * limit, done), daemon=True)
    sender.start()
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))  # here, not in the sender
    kept = []
    try:
        while len(kept) < 2 * limit:
            kept.append(queue.get(timeout=30))  # each tensor kept holds a file descriptor
        report["queue"] = f"received all {len(kept)} tensors"
    except Exception as error:  # noqa: BLE001 - the error is the result
        report["queue"] = f"after {len(kept)} tensors: {error_text(error)}"
    del kept[:]
    done.set()
    sender.join(10)
    if sender.is_alive():
        sender.kill()
    for strategy in ("file_descriptor", "file_system"):
        tmp.set_sharing_strategy(strategy)
        for name in LIBRARIES:
            try:
                for batch in library(name).DataLoader(ManyTensors(), batch_size=1,
                                                      num_workers=2):
                    kept.append(batch)  # 8 tensors, each an open file descriptor (or file)
                result = f"received all {len(kept)} batches"
            except Exception as error:  # noqa: BLE001 - the error is the result
                result = f"after {len(kept)} batches: {error_text(error)}"
            report[f"{name}, {strategy}"] = result
            del kept[:]
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    print(json.dumps(report), flush=True)


def notice_a_death(*start_methods: str) -> None:
    """For each start method (all of this platform's if none is given) and each library: a
    loader with one worker, which is killed at its first sample. Prints one JSON object:
    ``{method: {library: {"seconds": until the error, "child": whether the worker was a
    child of this process, "group": whether it was in this process's group}}}``."""
    report = {}
    for method in start_methods or multiprocessing.get_all_start_methods():
        report[method] = {}
        for name in LIBRARIES:
            with tempfile.TemporaryDirectory() as folder:
                stamp = os.path.join(folder, "stamp")
                loader = library(name).DataLoader(KilledAtFirstSample(stamp), num_workers=1,
                                                  multiprocessing_context=method)
                try:
                    next(iter(loader))
                    raise AssertionError(f"{name}, {method}: the worker survived")
                except RuntimeError:
                    noticed = time.time()
                with open(stamp) as file:
                    died, parent, group = file.read().split()
            report[method][name] = {"seconds": noticed - float(died),
                                    "child": int(parent) == os.getpid(),
                                    "group": int(group) == os.getpgid(0)}
    print(json.dumps(report), flush=True)


SCENARIOS = {
    "wait_to_be_killed": wait_to_be_killed,
    "iterate_until_interrupted": iterate_until_interrupted,
    "reach_the_open_files_limit": reach_the_open_files_limit,
    "notice_a_death": notice_a_death,
}


def start_scenario(scenario: str, *args: str, **popen) -> subprocess.Popen:
    """Run a scenario of this module in a new Python process (its output piped back)."""
    return subprocess.Popen(
        [sys.executable, "-m", __name__, scenario, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](*sys.argv[2:])

