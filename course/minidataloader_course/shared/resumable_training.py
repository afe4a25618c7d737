"""A training run that survives being killed (chapter 14): kill it with SIGKILL in the
middle of an epoch, start it again, and it ends with the same weights, to the last bit, as
a run that was never interrupted.

    python -m minidataloader_course.shared.resumable_training --checkpoint run.pt --out weights.pt

Everything random is restored: the order of the samples (the loader's generator), the
noise each worker adds to its samples (the workers' random states), the dropout of the
training step (the main process's global RNG), and where the epoch was. The loader saves
its part (``loader.state_dict()``); the script saves the rest -- the model, the optimizer,
the global random states, the epoch -- in the same file, written atomically so that a
kill during the write leaves the previous checkpoint whole.

Prints ``checkpoint <epoch> <step>`` after each checkpoint and ``resumed <epoch> <step>``
when it starts from one, so that a test (or a reader) knows when to kill it.

The same script trains with any loader class that takes ``DataLoader``'s arguments
(``train(..., loader_class=...)``): the package's ``StatefulDataLoader`` (the default, as
the chapter runs it), the learner's own (milestone 14, :func:`kill_and_resume_in_children`),
or torch's ``DataLoader`` for a run that is never interrupted.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import time

import numpy as np
import torch
from torch import nn

from minidataloader import Dataset
from minidataloader.stateful import StatefulDataLoader, rng_states, set_rng_states


class NoisyLine(Dataset):
    """Points of y = 3x + 1 with x in [-1, 1]; each time a sample is loaded it gets fresh
    noise, drawn from the random state of the process loading it (a worker)."""

    def __init__(self, n: int) -> None:
        self.x = torch.linspace(-1, 1, n).unsqueeze(1)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i] + 0.05 * torch.randn(1)  # an augmentation
        return x, 3 * self.x[i] + 1


class NoisySamples(Dataset):
    """Sample ``i`` is ``[i, a draw from torch, one from random, one from numpy]`` (float64):
    every global random state of the process that loads it shows in the sample, as an
    augmentation that uses all three would."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(f"index {i} out of range for {self.n} samples")
        return torch.tensor([float(i), torch.rand(()).item(), random.random(),
                             float(np.random.rand())], dtype=torch.float64)

    def __repr__(self) -> str:
        return f"{self.n} samples [i, torch.rand, random.random, np.random.rand]"


