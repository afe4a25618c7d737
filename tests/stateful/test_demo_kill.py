"""The chapter's demo: a training script killed with SIGKILL in the middle of an epoch
(workers and all) and started again ends with the weights of a run never interrupted."""

import os
import signal
import subprocess
import sys

import pytest
import torch

SCRIPT = [sys.executable, "-m", "minidataloader.demo.resumable_training"]


def weights(path) -> dict:
    return torch.load(path)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("num_workers", [2])
def test_killed_and_resumed_ends_with_the_uninterrupted_weights(tmp_path, num_workers):
    common = ["--epochs", "3", "--every", "3", "--num-workers", str(num_workers)]
    whole = subprocess.run([*SCRIPT, "--checkpoint", str(tmp_path / "a.pt"),
                            "--out", str(tmp_path / "a_weights.pt"), *common],
                           capture_output=True, text=True, timeout=120)
    assert whole.returncode == 0, whole.stderr

    checkpoint, out = str(tmp_path / "b.pt"), str(tmp_path / "b_weights.pt")
    victim = subprocess.Popen([*SCRIPT, "--checkpoint", checkpoint, "--out", out,
                               "--step-seconds", "0.1", *common], stdout=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        for line in victim.stdout:  # 8 steps an epoch: step 9 is epoch 1's first
            if line.split()[:3] == ["checkpoint", "1", "9"]:
                os.killpg(victim.pid, signal.SIGKILL)  # the script and its workers
                break
        else:
            pytest.fail("the script ended without reaching the checkpoint at step 9")
        assert victim.wait(timeout=30) == -signal.SIGKILL
    finally:
        if victim.poll() is None:
            os.killpg(victim.pid, signal.SIGKILL)
    assert not os.path.exists(out)  # killed before the end

    resumed = subprocess.run([*SCRIPT, "--checkpoint", checkpoint, "--out", out, *common],
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines()[0].split()[0] == "resumed"
    epoch, step = map(int, resumed.stdout.splitlines()[0].split()[1:])
    assert epoch == 1 and 9 <= step < 16  # in the middle of the second epoch

    expected, got = weights(tmp_path / "a_weights.pt"), weights(out)
    assert list(expected) == list(got)
    for name in expected:
        assert torch.equal(expected[name], got[name]), name
