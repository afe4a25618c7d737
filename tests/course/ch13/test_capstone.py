"""Chapter 13's claim, held by a test: the capstone's two training scripts give the same loss
at every step, the same accuracies and the same random numbers afterwards, whether they use
torch's data loading or minidataloader's, with worker processes."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.utils.data as tud

import minidataloader as mdl
from minidataloader_course.chapters.ch13 import capstone
from minidataloader_course.chapters.ch13.milestone import StandInPin, library

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(autouse=True)
def one_thread():
    # one thread keeps every floating-point sum in the same order from run to run
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def both(train, **kwargs):
    with warnings.catch_warnings():
        # up to 3 workers on any machine: the warning about CPUs is not what is tested
        warnings.filterwarnings("ignore", message=".*worker processes", category=UserWarning)
        return train(tud, **kwargs), train(mdl, **kwargs)


def assert_same_run(theirs, ours):
    assert ours.losses == theirs.losses  # bit for bit
    assert ours.accuracy == theirs.accuracy
    assert ours.drawn_after == theirs.drawn_after


def test_diabetes_with_persistent_workers_gives_torchs_losses():
    theirs, ours = both(capstone.train_diabetes, epochs=4, multiprocessing_context="fork")
    assert len(ours.losses) == 4 * 20  # 615 training rows: 20 batches of 32 (one short)
    assert_same_run(theirs, ours)


def test_digits_augmented_in_workers_gives_torchs_losses():
    theirs, ours = both(capstone.train_digits, epochs=2, multiprocessing_context="fork")
    assert len(ours.accuracy) == 2
    assert_same_run(theirs, ours)


def test_digits_with_spawned_workers_gives_torchs_losses():
    # spawn pickles the transform and imports it: why the demo lives in a module
    # (one worker: each spawned worker imports torch, seconds on a busy machine)
    theirs, ours = both(capstone.train_digits, epochs=1, num_workers=1,
                        multiprocessing_context="spawn")
    assert_same_run(theirs, ours)


def test_the_comparison_can_fail_another_num_workers_changes_the_shifts():
    _, two = both(capstone.train_digits, epochs=1, multiprocessing_context="fork")
    _, three = both(capstone.train_digits, epochs=1, num_workers=3,
                    multiprocessing_context="fork")
    same = [a == b for a, b in zip(two.losses, three.losses)]
    # batches 0 and 1 go to workers 0 and 1 either way; batch 2 to another worker
    assert same[:2] == [True, True] and not same[2]


def test_without_workers_the_shifts_come_from_the_main_process():
    theirs, ours = both(capstone.train_digits, epochs=1, num_workers=0)
    assert_same_run(theirs, ours)
    _, with_workers = both(capstone.train_digits, epochs=1, multiprocessing_context="fork")
    assert ours.losses[0] != with_workers.losses[0]


def test_random_shift_moves_the_digit_and_fills_with_black():
    image = torch.arange(1, 17, dtype=torch.uint8).reshape(1, 4, 4)
    torch.manual_seed(3)
    dy, dx = torch.randint(-1, 2, (2,)).tolist()
    torch.manual_seed(3)
    shifted = capstone.RandomShift()(image)
    expected = torch.zeros(1, 4, 4)
    for y in range(4):
        for x in range(4):
            if 0 <= y - dy < 4 and 0 <= x - dx < 4:
                expected[0, y, x] = image[0, y - dy, x - dx] / 255
    assert shifted.dtype == torch.float32 and torch.equal(shifted, expected)


def test_the_pinning_path_with_persistent_workers_gives_torchs_losses():
    """The runs as milestone 13 runs them: persistent workers, and each batch through a
    stand-in pin function (the package's pin thread; torch's batches as torch yields them)."""
    pins = {"torch": StandInPin(), "ours": StandInPin()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pin_memory without an accelerator
        theirs = capstone.train_digits(library(tud), epochs=2, persistent_workers=True,
                                       pin_fn=pins["torch"], multiprocessing_context="fork")
        ours = capstone.train_digits(mdl, epochs=2, persistent_workers=True,
                                     pin_fn=pins["ours"], multiprocessing_context="fork")
    assert_same_run(theirs, ours)
    assert pins["ours"].batches == pins["torch"].batches == len(ours.losses)
