"""The benchmark runs, every workload present, and its JSON has the documented shape.
Timings are never checked here: speed is the benchmark's business, not a test's."""

import io
import json
import math
import subprocess
import sys
import threading
import time

import pytest

from minidataloader.bench import load_results, runner, verdict
from minidataloader.bench.stateful_workloads import WORKLOADS as STATEFUL_WORKLOADS
from minidataloader.bench.workloads import WORKLOADS, Workload

NAMES = [workload.name for workload in WORKLOADS]


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_quick_benchmark_prints_a_table_and_writes_json(tmp_path):
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, "-m", "minidataloader.bench", "--quick", "--json",
                          str(out)], capture_output=True, text=True, timeout=360)
    assert run.returncode == 0, run.stderr
    table = run.stdout.splitlines()
    assert "torch" in table[0] and "ratio" in table[0]
    for name in NAMES:
        assert sum(line.startswith(name + " ") for line in table) == 1, (name, run.stdout)
    assert "run/s" not in run.stderr and "s/run" not in run.stderr  # no bar in a pipe

    report = json.loads(out.read_text())
    assert report["quick"] is True
    for key in ("date_utc", "cpu_count", "torch", "python", "load_average_before",
                "load_average_after"):
        assert key in report["machine"], key
    assert [row["workload"] for row in report["workloads"]] == NAMES
    for row in report["workloads"]:
        for key in ("torch_s", "mini_s", "speed_ratio"):
            assert isinstance(row[key], float) and math.isfinite(row[key]) and row[key] > 0
        assert row["speed_ratio"] == pytest.approx(row["torch_s"] / row["mini_s"])
        assert len(row["torch_runs_s"]) == len(row["mini_runs_s"]) == row["pairs"] >= 1
        for spread in ("torch_spread", "mini_spread"):
            assert row[spread]["min"] <= row[spread]["median"] <= row[spread]["max"]
        assert row["verdict"] in {"faster", "slower", "tie"}
    io = next(row for row in report["workloads"] if row["workload"] == "io-w4")
    assert 0 < io["torch_fraction_of_ideal"] and 0 < io["mini_fraction_of_ideal"]


