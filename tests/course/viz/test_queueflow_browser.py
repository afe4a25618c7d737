"""The queue-flow view's static face in headless Chromium, on real recorded epochs: its
JavaScript draws the same state as Python at every instant, the slider shows what
trace.queues_at computes from the events, play advances and pause stops, the step buttons
go from event to event, clicking the timeline seeks, switching the recorded settings
switches everything, and nothing leaves the machine."""

from __future__ import annotations

import pathlib
import random

import pytest

from minidataloader_course.viz import queue_flow_html, record_queue_flow
from minidataloader_course.viz.queueflow import (
    LABEL_WIDTH,
    MAIN_PLACES,
    PLOT,
    axis_end,
    render_state,
    tick_step,
    view_data,
)

from ._runs import luminance

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]
SCREENSHOTS = pathlib.Path(__file__).resolve().parents[3] / "_build" / "screenshots"
SLOW = dict(batches=12, batch_size=2, load_ms=2.0, step_ms=4.0, slow_batch=2, slow_ms=150.0)


@pytest.fixture(scope="module")
def traces():
    return {
        "in_order=True": record_queue_flow(**SLOW),
        "in_order=False": record_queue_flow(**SLOW, in_order=False),
        "GPU, pin_memory, 4 workers": record_queue_flow(
            batches=12, batch_size=4, load_ms=3.0, step_ms=5.0, num_workers=4,
            pin_memory=True, device="gpu", sample_kb=1024, bandwidth_gbps=2.0),
    }


@pytest.fixture(scope="module")
def datas(traces):
    return [view_data(trace, name=name) for name, trace in traces.items()]


