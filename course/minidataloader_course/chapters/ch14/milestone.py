"""Milestone 14: the learner's loader, resumable (chapter 14). A training run that uses the
learner's ``StatefulDataLoader`` (``myloader/resumable.py``) is killed with SIGKILL in the
middle of an epoch, workers and all, and started again from its last checkpoint; its final
weights must be, bit for bit, those of the same run with torch's ``DataLoader``, never
interrupted. And a state that does not fit the loader is refused, with a clear error.

The run is ``shared/resumable_training.py``'s: a small network trained for two epochs of 6
steps on points whose inputs get fresh noise in the workers, with dropout, a checkpoint
every 3 steps (the model, the optimizer, ``loader.state_dict()`` and the script's random
states, through ``torch.save``). The learner's side runs in child processes of the check
(forked where fork exists; their loaders' workers start with the start method in use):
the first is killed one step after its checkpoint at step 9 (batch 3 of epoch 1, two
workers, batches in flight), the second resumes from that checkpoint to the end. torch's
side runs the same script once, to the end, with torch's own ``DataLoader``.

The refusals have no torch to compare with (torch's loader saves no state): the expected
answers are those of the book's reference pieces (chapter 14's ``solution.py``).
"""

from __future__ import annotations

import importlib
import signal
import tempfile

import torch
import torch.utils.data

from minidataloader_course.chapters.ch14 import solution
from minidataloader_course.chapters.multiprocess_cases import HAS_FORK
from minidataloader_course.checker.milestones import Milestone, Suite, register_milestone
from minidataloader_course.shared.resumable_training import (
    NoisySamples,
    kill_and_resume_in_children,
    uninterrupted,
)

EPOCHS, EVERY, KILL_AFTER, SAMPLES, WORKERS = 2, 3, 9, 48, 2
FIRST = (f"killed by SIGKILL at step {KILL_AFTER + 1}, one step after its checkpoint at step "
         f"{KILL_AFTER}")
SECOND = f"resumed at epoch 1, step {KILL_AFTER}, and finished"


def stateful_class(data):
    """The learner's ``StatefulDataLoader`` (``myloader/resumable.py``)."""
    return importlib.import_module(f"{data.__name__}.resumable").StatefulDataLoader


def _first_run(lines: list[str], code) -> str:
    if code == -signal.SIGKILL and f"checkpoint 1 {KILL_AFTER}" in lines:
        return FIRST
    failed = [line for line in lines if line.startswith("failed")]
    if failed:
        return f"it {failed[0]}"
    return f"it ended with exit code {code} before step {KILL_AFTER + 1}; it said {lines[-3:]}"


def _second_run(lines: list[str]) -> str:
    if lines[:1] == [f"resumed 1 {KILL_AFTER}"] and lines[-1:] == ["finished"]:
        return SECOND
    if not lines:
        return "it never started: the first run did not end as planned"
    return f"it said {lines[0]!r} first and {lines[-1]!r} last"


def killed_and_resumed(data, spec: dict) -> dict:
    """torch's side: the run, never interrupted. The learner's: killed, then resumed."""
    settings = dict(epochs=EPOCHS, every=EVERY, num_workers=WORKERS, samples=SAMPLES)
    if data is torch.utils.data:
        # torch's batches do not depend on how its workers start: fork where it exists,
        # cheaper than spawn (the learner's side starts them as the milestone is run)
        context = "fork" if HAS_FORK else None
        return {"the first run": FIRST, "the second run": SECOND,
                "the final weights": dict(uninterrupted(torch.utils.data.DataLoader,
                                                        context=context, **settings))}
    with tempfile.TemporaryDirectory() as folder:
        run = kill_and_resume_in_children(stateful_class(data), folder,
                                          kill_after=KILL_AFTER, timeout=100, **settings)
    return {"the first run": _first_run(run["first"], run["exit code"]),
            "the second run": _second_run(run["second"]),
            "the final weights": (dict(run["weights"]) if run["weights"] is not None else
                                  "none: the second run did not finish")}


# ---------------------------------------------------------------------------------------
# A state that does not fit


