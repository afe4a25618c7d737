"""Milestone 13's two ranks (``on_two_ranks``): a real gloo group of two forked ranks, the
learner's loader against torch's in each. The reference package gives torch's batches on
both ranks; a loader that ignores the sampler it is given differs; one that hands its epochs
to torch's iterator is refused (no tripwire watches the ranks)."""

from __future__ import annotations

import multiprocessing
import textwrap

import pytest
import torch.utils.data

from minidataloader_course.chapters.ch13.milestone import on_two_ranks
from minidataloader_course.learner import fill_with_solutions, import_package

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                reason="spawned ranks take a minute here: fork only")

SPEC = {"dataset_size": 11, "batch_size": 2, "num_workers": 2, "epochs": 2}


def package_with(tmp_path, name: str, source: str):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text(textwrap.dedent(source))
    return import_package(folder)


def test_the_reference_package_gives_torchs_batches_on_both_ranks(tmp_path):
    package = tmp_path / "notebooks" / "myloader"
    fill_with_solutions(package, 13)
    expected = on_two_ranks(torch.utils.data, SPEC)
    ranks = list(expected.values())
    assert ranks[0] != ranks[1]  # each rank has its own share
    assert {i for epoch in ranks for batch in epoch[0] for i, _ in batch} == set(range(11))
    assert on_two_ranks(import_package(package), SPEC) == expected


def test_a_loader_that_ignores_the_sampler_differs(tmp_path):
    every_sample = package_with(tmp_path, "readsall", """
        import torch


        class _Batches:  # every rank reads every sample, in order, in the main process
            def __init__(self, dataset, batch_size):
                self.dataset, self.batch_size, self.at = dataset, batch_size, 0

            def __iter__(self):
                return self

            def __next__(self):
                if self.at >= len(self.dataset):
                    raise StopIteration
                indices = range(self.at, min(self.at + self.batch_size, len(self.dataset)))
                self.at += self.batch_size
                return torch.stack([self.dataset[i] for i in indices])


        class DataLoader:
            def __init__(self, dataset, batch_size=1, sampler=None, **options):
                self.dataset, self.batch_size = dataset, batch_size

            def __iter__(self):
                return _Batches(self.dataset, self.batch_size)
        """)
    observed = on_two_ranks(every_sample, SPEC)
    assert observed != on_two_ranks(torch.utils.data, SPEC)
    first, second = ([[i for batch in epoch for i, _ in batch] for epoch in rank]
                     for rank in observed.values())
    assert first == second == [list(range(11))] * 2  # the mechanism: no rank has a share


def test_a_loader_that_hands_its_epochs_to_torch_is_refused(tmp_path):
    delegating = package_with(tmp_path, "delegates", """
        import torch.utils.data


        class DataLoader:
            def __init__(self, *args, **kwargs):
                self.torch_loader = torch.utils.data.DataLoader(*args, **kwargs)

            def __iter__(self):
                return iter(self.torch_loader)
        """)
    with pytest.raises(Exception, match="must run its epochs with its own iterator"):
        on_two_ranks(delegating, SPEC)
