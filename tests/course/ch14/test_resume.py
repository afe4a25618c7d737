"""Chapter 14's demo module: ``play`` takes checkpoints where asked (right after ``iter()``,
after any batch, after the last one) and resumes from each into the uninterrupted run's
batches and random numbers; the queue-flow recording refuses settings that contradict each
other. (``kill_and_resume``: tests/course/ch14/test_demo_kill.py.)"""

import pytest
import torch

from minidataloader.stateful import StatefulDataLoader
from minidataloader_course.chapters.ch14.resume import NoisyIndices, play, record_checkpoint_resume

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_play_checkpoints_anywhere_and_resumes_into_the_uninterrupted_run(num_workers):
    def make():
        return StatefulDataLoader(NoisyIndices(10), batch_size=3, shuffle=True,
                                  num_workers=num_workers,
                                  generator=torch.Generator().manual_seed(4))

    whole = play(make, epochs=2, checkpoints={(0, k) for k in range(5)} | {(1, 2)})
    assert sorted(whole["checkpoints"]) == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (1, 2)]
    assert [len(whole["epochs"][e]) for e in (0, 1)] == [4, 4]
    for (epoch, k), checkpoint in whole["checkpoints"].items():
        resumed = play(make, epochs=2, resume_from=checkpoint)
        assert resumed["epochs"][epoch] == whole["epochs"][epoch][k:], (epoch, k)
        assert all(resumed["epochs"][e] == whole["epochs"][e] for e in range(epoch + 1, 2))
        assert resumed["after"] == whole["after"]
    noise = [value for batch in whole["epochs"][0] for value in batch[2]]
    assert len(set(noise)) == 10  # an augmentation: every sample drew its own


def test_the_recording_refuses_a_checkpoint_after_the_stop():
    with pytest.raises(ValueError, match="must come before the stop"):
        record_checkpoint_resume(checkpoint_after=6, stopped_after=4)
    with pytest.raises(ValueError, match="within the epoch's 16 batches"):
        record_checkpoint_resume(checkpoint_after=2, stopped_after=20)
