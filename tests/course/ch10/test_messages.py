"""Chapter 10's message wordings (course/minidataloader_course/chapters/ch10/messages.py) against real messages,
and the helpers its tables and its classification exercise rely on.

The chapter checks every wording on every book build; these tests check the quick ones
without a build, so that a change of wording in the package (or in torch) fails here first.
"""

from __future__ import annotations

import pytest
import torch.utils.data as tud

import minidataloader as mdl
from minidataloader_course.chapters.ch10 import messages as ch10_messages
from minidataloader_course.chapters.ch10.failing import SlowSample
from minidataloader_course.chapters.ch10.solution import classify_failure
from minidataloader_course.shared.compare import error_text
from minidataloader_course.shared.synthetic import FaultyDataset

LIBRARIES = {"torch": tud, "minidataloader": mdl}


def first_error_text(library, dataset, **options) -> str:
    batches = iter(library.DataLoader(dataset, batch_size=1, num_workers=1, **options))
    try:
        for _ in batches:
            pass
    except Exception as error:  # noqa: BLE001 - the error is the result
        batches._shutdown_workers()
        return error_text(error)
    raise AssertionError("the epoch ended without an error")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", LIBRARIES)
@pytest.mark.parametrize(("key", "dataset", "options"), [
    ("exception", FaultyDataset(4, at=1, fault="ValueError"), {}),
    ("rebuilt as RuntimeError", FaultyDataset(4, at=1, fault="TwoArgumentError"), {}),
    # A worker that dies dies at its first sample: one that had sent a batch can die while
    # the main process still fetches that batch's shared memory from it, and the first error
    # is then ConnectionResetError, not the death (a race of torch's as much as ours).
    ("SIGKILL", FaultyDataset(4, at=0, fault="kill"), {}),
    ("exit", FaultyDataset(4, at=0, fault="exit"), {}),
    ("timeout", SlowSample(4, at=1, seconds=1.0), {"timeout": 0.2}),
], ids=["exception", "rebuilt", "SIGKILL", "exit", "timeout"])
def test_a_real_message_matches_its_wording_and_its_category(name, key, dataset, options):
    message = ch10_messages.BY_KEY[key]
    text = first_error_text(LIBRARIES[name], dataset, **options)
    wording = message.torch if name == "torch" or message.ours is None else message.ours
    assert ch10_messages.matches(wording, text), text
    assert classify_failure(text) == message.category, text


def test_every_message_has_a_known_category_and_section():
    for message in ch10_messages.MESSAGES:
        assert message.category in ch10_messages.CATEGORIES, message.key
        assert message.section.startswith("ch10-"), message.key
    assert len(ch10_messages.BY_KEY) == len(ch10_messages.MESSAGES)  # keys are unique


def test_a_field_that_appears_twice_must_be_the_same_both_times():
    template = ch10_messages.BY_KEY["SIGKILL"].torch
    died = ("RuntimeError: DataLoader worker (pid 41) is killed by signal: Killed. "
            "\n\nThe above exception was the direct cause of the following exception:\n\n"
            "RuntimeError: DataLoader worker (pid(s) {}) exited unexpectedly")
    assert ch10_messages.matches(template, died.format(41))
    assert not ch10_messages.matches(template, died.format(42))


def test_an_excerpt_keeps_the_ends_of_a_traceback_and_shows_a_chain_with_arrows():
    chained = ("RuntimeError: DataLoader worker (pid 7) is killed by signal: Killed. "
               "\n\nThe above exception was the direct cause of the following exception:\n\n"
               "RuntimeError: DataLoader worker (pid(s) 7) exited unexpectedly")
    assert ch10_messages.excerpt(chained) == (
        "RuntimeError: DataLoader worker (pid 7) is killed by signal: Killed. \n"
        "→ RuntimeError: DataLoader worker (pid(s) 7) exited unexpectedly")
    traceback = "\n".join(["ValueError: Caught ValueError in DataLoader worker process 0.",
                           "Original Traceback (most recent call last):",
                           '  File "a.py", line 1, in f', "    g()",
                           '  File "b.py", line 2, in g', "ValueError: sample 3 is corrupt"])
    assert ch10_messages.excerpt(traceback).splitlines() == [
        "ValueError: Caught ValueError in DataLoader worker process 0.",
        "Original Traceback (most recent call last):", "  …",
        "ValueError: sample 3 is corrupt"]
    assert ch10_messages.excerpt("RuntimeError: short") == "RuntimeError: short"
