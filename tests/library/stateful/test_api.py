"""The stateful loader's API and its promises besides the guarantee: the state is plain data
(torch.load with weights_only reads it, and so does JSON), taking it starts nothing and
changes nothing, loading then saving gives it back, resumes chain, the pin-memory thread
carries the workers' reports, tracing shows checkpoints and restores, and the extra stays an
extra."""

import contextlib
import copy
import functools
import json
import random
import subprocess
import sys

import numpy as np
import psutil
import pytest
import torch
import torch.utils.data as tud

import minidataloader as mdl
from minidataloader import _tracing
from minidataloader.pin_memory import pin_memory
from minidataloader.stateful import (
    Stateful,
    StatefulDataLoader,
    rng_states,
    set_rng_states,
)
from minidataloader.stateful import worker as stateful_worker
from minidataloader.stateful.state import from_json, to_json
from tests.library.stateful.compare import check_resumed
from tests.library.stateful.scenarios import (
    StatefulStream,
    make_loader,
    plain,
    run,
    seed_everything,
    through_a_file,
)


def test_import_minidataloader_does_not_import_the_extra():
    code = "import sys, minidataloader; print('minidataloader.stateful' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_state_is_plain_data_that_torch_load_and_json_read_back(num_workers):
    loader = StatefulDataLoader(StatefulStream(12), batch_size=2, num_workers=num_workers,
                                persistent_workers=num_workers > 0)
    iterator = iter(loader)
    next(iterator), next(iterator), next(iterator)
    state = loader.state_dict()
    assert through_a_file(state) == state  # torch.load's default: weights_only=True
    assert json.loads(json.dumps(state)) == state  # no bytes, tuples or int keys in it


def test_to_json_carries_what_json_cannot():
    state = {"epoch": {"tensor": torch.arange(6, dtype=torch.int16).reshape(2, 3),
                       "array": np.arange(4.0), "bytes": b"\x00\xff", "tuple": (1, (2, 3)),
                       "keys": {1: "one", (2, 3): "pair"}, "plain": [1.5, None, "x"]}}
    again = from_json(to_json(state))
    assert torch.equal(again["epoch"]["tensor"], state["epoch"]["tensor"])
    assert again["epoch"]["tensor"].dtype == torch.int16
    assert np.array_equal(again["epoch"]["array"], state["epoch"]["array"])
    rest = {key: value for key, value in again["epoch"].items() if key not in ("tensor", "array")}
    assert rest == {"bytes": b"\x00\xff", "tuple": (1, (2, 3)),
                    "keys": {1: "one", (2, 3): "pair"}, "plain": [1.5, None, "x"]}
    assert isinstance(rest["tuple"], tuple) and isinstance(rest["tuple"][1], tuple)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_state_dict_hands_over_the_kept_state_and_each_state_stays_as_it_was(num_workers):
    """Kept current as batches are consumed: asking twice gives the same state, without
    asking the workers or rebuilding it; and a state taken earlier is a snapshot, never a
    view that moves on with the loader."""
    loader = StatefulDataLoader(list(range(40)), batch_size=4, shuffle=True,
                                num_workers=num_workers)
    iterator = iter(loader)
    next(iterator)
    first = loader.state_dict()
    assert loader.state_dict() is first
    kept = copy.deepcopy(first)
    next(iterator), next(iterator)
    later = loader.state_dict()
    assert later is not first and first == kept
    assert (first["epoch"]["yielded"], later["epoch"]["yielded"]) == (1, 3)
    del iterator


def test_state_dict_before_iter_starts_no_worker_and_draws_nothing():
    loader = StatefulDataLoader(list(range(10)), batch_size=2, shuffle=True, num_workers=2)
    before, processes = torch.get_rng_state(), set(psutil.Process().children())
    state = loader.state_dict()
    assert set(psutil.Process().children()) <= processes
    assert torch.equal(torch.get_rng_state(), before)
    assert state["epoch"] is None and state["epochs_started"] == 0


def test_state_dict_changes_nothing_the_run_sees():
    def epoch(with_checkpoints):
        torch.manual_seed(3)
        loader = StatefulDataLoader(list(range(30)), batch_size=4, shuffle=True,
                                    num_workers=2, generator=torch.Generator().manual_seed(1))
        batches = []
        for batch in loader:
            batches.append(batch.tolist())
            if with_checkpoints:
                loader.state_dict()
        return batches, torch.get_rng_state(), loader.generator.get_state()

    a, b = epoch(False), epoch(True)
    assert a[0] == b[0] and torch.equal(a[1], b[1]) and torch.equal(a[2], b[2])


def test_loading_then_saving_gives_the_state_back():
    loader = StatefulDataLoader(list(range(10)), batch_size=2, shuffle=True)
    iterator = iter(loader)
    next(iterator)
    state = through_a_file(loader.state_dict())
    fresh = StatefulDataLoader(list(range(10)), batch_size=2, shuffle=True)
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state