@pytest.mark.timeout(200)
def test_workload_filter_runs_only_the_named_workloads(tmp_path):
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, "-m", "minidataloader.bench", "--quick", "--pairs",
                          "1", "--workload", "tiny-w0", "--workload", "unordered-w2",
                          "--json", str(out)], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    assert [row["workload"] for row in report["workloads"]] == ["tiny-w0", "unordered-w2"]
    assert [row["pairs"] for row in report["workloads"]] == [1, 1]

    bad = subprocess.run([sys.executable, "-m", "minidataloader.bench", "--workload", "nope"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


@pytest.mark.parametrize(("q1", "q3", "expected"), [
    (1.05, 1.3, "faster"), (0.7, 0.98, "slower"), (0.9, 1.1, "tie"), (1.0, 1.2, "tie")])
def test_verdict_reads_the_middle_half_of_the_pair_ratios(q1, q3, expected):
    assert verdict({"q1": q1, "median": (q1 + q3) / 2, "q3": q3}) == expected


def test_load_results_reads_what_json_wrote(tmp_path):
    report = {"machine": {"cpus_usable": 2}, "workloads": [
        {"workload": "tiny-w0", "torch_s": 2.0, "mini_s": 1.0, "speed_ratio": 2.0}]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(report))
    assert load_results(path) == report
    assert load_results(str(path)) == report


def test_load_results_reads_the_report_named_by_the_environment(tmp_path, monkeypatch):
    """Chapter 11 plots the committed run, or the reader's own when this variable names it."""
    report = {"machine": {"cpus_usable": 1}, "workloads": []}
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(report))
    monkeypatch.setenv("MINIDATALOADER_FULL_RUN", str(path))
    assert load_results() == report
    monkeypatch.delenv("MINIDATALOADER_FULL_RUN")
    assert load_results()["quick"] is False  # the committed full run


def test_the_committed_full_run_has_the_documented_shape():
    """Chapters 11 and 14 quote results/full_run.json through load_results(): it must be a
    full run (not --quick) of every workload, the stateful ones included, with at least 7
    interleaved pairs each."""
    report = load_results()
    stateful = report["stateful"]
    for part, names in ((report, NAMES), (stateful, [w.name for w in STATEFUL_WORKLOADS])):
        assert part["quick"] is False
        assert part["machine"]["cpus_usable"] >= 1
        assert [row["workload"] for row in part["workloads"]] == names
    for row in report["workloads"] + stateful["workloads"]:
        assert row["pairs"] >= 7
        assert len(row["torch_runs_s"]) == len(row["mini_runs_s"]) == row["pairs"]
        assert row["speed_ratio"] == pytest.approx(row["torch_s"] / row["mini_s"])
        for spread in ("torch_spread", "mini_spread", "pair_ratio_spread"):
            assert row[spread]["q1"] <= row[spread]["median"] <= row[spread]["q3"]
        assert row["verdict"] == verdict(row["pair_ratio_spread"])


class Terminal(io.StringIO):
    """A terminal, as far as the progress bar can tell, that notes when it is written to."""

    def __init__(self):
        super().__init__()
        self.written_at: list[float] = []

    def isatty(self):
        return True

    def write(self, text):
        self.written_at.append(time.perf_counter())
        return super().write(text)


def test_the_progress_bar_moves_between_measurements_only(monkeypatch):
    """A bar per workload and pair on a terminal, drawn between runs: never while a run is
    timed (tqdm's monitor thread, which wakes on its own, is off)."""
    timed = []

    def sleepy(data, quick):
        """Sleeps 20 ms, timed."""
        start = time.perf_counter()
        time.sleep(0.02)
        end = time.perf_counter()
        timed.append((start, end))
        return {"s": end - start}

    fakes = [Workload("fake-a", "epoch", sleepy, {}), Workload("fake-b", "epoch", sleepy, {})]
    monkeypatch.setattr(runner, "WORKLOADS", fakes)
    terminal = Terminal()
    report = runner.run_benchmark(quick=True, pairs=3, progress_file=terminal)

    assert [row["workload"] for row in report["workloads"]] == ["fake-a", "fake-b"]
    assert len(timed) == 2 * (2 + 2 * 3)  # warm-ups and pairs, both libraries
    shown = terminal.getvalue()
    for words in ("fake-a", "fake-b", "warm-up, torch", "pair 3/3, mini", "16/16"):
        assert words in shown, words
    assert len(terminal.written_at) >= len(timed)
    inside = [t for t in terminal.written_at for start, end in timed if start <= t <= end]
    assert not inside, f"the bar was drawn {len(inside)} times during a timed run"
    monitors = [t for t in threading.enumerate() if type(t).__name__ == "TMonitor"]
    assert not monitors, "tqdm's monitor thread would wake during timed runs"


def test_no_progress_bar_where_no_one_watches(monkeypatch):
    monkeypatch.setattr(runner, "WORKLOADS", WORKLOADS[:1])
    log = io.StringIO()  # a file or a notebook's stream: not a terminal
    runner.run_benchmark(quick=True, pairs=1, progress_file=log)
    assert log.getvalue() == ""


class CountingLoaders:
    """A library with torch's names whose DataLoader counts the loaders made: any module with
    a DataLoader can stand where minidataloader stands."""

    __name__ = "countingloaders"

    def __init__(self):
        import torch.utils.data

        self.made = 0
        outer = self

        class DataLoader(torch.utils.data.DataLoader):
            def __init__(self, *args, **kwargs):
                outer.made += 1
                super().__init__(*args, **kwargs)

        self.DataLoader = DataLoader


def test_another_library_stands_where_minidataloader_stands(monkeypatch):
    """``library=``: the learner's own loader (chapter 11) measured against torch, runs
    alternating as for minidataloader; the report and the table say which library it was."""
    monkeypatch.setattr(runner, "WORKLOADS", WORKLOADS[:1])  # tiny-w0
    library = CountingLoaders()
    report = runner.run_benchmark(quick=True, pairs=2, progress_file=io.StringIO(),
                                  library=library)
    assert library.made == 1 + 2  # its warm-up run and one run per pair
    assert report["library"] == "countingloaders"
    assert report["benchmark"] == "countingloaders vs torch.utils.data"
    row = report["workloads"][0]
    assert len(row["mini_runs_s"]) == len(row["torch_runs_s"]) == 2
    table = runner.format_table(report)
    assert "countingloaders: median [IQR]" in table and "torch / countingloaders" in table
    assert runner.run_benchmark(quick=True, pairs=1, progress_file=io.StringIO())[
        "library"] == "minidataloader"


@pytest.mark.timeout(200)
def test_the_command_measures_a_library_named_on_it(tmp_path):
    (tmp_path / "mylibrary.py").write_text(
        "from torch.utils.data import *  # torch's names: a library of one's own\n"
        "from torch.utils.data import DataLoader\n")
    run = subprocess.run([sys.executable, "-m", "minidataloader.bench", "--quick", "--pairs",
                          "1", "--workload", "tiny-w0", "--library", "mylibrary"],
                         capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "mylibrary: median [IQR]" in run.stdout.splitlines()[0]
