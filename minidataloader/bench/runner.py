"""The benchmark's runner: minidataloader against ``torch.utils.data``, same workloads, same
process (``python -m minidataloader.bench``; see the package's docstring for the command
and the report's shape).

Runs alternate between the libraries (torch, mini, mini, torch, torch, mini, ...), so a
machine that slows down or speeds up during the run affects both alike; each workload
reports the median of its runs and their spread, and ``speed_ratio = torch_s / mini_s``
(above 1: minidataloader is faster). Most of the time goes to the spawn workload, whose
workers each import torch. A machine busy with other work stretches these times: --quick
uses about 40 CPU seconds in all, well under a minute on 2 idle cores, and a minute and a
half when 4 other programs share them.

The side compared with torch is minidataloader unless ``library=`` names another module with
torch's names (``--library myloader``: the loader a reader of the book writes); its columns
keep the ``mini_`` prefix, and the report says which library it was (``"library"``).

Seconds are wall-clock seconds; ``*_cpu_s`` are CPU seconds, which other programs on a
busy machine hardly change. ``pair_ratio_spread`` is the spread of torch/mini within each
pair, and ``verdict`` reads it (see :func:`verdict`).
"""

from __future__ import annotations

import datetime
import gc
import json
import os
import pathlib
import platform
import statistics
import sys
import time
import warnings

import numpy as np
import torch
import torch.utils.data as tud

import minidataloader as mdl

from .workloads import WORKLOADS, Workload

RESULTS = pathlib.Path(__file__).parent / "results" / "full_run.json"  # the committed run
PAIRS = 9  # pairs of runs (one of each library) per workload; --quick: Workload.quick_pairs


def _spread(values: list[float]) -> dict:
    if len(values) == 1:
        q1 = q3 = values[0]
    else:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return {"median": statistics.median(values), "q1": q1, "q3": q3, "min": min(values),
            "max": max(values)}


def _run_once(workload: Workload, data, quick: bool) -> dict:
    gc.collect()  # garbage of the previous run is not this run's cost
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. 4 workers on 2 CPUs: expected here
        return workload.run(data, quick, **workload.kwargs)


def _progress_bar(total: int, file):
    """A bar of ``total`` runs on ``file`` if it is a terminal (silent elsewhere: a notebook,
    a log), without tqdm's monitor thread, so that nothing of the bar runs while a run is
    timed: :func:`measure` draws it between runs."""
    from tqdm import tqdm  # here: gpu_bandwidth, beside this module, runs without tqdm

    class Bar(tqdm):
        monitor_interval = 0  # no monitor thread

    return Bar(total=total, unit="run", file=file, disable=None, dynamic_ncols=True)


def verdict(pair_ratios: dict) -> str:
    """What a workload's pair ratios (their spread) say: ``"faster"`` or ``"slower"``
    (minidataloader) when three pairs in four or more agree, ``"tie"`` otherwise -- that is,
    when the middle half of the pair ratios straddles 1 and the median ratio is noise."""
    if pair_ratios["q1"] > 1:
        return "faster"
    if pair_ratios["q3"] < 1:
        return "slower"
    return "tie"


def measure(workload: Workload, pairs: int, quick: bool, bar, library=None) -> dict:
    """``pairs`` runs of each library, alternating, after one untimed warm-up run each
    (none in quick mode for a workload that is slow anyway). ``bar`` moves between runs.
    ``library``: the module measured against torch (default: minidataloader)."""
    libs = {"torch": tud, "mini": mdl if library is None else library}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    bar.set_description(workload.name)
    for lib in libs if workload.warm_up or not quick else ():
        bar.set_postfix_str(f"warm-up, {lib}")
        _run_once(workload, libs[lib], quick)
        bar.update()
    runs = {lib: [] for lib in libs}
    for pair in range(pairs):
        order = ("torch", "mini") if pair % 2 == 0 else ("mini", "torch")
        for lib in order:
            bar.set_postfix_str(f"pair {pair + 1}/{pairs}, {lib}")
            runs[lib].append(_run_once(workload, libs[lib], quick))
            bar.update()
    seconds = {lib: [run["s"] for run in runs[lib]] for lib in libs}
    torch_s, mini_s = (statistics.median(seconds[lib]) for lib in libs)
    pair_ratios = _spread([t / m for t, m in zip(seconds["torch"], seconds["mini"])])
    result = {
        "workload": workload.name,
        "measures": workload.what,
        "doc": " ".join(workload.run.__doc__.split()),
        "settings": workload.kwargs,
        "torch_s": torch_s,
        "mini_s": mini_s,
        "speed_ratio": torch_s / mini_s,
        "pairs": pairs,
        "load_average_at_start": load,
        "torch_spread": _spread(seconds["torch"]),
        "mini_spread": _spread(seconds["mini"]),
        "pair_ratio_spread": pair_ratios,
        "verdict": verdict(pair_ratios),
        "torch_runs_s": seconds["torch"],
        "mini_runs_s": seconds["mini"],
    }
    for key in runs["torch"][0]:
        if key != "s":
            for lib in libs:
                result[f"{lib}_{key}"] = statistics.median(run[key] for run in runs[lib])
    return result


