"""The trace recorder against real runs of minidataloader: every recorded epoch is complete
and consistent (each batch dispatched -> fetched -> received -> yielded, in that order, by
the worker whose pid made it), across workers, in_order=False, the pin thread, persistent
workers, iterable datasets and a single process; traces survive JSON and DataFrame round
trips; queues_at and summary agree with counts made directly from the raw events.

The checks below read the raw events only (batch numbers, workers, pids, times), not the
recorder's derived spans, so they test the recorder rather than repeat it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict

import pytest
import torch

import minidataloader as mdl
from minidataloader import _tracing
from minidataloader_course.viz.trace import Trace, TraceRecorder, most_at_once

pytestmark = pytest.mark.timeout(120)
PIPELINE = ["dispatch", "fetch_start", "fetch_end", "result_put", "received", "yielded"]


class PidSamples(mdl.Dataset):
    """Sample i is [i, pid of the process that made it]; optionally slow."""

    def __init__(self, n, delay=0.0, slow=None):
        self.n, self.delay, self.slow = n, delay, slow or {}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.delay + self.slow.get(i, 0.0))
        return torch.tensor([i, os.getpid()])


class PidStream(mdl.IterableDataset):
    """0 .. n-1 split among the workers; each sample says which process made it."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = mdl.get_worker_info()
        first, step = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(first, self.n, step):
            time.sleep(0.001)
            yield torch.tensor([i, os.getpid()])


def record(loader, epochs=1, step=0.002, stop_after=None, pin=False):
    """Run ``epochs`` epochs (the first stopped after ``stop_after`` batches, if given) under
    a recorder; return the trace and, per epoch, batch number -> (sample ids, their pids)."""
    if pin:
        loader._pin_memory_fn = lambda batch: batch.clone()  # the pin thread, without CUDA
    contents = []
    with TraceRecorder(test=True) as recorder:
        for epoch in range(epochs):
            seen = {}
            for k, batch in enumerate(loader):
                seen[recorder.last_batch] = (batch[:, 0].tolist(), set(batch[:, 1].tolist()))
                with recorder.step():
                    time.sleep(step)
                if epoch == 0 and stop_after is not None and k + 1 == stop_after:
                    break
            contents.append(seen)
    return recorder.trace, contents


def loader_of(dataset, **kwargs):
    kwargs.setdefault("multiprocessing_context", "fork")
    return mdl.DataLoader(dataset, **kwargs)


def of_epoch(trace: Trace, epoch: int) -> list[dict]:
    return [r for r in trace.records if r["epoch"] == epoch]


