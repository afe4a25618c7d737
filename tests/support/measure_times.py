"""How long the loader takes to notice a dead worker, and to shut its workers down.

Run it to print the worst cases: ``python -m tests.support.measure_times``; the test
suite runs it with fewer trials and asserts generous bounds."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import minidataloader as mdl
from minidataloader_course.shared.synthetic import FaultyDataset, SlowDataset


def time_to_notice_a_death(trials: int, pinned: bool = False) -> float:
    """Worst time from SIGKILL of a worker to the RuntimeError, with the main process
    waiting on that worker's batch (its first sample never comes)."""
    worst = 0.0
    for trial in range(trials):
        loader = mdl.DataLoader(FaultyDataset(8, at=0, fault="hang"), batch_size=2,
                                num_workers=2)
        if pinned:
            loader._pin_memory_fn = lambda batch: batch
        it = iter(loader)
        victim = it._group.workers[0].pid
        killed_at = []

        def kill(victim=victim, killed_at=killed_at, delay=0.2 + (0.37 * trial) % 1):
            time.sleep(delay)  # a different moment of the status-check cycle each trial
            killed_at.append(time.monotonic())
            os.kill(victim, signal.SIGKILL)

        threading.Thread(target=kill, daemon=True).start()
        try:
            next(it)
        except RuntimeError as error:
            assert f"pid {victim}" in str(error), error
            worst = max(worst, time.monotonic() - killed_at[0])
        else:
            raise AssertionError("no error")
        it._shutdown_workers()
    return worst


def time_to_shut_down(seconds_per_sample: float | None, persistent: bool = False,
                      pinned: bool = False) -> float:
    """Time for `del iterator` after one batch, with the workers busy seconds_per_sample
    on each sample (None: worker 1 is stuck in its first sample)."""
    dataset = (FaultyDataset(64, at=1, fault="hang") if seconds_per_sample is None
               else SlowDataset(64, seconds=seconds_per_sample))
    loader = mdl.DataLoader(dataset, batch_size=1, num_workers=2,
                            persistent_workers=persistent)
    if pinned:
        loader._pin_memory_fn = lambda batch: batch
    it = iter(loader)
    next(it)
    if seconds_per_sample is None:
        time.sleep(1)  # let worker 1 reach its sample: before that, it would just skip it
    workers = it._group.workers
    start = time.monotonic()
    if persistent:
        del loader
    del it
    elapsed = time.monotonic() - start
    assert not any(worker.is_alive() for worker in workers)
    return elapsed


def measure(trials: int = 5) -> dict:
    return {
        f"notice a killed worker (worst of {trials})": time_to_notice_a_death(trials),
        "notice a killed worker, pin thread on": time_to_notice_a_death(2, pinned=True),
        "shut down, workers idle": time_to_shut_down(0.0),
        "shut down, workers mid-sample (0.5 s samples)": time_to_shut_down(0.5),
        "shut down, persistent + pin thread": time_to_shut_down(0.0, True, True),
        "shut down, a worker stuck in a sample": time_to_shut_down(None),
    }


if __name__ == "__main__":
    start = time.monotonic()
    for name, seconds in measure(int(sys.argv[1]) if len(sys.argv) > 1 else 10).items():
        print(f"{name:48s} {seconds:6.2f} s")
    print(f"(measured in {time.monotonic() - start:.0f} s)")
