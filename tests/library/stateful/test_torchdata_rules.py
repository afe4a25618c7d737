"""Issue 26's cases, each held to two rules: exactness -- a resumed run gives what the run
never interrupted gives next -- and, where torchdata 0.11 defines the behaviour, torchdata:
its StatefulDataLoader, playing the same case in a child process (cases.py), gives the same
batches before and after the state. The cases:

- the state taken where the loop stopped: after ``break``, after ``del`` of the iterator,
  between two ``next()`` calls; with 0 and 2 workers, persistent or not; map-style and
  iterable datasets;
- a dataset that is its own iterator and resets its position in ``__iter__``;
- samplers (and a batch sampler) whose iterator is Stateful;
- a stream without the protocol, checkpointed at an epoch's end (nothing to fast-forward);
- without workers, a dataset whose iterator restores the global torch RNG in its own
  ``load_state_dict``: the restore stands (the loader undoes only what it draws itself);
- a state through JSON (``json.dumps``, ``json.loads``), and through :func:`to_json`."""

import importlib.util
import json
import pathlib
import subprocess
import sys
import time

import psutil
import pytest
import torch

from minidataloader.stateful import StatefulDataLoader
from minidataloader.stateful.state import from_json, to_json
from tests.library.stateful.cases import build, plain, play

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torchdata") is None,
                                reason="torchdata is pinned in requirements.txt")
CHILD = ["-m", "tests.library.stateful.cases"]  # run from the repository root
ROOT = pathlib.Path(__file__).resolve().parents[3]
WORKERS = [(0, False), (2, False), (2, True)]  # (num_workers, persistent_workers)

STOPPED = [{"dataset": dataset, "n": n, "num_workers": w, "persistent_workers": pw,
            "stop": stop, "k": k}
           for dataset, n in (("map", 20), ("stream", 17)) for w, pw in WORKERS
           for stop in ("break", "del", "between") for k in (1, 4)]
PROTOCOLS = (
    [{"dataset": "self_iterating", "n": 14, "num_workers": w, "persistent_workers": pw,
      "stop": "between", "k": k} for w, pw in WORKERS for k in (0, 3)]
    + [{"dataset": "map", "n": 13, "sampler": "countdown", "num_workers": w,
        "persistent_workers": pw, "stop": stop, "k": k}
       for w, pw in WORKERS for stop, k in (("between", 0), ("between", 2), ("break", 2),
                                            ("break", 5))]
    + [{"dataset": "map", "n": 13, "batch_sampler": "countdown", "num_workers": w,
        "stop": "between", "k": 2} for w in (0, 2)]
    + [{"dataset": "plain_stream", "n": 11, "num_workers": w, "persistent_workers": pw,
        "stop": "end"} for w, pw in WORKERS]
    + [{"dataset": "rng_stream", "n": 15, "num_workers": 0, "stop": "between", "k": k}
       for k in (0, 1, 4)]
    + [{"dataset": dataset, "n": 16, "num_workers": w, "stop": "between", "k": 2,
        "saved": "json"} for dataset in ("map", "stream") for w in (0, 2)]
)


def torchdata_plays(cases: list) -> list:
    child = subprocess.run([sys.executable, *CHILD, json.dumps(cases)], cwd=ROOT,
                           capture_output=True, text=True, timeout=280)
    assert child.returncode == 0, child.stderr[-3000:]
    return json.loads(child.stdout)


def uninterrupted(case: dict) -> list:
    """Two epochs of our loader, never checkpointed: what every resume must continue."""
    torch.manual_seed(0)
    loader = build(StatefulDataLoader, case)
    return [[plain(batch) for batch in loader] for _ in range(2)]


def check_case(case: dict, ours: dict, theirs: dict) -> None:
    first, second = uninterrupted(case)
    if case["stop"] == "end":
        assert ours["before"] == first and ours["after"] == second, case
    else:
        assert ours["before"] + ours["after"] == first + second, (case, ours)
        if case["stop"] == "between":  # the same loader, going on, agrees
            assert ours["before"] + ours["uninterrupted"] == first, case
    assert ours["before"] == theirs["before"] and ours["after"] == theirs["after"], (
        case, ours, theirs)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("group", range(2))
def test_the_state_is_where_the_loop_stopped(group):
    """After break (the iterator gone: its workers end, as torch's do), after del, between
    next() calls: resumed, the run goes on from there, as torchdata's does."""
    cases = STOPPED[group::2]
    for case, theirs in zip(cases, torchdata_plays(cases)):
        check_case(case, play(StatefulDataLoader, case), theirs)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_torchdatas_protocols_resume_as_torchdata_does():
    for case, theirs in zip(PROTOCOLS, torchdata_plays(PROTOCOLS)):
        check_case(case, play(StatefulDataLoader, case), theirs)


@pytest.mark.timeout(60)
def test_after_break_the_workers_end_and_the_state_stays():
    """Unlike torchdata's, the loader keeps the position, not the iterator: after `break`
    a non-persistent loader's workers are shut down, as torch's are."""
    case = {"dataset": "map", "n": 40, "num_workers": 2, "stop": "break", "k": 3}
    loader = build(StatefulDataLoader, case)
    before = set(psutil.Process().children())
    for got, _ in enumerate(loader, 1):
        workers = set(psutil.Process().children()) - before
        if got == 3:
            break
    assert len(workers) == 2
    deadline = time.monotonic() + 20
    while any(worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE
              for worker in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE
                   for worker in workers)
    assert loader.state_dict()["epoch"]["yielded"] == 3


@pytest.mark.timeout(120)
@pytest.mark.parametrize("num_workers", [0, 2])
def test_to_json_carries_a_state_json_cannot(num_workers):
    """A dataset's state holding a tensor (the RNG it restores) travels through to_json."""
    case = {"dataset": "rng_stream", "n": 15, "num_workers": num_workers, "stop": "between",
            "k": 4}
    torch.manual_seed(0)
    loader = build(StatefulDataLoader, case)
    iterator = iter(loader)
    before = [plain(next(iterator)) for _ in range(4)]
    state = loader.state_dict()
    with pytest.raises(TypeError):
        json.dumps(state)
    rest = [plain(batch) for batch in iterator]
    resumed = build(StatefulDataLoader, case)
    resumed.load_state_dict(from_json(to_json(state)))
    assert [plain(batch) for batch in resumed] == rest and before


def test_without_workers_the_loader_undoes_what_iter_draws_but_not_what_the_dataset_restores():
    """The RNG rule: the training script's global RNG is put back after iter(dataset) drew
    from it, and after that the iterator's own load_state_dict may restore it (and it
    stands)."""
    class Drawing(torch.utils.data.IterableDataset):
        def __iter__(self):
            torch.rand(5)  # drawn at iter(): the uninterrupted run drew it long ago
            return iter(range(6))

        def state_dict(self):
            return {}

        def load_state_dict(self, state):
            pass

    loader = StatefulDataLoader(Drawing(), batch_size=2)
    iterator = iter(loader)
    next(iterator)
    state = loader.state_dict()
    torch.manual_seed(7)
    expected = torch.get_rng_state()
    resumed = StatefulDataLoader(Drawing(), batch_size=2)
    resumed.load_state_dict(state)
    iter(resumed)
    assert torch.equal(torch.get_rng_state(), expected)
