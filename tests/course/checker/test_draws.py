"""``draws()``, the log of the random numbers a piece of code draws, and ``compare_draws``,
which names the first draw two logs disagree on. The expected rows are torch's own
behaviour, read from torch's source (``RandomSampler.__iter__``, the iterator's base seed)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, RandomSampler, random_split

from minidataloader_course import compare_draws, compare_with_draws, draws
from minidataloader_course.checker.draws import NUMPY, PYTHON, TORCH, Draw


def calls(log) -> list[tuple[str, str, int]]:
    return [(row.source, row.call, row.count) for row in log.draws()]


def test_a_shuffled_loader_with_a_generator_draws_the_base_seed_then_the_permutations():
    generator = torch.Generator().manual_seed(0)
    loader = DataLoader(range(10), batch_size=4, shuffle=True, generator=generator)
    with draws(g=generator) as log:
        iterator = iter(loader)
        log.mark("iter(loader)")
        next(iterator)
        log.mark("first batch")
        list(iterator)
    assert [(r.kind, r.source, r.call, r.count, r.dtype) for r in log] == [
        ("draw", "g", "random_", 1, "int64"), ("mark", "", "iter(loader)", 0, ""),
        ("draw", "g", "randperm", 10, "int64"), ("mark", "", "first batch", 0, ""),
        ("draw", "g", "randperm", 10, "int64")]
    assert log.numbers("g") == 21 and log.calls("g") == 3 and log.calls(TORCH) == 0
    assert log.sources() == ["g"]


def test_without_a_generator_the_sampler_seeds_a_new_generator_from_the_global_one():
    torch.manual_seed(0)
    sampler = RandomSampler(range(5))
    with draws() as log:
        list(sampler)
        list(sampler)
    rows = log.draws()
    assert calls(log) == [(TORCH, "random_", 1), ("torch.Generator #1", "randperm", 5),
                          ("torch.Generator #1", "randperm", 5), (TORCH, "random_", 1),
                          ("torch.Generator #2", "randperm", 5),
                          ("torch.Generator #2", "randperm", 5)]
    # the seed shown on a new generator's first row is the number drawn just before
    assert rows[1].seed == rows[0].values[0] and rows[4].seed == rows[3].values[0]
    assert rows[2].seed is None
    text = str(log)
    assert f"torch.Generator #1 (seed {rows[0].values[0]})" in text


def test_a_function_imported_by_name_is_seen_too():
    """random_split calls the randperm it imported from torch: the log still sees it."""
    with draws() as log:
        random_split(range(6), [2, 4])
    assert calls(log) == [(TORCH, "randperm", 6)]


def test_python_random_numpy_and_reseeds_are_rows():
    with draws() as log:
        random.random()
        random.shuffle([1, 2, 3, 4])
        np.random.rand(3)
        torch.manual_seed(7)
        torch.rand(2)
    assert calls(log) == [(PYTHON, "random", 1), (PYTHON, "shuffle", 4), (NUMPY, "rand", 3),
                          (TORCH, "rand", 2)]
    seeds = [r for r in log if r.kind == "seed"]
    assert [(r.source, r.call, r.values) for r in seeds] == [(TORCH, "manual_seed", (7,))]
    assert not hasattr(random.random, "__wrapped__")  # restored


def test_a_named_generator_reseeded_gets_a_row_and_no_unseen_change():
    generator = torch.Generator().manual_seed(1)
    with draws(g=generator) as log:
        torch.randperm(3, generator=generator)
        generator.manual_seed(5)
        torch.randperm(3, generator=generator)
    assert [(r.kind, r.call) for r in log] == [("draw", "randperm"), ("seed", "manual_seed"),
                                               ("draw", "randperm")]
    assert log.rows[1].values == (5,)


def test_a_change_the_log_cannot_see_is_a_row():
    from random import random as imported_before  # not the module attribute the log watches

    with draws() as log:
        random.random()
        imported_before()
        random.random()
    assert [(r.kind, r.source) for r in log] == [("draw", PYTHON), ("unseen", PYTHON),
                                                 ("draw", PYTHON)]


def test_the_patches_are_undone_even_when_the_code_raises():
    original = random.random, np.random.rand, torch.manual_seed
    with pytest.raises(ZeroDivisionError), draws():
        random.random()
        raise ZeroDivisionError
    assert (random.random, np.random.rand, torch.manual_seed) == original


def test_nested_logs_both_record():
    with draws() as outer:
        torch.rand(1)
        with draws() as inner:
            torch.rand(2)
            random.random()
    assert calls(outer) == [(TORCH, "rand", 1), (TORCH, "rand", 2), (PYTHON, "random", 1)]
    assert calls(inner) == [(TORCH, "rand", 2), (PYTHON, "random", 1)]


def test_only_generators_can_be_named():
    with pytest.raises(TypeError, match="names a torch.Generator"), draws(g=3):
        pass


def test_the_log_shows_as_a_table():
    with draws() as log:
        torch.randperm(8)
        log.mark("here")
    assert "randperm" in str(log) and "── here ──" in str(log)
    assert "<table" in log._repr_html_() and "here" in log._repr_html_()
    with draws() as empty:
        pass
    assert str(empty) == "no random numbers were drawn"


# ---------------------------------------------------------------------------------------
# compare_draws: each kind of difference named


def sampler_log(make, seed=0, epochs=2):
    """The draws of ``epochs`` epochs of a sampler, with torch's moments marked."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    sampler = make(generator)
    with draws(g=generator) as log:
        for epoch in range(1, epochs + 1):
            iterator = iter(sampler)
            log.mark(f"epoch {epoch}: iter")
            next(iterator)
            log.mark(f"epoch {epoch}: first index")
            list(iterator)
            log.mark(f"epoch {epoch}: end")
    return log.rows