def machine_facts() -> dict:
    facts = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "minidataloader": mdl.__version__,
        "start_method": torch.multiprocessing.get_start_method(),
        "sharing_strategy": torch.multiprocessing.get_sharing_strategy(),
        "torch_threads": torch.get_num_threads(),
    }
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            facts["cpu_model"] = next(line.split(":", 1)[1].strip() for line in cpuinfo
                                      if line.startswith("model name"))
        with open("/proc/meminfo") as meminfo:
            facts["memory_gib"] = round(int(meminfo.readline().split()[1]) / 2**20, 1)
    except (OSError, StopIteration):
        pass
    if hasattr(os, "getloadavg"):
        facts["load_average_before"] = os.getloadavg()
    return facts


def run_benchmark(names: list[str] | None = None, quick: bool = False,
                  pairs: int | None = None, progress_file=None,
                  workloads: list[Workload] | None = None,
                  title: str = "minidataloader vs torch.utils.data", library=None) -> dict:
    """Measure the workloads named (all by default) of ``workloads`` (default: the core
    benchmark's); the report ``--json`` writes. A progress bar goes to ``progress_file``
    (default: stderr) if it is a terminal. ``library``: the module measured against torch,
    any with torch's names (default: minidataloader)."""
    workloads = [w for w in (WORKLOADS if workloads is None else workloads)
                 if not names or w.name in names]
    plan = [(w, pairs or (w.quick_pairs if quick else PAIRS)) for w in workloads]
    if library is not None and title == "minidataloader vs torch.utils.data":
        title = f"{library.__name__} vs torch.utils.data"
    report = {"benchmark": title, "quick": quick, "machine": machine_facts(),
              "library": (library or mdl).__name__, "workloads": []}
    runs = sum(2 * (n + (w.warm_up or not quick)) for w, n in plan)
    start = time.monotonic()
    with _progress_bar(runs, progress_file or sys.stderr) as bar:
        for workload, n in plan:
            report["workloads"].append(measure(workload, n, quick, bar, library))
    report["duration_s"] = time.monotonic() - start
    if hasattr(os, "getloadavg"):
        report["machine"]["load_average_after"] = os.getloadavg()
    return report


def write_report(report: dict, path: str | os.PathLike) -> None:
    with open(path, "w") as out:
        json.dump(report, out, indent=1)
        out.write("\n")


def format_table(report: dict) -> str:
    def seconds(spread: dict) -> str:
        return f"{spread['median'] * 1e3:8.1f} ms [{spread['q1'] * 1e3:.1f}-{spread['q3'] * 1e3:.1f}]"

    ours = report.get("library", "minidataloader")
    lines = [f"{'workload':24} {'measures':18} {'torch: median [IQR]':>28} "
             f"{ours + ': median [IQR]':>30} {'ratio':>6} {'pair ratios [IQR]':>17} verdict"]
    for row in report["workloads"]:
        pair = row["pair_ratio_spread"]
        lines.append(f"{row['workload']:24} {row['measures']:18} "
                     f"{seconds(row['torch_spread']):>28} {seconds(row['mini_spread']):>30} "
                     f"{row['speed_ratio']:6.2f} {pair['q1']:13.2f}-{pair['q3']:.2f} {row['verdict']}")
        if "torch_fraction_of_ideal" in row:
            lines.append(f"{'':43}fraction of the ideal throughput: torch "
                         f"{row['torch_fraction_of_ideal']:.2f}, {ours} "
                         f"{row['mini_fraction_of_ideal']:.2f}")
    machine = report["machine"]
    load = machine.get("load_average_before")
    lines.append(f"ratio = torch / {ours} of the medians (above 1: {ours} is "
                 "faster); pair ratios: the same within each pair, whose spread is the noise;\n"
                 "verdict: faster/slower when 3 pairs in 4 agree, tie when their IQR holds 1")
    lines.append(f"pairs per workload: {max((r['pairs'] for r in report['workloads']), default=0)}"
                 f"; torch {machine['torch']}, {machine['cpus_usable']} CPUs"
                 + (f", load average {load[0]:.2f} before" if load else ""))
    # Only the load before the run says something about other processes: during it, the
    # benchmark's own workers raise the load average.
    if load and load[0] > 0.75 * machine["cpus_usable"]:
        lines.append(f"warning: other processes kept the machine busy (load average "
                     f"{load[0]:.1f} on {machine['cpus_usable']} CPUs): differences of "
                     "10-20% are noise; rerun when it is idle")
    return "\n".join(lines)


def load_results(path: str | os.PathLike | None = None) -> dict:
    """The report of a benchmark run, as ``--json`` wrote it, for the book to quote. Without
    ``path``: the report named by the environment variable ``MINIDATALOADER_FULL_RUN`` (say,
    your own machine's), or else the committed full run, ``results/full_run.json``."""
    path = path or os.environ.get("MINIDATALOADER_FULL_RUN") or RESULTS
    with open(path, encoding="utf-8") as results:
        return json.load(results)
