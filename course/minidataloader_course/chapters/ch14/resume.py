"""Chapter 14: checkpoint and resume in the middle of an epoch.

- :class:`NoisyIndices`: sample ``i`` is ``(i, worker, noise)``, the noise drawn from the
  random state of the process that loads it: an augmentation, whose numbers a resume must
  restore inside the workers.
- :class:`ShardStream`: a Stateful ``IterableDataset``: each worker streams its shard of
  ``range(n)``, with noise, and saves how far it got.
- :func:`play`: a training loop over a loader, with a checkpoint at a chosen batch, or
  resumed from one, for the chapter's comparisons.
- :func:`kill_and_resume`: the chapter's demonstration: ``demo.resumable_training`` killed
  with SIGKILL in the middle of an epoch, started again, and compared with a run never
  interrupted.
- :func:`record_checkpoint_resume`: queue-flow traces of a run checkpointed and then
  stopped, and of its resume in a new loader.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time

import torch

from minidataloader.dataset import Dataset
from minidataloader.stateful import StatefulDataLoader, rng_states, set_rng_states
from minidataloader_course.shared.synthetic import FlowDataset, any_worker_info


class NoisyIndices(Dataset):
    """Sample ``i`` is ``(i, worker, noise)``: the id of the worker that loaded it (-1: the
    main process) and ``torch.rand`` drawn by that process, as an augmentation draws."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        info = any_worker_info()
        return i, -1 if info is None else info.id, round(torch.rand(()).item(), 4)


class ShardStream(torch.utils.data.IterableDataset):
    """Each worker streams its shard of ``range(n)`` (every ``num_workers``-th number), each
    with noise from its own random state. Stateful: ``state_dict()`` is the position in the
    shard, updated before each sample is yielded (a state is taken between samples). Built
    on torch's base class, so that both libraries' loaders take it for a stream."""

    def __init__(self, n: int) -> None:
        self.n, self.position = n, 0

    def __iter__(self):
        info = any_worker_info()
        shard = range(self.n) if info is None else range(info.id, self.n, info.num_workers)
        while self.position < len(shard):
            self.position += 1
            yield shard[self.position - 1], round(torch.rand(()).item(), 4)
        self.position = 0  # the next epoch starts at the beginning

    def state_dict(self) -> dict:
        return {"position": self.position}

    def load_state_dict(self, state: dict) -> None:
        self.position = state["position"]


def plain(batch):
    """A batch as nested lists: comparable with ``==``, printable."""
    if isinstance(batch, torch.Tensor):
        return batch.tolist()
    if isinstance(batch, (list, tuple)):
        return [plain(item) for item in batch]
    return batch


def through_a_file(obj):
    """What ``torch.save`` then ``torch.load`` (``weights_only=True``, the default) give back."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer)


def play(make_loader, epochs: int = 2, seed: int = 0, checkpoints=(),
         resume_from: dict | None = None) -> dict:
    """Run a training script's loop over ``make_loader()``: seed the global RNGs, and after
    each batch draw from them, as a training step's dropout does.

    ``checkpoints``: positions ``(epoch, k)`` after which to save a checkpoint (``k=0``:
    right after ``iter()``): the loader's state and the global random states, through a
    file. ``resume_from=checkpoint`` builds everything afresh and goes on from there.

    Returns ``{"epochs": {epoch: [batch, ...]}, "after": draws, "checkpoints": {(epoch, k):
    checkpoint}}``: the batches of every epoch played (a resumed one from its checkpoint
    on), and three draws from the global RNG at the end, which show that the training
    loop's random numbers went on as they would have."""
    torch.manual_seed(seed)
    loader = make_loader()
    first = 0
    if resume_from is not None:
        loader.load_state_dict(resume_from["loader"])
        set_rng_states(resume_from["rng"])
        first = resume_from["epoch"]
    played, saved = {}, {}
    for epoch in range(first, epochs):
        batches = played[epoch] = []
        iterator, k = iter(loader), 0
        while True:
            if (epoch, k) in checkpoints:
                saved[epoch, k] = through_a_file({"loader": loader.state_dict(),
                                                  "rng": rng_states(), "epoch": epoch})
            try:
                batch = next(iterator)
            except StopIteration:
                break
            batches.append(plain(batch))
            torch.rand(4)  # the training step's random numbers
            k += 1
    return {"epochs": played, "after": torch.rand(3).tolist(), "checkpoints": saved}


# ---------------------------------------------------------------------------------------
# The demonstration: a real training run, killed and resumed

SCRIPT = [sys.executable, "-m", "minidataloader_course.shared.resumable_training"]


