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
"""

from __future__ import annotations

import argparse
import os
import time

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


def build(num_workers: int):
    """The model, optimizer and loader, exactly as every start of the script builds them."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader = StatefulDataLoader(NoisyLine(64), batch_size=8, shuffle=True,
                                num_workers=num_workers, persistent_workers=num_workers > 0,
                                generator=torch.Generator().manual_seed(1))
    return model, optimizer, loader


def save(path: str, **checkpoint) -> None:
    """Write, then rename: a rename is atomic, so the file is the old checkpoint or the new
    one, never half of one."""
    torch.save(checkpoint, path + ".tmp")
    os.replace(path + ".tmp", path)


def train(checkpoint: str, out: str, epochs: int = 3, every: int = 3,
          step_seconds: float = 0.0, num_workers: int = 2) -> None:
    torch.set_num_threads(1)  # the same arithmetic, in the same order, in every run
    model, optimizer, loader = build(num_workers)
    epoch = step = 0
    if os.path.exists(checkpoint):
        saved = torch.load(checkpoint)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        loader.load_state_dict(saved["loader"])
        set_rng_states(saved["rng"])  # dropout goes on where it was
        epoch, step = saved["epoch"], saved["step"]
        print(f"resumed {epoch} {step}", flush=True)
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
                print(f"checkpoint {epoch} {step}", flush=True)
            time.sleep(step_seconds)  # room for a test to kill it in the middle of an epoch
        epoch += 1
    torch.save(model.state_dict(), out)


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
