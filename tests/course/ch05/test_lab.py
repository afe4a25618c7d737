"""Chapter 5's debugging lab: the loader it hands out is the mended LabLoader with the four
bugs of mutants.FOUR_BUGS made (so every bug is a mutant the check must refuse), the
workbook's stub cell holds that same code, and each bug shows against torch, the oracle,
the way the lab's hints say it does."""

from __future__ import annotations

import pathlib

import jupytext
import pytest
import torch
import torch.utils.data as tud

from minidataloader_course import check
from minidataloader_course.chapters.ch05 import lab, mutants, solution
from minidataloader_course.chapters.ch05.checks import records
from minidataloader_course.checker.draws import draws

ROOT = pathlib.Path(__file__).resolve().parents[3]
CHAPTER = ROOT / "book" / "05_single_process_loader.md"
GUARD = "        raise NotImplementedError  # delete this line to start: the code below has four bugs\n"


def stub_cell() -> str:
    notebook = jupytext.read(CHAPTER)
    stubs = [cell.source for cell in notebook.cells if cell.cell_type == "code"
             and "exercise" in cell.metadata.get("tags", []) and "class LabLoader" in cell.source]
    assert len(stubs) == 1, "the chapter has one stub cell for the lab"
    return stubs[0]


def test_the_stub_is_the_broken_loader_with_a_line_to_delete():
    stub = stub_cell()
    assert stub.count(GUARD) == 1, "the stub stops at once: as shipped it is 'not attempted yet'"
    code = stub.replace(GUARD, "")
    assert code.endswith(lab.broken_source().rstrip("\n"))
    assert code.startswith("from minidataloader_course.chapters.ch03.solution import "
                           "RandomSampler, SequentialSampler\n")


def test_each_bug_is_a_mutant_and_all_four_make_the_broken_loader():
    by_changes = {tuple(m.changes): m for m in mutants.MUTANTS if m.exercise == "LabLoader"}
    for bug in (mutants.BASE_SEED_LAST, mutants.LAST_BATCH_LOST, mutants.FIELDS_MIXED,
                mutants.RESEEDED, mutants.FOUR_BUGS):
        assert tuple(bug) in by_changes
    assert mutants.FOUR_BUGS == (mutants.RESEEDED + mutants.BASE_SEED_LAST
                                 + mutants.LAST_BATCH_LOST + mutants.FIELDS_MIXED)


def epochs(make, size=10, batch_size=4, seed=None, count=2):
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    torch.manual_seed(0)
    loader = make(records(size), batch_size=batch_size, shuffle=seed is not None,
                  generator=generator)
    return len(loader), [list(loader) for _ in range(count)]


def by_x(epoch) -> list[list[int]]:
    """Each batch's samples by x[0], wherever the batch put the x's."""
    return [[int(row[0]) for value in batch.values() if value.dim() == 2 for row in value]
            for batch in epoch]


BROKEN = lab.broken_loader()


def test_the_broken_loader_loses_the_short_last_batch_and_counts_without_it():
    (their_len, theirs), (our_len, ours) = epochs(tud.DataLoader), epochs(BROKEN)
    assert (their_len, len(theirs[0])) == (3, 3)
    assert (our_len, len(ours[0])) == (2, 2)
    assert sorted(x for batch in by_x(ours[0]) for x in batch) == list(range(8))


def test_the_broken_loader_mixes_the_fields():
    _, (theirs, _) = epochs(tud.DataLoader)
    _, (ours, _) = epochs(BROKEN)
    assert theirs[0]["x"].shape == (4, 2) and theirs[0]["label"].shape == (4,)
    assert ours[0]["label"].shape == (4, 2) and ours[0]["x"].shape == (4,)


def test_the_broken_loader_repeats_its_order_where_torch_shuffles_anew():
    _, theirs = epochs(tud.DataLoader, seed=0)
    _, ours = epochs(BROKEN, seed=0)
    assert by_x(theirs[0]) != by_x(theirs[1])
    assert by_x(ours[0]) == by_x(ours[1])


def test_the_broken_loader_draws_the_base_seed_after_the_sampler():
    def calls(make):
        generator = torch.Generator().manual_seed(0)
        loader = make(records(10), batch_size=5, shuffle=True, generator=generator)
        with draws(g=generator) as log:
            list(loader)
        return [row.call for row in log.draws()]

    assert calls(tud.DataLoader) == ["random_", "randperm", "randperm"]
    assert calls(BROKEN) == ["randperm", "randperm", "random_"]
    assert calls(solution.LabLoader) == calls(tud.DataLoader)


def test_the_check_refuses_the_broken_loader_and_passes_the_mended_one():
    assert check(BROKEN, name="LabLoader").status == "failed"
    assert check(solution.LabLoader).status == "passed"


@pytest.mark.parametrize("seed", [None, 0, 3])
def test_the_mended_loader_is_torchs(seed):
    (their_len, theirs), (our_len, ours) = epochs(tud.DataLoader, seed=seed), \
        epochs(solution.LabLoader, seed=seed)
    assert their_len == our_len
    assert [by_x(e) for e in theirs] == [by_x(e) for e in ours]
