"""Workloads of the stateful loader: minidataloader.stateful against torchdata 0.11's
StatefulDataLoader -- what ``state_dict()`` costs, how long a resume takes to its first
batch, and what the bookkeeping costs over an epoch.

    python -m minidataloader.bench.stateful_workloads [--quick] [--json FILE]

They have the shape of the benchmark's workloads (``workloads.Workload``): ``run(data,
quick, **settings)`` is called with ``torch.utils.data`` or ``minidataloader``. Here
``torch.utils.data`` stands for torchdata, which runs in a child process of its own, so
that it never shares a process with a torch-against-minidataloader comparison (the
project's rule, in case it changes torch's samplers; with torchdata 0.11 and torch 2.13,
importing it was measured to leave every class of torch.utils.data unchanged). The child
times the run itself; its start-up (importing torch) is not counted. In the tables the
column headed "torch" is torchdata.

The benchmark's full run (``python -m minidataloader.bench``) measures them too: its report
holds them under ``"stateful"``, with the same shape as the core workloads' report.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import time

import torch

from .runner import format_table, run_benchmark, write_report
from .workloads import Workload

CHILD_TIMEOUT = 300
TITLE = "minidataloader.stateful vs torchdata.stateful_dataloader"
MODULE = "minidataloader.bench.stateful_workloads"  # (run as a script, __name__ is __main__)


class Vectors:
    """``n`` samples of 8 floats: loading costs next to nothing, the loader's work shows."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        return torch.full((8,), float(i))


def _loader(loader_class, n: int, num_workers: int, batch_size: int = 16):
    return loader_class(Vectors(n), batch_size=batch_size, shuffle=True,
                        num_workers=num_workers, generator=torch.Generator().manual_seed(0))


def _saved(state) -> bytes:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def state_dict_cost(loader_class, quick: bool, num_workers: int) -> dict:
    """One state_dict() call in the middle of an epoch (after 20 batches of 16 shuffled
    samples), mean of many; also the size of the state once saved."""
    loader = _loader(loader_class, 2000, num_workers)
    iterator = iter(loader)
    for _ in range(20):
        next(iterator)
    calls = 20 if quick else 200
    start = time.perf_counter()
    for _ in range(calls):
        state = loader.state_dict()
    elapsed = (time.perf_counter() - start) / calls
    del iterator
    return {"s": elapsed, "state_bytes": len(_saved(state))}


def resume_first_batch(loader_class, quick: bool, num_workers: int) -> dict:
    """From load_state_dict() to the first batch of a resumed epoch, three quarters into an
    epoch of shuffled samples (2,000 quick, 20,000 full; 16 per batch): workers started,
    the sampler's position restored."""
    n = 2000 if quick else 20000
    loader = _loader(loader_class, n, num_workers)
    iterator = iter(loader)
    for _ in range(3 * n // 64):
        next(iterator)
    saved = _saved(loader.state_dict())
    del iterator, loader
    loader = _loader(loader_class, n, num_workers)
    state = torch.load(io.BytesIO(saved))
    start = time.perf_counter()
    loader.load_state_dict(state)
    iterator = iter(loader)
    next(iterator)
    elapsed = time.perf_counter() - start
    del iterator
    return {"s": elapsed}


def stateful_epoch(loader_class, quick: bool, num_workers: int) -> dict:
    """A whole epoch of tiny batches (8 floats, 64 per batch), no state_dict() call: what
    keeping the state costs per batch."""
    loader = _loader(loader_class, 2000 if quick else 12800, num_workers, batch_size=64)
    start = time.perf_counter()
    for _ in loader:
        pass
    return {"s": time.perf_counter() - start}


MEASURES = {measure.__name__: measure
            for measure in (state_dict_cost, resume_first_batch, stateful_epoch)}


def _loader_class(lib: str):
    if lib == "torchdata":
        from torchdata.stateful_dataloader import StatefulDataLoader
    else:
        from minidataloader.stateful import StatefulDataLoader
    return StatefulDataLoader


def _both_ways(measure):
    """A benchmark run function: minidataloader's loader in this process; for
    ``torch.utils.data``, torchdata's in a child process."""

    def run(data, quick: bool, **settings) -> dict:
        if data.__name__.startswith("minidataloader"):
            return measure(_loader_class("mini"), quick, **settings)
        command = [sys.executable, "-m", MODULE, "--child", measure.__name__,
                   "--settings", json.dumps(settings)] + ["--quick"] * quick
        child = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIMEOUT)
        if child.returncode != 0:
            raise RuntimeError(f"the torchdata run failed:\n{child.stderr[-2000:]}")
        return json.loads(child.stdout.splitlines()[-1])

    run.__name__, run.__doc__ = measure.__name__, measure.__doc__
    return run


WORKLOADS = [
    Workload("state-dict-w0", "state_dict()", _both_ways(state_dict_cost), {"num_workers": 0}),
    Workload("state-dict-w2", "state_dict()", _both_ways(state_dict_cost), {"num_workers": 2}),
    Workload("resume-first-batch-w0", "first batch", _both_ways(resume_first_batch),
             {"num_workers": 0}),
    Workload("resume-first-batch-w2", "first batch", _both_ways(resume_first_batch),
             {"num_workers": 2}),
    Workload("stateful-epoch-w2", "epoch", _both_ways(stateful_epoch), {"num_workers": 2}),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller, fewer pairs")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--workload", action="append", metavar="NAME",
                        choices=[w.name for w in WORKLOADS])
    parser.add_argument("--pairs", type=int, help="runs of each library per workload")
    parser.add_argument("--child", choices=list(MEASURES), help=argparse.SUPPRESS)
    parser.add_argument("--settings", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:  # one torchdata run, for the parent: its result is the last line
        import warnings

        warnings.simplefilter("ignore")  # torchdata's deprecation warnings on torch 2.13
        result = MEASURES[args.child](_loader_class("torchdata"), args.quick,
                                      **json.loads(args.settings))
        print(json.dumps(result))
        return 0
    report = run_benchmark(args.workload, args.quick, args.pairs, workloads=WORKLOADS,
                           title=TITLE)
    print("(torch = torchdata 0.11's StatefulDataLoader, run in a child process)")
    print(format_table(report))
    if args.json:
        write_report(report, args.json)
    return 0


if __name__ == "__main__":  # workers started with spawn import this module: not for them
    sys.exit(main())
