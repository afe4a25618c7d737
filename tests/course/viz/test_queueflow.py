"""The queue-flow view without a browser: record_queue_flow runs what its settings say (lanes,
the slow sample, the modelled copy and its arithmetic), the static fragment is
self-contained and pre-rendered from Python, the widget reacts to its controls and records
again. (Its JavaScript: test_queueflow_browser.py; the trace itself: test_trace.py.)"""

from __future__ import annotations

import re

import pytest

from minidataloader_course.viz import (
    queue_flow_figure,
    queue_flow_html,
    queue_flow_widget,
    record_queue_flow,
)
from minidataloader_course.viz._html import HTMLFragment, external_references
from minidataloader_course.viz.queueflow import (
    DEFAULTS,
    LABEL_WIDTH,
    PLOT,
    _start_time,
    _ticks,
    _x,
    axis_end,
    places_at,
    render_state,
    summary_rows,
    tick_step,
    timeline_svg,
    view_data,
)

from ._runs import run_in_kernel

pytestmark = pytest.mark.timeout(120)
FAST = dict(batches=6, batch_size=2, load_ms=1.0, step_ms=1.0)


@pytest.fixture(scope="module")
def traces():
    """Small real recordings: a slow sample with in_order on and off, and a modelled GPU."""
    return {
        "in_order=True": record_queue_flow(**dict(FAST, batches=10, slow_batch=2, slow_ms=150)),
        "in_order=False": record_queue_flow(**dict(FAST, batches=10, slow_batch=2, slow_ms=150,
                                                   in_order=False)),
        "gpu": record_queue_flow(**dict(FAST, device="gpu", pin_memory=True, sample_kb=512,
                                        bandwidth_gbps=1.0)),
    }


def shown_places(state_html: str) -> dict[str, list[int]]:
    """The batches render_state shows in each place (the main loop under what it does)."""
    chips = r'<span class="mdl-qf-(?:chip|none)"[^>]*>[^<]*</span>'
    return {place: [int(b) for b in re.findall(r'data-batch="(\d+)"', inner)]
            for place, inner in re.findall(rf'data-place="([^"]+)">((?:{chips})*)</span>', state_html)}


def lanes(svg: str) -> list[str]:
    return re.findall(r'<text x="0" y="\d+" class="mdl-lane">([^<]+)</text>', svg)


# --------------------------------------------------------------------------- recording

def test_the_trace_holds_what_the_settings_asked_for(traces):
    in_order, out_of_order = traces["in_order=True"], traces["in_order=False"]
    for trace in (in_order, out_of_order):
        assert trace.summary()["batches"] == 10
        assert {r["lane"] for r in trace.records} == {"main loop", "worker 0", "worker 1"}
        steps = [r for r in trace.records if r["event"] == "step_end"]
        starts = [r for r in trace.records if r["event"] == "step_start"]
        assert len(steps) == 10 and all(e["t_ns"] - s["t_ns"] >= 1e6 for s, e in zip(starts, steps))
    assert in_order.info["config"] == {**DEFAULTS, **FAST, "batches": 10, "slow_batch": 2, "slow_ms": 150}
    # the slow sample held later batches back in the reorder buffer, or let them overtake it
    assert in_order.summary()["max_reorder"] >= 1
    yielded = [r["batch"] for r in out_of_order.records if r["event"] == "yielded"]
    assert out_of_order.summary()["max_reorder"] == 0 and yielded != sorted(yielded)
    assert yielded.index(2) > 3  # 150 ms late: batches 3 and after overtook it


def test_without_cuda_the_gpu_copy_is_modelled_and_says_so(traces):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the copy is measured (see the CUDA test)")
    trace = traces["gpu"]
    assert trace.info["copy"] == "modelled" and trace.info["pinning"] == "stand-in copy"
    copies = [r for r in trace.records if r["event"].startswith("copy")]
    assert len(copies) == 12 and all(r["modelled"] is True and r["lane"] == "H2D copy" for r in copies)
    batch_bytes = 2 * 512 * 1024
    for start, end in zip(copies[::2], copies[1::2]):
        assert (start["event"], end["event"], start["batch"]) == ("copy_start", "copy_end", end["batch"])
        assert start["bytes"] == batch_bytes
        assert end["t_ns"] - start["t_ns"] == round(batch_bytes / 1.0)  # bytes / (1 GB/s), in ns
    # the loop waited for the modelled copy before its step
    for copy_end in copies[1::2]:
        step = next(r for r in trace.records if r["event"] == "step_start" and r["batch"] == copy_end["batch"])
        assert step["t_ns"] >= copy_end["t_ns"]
    data = view_data(trace)
    assert data["copy"] == "modelled" and data["pin"]
    html = queue_flow_html(trace)
    assert "modelled, not measured" in html and "measured with CUDA" not in html
    assert lanes(timeline_svg(data))[:5] == ["worker 0", "worker 1", "pin thread", "main loop",
                                             "H2D copy"]  # (and the reorder buffer, if used)
    assert not any(s[0] == "stage" for s in data["spans"])  # pinned: no staging copy


