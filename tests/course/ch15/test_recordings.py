"""Chapter 15's recordings and the trace of any loader (NOTE [ A trace of any loader ] in
chapters/ch15/recordings.py): the files are the same for the same seed; a loader's epoch,
traced from the dataset's side, holds every batch, read in the lane of the process that
read it, for torch's loader, the package's and the book's reference pieces alike."""

from __future__ import annotations

import hashlib

import pytest
import torch
import torch.utils.data as tud

import minidataloader
from minidataloader_course.chapters.ch15 import solution
from minidataloader_course.chapters.ch15.recordings import (
    Recordings,
    make_recordings,
    samples_per_second,
    trace_epoch,
)
from minidataloader_course.viz import queue_flow_html

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.usefixtures("no_process_left")]  # tests/course/conftest.py


def digest(folder) -> str:
    files = sorted(folder.iterdir())
    return hashlib.sha256(b"".join(f.name.encode() + f.read_bytes() for f in files)).hexdigest()


def test_the_recordings_are_the_same_for_the_same_seed(tmp_path):
    first = make_recordings(tmp_path / "a")
    second = make_recordings(tmp_path / "b")
    assert digest(first) == digest(second)
    assert digest(make_recordings(tmp_path / "c", seed=16)) != digest(first)
    stamp = (first / "00000.f32").stat().st_mtime_ns
    make_recordings(tmp_path / "a")  # already there: nothing is written again
    assert (first / "00000.f32").stat().st_mtime_ns == stamp
    recordings = Recordings(first, read_ms=0)
    lengths = [len(recordings[i]["signal"]) for i in range(len(recordings))]
    assert len(recordings) == 128 and min(lengths) >= 16 and max(lengths) <= 128
    assert len(set(lengths)) > 20  # of varying length
    assert recordings[5]["index"] == 5 and recordings[5]["signal"].dtype == torch.float32
    with pytest.raises(IndexError):
        recordings[128]


def loader(library, folder, num_workers, generator_class=None):
    dataset = Recordings(folder, read_ms=2)
    generator = torch.Generator().manual_seed(0)
    more = {"prefetch_factor": 2, "multiprocessing_context": "fork"} if num_workers else {}
    return library(dataset, batch_size=16, shuffle=True, num_workers=num_workers,
                   collate_fn=solution.collate_recordings, generator=generator, **more)


LIBRARIES = {"torch": tud.DataLoader, "minidataloader": minidataloader.DataLoader,
             "the book's pieces": solution.StatefulDataLoader}


@pytest.mark.parametrize("num_workers", [0, 3])
@pytest.mark.parametrize("name", LIBRARIES)
def test_an_epoch_of_any_loader_is_traced_batch_by_batch(tmp_path, name, num_workers):
    folder = make_recordings(tmp_path)
    trace = trace_epoch(loader(LIBRARIES[name], folder, num_workers), step_ms=1)
    spans = trace.spans()
    fetches = sorted((s.batch, s.place) for s in spans if s.place.startswith("fetch"))
    assert [batch for batch, _ in fetches] == list(range(8))  # every batch, read once
    lanes = {place for _, place in fetches}
    if num_workers:
        assert lanes == {"fetch:0", "fetch:1", "fetch:2"}
        # round robin: batch b was read by the worker numbered b % 3
        assert all(place == f"fetch:{batch % 3}" for batch, place in fetches)
        assert sum(s.place == "result" for s in spans) == 8
    else:
        assert lanes == {"fetch:main"}
    assert trace.summary()["batches"] == 8
    assert sum(s.place == "step" for s in spans) == 8
    assert "mdl-queueflow" in str(queue_flow_html(trace))
    assert loader(LIBRARIES[name], folder, 0).dataset.log is None  # the log is switched off


def test_the_trace_refuses_another_dataset():
    with pytest.raises(TypeError, match="over Recordings"):
        trace_epoch(tud.DataLoader(range(4)))


def test_samples_per_second_counts_every_sample(tmp_path):
    folder = make_recordings(tmp_path)
    assert samples_per_second(loader(tud.DataLoader, folder, 0)) > 0