class Sampler:
    def __init__(self, epoch, generator):
        self.epoch, self.generator = epoch, generator

    def __iter__(self):
        return self.epoch(self.generator)


def torchs(generator):
    return RandomSampler(range(10), generator=generator)


def one_permutation(generator):
    yield from torch.randperm(10, generator=generator).tolist()


def both_at_once(generator):
    order = torch.randperm(10, generator=generator).tolist()
    torch.randperm(10, generator=generator)
    yield from order


def an_extra_draw(generator):
    torch.rand(1, generator=generator)
    yield from torch.randperm(10, generator=generator).tolist()
    torch.randperm(10, generator=generator)


def swapped(generator):
    # the same two draws per epoch as an_extra_draw's first two, in the other order
    yield from torch.randperm(10, generator=generator).tolist()
    torch.rand(1, generator=generator)


@pytest.mark.parametrize(("epoch", "says"), [
    (one_permutation, "your code does not draw randperm (10 int64 numbers) from g, which torch "
                      "does between the marks «epoch 1: first index» and «epoch 1: end»"),
    (both_at_once, "your code draws randperm (10 int64 numbers) from g between the marks «epoch 1: "
                   "iter» and «epoch 1: first index»; torch does it between the marks «epoch 1: "
                   "first index» and «epoch 1: end»"),
    (an_extra_draw, "your code draws rand (1 float32 number) from g between the marks «epoch 1: "
                    "iter» and «epoch 1: first index» (its row 1), which torch does not"),
])
def test_compare_draws_names_the_draw(epoch, says):
    problem = compare_draws(sampler_log(torchs), sampler_log(lambda g: Sampler(epoch, g)))
    assert problem.startswith(says), problem


def test_compare_draws_names_a_draw_made_in_another_order():
    first = Draw("draw", TORCH, "randperm", 3, "int64", (0, 1, 2))
    second = Draw("draw", TORCH, "rand", 1, "float32", (0.5,))
    assert compare_draws([first, second], [second, first]) == (
        "your code draws rand (1 float32 number) from torch (global) in another order: it is "
        "torch's row 2 and your code's row 1")


def test_compare_draws_names_other_numbers_from_the_same_calls():
    assert compare_draws(sampler_log(torchs, seed=0), sampler_log(torchs, seed=0)) is None
    problem = compare_draws(sampler_log(torchs, seed=0), sampler_log(torchs, seed=1))
    assert problem.startswith("row 1, randperm (10 int64 numbers) from g, gives other numbers")


def test_compare_draws_replacement_and_marks():
    row = Draw("draw", TORCH, "randperm", 3, "int64", (0, 1, 2))
    other = Draw("draw", TORCH, "randint", 3, "int64", (0, 1, 2))
    assert compare_draws([row], [other]) == (
        "row 1: where torch draws randperm (3 int64 numbers) from torch (global), your code "
        "draws randint (3 int64 numbers) from torch (global)")
    mark = Draw("mark", "", "here")
    assert "different marks" in compare_draws([mark], [])


def test_compare_with_draws_compares_the_logs_first():
    compare = compare_with_draws()
    row = Draw("draw", TORCH, "randperm", 3, "int64", (0, 1, 2))
    assert compare({"random draws": [row], "x": 1}, {"random draws": [row], "x": 1}) is None
    assert "does not draw" in compare({"random draws": [row], "x": 1}, {"random draws": [], "x": 2})
    assert compare({"random draws": [row], "x": 1}, {"random draws": [row], "x": 2}) == \
        "x: expected 1, got 2"