def test_pageable_memory_goes_through_a_staging_copy():
    trace = record_queue_flow(**dict(FAST, num_workers=0, device="gpu", sample_kb=256))
    data = view_data(trace)
    assert not data["pin"] and not data["workers"] and data["main_fetch"]
    stages = [s for s in data["spans"] if s[0] == "stage"]
    copies = [s for s in data["spans"] if s[0] == "copy"]
    assert [s[1] for s in stages] == [s[1] for s in copies] == list(range(6))
    assert all(stage[3] <= copy[2] for stage, copy in zip(stages, copies))
    assert lanes(timeline_svg(data)) == ["main loop", "H2D copy"]
    assert "staging copy" in timeline_svg(data)


@pytest.mark.skipif("not __import__('torch').cuda.is_available()")
def test_with_cuda_the_copy_is_measured():  # pragma: no cover - no GPU on the CI machine
    trace = record_queue_flow(**dict(FAST, device="gpu", pin_memory=True))
    copies = [r for r in trace.records if r["event"].startswith("copy")]
    assert trace.info["copy"] == "measured" and trace.info["pinning"] == "page-locked"
    assert len(copies) == 12 and all(r["modelled"] is False for r in copies)
    assert all(e["t_ns"] >= s["t_ns"] for s, e in zip(copies[::2], copies[1::2]))
    assert "modelled" not in queue_flow_html(trace)


@pytest.mark.parametrize("settings, error, words", [
    (dict(workers=2), TypeError, "unknown queue-flow setting"),
    (dict(num_workers=9), ValueError, "num_workers should be an integer from 0 to 8"),
    (dict(load_ms=-1), ValueError, "load_ms should be a number from 0 to 100"),
    (dict(batch_size=2.5), ValueError, "batch_size should be an integer"),
    (dict(in_order="no"), ValueError, "in_order should be True or False"),
    (dict(device="tpu"), ValueError, "device should be one of"),
    (dict(batches=4, slow_batch=4), ValueError, "slow_batch=4 is not one of the 4 batches"),
])
def test_bad_settings_say_what_to_change(settings, error, words):
    with pytest.raises(error, match=words):
        record_queue_flow(**settings)


# --------------------------------------------------------------------------- static face

def test_fragment_is_self_contained_and_prerendered(traces):
    html = queue_flow_html(traces)
    assert isinstance(html, HTMLFragment) and external_references(html) == []
    assert html.count('<svg class="mdl-qf-svg"') == 3 and html.count('type="radio"') == 3
    assert html.count('class="mdl-qf-trace"') == 3 and html.count(" hidden>") == 2
    first = view_data(traces["in_order=True"], name="in_order=True")
    start = _start_time(first)
    assert render_state(first, start) in html  # what shows before (or without) the script
    assert f'value="{start}"' in html and f'max="{first["end"]}"' in html
    assert "mountQueueFlow" in html and len(html) < 200_000
    single = queue_flow_html(traces["gpu"])
    assert 'type="radio"' not in single and single.count("<svg class") == 1
    ids = {re.search(r'\bid="([^"]+)"', h).group(1) for h in (html, single)}
    assert len(ids) == 2


def test_the_state_shows_the_queues_at_that_instant(traces):
    data = view_data(traces["in_order=True"])
    trace = traces["in_order=True"]
    origin = next(r["t_ns"] for r in trace.records if r["event"] == "epoch_start")
    seen_reorder = False
    for t in sorted({s[2] for s in data["spans"]}):
        here = places_at(data, t)
        assert here == trace.queues_at(origin + t * 1000)  # µs view = ns trace at that instant
        shown = shown_places(render_state(data, t))
        for place in ("result", "reorder", "queued:0", "queued:1", "fetch:0", "fetch:1"):
            assert shown[place] == here.get(place, []), (t, place)
        seen_reorder |= bool(here.get("reorder"))
    assert seen_reorder


GRID = sorted({round(1.13 ** k) for k in range(150)} | {10 ** k for k in range(8)}
              | {10 ** k + 1 for k in range(8)} | {201, 2_001, 755_000, 1_210_000})


