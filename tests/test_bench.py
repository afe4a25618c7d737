"""The benchmark runs, every workload present, and its JSON has the documented shape.
Timings are never checked here: speed is the benchmark's business, not a test's."""

import json
import math
import subprocess
import sys

import pytest

from minidataloader.bench import load_results, verdict
from minidataloader.bench.workloads import WORKLOADS

NAMES = [workload.name for workload in WORKLOADS]


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
    assert "runs" in run.stderr  # the progress bar

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
    """Chapter 11 quotes results/full_run.json through load_results(): it must be a full
    run (not --quick) of every workload, with at least 7 interleaved pairs each."""
    report = load_results()
    assert report["quick"] is False
    assert report["machine"]["cpus_usable"] >= 1
    assert [row["workload"] for row in report["workloads"]] == NAMES
    for row in report["workloads"]:
        assert row["pairs"] >= 7
        assert len(row["torch_runs_s"]) == len(row["mini_runs_s"]) == row["pairs"]
        assert row["speed_ratio"] == pytest.approx(row["torch_s"] / row["mini_s"])
        for spread in ("torch_spread", "mini_spread", "pair_ratio_spread"):
            assert row[spread]["q1"] <= row[spread]["median"] <= row[spread]["q3"]
        assert row["verdict"] == verdict(row["pair_ratio_spread"])