def open_view(page, folder, fragment):
    path = folder / "queueflow.html"
    path.write_text('<!doctype html><html><head><meta charset="utf-8"><title>queue flow</title>'
                    '</head><body style="max-width: 750px; margin: 16px auto">' + fragment
                    + "</body></html>", encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_function("() => document.querySelector('.mdl-queueflow[data-mounted]')")
    return page


@pytest.fixture
def view(page, tmp_path, traces):
    return open_view(page, tmp_path, queue_flow_html(traces))


def shown(page) -> dict[str, list[int]]:
    """The state panel as the reader sees it: place -> batch numbers (the main loop's
    element is named after what the loop does)."""
    return page.evaluate("""() => Object.fromEntries(Array.from(
        document.querySelectorAll('.mdl-qf-state [data-place]'),
        (el) => [el.dataset.place, Array.from(el.querySelectorAll('[data-batch]'),
                                               (chip) => Number(chip.dataset.batch))]))""")


def now(page) -> int:
    return int(page.evaluate("() => document.querySelector('.mdl-queueflow').dataset.t"))


def slide_to(page, t: int) -> None:
    page.evaluate("""(t) => { const s = document.querySelector('.mdl-qf-time');
                     s.value = String(t); s.dispatchEvent(new Event('input', {bubbles: true})); }""", t)


def assert_shows_the_trace(page, trace, t: int) -> None:
    """What the page shows at t equals Python's queues at that instant, from the events."""
    origin = next(r["t_ns"] for r in trace.records if r["event"] == "epoch_start")
    expected = trace.queues_at(origin + t * 1000)
    on_page = shown(page)
    for place, batches in on_page.items():
        if place == "idle":
            assert not any(expected.get(p) for p in MAIN_PLACES), (t, expected)
        else:  # (the epoch's finish has no batch)
            assert batches == [b for b in expected.get(place, []) if b is not None], (t, place)
    main_place = next(p for p in on_page if p in (*MAIN_PLACES, "idle"))
    for place in expected:  # only the main loop's lesser activities go unlisted
        assert place in on_page or (place in MAIN_PLACES and MAIN_PLACES.index(place) >
                                    MAIN_PLACES.index(main_place)), (t, place)


def change_times(data) -> list[int]:
    return sorted({0, data["end"]} | {s[2] for s in data["spans"]} | {s[3] for s in data["spans"]})


# --------------------------------------------------------------------------- tests

def test_javascript_state_equals_python(view, datas):
    rng = random.Random(5)
    for data in datas:
        times = change_times(data)
        cases = sorted(set(times + [t + 1 for t in times] + [max(t - 1, 0) for t in times]
                           + [rng.randint(0, data["end"]) for _ in range(50)]))
        got = view.evaluate("([data, times]) => times.map((t) => "
                            "window.minidataloader.viz.queueflow.renderState(data, t))", [data, cases])
        for t, html in zip(cases, got):
            assert html == render_state(data, t), (data["name"], t)
    view.watch.assert_clean()


def test_the_slider_shows_the_queues_of_that_instant(view, traces, datas):
    trace, data = traces["in_order=True"], datas[0]
    interesting = [s[2] for s in data["spans"] if s[0] in ("reorder", "result", "queued:1")]
    finish = next(s[2] for s in data["spans"] if s[0] == "finish")
    for t in [0, *interesting[:12], data["end"] // 2, finish, data["end"]]:
        slide_to(view, t)
        assert now(view) == t
        assert_shows_the_trace(view, trace, t)
        clock = view.locator(".mdl-qf-clock b").inner_text()
        assert clock == f"{(t + 50) // 100 // 10}.{(t + 50) // 100 % 10} ms"
        cursor = float(view.locator(".mdl-qf-trace:not([hidden]) .mdl-qf-cursor").get_attribute("x1"))
        assert cursor == pytest.approx(LABEL_WIDTH + t * PLOT / axis_end(data["end"]), abs=0.06)
    reorder_times = [s[2] for s in data["spans"] if s[0] == "reorder"]
    slide_to(view, reorder_times[0])  # the slow batch holds the others in the buffer
    assert shown(view)["reorder"]
    slide_to(view, finish)
    assert view.locator("[data-main]").get_attribute("data-main") == "finish"
    view.watch.assert_clean()


def test_play_advances_and_pause_stops(view, datas):
    slide_to(view, 0)
    view.get_by_role("button", name="play").click()
    view.wait_for_function("() => Number(document.querySelector('.mdl-queueflow').dataset.t) > 2000")
    assert view.get_by_role("button", name="pause").inner_text().endswith("pause")
    before_state = view.locator(".mdl-qf-state").inner_html()
    view.wait_for_function("() => Number(document.querySelector('.mdl-queueflow').dataset.t) > 6000")
    assert view.locator(".mdl-qf-state").inner_html() != before_state  # the clock moved, at least
    view.get_by_role("button", name="pause").click()
    stopped = now(view)
    view.wait_for_timeout(300)
    assert now(view) == stopped and int(view.locator(".mdl-qf-time").input_value()) == stopped
    # at the end, play starts again from the beginning, and stops at the end
    view.locator("select[data-role=speed]").select_option("1")
    slide_to(view, datas[0]["end"])
    view.get_by_role("button", name="play").click()
    view.wait_for_function(f"() => Number(document.querySelector('.mdl-queueflow').dataset.t) "
                           f">= {datas[0]['end']} && document.querySelector('[data-role=play]')"
                           f".textContent.includes('play')", timeout=15_000)
    view.watch.assert_clean()


def test_step_buttons_go_from_event_to_event(view, datas):
    times = change_times(datas[0])
    slide_to(view, 0)
    forward = view.get_by_role("button", name="next event")
    for expected in times[1:6]:
        forward.click()
        assert now(view) == expected
    view.get_by_role("button", name="previous event").click()
    assert now(view) == times[4]
    view.locator(".mdl-qf-time").press("ArrowRight")  # arrows step the same way
    assert now(view) == times[5]
    view.watch.assert_clean()


def test_switching_the_recorded_settings(view, traces, datas):
    slide_to(view, 30_000)
    view.get_by_label("GPU, pin_memory, 4 workers").check()
    assert view.locator(".mdl-qf-trace").nth(0).is_hidden()
    assert view.locator(".mdl-qf-trace").nth(2).is_visible()
    gpu = datas[2]
    assert int(view.locator(".mdl-qf-time").get_attribute("max")) == gpu["end"]
    t = min(30_000, gpu["end"])
    assert now(view) == t
    assert_shows_the_trace(view, traces["GPU, pin_memory, 4 workers"], t)
    places = shown(view)
    assert {"queued:3", "pinning", "pinned", "copy"} <= set(places)
    figure = view.locator(".mdl-qf-trace").nth(2)
    assert "modelled, not measured" in figure.inner_text()
    assert figure.locator("text.mdl-lane").all_text_contents()[:7] == [
        "worker 0", "worker 1", "worker 2", "worker 3", "pin thread", "main loop", "H2D copy"]
    view.get_by_label("in_order=False").check()
    slide_to(view, 12_345)
    assert_shows_the_trace(view, traces["in_order=False"], 12_345)
    assert "reorder" not in {p for p, b in shown(view).items() if b}
    view.watch.assert_clean()


def test_clicking_the_timeline_goes_to_that_moment(view, datas):
    svg = view.locator(".mdl-qf-trace:not([hidden]) svg")
    box = svg.bounding_box()
    scale = axis_end(datas[0]["end"])  # the axis of the recording shown
    svg.click(position={"x": box["width"] * (LABEL_WIDTH + PLOT / 2) / 720, "y": 10})
    assert now(view) == pytest.approx(scale // 2, abs=scale / 300)
    view.get_by_label("GPU, pin_memory, 4 workers").check()  # another recording, its axis
    svg = view.locator(".mdl-qf-trace:not([hidden]) svg")
    scale = axis_end(datas[2]["end"])
    svg.click(position={"x": box["width"] * (LABEL_WIDTH + PLOT / 4) / 720, "y": 10})
    assert now(view) == pytest.approx(scale // 4, abs=scale / 300)
    cursor = float(view.locator(".mdl-qf-trace:not([hidden]) .mdl-qf-cursor").get_attribute("x1"))
    assert cursor == pytest.approx(LABEL_WIDTH + now(view) * PLOT / scale, abs=0.06)
    view.watch.assert_clean()


def test_javascript_axis_equals_python(view):
    """The twin of axis_end and tick_step, over a grid of epoch lengths (µs)."""
    ends = sorted({round(1.13 ** k) for k in range(150)} | {10 ** k + 1 for k in range(8)}
                  | {201, 2_001, 755_000})
    got = view.evaluate("(ends) => ends.map((end) => [window.minidataloader.viz.queueflow"
                        ".axisEnd(end), window.minidataloader.viz.queueflow.tickStep(end)])",
                        ends)
    assert got == [[axis_end(end), tick_step(end)] for end in ends]
    view.watch.assert_clean()


def test_dark_theme(page, tmp_path, traces):
    """Under the book's dark theme the view is a dark panel, and what it draws on its own
    background (the time cursor, the end of the epoch, the axis) turns light with the text;
    the batches keep their colours. A picture goes to _build/screenshots/."""
    fragment = queue_flow_html(traces)
    path = tmp_path / "dark.html"
    path.write_text('<!doctype html><html data-theme="dark"><head><meta charset="utf-8">'
                    '<title>dark</title></head><body style="background:#121212; max-width: '
                    f'750px; margin: 16px auto">{fragment}</body></html>', encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_function("() => document.querySelector('.mdl-queueflow[data-mounted]')")
    colours = page.evaluate("""() => {
        const view = document.querySelector('.mdl-queueflow');
        const svg = view.querySelector('.mdl-qf-trace:not([hidden]) svg');
        return {background: getComputedStyle(view).backgroundColor,
                text: getComputedStyle(view).color,
                cursor: getComputedStyle(svg.querySelector('.mdl-qf-cursor')).stroke,
                batch: svg.querySelector('g[data-place] rect').getAttribute('fill')};
    }""")
    assert luminance(colours["background"]) < 0.1, colours
    assert luminance(colours["text"]) > 0.8 and luminance(colours["cursor"]) > 0.8, colours
    assert colours["batch"].startswith("#")  # a light fill of its own, as in the light theme
    page.screenshot(path=str(SCREENSHOTS / "queue_flow_dark.png"), full_page=True)
    page.watch.assert_clean()


def test_screenshot(page, tmp_path):
    """Pictures for people: the view at book width, CPU and GPU settings as chapters 6 and 9
    would show them."""
    page.set_viewport_size({"width": 800, "height": 900})
    traces = {"in_order=True": record_queue_flow(slow_batch=3),
              "in_order=False": record_queue_flow(slow_batch=3, in_order=False),
              "GPU, pin_memory": record_queue_flow(device="gpu", pin_memory=True, sample_kb=2048,
                                                   bandwidth_gbps=4.0),
              "GPU, pageable": record_queue_flow(device="gpu", sample_kb=2048, bandwidth_gbps=4.0)}
    open_view(page, tmp_path, queue_flow_html(traces))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "queue_flow.png"), full_page=True)
    page.get_by_label("GPU, pin_memory").check()
    page.screenshot(path=str(SCREENSHOTS / "queue_flow_gpu.png"), full_page=True)
    for name in ("queue_flow.png", "queue_flow_gpu.png"):
        assert (SCREENSHOTS / name).stat().st_size > 10_000
    page.watch.assert_clean()


def test_a_checkpoint_and_a_resume(page, tmp_path):
    """A stateful loader's marks: the JavaScript says what Python says at every instant
    around them, the slider starts at the checkpoint, the step buttons stop at it, and the
    resumed run shows its resume. A picture goes to _build/screenshots/."""
    from minidataloader_course.chapters.ch14.resume import record_checkpoint_resume

    traces = record_checkpoint_resume(checkpoint_after=5, stopped_after=8)
    datas = [view_data(trace, name=name) for name, trace in traces.items()]
    view = open_view(page, tmp_path, queue_flow_html(traces))
    stopped = datas[0]
    at = stopped["marks"][0][1]
    assert now(view) == at
    row = view.locator(".mdl-qf-state [data-mark]")
    assert row.get_attribute("data-mark") == "checkpoint"
    assert [int(b) for b in row.locator("[data-batch]").evaluate_all(
        "(chips) => chips.map((chip) => chip.dataset.batch)")] == stopped["marks"][0][3]
    for data in datas:
        times = sorted({mark[1] + d for mark in data["marks"] for d in (-1, 0, 1)} | {0, data["end"]}
                       | set(change_times(data)[:40]))
        got = view.evaluate("([data, times]) => times.map((t) => "
                            "window.minidataloader.viz.queueflow.renderState(data, t))", [data, times])
        for t, html in zip(times, got):
            assert html == render_state(data, t), (data["name"], t)
    slide_to(view, at - 1)
    assert row.get_attribute("data-mark") == "none"
    view.get_by_role("button", name="next event").click()
    assert now(view) == at and row.get_attribute("data-mark") == "checkpoint"
    view.get_by_label(datas[1]["name"]).check()
    slide_to(view, datas[1]["end"])
    assert row.get_attribute("data-mark") == "restore"
    assert view.locator(".mdl-qf-trace:not([hidden]) g[data-mark=restore]").count() == 1
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    view.get_by_label(datas[0]["name"]).check()
    slide_to(view, at)
    view.screenshot(path=str(SCREENSHOTS / "queue_flow_checkpoint.png"), full_page=True)
    view.watch.assert_clean()