def test_each_recording_gets_an_axis_fitted_to_its_epoch():
    """The axis ends on the first tick at or after the epoch's end: the epoch fills more than
    four fifths of the width, and never runs past it (NOTE [ A time axis per recording ])."""
    for end in GRID:
        axis, step = axis_end(end), tick_step(end)
        assert axis % step == 0 and end <= axis < end + step, end
        assert end / axis > 0.8, (end, axis)
        ticks = _ticks(axis)
        assert ticks[-1] == axis and tick_step(axis) == step, end
        assert len(ticks) <= 11 and (end < 10 or len(ticks) >= 5), (end, ticks)
    assert axis_end(755_000) == 800_000  # the 755 ms epoch drew on a 1,200 ms axis


def test_each_timeline_has_its_own_axis_and_the_picker_says_each_epoch(traces):
    datas = {name: view_data(traces[name]) for name in ("in_order=False", "in_order=True")}
    html = queue_flow_html({name: traces[name] for name in datas})
    ends = [float(x) for x in re.findall(
        r'<line x1="([\d.]+)"[^>]*stroke-dasharray="2 3"><title>the epoch ends', html)]
    assert len(ends) == 2
    for x, (name, data) in zip(ends, datas.items()):
        axis = axis_end(data["end"])
        assert x == pytest.approx(_x(data["end"], axis), abs=0.06)
        assert LABEL_WIDTH + 0.8 * PLOT < x <= LABEL_WIDTH + PLOT  # most of the width
        assert (f'{name} <span class="mdl-qf-length">{data["end"] / 1000:.0f} ms</span>'
                in html)
    last_ticks = re.findall(r'text-anchor="middle" fill="currentColor" fill-opacity="0.7">'
                            r'([\d.]+)</text><text x="\d+" y="\d+" font-size="10" '
                            r'text-anchor="end"[^>]*>ms<', html)
    assert [float(t) for t in last_ticks] == [axis_end(d["end"]) / 1000 for d in datas.values()]
    assert '"scale"' not in html and "its own time axis" in html
    assert "its own time axis" not in queue_flow_html(traces["gpu"])  # one recording


def test_summary_states_the_numbers(traces):
    trace = traces["in_order=True"]
    rows = {q: (v, note) for q, v, note in summary_rows(trace)}
    s = trace.summary()
    data = view_data(trace)  # the timeline ends when the summary's epoch does: at epoch_end
    assert data["end"] == pytest.approx(s["duration_s"] * 1e6, abs=1)
    assert [span[0] for span in data["spans"] if span[3] == data["end"]] == ["finish"]
    assert rows["epoch"] == (f"{s['duration_s'] * 1e3:.0f} ms", "10 batches, 20 samples")
    assert rows["loop waited for data"][0] == f"{s['waiting_s'] * 1e3:.0f} ms"
    assert rows["largest reorder buffer"][0].startswith(str(s["max_reorder"]))
    figure = queue_flow_figure(trace, at_ms=10)
    assert "mdl-qf-cursor" in figure and "<script" not in figure and external_references(figure) == []


@pytest.fixture(scope="module")
def checkpointed():
    """A stateful loader's run, checkpointed after 3 batches and stopped after 5, and its
    resume in a new loader (minidataloader_course.chapters.ch14.resume)."""
    from minidataloader_course.chapters.ch14.resume import record_checkpoint_resume

    return list(record_checkpoint_resume(checkpoint_after=3, stopped_after=5, batches=8,
                                         load_ms=1.0, step_ms=2.0).values())


