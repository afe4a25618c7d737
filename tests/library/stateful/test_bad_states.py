"""Bad input: a state that cannot resume this loader is refused with a message saying what
differs -- never silently wrong batches. A part that cannot save its position is refused
when a state is taken in the middle of an epoch, where the position would be lost, unless
the user asked for a fast-forward; at an epoch's start or end nothing is lost."""

import copy

import pytest
import torch
import torch.utils.data as tud

import minidataloader as mdl
from minidataloader.stateful import StateDictError, StatefulDataLoader
from tests.library.stateful.scenarios import PlainStream, ResumableSampler, through_a_file


def state_after(loader, k: int) -> dict:
    iterator = iter(loader)
    for _ in range(k):
        next(iterator)
    state = loader.state_dict()
    del iterator
    return through_a_file(state)


def shuffled(n=20, batch_size=3, num_workers=2, **kwargs):
    return StatefulDataLoader(list(range(n)), batch_size=batch_size, shuffle=True,
                              num_workers=num_workers,
                              generator=torch.Generator().manual_seed(0), **kwargs)


@pytest.fixture(scope="module")
def good():
    return state_after(shuffled(), 2)


def refused(state, loader=None) -> str:
    loader = loader or shuffled()
    with pytest.raises(StateDictError) as caught:
        loader.load_state_dict(state)
    return str(caught.value)


@pytest.mark.parametrize(("change", "words"), [
    ({"n": 21}, ["len(dataset): 20 in the state, 21 here"]),
    ({"batch_size": 4}, ["batch_size: 3 in the state, 4 here"]),
    ({"num_workers": 3}, ["num_workers: 2 in the state, 3 here"]),
    ({"num_workers": 0}, ["num_workers: 2 in the state, 0 here"]),
    ({"drop_last": True}, ["drop_last: False in the state, True here"]),
    ({"persistent_workers": True}, ["persistent_workers"]),
    ({"prefetch_factor": 3}, ["prefetch_factor: 2 in the state, 3 here"]),
])
def test_a_state_from_a_loader_built_differently_says_what_differs(good, change, words):
    message = refused(good, shuffled(**change))
    assert "built differently" in message
    for word in words:
        assert word in message


def test_another_sampler_is_named(good):
    loader = StatefulDataLoader(list(range(20)), batch_size=3, num_workers=2,
                                generator=torch.Generator())
    message = refused(good, loader)
    assert "sampler: 'BatchSampler(batch_size=3, drop_last=False, len=7) > RandomSampler(" in message
    assert "SequentialSampler(len=20)' here" in message


def test_another_version_is_named(good):
    state = dict(good, version=1)
    assert "version 1" in refused(state) and "reads version 2" in refused(state)


def test_a_truncated_state_names_what_is_missing(good):
    state = {key: value for key, value in good.items() if key not in ("workers", "epoch")}
    message = refused(state)
    assert "lacks 'epoch', 'workers'" in message and "cut short" in message


def test_a_state_edited_to_fit_another_loader_is_refused(good):
    state = copy.deepcopy(good)
    state["workers"].pop()
    assert "holds 1 workers' states for a loader with num_workers=2" in refused(state)
    state = copy.deepcopy(good)
    state["loader"]["batch_size"] = 4
    assert "batch_size: 4 in the state, 3 here" in refused(state)


def test_not_a_state_at_all():
    assert "is a dict" in refused([1, 2])
    assert "is empty" in refused({})
    assert "not a state made by minidataloader" in refused({"epoch": 3})


def test_a_torchdata_state_is_recognised():
    torchdata_like = {"_snapshot": {}, "_steps_since_snapshot": 0, "_iterator_finished": False}
    assert "torchdata" in refused(torchdata_like)


def test_a_refused_state_leaves_the_loader_as_it_was(good):
    loader = shuffled(n=21)
    generator_state = loader.generator.get_state()
    refused(good, loader)
    assert torch.equal(loader.generator.get_state(), generator_state)
    assert len(list(loader)) == 7  # a whole epoch from the start


# --- parts that cannot save their position -------------------------------------------

class UnknownSampler(tud.Sampler):
    def __init__(self, n):
        self.n = self.limit = n

    def __iter__(self):
        return iter(range(self.n - 1, self.n - 1 - self.limit, -1))

    def __len__(self):
        return self.n


