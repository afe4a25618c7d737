"""The chapter's demo: a training script killed with SIGKILL in the middle of an epoch
(workers and all) and started again ends with the weights of a run never interrupted.
``chapters.ch14.resume.kill_and_resume`` runs the three processes, as chapter 14 does."""

import signal

import pytest

from minidataloader_course.chapters.ch14.resume import kill_and_resume


@pytest.mark.timeout(240)
def test_killed_and_resumed_ends_with_the_uninterrupted_weights(tmp_path):
    demo = kill_and_resume(tmp_path, kill_at=(1, 9), num_workers=2, epochs=3, every=3,
                           timeout=120)
    assert demo["exit_code"] == -signal.SIGKILL
    assert demo["killed"][-1] == "checkpoint 1 9"
    assert not demo["finished_before_kill"]  # killed before the end
    assert demo["resumed"][0] == "resumed 1 9"  # in the middle of the second epoch (8 steps each)
    assert demo["resumed"][1:] == demo["uninterrupted"][3:]  # the same checkpoints from there
    assert demo["identical"]
    assert demo["weights"] == {"0.weight": (16, 1), "0.bias": (16,), "3.weight": (1, 16),
                               "3.bias": (1,)}
