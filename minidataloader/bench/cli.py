"""The benchmark's command line, ``python -m minidataloader.bench``: the core workloads
against torch.utils.data (runner.py), then the stateful extra's against torchdata
(stateful_workloads.py). It sits above both, so that neither imports the other's caller."""

from __future__ import annotations

import argparse
import importlib

from .runner import format_table, run_benchmark, write_report
from .stateful_workloads import TITLE as STATEFUL_TITLE
from .stateful_workloads import WORKLOADS as STATEFUL_WORKLOADS
from .workloads import WORKLOADS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minidataloader.bench",
        description="minidataloader against torch.utils.data: same workloads, same process.")
    parser.add_argument("--quick", action="store_true",
                        help="smaller workloads, fewer pairs (under a minute)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--workload", action="append", metavar="NAME",
                        choices=[w.name for w in WORKLOADS + STATEFUL_WORKLOADS],
                        help="run only this workload (repeatable); one of: %(choices)s")
    parser.add_argument("--pairs", type=int, help="runs of each library per workload")
    parser.add_argument("--library", metavar="MODULE",
                        help="measure this importable module against torch instead of "
                             "minidataloader: any with torch's names (a DataLoader of your "
                             "own, e.g. myloader, run from the folder that holds it)")
    args = parser.parse_args(argv)
    library = None if args.library is None else importlib.import_module(args.library)
    core = [w.name for w in WORKLOADS if not args.workload or w.name in args.workload]
    report = (run_benchmark(core, args.quick, args.pairs, library=library) if core
              else {"workloads": []})
    if core:
        print(format_table(report))
    # The full run also measures the stateful extra against torchdata (chapter 14); --quick
    # leaves it out (each torchdata run starts a process of its own), --workload names it.
    # (not with --library: the stateful workloads measure minidataloader's own extra)
    stateful = ([w.name for w in STATEFUL_WORKLOADS if w.name in args.workload]
                if args.workload else [] if args.quick or library else None)
    if stateful is None or stateful:
        report["stateful"] = run_benchmark(stateful, args.quick, args.pairs,
                                           workloads=STATEFUL_WORKLOADS, title=STATEFUL_TITLE)
        print(f"\n{STATEFUL_TITLE}\n(torch = torchdata 0.11's StatefulDataLoader, run in a "
              "child process)")
        print(format_table(report["stateful"]))
    if args.json:
        write_report(report, args.json)
    return 0
