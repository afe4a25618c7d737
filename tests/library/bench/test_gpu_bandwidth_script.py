"""The reader's GPU measurement script, minidataloader/bench/gpu_bandwidth.py.

Without CUDA (this machine, CI) it must say so clearly and exit with status 1; with CUDA
it measures. Its arithmetic and its report are checked on made-up numbers.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from minidataloader.bench import gpu_bandwidth as script

COMMAND = [sys.executable, "-m", "minidataloader.bench.gpu_bandwidth"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: see the next test")
def test_without_cuda_it_says_so_and_exits_with_status_1():
    run = subprocess.run(COMMAND, capture_output=True, text=True, timeout=120)
    assert run.returncode == script.NO_CUDA_STATUS == 1, run
    assert run.stdout == ""
    assert "No CUDA GPU here" in run.stderr
    assert "python -m minidataloader.bench.gpu_bandwidth" in run.stderr  # what to run, where
    assert "Traceback" not in run.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_with_cuda_it_measures():
    run = subprocess.run([*COMMAND, "--mib", "16", "--repeats", "2"], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    for heading in ("1. Bandwidth", "2. How long", "3. Copy on a second stream", "4. Pinning"):
        assert heading in run.stdout


def test_the_reason_names_the_cause(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    assert "built without CUDA" in script.no_cuda_reason()
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    assert "built for CUDA 12.8) finds no CUDA device" in script.no_cuda_reason()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert script.no_cuda_reason() is None


def test_main_without_cuda_returns_1(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert script.main([]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "No CUDA GPU here" in captured.err


@pytest.mark.parametrize(("arguments", "message"), [
    (["--mib", "0"], "--mib should be at least 1"),
    (["--repeats", "0"], "--repeats should be at least 1"),
    (["--device", "cpu"], "--device should be a CUDA device"),
    (["--mib", "lots"], "invalid int value"),
])
def test_bad_arguments_are_refused_with_a_reason(arguments, message, capsys):
    with pytest.raises(SystemExit) as stop:
        script.main(arguments)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_bandwidth_and_overlap_arithmetic():
    assert script.gbps(10**9, 1000.0) == pytest.approx(1.0)
    assert script.gbps(256 * script.MIB, 10.0) == pytest.approx(26.8435456)
    assert script.overlap_fraction(4.0, 10.0, 10.0) == 1.0  # the copy fully hidden
    assert script.overlap_fraction(4.0, 10.0, 14.0) == 0.0  # one after the other
    assert script.overlap_fraction(4.0, 10.0, 12.0) == pytest.approx(0.5)
    assert script.overlap_fraction(4.0, 10.0, 15.0) == 0.0  # slower than serial: clipped
    assert script.overlap_fraction(0.0, 10.0, 10.0) == 0.0


def made_up_results() -> dict:
    return {
        "device": "Example GPU", "device_index": 0, "torch": "2.13.0", "cuda": "12.8",
        "mib": 256, "bytes": 256 * script.MIB, "repeats": 10,
        "copy_ms": {"pageable": 20.0, "pinned": 10.0, "pinned, non_blocking": 10.0},
        "gbps": {"pageable": 13.4, "pinned": 26.8, "pinned, non_blocking": 26.8},
        "call_ms": {"pageable": {"call": 19.5, "until_done": 20.0},
                    "pinned": {"call": 0.02, "until_done": 10.1}},
        "compute_ms": 12.0, "matmuls": 5,
        "overlap": {"pinned": {"copy": 10.1, "together": 12.4, "fraction": 0.97},
                    "pageable": {"copy": 20.0, "together": 31.0, "fraction": 0.08}},
        "once": {"to": 20.0, "pin_then_to": 35.0},
    }


def test_the_report_shows_every_figure_with_its_meaning():
    report = script.format_report(made_up_results())
    assert "Example GPU (cuda:0), torch 2.13.0, CUDA 12.8" in report
    assert "26.8 GB/s   (2.0x pageable)" in report
    assert "0.02 ms of 10.10 ms until the copy is done" in report
    assert "97% of the shorter one hidden" in report and "8% of the shorter one hidden" in report
    assert "(1.8x)" in report
    assert "How to read it" in report
    assert max(len(line) for line in report.splitlines()) <= 100