def kill_and_resume(folder, kill_at: tuple[int, int] = (1, 9), num_workers: int = 2,
                    epochs: int = 3, every: int = 3, timeout: float = 120.0) -> dict:
    """Run ``demo.resumable_training`` three times, in processes of their own:

    1. to the end, never interrupted (at the same time as 2);
    2. again, killed -- the script and its workers, with SIGKILL -- right after it printed
       ``checkpoint <epoch> <step>`` for ``kill_at``: in the middle of an epoch;
    3. started again with the same command: it finds the checkpoint and resumes.

    Returns what each printed, how the second ended, and whether the final weights of 1 and
    3 are identical, bit for bit. Every process is bounded by ``timeout`` seconds."""
    folder = os.fspath(folder)
    common = ["--epochs", str(epochs), "--every", str(every), "--num-workers", str(num_workers)]
    start = time.perf_counter()
    whole = subprocess.Popen([*SCRIPT, "--checkpoint", os.path.join(folder, "a.pt"),
                              "--out", os.path.join(folder, "a_weights.pt"), *common],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        checkpoint, out = os.path.join(folder, "b.pt"), os.path.join(folder, "b_weights.pt")
        command = [*SCRIPT, "--checkpoint", checkpoint, "--out", out, *common]
        killed_lines, killed_code = _kill_after(command + ["--step-seconds", "0.05"],
                                                "checkpoint {} {}".format(*kill_at), timeout)
        finished_before_kill = os.path.exists(out)
        resumed = _finish(subprocess.Popen(command, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True), timeout)
        uninterrupted = _finish(whole, timeout)
    finally:
        if whole.poll() is None:
            whole.kill()
            whole.communicate()
    expected, got = torch.load(os.path.join(folder, "a_weights.pt")), torch.load(out)
    identical = list(expected) == list(got) and all(
        torch.equal(expected[name], got[name]) for name in expected)
    return {"uninterrupted": uninterrupted, "killed": killed_lines, "exit_code": killed_code,
            "finished_before_kill": finished_before_kill, "resumed": resumed,
            "identical": identical, "weights": {name: tuple(t.shape) for name, t in got.items()},
            "seconds": time.perf_counter() - start}


def _finish(process: subprocess.Popen, timeout: float) -> list[str]:
    """Wait for ``process`` (killed after ``timeout``); the lines it printed."""
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    if process.returncode != 0:
        raise RuntimeError(f"the training script failed:\n{stderr[-2000:]}")
    return stdout.splitlines()


def _kill_after(command: list, line: str, timeout: float) -> tuple[list[str], int]:
    """Start ``command`` in a process group of its own; when it prints ``line``, kill the
    group (the script and its workers) with SIGKILL. Returns the lines read and the exit
    code (-9: killed by signal 9)."""
    victim = subprocess.Popen(command, stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    # A script that hangs would block the loop below forever: kill it after `timeout`.
    guard = threading.Timer(timeout, os.killpg, (victim.pid, signal.SIGKILL))
    guard.start()
    lines = []
    try:
        for printed in victim.stdout:
            lines.append(printed.rstrip("\n"))
            if lines[-1] == line:
                os.killpg(victim.pid, signal.SIGKILL)
                break
        else:
            raise RuntimeError(f"the script ended without printing {line!r}: {lines}")
        return lines, victim.wait(timeout=timeout)
    finally:
        guard.cancel()
        if victim.poll() is None:
            os.killpg(victim.pid, signal.SIGKILL)
            victim.wait()
        victim.stdout.close()


# ---------------------------------------------------------------------------------------
# The queue-flow view of a checkpoint and a resume

def record_checkpoint_resume(checkpoint_after: int = 5, stopped_after: int = 8,
                             batches: int = 16, batch_size: int = 2, num_workers: int = 2,
                             prefetch_factor: int = 2, load_ms: float = 5.0,
                             step_ms: float = 10.0) -> dict:
    """Two traced runs of a ``StatefulDataLoader`` over a :class:`FlowDataset`, with a
    training loop of ``step_ms`` per step: the first takes a checkpoint after
    ``checkpoint_after`` batches and stops after ``stopped_after`` (as if killed then); the
    second is a new loader, built afresh, that loads the checkpoint (through a file) and
    resumes. Returns ``{label: Trace}``, for ``queue_flow_html``."""
    from minidataloader_course.viz.queueflow import DEFAULTS  # the view's settings, for its summary
    from minidataloader_course.viz.trace import TraceRecorder

    if not 0 <= checkpoint_after <= stopped_after <= batches:
        raise ValueError(f"the checkpoint ({checkpoint_after}) must come before the stop "
                         f"({stopped_after}), both within the epoch's {batches} batches")
    dataset = FlowDataset(batches * batch_size, load_ms / 1e3)
    config = dict(DEFAULTS, num_workers=num_workers, prefetch_factor=prefetch_factor,
                  batch_size=batch_size, batches=batches, load_ms=load_ms, step_ms=step_ms)

    def make():
        return StatefulDataLoader(dataset, batch_size=batch_size, num_workers=num_workers,
                                  prefetch_factor=prefetch_factor,
                                  multiprocessing_context="fork" if sys.platform == "linux"
                                  else None)

    loader = make()
    with TraceRecorder(config=config) as first:
        iterator = iter(loader)
        for yielded in range(stopped_after + 1):  # batches yielded so far
            if yielded == checkpoint_after:
                state = through_a_file(loader.state_dict())
            if yielded < stopped_after:
                next(iterator)
                with first.step():
                    time.sleep(step_ms / 1e3)
        del iterator  # stopped: its workers are shut down
    resumed = make()
    resumed.load_state_dict(state)
    with TraceRecorder(config=config) as second:
        for _ in resumed:
            with second.step():
                time.sleep(step_ms / 1e3)
    return {f"checkpoint after {checkpoint_after} batches, stopped after {stopped_after}":
            first.trace, "resumed from the checkpoint, in a new loader": second.trace}