def build(num_workers: int, loader_class=StatefulDataLoader, persistent: bool | None = None,
          samples: int = 64, context: str | None = None):
    """The model, optimizer and loader, exactly as every start of the script builds them
    (``context``: how its workers start; None, the start method in use)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    if persistent is None:
        persistent = num_workers > 0
    loader = loader_class(NoisyLine(samples), batch_size=8, shuffle=True,
                          num_workers=num_workers, persistent_workers=persistent,
                          generator=torch.Generator().manual_seed(1),
                          **({"multiprocessing_context": context} if context else {}))
    return model, optimizer, loader


def save(path: str, **checkpoint) -> None:
    """Write, then rename: a rename is atomic, so the file is the old checkpoint or the new
    one, never half of one."""
    torch.save(checkpoint, path + ".tmp")
    os.replace(path + ".tmp", path)


def train(checkpoint: str, out: str, epochs: int = 3, every: int = 3,
          step_seconds: float = 0.0, num_workers: int = 2, loader_class=StatefulDataLoader,
          persistent: bool | None = None, samples: int = 64, stop_at: int | None = None,
          say=None, context: str | None = None) -> None:
    """Train, from the checkpoint if there is one; ``stop_at``: after that many steps, say
    ``waiting at <step>`` and wait to be killed (a test's cue). ``say`` prints a line."""
    say = say or (lambda line: print(line, flush=True))
    torch.set_num_threads(1)  # the same arithmetic, in the same order, in every run
    model, optimizer, loader = build(num_workers, loader_class, persistent, samples, context)
    epoch = step = 0
    if os.path.exists(checkpoint):
        saved = torch.load(checkpoint)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        loader.load_state_dict(saved["loader"])
        set_rng_states(saved["rng"])  # dropout goes on where it was
        epoch, step = saved["epoch"], saved["step"]
        say(f"resumed {epoch} {step}")
    while epoch < epochs:
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step % every == 0:
                save(checkpoint, model=model.state_dict(), optimizer=optimizer.state_dict(),
                     loader=loader.state_dict(), rng=rng_states(), epoch=epoch, step=step)
                say(f"checkpoint {epoch} {step}")
            if step == stop_at:  # mid-epoch, workers at work, batches in flight
                say(f"waiting at {step}")
                time.sleep(3600)
            time.sleep(step_seconds)  # room for a test to kill it in the middle of an epoch
        epoch += 1
    torch.save(model.state_dict(), out)


# ---------------------------------------------------------------------------------------
# Milestone 14: a run of the learner's loader killed and resumed, in child processes


def _train_in_a_group(write_fd: int, arguments: dict) -> None:
    """A child's target: train in a process group of its own (its workers join it), telling
    the parent each line on a pipe."""
    os.setpgid(0, 0)

    def say(line: str) -> None:
        os.write(write_fd, (line + "\n").encode())

    try:
        train(say=say, **arguments)
        say("finished")
    except BaseException as error:  # noqa: BLE001 - the parent reports it
        say(f"failed {type(error).__name__}: {' '.join(str(error).split())[:300]}")
        raise


def _run_child(arguments: dict, timeout: float, kill_on: str | None = None) -> tuple:
    """Train in a child process (forked where fork exists: the loader's workers still use
    the start method in use); kill its whole group with SIGKILL once it says ``kill_on``.
    Returns the lines it said and its exit code (-9: killed)."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    read_fd, write_fd = os.pipe()
    child = context.Process(target=_train_in_a_group, args=(write_fd, arguments))
    child.start()
    os.close(write_fd)
    lines, buffer, deadline = [], b"", time.monotonic() + timeout
    try:
        with os.fdopen(read_fd, "rb", buffering=0) as pipe:
            while time.monotonic() < deadline:
                import select

                ready, _, _ = select.select([pipe], [], [], 0.1)
                if not ready:
                    if not child.is_alive():
                        break
                    continue
                chunk = pipe.read(4096)
                if not chunk:  # every writer has exited
                    break
                buffer += chunk
                *done, buffer = buffer.split(b"\n")
                lines += [line.decode() for line in done]
                if kill_on is not None and kill_on in lines:
                    os.killpg(child.pid, signal.SIGKILL)
                    break
            else:
                lines.append(f"(no end after {timeout:.0f} s: killed)")
    finally:
        _kill_group(child.pid)
        child.join(10)
    return lines, child.exitcode


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)  # the child and every worker it started
    except (ProcessLookupError, PermissionError):
        pass


def kill_and_resume_in_children(loader_class, folder: str, epochs: int = 3, every: int = 3,
                                kill_after: int = 9, num_workers: int = 2,
                                samples: int = 48, timeout: float = 120.0) -> dict:
    """Milestone 14's run of ``loader_class`` (the learner's ``StatefulDataLoader``): train
    with checkpoints every ``every`` steps; one step after the checkpoint at step
    ``kill_after`` (in the middle of an epoch), SIGKILL the training process and its
    workers; then start again from the checkpoint, to the end. No persistent workers. What
    each run said, how the first ended, and the final weights (None if there are none)."""
    checkpoint, out = os.path.join(folder, "run.pt"), os.path.join(folder, "weights.pt")
    common = dict(checkpoint=checkpoint, out=out, epochs=epochs, every=every,
                  num_workers=num_workers, loader_class=loader_class, persistent=False,
                  samples=samples)
    first, code = _run_child(dict(common, stop_at=kill_after + 1),
                             timeout, kill_on=f"waiting at {kill_after + 1}")
    second, _ = _run_child(common, timeout) if code == -signal.SIGKILL else ([], None)
    weights = torch.load(out) if os.path.exists(out) else None
    return {"first": first, "exit code": code, "second": second, "weights": weights}


def uninterrupted(loader_class, epochs: int = 3, every: int = 3, num_workers: int = 2,
                  samples: int = 48, folder: str | None = None,
                  context: str | None = None) -> dict:
    """The same run with ``loader_class`` (torch's ``DataLoader``), never interrupted: its
    final weights. Checkpoints are taken only by a loader that has ``state_dict``."""
    import tempfile

    with tempfile.TemporaryDirectory(dir=folder) as where:
        out = os.path.join(where, "weights.pt")
        train(os.path.join(where, "never.pt"), out, epochs=epochs, every=every,
              num_workers=num_workers, loader_class=_without_checkpoints(loader_class),
              persistent=False, samples=samples, say=lambda line: None, context=context)
        return torch.load(out)


def _without_checkpoints(loader_class):
    """``loader_class`` with a ``state_dict`` that saves nothing (torch's DataLoader has
    none): the uninterrupted run's checkpoints are written and never read."""
    if hasattr(loader_class, "state_dict"):
        return loader_class
    return type(loader_class.__name__, (loader_class,), {"state_dict": lambda self: {}})


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="the checkpoint file (resumed "
                        "from if it exists)")
    parser.add_argument("--out", required=True, help="where the final weights go")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--every", type=int, default=3, help="checkpoint every N steps")
    parser.add_argument("--step-seconds", type=float, default=0.0)
    parser.add_argument("--num-workers", type=int, default=2)
    args = parser.parse_args(argv)
    train(args.checkpoint, args.out, args.epochs, args.every, args.step_seconds,
          args.num_workers)


if __name__ == "__main__":  # spawned workers import this module: they must not run it
    main()
