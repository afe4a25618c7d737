"""Bad input: a state that cannot resume this loader is refused with a message saying what
differs -- never silently wrong batches. A part that cannot save its position is refused
when the state is taken (or the loader built), unless the user asked for a fast-forward."""

import copy

import pytest
import torch
import torch.utils.data as tud

import minidataloader as mdl
from minidataloader.stateful import StateDictError, StatefulDataLoader
from minidataloader.stateful.state import checksum
from tests.support.stateful_scenarios import PlainStream, ResumableSampler, through_a_file


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
    state = dict(good, version=2)
    assert "version 2" in refused(state) and "reads version 1" in refused(state)


def test_a_truncated_state_names_what_is_missing(good):
    state = {key: value for key, value in good.items() if key not in ("workers", "epoch")}
    message = refused(state)
    assert "lacks 'epoch', 'workers'" in message and "cut short" in message


@pytest.mark.parametrize("edit", ["value", "list", "worker", "bytes"])
def test_an_edited_state_is_refused(good, edit):
    state = copy.deepcopy(good)
    if edit == "value":
        state["epoch"]["yielded"] += 1
    elif edit == "list":
        state["epoch"]["in_flight"].pop()
    elif edit == "worker":
        state["workers"][1]["retired"] = True
    else:
        state["generators"][0] = bytes(reversed(state["generators"][0]))
    assert "do not match its checksum" in refused(state)


def test_an_edit_that_keeps_the_checksum_valid_still_cannot_fool_the_fingerprint(good):
    state = copy.deepcopy(good)
    state["loader"]["batch_size"] = 4
    state["checksum"] = checksum(state)  # deliberately re-signed
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


def test_an_unknown_sampler_is_refused_at_construction():
    with pytest.raises(TypeError, match="cannot save the position of UnknownSampler.*"
                                        "fast_forward=True"):
        StatefulDataLoader(list(range(8)), sampler=UnknownSampler(8), batch_size=2)


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
def test_an_iterable_dataset_without_the_protocol_is_refused_when_the_state_is_taken(num_workers):
    loader = StatefulDataLoader(PlainStream(12), batch_size=2, num_workers=num_workers)
    iterator = iter(loader)
    next(iterator)
    with pytest.raises(TypeError, match="PlainStream cannot save its position.*"
                                        "fast_forward=True"):
        loader.state_dict()


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