def test_checkpoints_and_resumes_are_drawn_and_said(checkpointed, traces):
    stopped, resumed = (view_data(trace) for trace in checkpointed)
    (kind, at, yielded, in_flight), = stopped["marks"]
    assert (kind, yielded, in_flight) == ("checkpoint", 3, [3, 4, 5, 6])
    (mark,) = checkpointed[0].marks()  # the view's microseconds: the trace's instant, rounded up
    origin = next(r["t_ns"] for r in checkpointed[0].records if r["event"] == "epoch_start")
    assert at == -((origin - mark.t_ns) // 1000)
    assert _start_time(stopped) == at  # the slider starts at the checkpoint
    before, after = render_state(stopped, at - 1), render_state(stopped, at)
    assert 'data-mark="none"' in before and "none yet" in before
    row = re.search(r'<div class="mdl-qf-row mdl-qf-mark" data-mark="checkpoint">.*?</div>', after).group(0)
    assert "after 3 yielded; in flight, fetched again on resume:" in row
    assert re.findall(r'data-batch="(\d+)"', row) == ["3", "4", "5", "6"]
    assert shown_places(after) == shown_places(render_state(stopped, at).replace(row, ""))
    (kind, at, yielded, in_flight), = resumed["marks"]
    assert (kind, yielded, in_flight) == ("restore", 3, [3, 4, 5, 6])
    assert 'data-mark="restore"' in render_state(resumed, resumed["end"])
    assert "dispatched again:" in render_state(resumed, resumed["end"])
    svg = timeline_svg(stopped)
    assert svg.count('<g data-mark="checkpoint">') == 1 and "checkpoint, resume" in svg
    assert "in flight: 3, 4, 5, 6" in svg
    plain = view_data(traces["in_order=True"])  # a plain loader: no marks, nothing added
    assert plain["marks"] == [] and "mdl-qf-mark" not in render_state(plain, 0)
    assert "data-mark" not in timeline_svg(plain) and "checkpoint" not in timeline_svg(plain)


def test_a_single_process_epoch_has_no_worker_lanes():
    trace = record_queue_flow(**dict(FAST, num_workers=0))
    data = view_data(trace)
    assert data["workers"] == [] and data["main_fetch"]
    assert "no workers: the main loop fetches" in render_state(data, 0)
    assert "largest reorder buffer" not in dict((q, v) for q, v, _ in summary_rows(trace))


# --------------------------------------------------------------------------- live face

@pytest.fixture
def widget():
    pytest.importorskip("ipywidgets")
    return queue_flow_widget(**FAST)


def test_widget_records_an_epoch_when_built(widget):
    assert widget.trace is not None and widget.trace.summary()["batches"] == 6
    data = view_data(widget.trace)
    assert widget.time.max == data["end"] and widget.play.max == data["end"]
    assert lanes(widget.figure.value)[:3] == ["worker 0", "worker 1", "main loop"]
    assert render_state(data, widget.time.value) in widget.state.value
    assert set(widget.controls) == set(DEFAULTS)


def test_widget_slider_moves_the_state_and_the_cursor(widget):
    data = view_data(widget.trace)
    before_state, before_figure = widget.state.value, widget.figure.value
    for t in (0, data["end"] // 3, data["end"] // 2, data["end"]):
        widget.time.value = t
        assert render_state(data, t) in widget.state.value
    assert widget.state.value != before_state and widget.figure.value != before_figure
    x = re.search(r'class="mdl-qf-cursor" x1="([\d.]+)"', widget.figure.value).group(1)
    assert x == f"{_x(data['end'], axis_end(data['end'])):.1f}"  # the end, on its own axis


def test_widget_reacts_to_controls_and_records_again(widget):
    controls = widget.controls
    first = widget.trace
    controls["num_workers"].value = 0
    assert controls["prefetch_factor"].disabled and controls["in_order"].disabled
    assert "settings changed" in widget.status.value
    assert controls["slow_ms"].disabled  # no slow batch chosen
    controls["slow_batch"].value = 1
    assert not controls["slow_ms"].disabled
    controls["batches"].value = 3
    assert controls["slow_batch"].max == 2
    controls["device"].value = "gpu"
    if not __import__("torch").cuda.is_available():
        assert not controls["bandwidth_gbps"].disabled
    widget.run()
    assert widget.trace is not first and "settings changed" not in widget.status.value
    assert widget.trace.info["config"]["num_workers"] == 0
    assert widget.trace.info["config"]["slow_batch"] == 1
    assert lanes(widget.figure.value) == ["main loop", "H2D copy"]
    assert widget.trace.summary()["batches"] == 3


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_book_cells_run_in_a_real_kernel():
    html_cell, widget_cell, check_cell = run_in_kernel(
        "from minidataloader_course.viz import queue_flow_html, queue_flow_widget, record_queue_flow\n"
        "traces = {'in_order=True': record_queue_flow(batches=6, slow_batch=2),\n"
        "          'in_order=False': record_queue_flow(batches=6, slow_batch=2, in_order=False)}\n"
        "queue_flow_html(traces)",
        "w = queue_flow_widget(batches=4, load_ms=1, step_ms=1)\n"
        "w.controls['num_workers'].value = 1\nw.run()\nw",
        "print(w.trace.info['config']['num_workers'], w.trace.summary()['batches'])",
        timeout=180)
    assert "text/html" in html_cell.outputs[0]["data"]
    assert "application/vnd.jupyter.widget-view+json" in widget_cell.outputs[-1]["data"]
    assert check_cell.outputs[0]["text"].strip() == "1 4"