def _loader(loader_class, n=12, batch_size=3, num_workers=0):
    return loader_class(NoisySamples(n), batch_size=batch_size, shuffle=True,
                        num_workers=num_workers, generator=torch.Generator().manual_seed(0))


def _loading(loader, state, values=None) -> str:
    try:
        loader.load_state_dict(state)
    except ValueError as error:
        named = values is None or all(str(value) in str(error) for value in values)
        return "refused with ValueError" + ("" if named else
                                            f", but its message does not name {values}")
    except Exception as error:  # an accident, not a refusal
        return f"{type(error).__name__}: {' '.join(str(error).split())[:120]}"
    return "accepted"


def refusals(data, spec: dict) -> dict:
    """A state taken after 2 batches (no workers), given to a loader it does not fit."""
    loader_class = (solution.StatefulDataLoader if data is torch.utils.data
                    else stateful_class(data))
    loader = _loader(loader_class)
    iterator = iter(loader)
    next(iterator), next(iterator)
    state = torch.load(_saved(loader.state_dict()))
    seen = {"given back to a loader built the same way": _loading(_loader(loader_class),
                                                                  state)}
    seen["given to a loader with batch_size=4 (3 in the state)"] = _loading(
        _loader(loader_class, batch_size=4), state, (3, 4))
    seen["given to a loader over 13 samples (12 in the state)"] = _loading(
        _loader(loader_class, n=13), state, (12, 13))
    seen["given to a loader with num_workers=2 (0 in the state)"] = _loading(
        _loader(loader_class, num_workers=2), state, (0, 2))
    if isinstance(state, dict):
        cut = [_loading(_loader(loader_class), {k: v for k, v in state.items() if k != key})
               for key in state]
        seen["each entry left out in turn (a state cut short)"] = sorted(set(cut))
        seen["an entry added (a state edited by hand)"] = _loading(
            _loader(loader_class), {**state, "edited by hand": True})
    seen["a list instead of a state"] = _loading(_loader(loader_class), [3, 2])
    return seen


def _saved(state):
    import io

    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return buffer


register_milestone(Milestone(
    number=14,
    goals={"ch14": (6, 7)},
    title="your loader, killed with SIGKILL and resumed",
    suites=[
        Suite(name="a state that does not fit is refused",
              cases=lambda: [{"what": "refusals"}],
              observe=refusals,
              describe=lambda spec: (
                  "the state of your StatefulDataLoader(12 samples, batch_size=3, "
                  "shuffle=True, generator=torch.Generator().manual_seed(0)) after 2 "
                  "batches, through torch.save and torch.load, given to load_state_dict() of "
                  "loaders it fits and loaders it does not fit, and changed"),
              time_limit=30.0,
              hint="refuse with ValueError, before anything changes: another batch size, "
                   "dataset length or number of workers (name both values), an entry "
                   "missing or one your state_dict never writes, anything but a dict"),
        Suite(name="killed with SIGKILL in the middle of an epoch, resumed",
              cases=lambda: [{"kill after": KILL_AFTER}],
              observe=killed_and_resumed,
              describe=lambda spec: (
                  f"shared/resumable_training.py with your StatefulDataLoader({SAMPLES} "
                  f"noisy points, batch_size=8, shuffle=True, num_workers={WORKERS}, "
                  "generator=torch.Generator().manual_seed(1)): 2 epochs of 6 steps, "
                  f"a checkpoint every {EVERY} steps; killed (the script and its workers, "
                  f"SIGKILL) one step after the checkpoint at step {KILL_AFTER}, then "
                  "started again: its final weights against those of the same run with "
                  "torch's DataLoader, never interrupted"),
              time_limit=120.0,
              suspects=("resumable.ResumedBatches", "resumable.InTheWorkers",
                        "resumable.track_position", "resumable.ResumableEpochs",
                        "resumable.StatefulDataLoader"),
              hint="the checkpoint came after batch 3 of epoch 1, with two workers: the "
                   "resume replays the epoch's index stream from its start, deals batch 3 "
                   "to worker 1 again (it had it), puts back each worker's random states as "
                   "of its last batch consumed, and gives the training loop its own"),
    ],
))