@pytest.mark.parametrize("num_workers", [0, 3])
def test_resumes_chain_a_resumed_run_checkpoints_and_resumes_again(num_workers):
    c = {"dataset": "counting", "n": 23, "mode": "batch_size", "batch_size": 2,
         "drop_last": False, "shuffle": True, "sampler": None, "generators": "shared",
         "torch_samplers": False, "num_workers": num_workers,
         "persistent_workers": num_workers > 0, "in_order": True,
         "prefetch_factor": 2 if num_workers else None, "epochs": 2, "seed": 11,
         "draws": True, "checkpoint_epoch": 0, "checkpoint_at": 0.0}
    whole = run(c, positions={(0, 3)})
    first = whole["checkpoints"][(0, 3)]
    resumed = run({**c}, resume=first)
    check_resumed(c, whole, first, resumed)
    # the resumed run, checkpointed right away and after more batches, resumes again
    loader_state = first
    for extra in (0, 4):
        again = _resume_and_checkpoint(c, loader_state, extra)
        assert again["loader"]["epoch"]["yielded"] == 3 + extra
        check_resumed(c, whole, again, run(c, resume=again))


def _resume_and_checkpoint(c, checkpoint, batches):
    """Resume from ``checkpoint``, take ``batches`` more batches, checkpoint."""
    seed_everything(c["seed"])
    loader, _, _ = make_loader(c, stateful=True)
    loader.load_state_dict(checkpoint["loader"])
    set_rng_states(checkpoint["rng"])
    iterator = iter(loader)
    for _ in range(batches):
        next(iterator)
        torch.rand(1), random.random(), np.random.rand()  # the training step's draws
    return through_a_file({"loader": loader.state_dict(), "rng": rng_states(),
                           "epoch": checkpoint["epoch"], "at": checkpoint["at"] + batches})


def test_pinned_batches_carry_the_workers_reports(monkeypatch):
    pinned = []

    def fake_pin(batch):  # no accelerator here: stands for the real copy
        pinned.append(batch)
        return batch

    monkeypatch.setattr(stateful_worker, "pin_memory", fake_pin)

    def make():
        loader = StatefulDataLoader(StatefulStream(14), batch_size=2, num_workers=2,
                                    pin_memory=True)
        loader._pin_memory_fn = functools.partial(pin_memory, device=None)  # the real path
        return loader

    # (with an accelerator the batches are pinned for real, and nothing warns)
    expected_warning = (contextlib.nullcontext() if torch.accelerator.is_available()
                        else pytest.warns(UserWarning, match="no accelerator"))
    with expected_warning:
        torch.manual_seed(0)
        whole = [plain(b) for b in make()]
        torch.manual_seed(0)
        loader = make()
        iterator = iter(loader)
        head = [plain(next(iterator)) for _ in range(3)]
        state = through_a_file(loader.state_dict())
        del iterator
        resumed = make()
        resumed.load_state_dict(state)
        rest = [plain(b) for b in resumed]
    assert head + rest == whole and len(pinned) >= len(whole)


def test_tracing_shows_the_checkpoint_and_the_restore():
    events = []
    loader = StatefulDataLoader(list(range(12)), batch_size=2, shuffle=True, num_workers=2)
    iterator = iter(loader)
    next(iterator), next(iterator)
    _tracing.start(events.append)
    try:
        state = loader.state_dict()
        del iterator
        fresh = StatefulDataLoader(list(range(12)), batch_size=2, shuffle=True, num_workers=2)
        fresh.load_state_dict(state)
        list(fresh)
    finally:
        _tracing.stop()
    names = [event["event"] for event in events]
    assert names.index("checkpoint") < names.index("restore") < names.index("dispatch")
    restore = events[names.index("restore")]
    assert restore["yielded"] == 2 and restore["in_flight"] == [2, 3, 4, 5]
    dispatched = [event["batch"] for event in events if event["event"] == "dispatch"]
    assert dispatched == [2, 3, 4, 5]  # the batches in flight keep their numbers


def test_the_protocol_is_torchdatas():
    class Both:
        def state_dict(self):
            return {}

        def load_state_dict(self, state):
            pass

    assert isinstance(Both(), Stateful) and not isinstance(object(), Stateful)


def test_rng_states_round_trip():
    states = rng_states()
    first = (torch.rand(2), random.random(), np.random.rand())
    set_rng_states(through_a_file(states))
    again = (torch.rand(2), random.random(), np.random.rand())
    assert torch.equal(first[0], again[0]) and first[1:] == again[1:]


def test_torch_datasets_and_samplers_are_welcome():
    dataset = tud.TensorDataset(torch.arange(10))
    sampler = tud.RandomSampler(dataset, generator=torch.Generator().manual_seed(0))
    loader = StatefulDataLoader(dataset, sampler=sampler, batch_size=3)
    assert loader._stream_mode == "replay"
    assert [b[0].tolist() for b in loader]


def test_it_is_a_dataloader():
    assert issubclass(StatefulDataLoader, mdl.DataLoader)
    loader = StatefulDataLoader(list(range(5)), batch_size=2, snapshot_every_n_steps=10)
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3], [4]] and len(loader) == 3


def test_the_extra_does_not_import_torch_utils_data():
    """Like the core: torch's classes are recognised from sys.modules, never imported."""
    import ast
    import pathlib

    package = pathlib.Path(StatefulDataLoader.__module__.replace(".", "/")).parent
    root = pathlib.Path(__file__).resolve().parents[3]
    for path in (root / package).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(name.startswith("torch.utils") for name in names), (path, names)