@pytest.mark.parametrize("num_workers", [0, 2])
def test_an_unknown_sampler_is_refused_only_in_the_middle_of_an_epoch(num_workers):
    def make():
        return StatefulDataLoader(list(range(8)), sampler=UnknownSampler(8), batch_size=2,
                                  num_workers=num_workers)

    whole = [b.tolist() for b in make()]
    loader = make()
    iterator = iter(loader)
    at_start = through_a_file(loader.state_dict())  # nothing consumed: nothing to lose
    next(iterator)
    with pytest.raises(TypeError, match="cannot save the position of UnknownSampler in the "
                                        "middle of an epoch.*fast_forward=True"):
        loader.state_dict()
    list(iterator)
    at_end = through_a_file(loader.state_dict())  # the epoch is over: nothing to lose
    for state, expected in ((at_start, whole), (at_end, whole)):
        resumed = make()
        resumed.load_state_dict(state)
        assert [b.tolist() for b in resumed] == expected


def test_an_unknown_sampler_replays_when_asked():
    def make():
        return StatefulDataLoader(list(range(8)), sampler=UnknownSampler(8), batch_size=2,
                                  fast_forward=True)
    whole = [b.tolist() for b in make()]
    state = state_after(make(), 1)
    resumed = make()
    resumed.load_state_dict(state)
    assert [b.tolist() for b in resumed] == whole[1:]


def test_a_stateful_sampler_needs_no_fast_forward():
    loader = StatefulDataLoader(list(range(8)), sampler=ResumableSampler(8), batch_size=2)
    assert loader.state_dict()["sampler"] == {"epoch": -1, "next": None}


@pytest.mark.parametrize("num_workers", [0, 2])
def test_an_iterable_dataset_without_the_protocol_is_refused_in_the_middle_of_an_epoch(
        num_workers):
    loader = StatefulDataLoader(PlainStream(12), batch_size=2, num_workers=num_workers)
    iterator = iter(loader)
    loader.state_dict()  # right after iter(): nothing read yet, nothing lost
    next(iterator)
    with pytest.raises(TypeError, match="PlainStream cannot save its position in the middle "
                                        "of an epoch.*fast_forward=True"):
        loader.state_dict()
    list(iterator)
    assert loader.state_dict()["epoch"] is None  # at the end: nothing lost


class Shrinking(tud.IterableDataset):
    """A stream that is shorter after the restart: a fast-forward must notice."""
    length = 12

    def __iter__(self):
        info = tud.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        return iter(range(worker, Shrinking.length, workers))


def test_a_fast_forward_that_runs_out_of_data_says_so():
    def make():
        return StatefulDataLoader(Shrinking(), batch_size=2, num_workers=2, fast_forward=True,
                                  multiprocessing_context="fork")
    state = state_after(make(), 4)
    Shrinking.length = 4
    try:
        loader = make()
        loader.load_state_dict(state)
        with pytest.raises(RuntimeError, match="stream ended after 1 batches, but it had "
                                               "produced 2"):
            list(loader)
    finally:
        Shrinking.length = 12


class Unsteady(tud.IterableDataset):
    """Draws one more random number after the restart: its stream is not reproducible."""
    extra = 0

    def __iter__(self):
        for i in range(10):
            torch.rand(1 + Unsteady.extra)
            yield i


def test_a_fast_forward_that_does_not_reproduce_the_random_states_says_so():
    def make():
        return StatefulDataLoader(Unsteady(), batch_size=2, num_workers=1, fast_forward=True,
                                  multiprocessing_context="fork")
    state = state_after(make(), 2)
    Unsteady.extra = 1
    try:
        loader = make()
        loader.load_state_dict(state)
        with pytest.raises(RuntimeError, match="random states differ from those saved"):
            list(loader)
    finally:
        Unsteady.extra = 0


def test_a_sampler_whose_order_changed_is_caught_on_resume():
    sampler = UnknownSampler(8)
    loader = StatefulDataLoader(list(range(8)), sampler=sampler, batch_size=2, num_workers=0,
                                fast_forward=True)
    state = state_after(loader, 3)
    sampler.limit = 4  # it now gives 2 batches (its len() unchanged): 3 had been taken
    resumed = StatefulDataLoader(list(range(8)), sampler=sampler, batch_size=2,
                                 fast_forward=True)
    resumed.load_state_dict(state)
    with pytest.raises(StateDictError, match="gave 2 batches of indices this epoch, but 3"):
        list(resumed)


def test_the_fast_forward_flag_is_checked():
    with pytest.raises(TypeError, match="fast_forward should be True or False"):
        StatefulDataLoader(list(range(3)), fast_forward="yes")


def test_plain_dataloader_is_untouched_by_the_extra():
    assert not hasattr(mdl.DataLoader, "state_dict")