def check_epoch(trace: Trace, epoch: int, contents: dict, *, batches: int, workers: int,
                in_order=True, pinned=False, complete=True):
    """The recorded epoch against what the loader must have done; see the module docstring."""
    main = trace.info["main_pid"]
    records = of_epoch(trace, epoch)
    events = defaultdict(lambda: defaultdict(list))  # batch -> event -> records
    for r in records:
        if "batch" in r and r["event"] not in ("step_start", "step_end"):
            events[r["batch"]][r["event"]].append(r)
    yielded = [r["batch"] for r in records if r["event"] == "yielded"]
    assert len(yielded) == len(set(yielded)) == len(contents)
    if complete:
        assert sorted(yielded) == list(range(batches))
    if in_order:
        assert yielded == sorted(yielded)
    main_events = [r for r in records if r["pid"] == main and r["thread"] == "MainThread"]
    assert main_events[0]["event"] == "epoch_start" and main_events[0]["epoch"] == epoch
    if complete:
        assert main_events[-1]["event"] in ("epoch_end", "step_end")
        assert [r["event"] for r in main_events].count("epoch_end") == 1

    worker_pid = {}  # worker id -> pid, from its worker_start or resume
    for r in records:
        if r["event"] in ("worker_start", "resume"):
            assert r["pid"] != main
            worker_pid.setdefault(r["worker"], r["pid"])
    for batch in yielded:
        chain = PIPELINE if workers else ["fetch_start", "fetch_end", "yielded"]
        if pinned and workers:
            chain = chain[:4] + ["pin_start", "pin_end"] + chain[4:]
        if events[batch].get("reorder_enter"):
            chain = chain[:-1] + ["reorder_enter", "reorder_leave", "yielded"]
        assert all(len(events[batch][e]) == 1 for e in chain), (batch, dict(events[batch]))
        times = [events[batch][e][0]["t_ns"] for e in chain]
        assert times == sorted(times), f"batch {batch}: {chain} out of order: {times}"
        fetch = events[batch]["fetch_start"][0]
        if workers:  # one worker did it all, and its pid is in the batch
            worker = events[batch]["dispatch"][0]["worker"]
            for e in ("fetch_start", "fetch_end", "result_put", "received"):
                assert events[batch][e][0]["worker"] == worker
            assert fetch["pid"] == worker_pid[worker] != main
            assert contents[batch][1] == {fetch["pid"]}
            for e in ("dispatch", "received", "yielded"):
                assert events[batch][e][0]["pid"] == main
            if pinned:
                pins = events[batch]["pin_start"] + events[batch]["pin_end"]
                assert {(r["pid"], r["thread"] != "MainThread") for r in pins} == {(main, True)}
        else:
            assert fetch["pid"] == main and fetch["worker"] is None
            assert contents[batch][1] == {main}
    if not in_order or not workers:
        assert not any(r["event"].startswith("reorder") for r in records)

    # a process fetches one batch at a time: its fetch_start/fetch_end alternate, per batch
    by_pid = defaultdict(list)
    for r in records:
        if r["event"] in ("fetch_start", "fetch_end"):
            by_pid[r["pid"]].append(r)
    for pid, fetches in by_pid.items():
        kinds = [r["event"] for r in fetches]
        if not complete and len(kinds) % 2:
            kinds, fetches = kinds[:-1], fetches[:-1]
        assert kinds == ["fetch_start", "fetch_end"] * (len(kinds) // 2), pid
        assert all(a["batch"] == b["batch"] for a, b in zip(fetches[::2], fetches[1::2]))
    if workers:
        assert set(worker_pid) == set(range(workers))

    # each step follows its batch's yield and ends before the next batch is asked for
    steps = [r for r in records if r["event"] in ("yielded", "step_start", "step_end")]
    assert [r["event"] for r in steps] == ["yielded", "step_start", "step_end"] * len(yielded)
    assert all(r["batch"] == steps[3 * (k // 3)]["batch"] for k, r in enumerate(steps))


# --------------------------------------------------------------------------- real runs

@pytest.mark.filterwarnings("ignore:This DataLoader will start")  # 3 workers, 2 CPUs: they sleep
@pytest.mark.parametrize("workers, in_order", [(0, True), (1, True), (2, True), (3, False)])
def test_an_epoch_is_recorded_completely(workers, in_order):
    dataset = PidSamples(22, delay=0.001, slow={5: 0.05})
    kwargs = dict(num_workers=workers, in_order=in_order) if workers else {}
    trace, contents = record(loader_of(dataset, batch_size=2, **kwargs)
                             if workers else mdl.DataLoader(dataset, batch_size=2))
    check_epoch(trace, 0, contents[0], batches=11, workers=workers, in_order=in_order)
    assert trace.epochs() == [0]
    lanes = {r["lane"] for r in trace.records}
    assert lanes == {"main loop"} | {f"worker {w}" for w in range(workers)}
    if workers > 1 and in_order:  # the slow batch held batches behind it in the buffer
        assert any(r["event"] == "reorder_enter" for r in trace.records)


def test_the_pin_thread_is_recorded():
    trace, contents = record(loader_of(PidSamples(12, delay=0.001), batch_size=3,
                                       num_workers=2), pin=True)
    check_epoch(trace, 0, contents[0], batches=4, workers=2, pinned=True)
    assert {r["lane"] for r in trace.records if r["event"].startswith("pin")} == {"pin thread"}


def test_persistent_workers_over_two_epochs():
    loader = loader_of(PidSamples(10, delay=0.001), batch_size=2, num_workers=2,
                       persistent_workers=True)
    trace, contents = record(loader, epochs=2, pin=True)
    assert trace.epochs() == [0, 1]
    for epoch in (0, 1):
        check_epoch(trace, epoch, contents[epoch], batches=5, workers=2, pinned=True)
    pids = [{r["pid"] for r in of_epoch(trace, e) if r["lane"].startswith("worker")} for e in (0, 1)]
    assert pids[0] == pids[1] and len(pids[0]) == 2  # the same processes did both epochs
    resumes = [r for r in trace.records if r["event"] == "resume"]
    start_1 = next(r["t_ns"] for r in trace.records if r["event"] == "epoch_start" and r["epoch"] == 1)
    assert sorted(r["worker"] for r in resumes) == [0, 1]
    assert all(r["epoch"] == 1 and r["t_ns"] > start_1 for r in resumes)


def test_persistent_workers_after_a_break_keep_the_epochs_apart():
    """Epoch 0 stops after 2 batches while the workers still fetch ahead: those fetches are
    epoch 0's, even when they end after epoch 1 started (batch numbers repeat)."""
    loader = loader_of(PidSamples(16, delay=0.004), batch_size=2, num_workers=2,
                       prefetch_factor=3, persistent_workers=True)
    trace, contents = record(loader, epochs=2, stop_after=2, pin=True)
    check_epoch(trace, 0, contents[0], batches=8, workers=2, pinned=True, complete=False)
    check_epoch(trace, 1, contents[1], batches=8, workers=2, pinned=True)
    epoch_0_fetches = [r for r in of_epoch(trace, 0) if r["event"] == "fetch_end"]
    assert len(epoch_0_fetches) > 2  # fetched ahead, never yielded
    for r in epoch_0_fetches:  # every one of them before its worker resumed
        resume = next(x for x in trace.records if x["event"] == "resume" and x["pid"] == r["pid"])
        assert r["t_ns"] < resume["t_ns"]


@pytest.mark.parametrize("workers", [0, 2])
def test_an_iterable_dataset(workers):
    kwargs = dict(num_workers=workers) if workers else {}
    loader = loader_of(PidStream(11), batch_size=2, **kwargs) if workers else \
        mdl.DataLoader(PidStream(11), batch_size=2)
    trace, contents = record(loader)
    assert sorted(i for ids, _ in contents[0].values() for i in ids) == list(range(11))
    assert len(contents[0]) == 6  # 11 samples in 2s; with 2 workers 6 + 5 samples, 3 + 3
    check_epoch(trace, 0, contents[0], batches=6, workers=workers, complete=False)
    records = of_epoch(trace, 0)
    received = {r["batch"] for r in records if r["event"] == "received"}
    yielded = {r["batch"] for r in records if r["event"] == "yielded"}
    if workers:  # each worker's end of stream came back as a batch number never yielded
        assert len(received - yielded) == workers
    else:  # the last fetch found the end of the stream
        assert [r["event"] for r in records[-3:]] == ["step_end", "fetch_start", "epoch_end"]


# --------------------------------------------------------------------------- plain data

@pytest.fixture(scope="module")
def pinned_trace():
    loader = loader_of(PidSamples(16, delay=0.002, slow={4: 0.03}), batch_size=2,
                       num_workers=2, persistent_workers=True)
    return record(loader, epochs=2, pin=True)[0]


def test_json_round_trip(pinned_trace, tmp_path):
    assert Trace.from_json(pinned_trace.to_json()) == pinned_trace
    pinned_trace.save(tmp_path / "trace.json")
    loaded = Trace.load(tmp_path / "trace.json")
    assert loaded == pinned_trace and loaded.info["test"] is True
    assert json.loads((tmp_path / "trace.json").read_text())["format"] == "minidataloader.trace"


@pytest.mark.parametrize("text, words", [
    ('{"records": []}', "not a minidataloader trace"),
    ('{"format": "minidataloader.trace", "version": 99, "info": {}, "records": []}', "version 99"),
])
def test_a_file_that_is_not_a_trace_says_so(text, words):
    with pytest.raises(ValueError, match=words):
        Trace.from_json(text)


def test_dataframe_round_trip(pinned_trace):
    pd = pytest.importorskip("pandas")
    df = pinned_trace.to_dataframe()
    assert len(df) == len(pinned_trace.records)
    assert list(df.columns[:8]) == ["t_ns", "pid", "thread", "event", "lane", "epoch", "batch", "worker"]
    assert str(df["batch"].dtype) == "Int64" and str(df["t_ns"].dtype) == "Int64"
    assert df["batch"].isna().sum() == sum("batch" not in r for r in pinned_trace.records)
    assert Trace.from_dataframe(df) == pinned_trace
    assert df.attrs["info"] == pinned_trace.info
    per_lane = df.groupby("lane")["event"].count().to_dict()  # the DataFrame is for analysis
    assert per_lane == dict(Counter(r["lane"] for r in pinned_trace.records))
    assert isinstance(df, pd.DataFrame)


# --------------------------------------------------------------------------- derived views

def brute_force_places(records: list[dict], t: int) -> dict[str, set[int]]:
    """Where each batch of a one-epoch trace is at t, straight from the raw events."""
    first = {}
    for r in records:
        first.setdefault((r["event"], r.get("batch")), r)

    def before(event, batch):
        r = first.get((event, batch))
        return r is not None and r["t_ns"] <= t

    places = defaultdict(set)
    for (event, batch), r in first.items():
        if event != "dispatch":
            continue
        if not before("dispatch", batch):
            continue
        if not before("fetch_start", batch):
            places[f"queued:{r['worker']}"].add(batch)
        elif not before("fetch_end", batch):
            places[f"fetch:{r['worker']}"].add(batch)
        elif before("result_put", batch) and not before("pin_start", batch) \
                and not before("received", batch):
            places["result"].add(batch)
        elif before("pin_start", batch) and not before("pin_end", batch):
            places["pinning"].add(batch)
        elif before("pin_end", batch) and not before("received", batch):
            places["pinned"].add(batch)
        if before("reorder_enter", batch) and not before("reorder_leave", batch):
            places["reorder"].add(batch)
    return places


def test_queues_at_matches_the_raw_events(pinned_trace):
    records = of_epoch(pinned_trace, 0)
    times = sorted({r["t_ns"] for r in records})
    checked = 0
    for t in times + [t + 1 for t in times] + [t - 1 for t in times]:
        shown = pinned_trace.queues_at(t, epoch=0)
        expected = brute_force_places(records, t)
        for place in set(shown) | set(expected):
            if place.split(":")[0] in ("queued", "fetch", "result", "pinning", "pinned", "reorder"):
                assert set(shown.get(place, [])) == expected.get(place, set()), (t, place)
                checked += bool(expected.get(place))
        for batches in shown.values():  # a queue lists what got there first first
            assert len(batches) == len(set(batches))
    assert checked > 20
    reorder_sizes = [len(brute_force_places(records, t)["reorder"]) for t in times]
    assert pinned_trace.summary(0)["max_reorder"] == max(reorder_sizes)


def test_summary_counts_from_the_events(pinned_trace):
    for epoch in (0, 1):
        records = of_epoch(pinned_trace, epoch)
        s = pinned_trace.summary(epoch)
        yields = [r for r in records if r["event"] == "yielded"]
        assert s["batches"] == len(yields) == 8
        start = next(r["t_ns"] for r in records if r["event"] == "epoch_start")
        step_ends = [r["t_ns"] for r in records if r["event"] == "step_end"]
        waits = [yields[0]["t_ns"] - start] + [y["t_ns"] - e for y, e in zip(yields[1:], step_ends)]
        assert s["waiting_s"] == pytest.approx(sum(waits) / 1e9)
        assert s["first_batch_s"] == pytest.approx(waits[0] / 1e9)
        assert s["duration_s"] == pytest.approx((records[-1]["t_ns"] - start) / 1e9)
        assert s["batches_per_s"] == pytest.approx(8 / s["duration_s"])
        assert s["steady_batches_per_s"] == pytest.approx(
            7 / ((records[-1]["t_ns"] - yields[0]["t_ns"]) / 1e9))
        assert 0 < s["waiting_share"] < 1


def test_most_at_once():
    assert most_at_once([]) == 0
    assert most_at_once([(0, 5), (5, 9)]) == 1  # one leaves as the other arrives
    assert most_at_once([(0, 5), (1, 9), (2, 3), (8, 10)]) == 3


# --------------------------------------------------------------------------- the recorder

def test_recorder_switches_tracing_off_and_cleans_up():
    recorder = TraceRecorder()
    with recorder:
        folder = recorder._folder
        assert _tracing.enabled
        with pytest.raises(RuntimeError, match="another TraceRecorder is recording"), TraceRecorder():
            pass
        list(mdl.DataLoader(range(3)))
        recorder.add("marker", time.monotonic_ns(), note="hello")
    assert not _tracing.enabled and not os.path.exists(folder)
    assert [r["event"] for r in recorder.trace.records] == [
        "epoch_start", "fetch_start", "fetch_end", "yielded", "fetch_start", "fetch_end",
        "yielded", "fetch_start", "fetch_end", "yielded", "epoch_end", "marker"]
    marker = recorder.trace.records[-1]
    assert marker["note"] == "hello" and marker["batch"] == 2 and marker["epoch"] == 0
    with recorder.step():  # after the recording: nothing more is recorded
        pass
    assert len(recorder.trace.records) == 12


def test_two_loaders_in_one_recording_are_refused_when_analysed():
    with TraceRecorder() as recorder:
        list(mdl.DataLoader(range(2)))
        list(mdl.DataLoader(range(2)))
    with pytest.raises(ValueError, match="TraceRecorder of its own"):
        recorder.trace.spans()


def test_recording_needs_no_pandas():
    code = ("import sys, time\nfrom minidataloader_course.viz import TraceRecorder, record_queue_flow\n"
            "trace = record_queue_flow(num_workers=0, batches=2, load_ms=0, step_ms=0)\n"
            "trace.summary(); trace.to_json()\n"
            "print(','.join(m for m in ('ipywidgets', 'IPython', 'matplotlib', 'pandas')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "", f"recording imported {out.stdout.strip()}"


# --------------------------------------------------------------------------- stateful loaders

def test_a_checkpoint_and_a_restore_are_marks():
    """The stateful extra's events: a checkpoint's batches in flight are derived from the
    dispatch and yielded events, and agree with what the loader itself saved; the resumed
    loader's restore reports the same batches, and dispatches them again first. Marks go
    by the trace's epochs, which count from the start of the recording, not the loader's."""
    from minidataloader.stateful import StatefulDataLoader

    def make():
        return StatefulDataLoader(PidSamples(20), batch_size=2, num_workers=2,
                                  multiprocessing_context="fork")

    loader = make()
    list(loader)  # the loader's first epoch, not recorded
    with TraceRecorder() as recorder:
        iterator = iter(loader)
        for _ in range(3):
            next(iterator)
        state = loader.state_dict()
        next(iterator)
        del iterator
    assert state["epochs_started"] == 2 and recorder.trace.epochs() == [0]
    (mark,) = recorder.trace.marks()
    saved = [batch for batch, _, _ in state["epoch"]["in_flight"]]
    assert (mark.kind, mark.epoch, mark.yielded, list(mark.in_flight)) == ("checkpoint", 0, 3, saved)
    assert saved == [3, 4, 5, 6]

    resumed = make()
    resumed.load_state_dict(state)
    with TraceRecorder() as recorder:
        for _ in resumed:
            pass
        between = resumed.state_dict()  # after the epoch: no position, nothing in flight
    trace = recorder.trace
    restore, after = trace.marks()
    assert (restore.kind, restore.yielded, restore.in_flight) == ("restore", 3, (3, 4, 5, 6))
    dispatched = [r["batch"] for r in trace.records if r["event"] == "dispatch"]
    assert dispatched == list(range(3, 10))  # the batches in flight first, keeping their numbers
    assert between["epochs_started"] == 2 and trace.epochs() == [0]
    assert (after.kind, after.epoch, after.yielded, after.in_flight) == ("checkpoint", 0, None, ())


def test_a_trace_of_a_plain_loader_has_no_marks():
    trace, _ = record(loader_of(PidSamples(6), batch_size=2, num_workers=1))
    assert trace.marks() == []
