"""The stateful workloads run (ours here, torchdata in a child process) and report in the
benchmark's shape; timings are never checked: speed is the benchmark's business."""

import importlib.util
import json
import math
import subprocess
import sys

import pytest

# Never imported here (it runs in a child process): only looked for.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("torchdata") is None,
                                reason="torchdata is pinned in requirements.txt")


@pytest.mark.timeout(300)
def test_a_workload_runs_against_torchdata(tmp_path):
    out = tmp_path / "stateful.json"
    run = subprocess.run([sys.executable, "-m", "minidataloader.bench.stateful_workloads",
                          "--quick", "--pairs", "1", "--workload", "state-dict-w2",
                          "--json", str(out)],
                         capture_output=True, text=True, timeout=280)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "torchdata" in run.stdout and "state-dict-w2" in run.stdout
    report = json.loads(out.read_text())
    assert [row["workload"] for row in report["workloads"]] == ["state-dict-w2"]
    for row in report["workloads"]:
        for key in ("torch_s", "mini_s", "speed_ratio"):
            assert math.isfinite(row[key]) and row[key] > 0
    assert report["workloads"][0]["mini_state_bytes"] > 0
    assert report["workloads"][0]["torch_state_bytes"] > 0


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_benchmark_runs_a_stateful_workload_named_in_its_own_section(tmp_path):
    out = tmp_path / "both.json"
    run = subprocess.run([sys.executable, "-m", "minidataloader.bench", "--quick", "--pairs", "1",
                          "--workload", "tiny-w0", "--workload", "resume-first-batch-w0",
                          "--json", str(out)],
                         capture_output=True, text=True, timeout=280)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(out.read_text())
    assert [row["workload"] for row in report["workloads"]] == ["tiny-w0"]
    assert report["stateful"]["benchmark"].endswith("torchdata.stateful_dataloader")
    assert [row["workload"] for row in report["stateful"]["workloads"]] == [
        "resume-first-batch-w0"]
    assert "torchdata" in run.stdout
