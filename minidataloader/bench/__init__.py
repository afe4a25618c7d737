"""Programs that measure, and print what they measured (never timed tests).

    python -m minidataloader.bench                  # the full run (6-12 minutes)
    python -m minidataloader.bench --quick          # every workload, smaller (about a minute)
    python -m minidataloader.bench --workload io-w4 --json out.json
    python -m minidataloader.bench --library myloader   # your own loader (any module with
                                                         # torch's names) against torch
    python -m minidataloader.bench.gpu_bandwidth    # chapter 9's copies, on your CUDA GPU
    python -m minidataloader.bench.stateful_workloads   # chapter 14: ours vs torchdata's

    __main__.py       the command above: cli.main()
    cli.py            that command: the core workloads, then the stateful ones
    runner.py         runs the workloads with both libraries, alternating, and reports
    workloads.py      the workloads, one function each (add one there: see WORKLOADS)
    gpu_bandwidth.py  host-to-device copies from pageable and pinned memory
    stateful_workloads.py  the stateful loader against torchdata's StatefulDataLoader
                      (state_dict() cost, first batch after a resume, an epoch)
    results/          full_run.json, the committed full run that chapters 11 and 14 read

The JSON (``--json FILE``; read one with :func:`load_results`)::

    {"benchmark": ..., "quick": false, "duration_s": ...,
     "machine": {"date_utc", "cpu_model", "cpus_usable", "torch", "python", "load_average_before",
                 "load_average_after", ...},
     "library": "minidataloader" (the module measured against torch: its columns are mini_*),
     "workloads": [{"workload": "tiny-w2", "measures": "epoch", "doc": ..., "settings": {...},
                    "torch_s": median, "mini_s": median, "speed_ratio": torch_s / mini_s,
                    "pairs": 9, "torch_runs_s": [...], "mini_runs_s": [...],
                    "torch_spread" / "mini_spread" / "pair_ratio_spread":
                        {"median", "q1", "q3", "min", "max"}, "verdict": "tie", ...
                    "torch_main_cpu_s", "mini_main_cpu_s", ...: medians of extra facts}, ...],
     "stateful": {the same shape, for stateful_workloads.py: "torch" is torchdata}}
"""

from minidataloader.bench.runner import (
    format_table,
    load_results,
    measure,
    run_benchmark,
    verdict,
)
from minidataloader.bench.workloads import WORKLOADS


def main(argv: list[str] | None = None) -> int:
    """``python -m minidataloader.bench`` (cli.py). Imported when called: cli.py imports
    stateful_workloads.py, which is also a program of its own (``python -m
    minidataloader.bench.stateful_workloads``), and a module run with ``-m`` must not be
    imported already, by this package, when it starts."""
    from minidataloader.bench.cli import main as cli_main

    return cli_main(argv)

__all__ = ["WORKLOADS", "format_table", "load_results", "main", "measure", "run_benchmark",
           "verdict"]
