"""The queue-flow view: a real, traced epoch of minidataloader, batch by batch, lane by lane.

:func:`record_queue_flow` runs one epoch over a synthetic dataset
(:class:`~minidataloader_course.shared.synthetic.FlowDataset`: a set load time per sample, one slow
sample if asked) with a training loop that takes a set time per step, and records it with a
:class:`~minidataloader_course.viz.trace.TraceRecorder`. The view shows that trace three ways:

* a timeline: a lane per worker, the pin thread, the main loop (its steps, and in red
  its waits for data) and, for a GPU, the host-to-device copy;
* the state at one instant, under a time slider: what sits in each index queue, the
  result queue, the pinned batches and the reorder buffer (derived from the events, see
  NOTE [ Where a batch is, from the events ] in trace.py);
* a summary: throughput, how long the training loop waited for data, the largest
  reorder buffer.

A trace of a stateful loader (``minidataloader.stateful``) also has marks: the moment of a
checkpoint (``state_dict()``) and of a resume, each with the batches in flight then (see
``Trace.marks``). The timeline draws them as vertical lines, the state panel says which
came last and what was in flight.

Two faces: :func:`queue_flow_widget` (ipywidgets, JupyterLab: controls, "run" records a new
epoch) and :func:`queue_flow_html` (self-contained HTML for the static book: plays traces
recorded at build time, and switches between them). ``queueflow.js`` holds a twin of
:func:`render_state`; the browser test checks that both give the same HTML.

NOTE [ The GPU lanes: measured or modelled ]
With CUDA, pin_memory=True pins for real and each batch goes to the GPU with
``.to("cuda", non_blocking=True)`` between two CUDA events, whose times are put on the
trace's clock (to within the few microseconds a synchronize takes). Without CUDA, the copy
is modelled, and labelled so everywhere: it takes ``bytes / bandwidth`` and the loop waits
for it (sleeps) as it would wait for its input on the device. Pageable memory (no
pin_memory) first goes through a staging copy on the loop's own thread, done for real here
(the copy the driver makes into its pinned buffer); with pin_memory that copy is the pin
thread's, and without an accelerator the pin thread runs a stand-in that makes the same copy.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections import defaultdict

import torch

from minidataloader_course.viz._html import HTMLFragment, asset, escape, fragment, new_id
from minidataloader_course.viz._settings import check_choice, check_number, merged, plural
from minidataloader_course.viz.explorer import PALETTE
from minidataloader_course.viz.trace import Trace, TraceRecorder, most_at_once

# The reader's controls, in the order they appear, with their starting values.
DEFAULTS = {
    "num_workers": 2, "prefetch_factor": 2, "batch_size": 4, "batches": 16, "load_ms": 5.0,
    "step_ms": 10.0, "in_order": True, "pin_memory": False, "device": "cpu",
    "slow_batch": None, "slow_ms": 100.0, "sample_kb": 64, "bandwidth_gbps": 12.0,
}
LIMITS = {  # (lowest, highest): kept small, so that an epoch records in about a second
    "num_workers": (0, 8), "prefetch_factor": (1, 8), "batch_size": (1, 32), "batches": (1, 64),
    "load_ms": (0, 100), "step_ms": (0, 200), "slow_batch": (0, 63), "slow_ms": (0, 1000),
    "sample_kb": (1, 16384), "bandwidth_gbps": (0.1, 100),
}
DEVICES = ("cpu", "gpu")
LABELS = {
    "num_workers": "num_workers", "prefetch_factor": "prefetch_factor",
    "batch_size": "batch_size", "batches": "batches", "load_ms": "load ms/sample",
    "step_ms": "step ms", "in_order": "in_order", "pin_memory": "pin_memory",
    "device": "device", "slow_batch": "slow batch", "slow_ms": "slow extra ms",
    "sample_kb": "KiB/sample", "bandwidth_gbps": "GB/s (model)",
}


def _config(given: dict) -> dict:
    """The settings, checked: unknown names and out-of-range values say what to change."""
    c = merged(given, DEFAULTS, "queue-flow")
    for name, (low, high) in LIMITS.items():
        if not (name == "slow_batch" and c[name] is None):
            whole = isinstance(DEFAULTS[name], int) or name == "slow_batch"
            check_number(name, c[name], low, high, whole)
    for name in ("in_order", "pin_memory"):
        check_choice(name, c[name], (True, False))
    check_choice("device", c["device"], DEVICES)
    if c["slow_batch"] is not None and c["slow_batch"] >= c["batches"]:
        raise ValueError(f"slow_batch={c['slow_batch']} is not one of the {c['batches']} "
                         f"batches (0 to {c['batches'] - 1}); use None for no slow sample")
    return c


# --------------------------------------------------------------------------- recording

def _copy_like_pinning(batch: torch.Tensor) -> torch.Tensor:
    """What pinning costs without an accelerator: the batch copied into new memory (pinning
    copies it into page-locked memory). The pin thread's stand-in on a CPU-only machine."""
    return batch.clone()


def _nbytes(batch: torch.Tensor) -> int:
    return batch.nelement() * batch.element_size()


def _sleep_until(t_ns: int) -> None:
    left = t_ns - time.monotonic_ns()
    if left > 0:
        time.sleep(left / 1e9)


def record_queue_flow(**settings) -> Trace:
    """Run one real epoch of minidataloader with these settings and return its trace.

    Settings (defaults in ``DEFAULTS``): ``num_workers``, ``prefetch_factor``,
    ``batch_size``, ``batches`` (the epoch's length), ``load_ms`` (per sample, asleep, as
    while reading a file), ``step_ms`` (the training step), ``in_order``, ``pin_memory``,
    ``device`` (``"cpu"`` or ``"gpu"``), ``slow_batch`` (the batch whose first sample takes
    ``slow_ms`` longer; None: none), ``sample_kb`` and ``bandwidth_gbps`` (the modelled
    copy; see NOTE [ The GPU lanes: measured or modelled ]).
    Workers start with fork where there is fork (Linux), so the epoch begins at once."""
    from minidataloader import DataLoader  # the loader, not torch's
    from minidataloader_course.shared.synthetic import FlowDataset

    c = _config(settings)
    workers, gpu, has_cuda = c["num_workers"], c["device"] == "gpu", torch.cuda.is_available()
    cuda = gpu and has_cuda  # the copy is measured
    slow = {} if c["slow_batch"] is None else {c["slow_batch"] * c["batch_size"]: c["slow_ms"] / 1e3}
    dataset = FlowDataset(c["batches"] * c["batch_size"], c["load_ms"] / 1e3, c["sample_kb"], slow)
    pinning = None if not c["pin_memory"] else "page-locked" if has_cuda else "stand-in copy"
    copy = None if not gpu else "measured" if cuda else "modelled"
    recorder = TraceRecorder(config=c, pinning=pinning, copy=copy, cpus=_cpus(),
                             device=torch.cuda.get_device_name() if cuda else None)
    if cuda:  # as a training script does, start CUDA before the epoch (workers never use it)
        torch.cuda.synchronize()
        reference = torch.cuda.Event(enable_timing=True)  # pairs the GPU's clock with ours
        reference.record()
        reference.synchronize()
        reference_ns = time.monotonic_ns()
    with warnings.catch_warnings():
        # The samples sleep: more workers than cores do not compete for them here.
        warnings.filterwarnings("ignore", message="This DataLoader will start", category=UserWarning)
        loader = DataLoader(dataset, batch_size=c["batch_size"], num_workers=workers,
                            prefetch_factor=c["prefetch_factor"] if workers else None,
                            in_order=c["in_order"], pin_memory=c["pin_memory"] and has_cuda,
                            multiprocessing_context="fork" if workers and sys.platform == "linux"
                            else None)
        if c["pin_memory"] and not has_cuda:
            loader._pin_memory_fn = _copy_like_pinning  # the loader's hook for machines without one
        copies = []
        with recorder:
            for batch in loader:
                if cuda:
                    copies.append(_cuda_copy(batch, recorder.last_batch))
                elif gpu:
                    _modelled_copy(recorder, batch, c["pin_memory"], c["bandwidth_gbps"])
                with recorder.step():
                    time.sleep(c["step_ms"] / 1e3)
            for batch_number, start, end, nbytes in copies:  # GPU times onto the trace's clock
                for event, mark in (("copy_start", start), ("copy_end", end)):
                    recorder.add(event, reference_ns + round(reference.elapsed_time(mark) * 1e6),
                                 batch=batch_number, bytes=nbytes, modelled=False,
                                 thread="CUDA stream")
    return recorder.trace


def _cpus() -> int | None:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _cuda_copy(batch, batch_number):
    """Copy ``batch`` to the GPU as a training loop does, between two CUDA events; the step
    that follows needs it there, so wait for it."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    on_device = batch.to("cuda", non_blocking=True)
    end.record()
    end.synchronize()
    del on_device
    return batch_number, start, end, _nbytes(batch)


def _modelled_copy(recorder: TraceRecorder, batch, pinned: bool, bandwidth_gbps: float) -> None:
    """The modelled host-to-device copy (no CUDA here); see
    NOTE [ The GPU lanes: measured or modelled ]."""
    if not pinned:  # pageable memory: first the staging copy, on this thread, for real
        with recorder.span("stage"):
            _copy_like_pinning(batch)
    nbytes = _nbytes(batch)
    start = time.monotonic_ns()
    end = start + round(nbytes / bandwidth_gbps)  # bytes / (GB/s) = ns
    for event, t in (("copy_start", start), ("copy_end", end)):
        recorder.add(event, t, bytes=nbytes, modelled=True, bandwidth_gbps=bandwidth_gbps,
                     thread="H2D copy (modelled)")
    _sleep_until(end)


# --------------------------------------------------------------------------- the view data

MAIN_PLACES = ("step", "stage", "fetch:main", "wait", "finish")  # the main loop's, first wins
MAIN_WORDS = {"step": "training step on", "stage": "staging copy of", "fetch:main": "fetching",
              "wait": "waiting for data; next comes", "finish": "ending the epoch",
              "idle": "between steps"}


def view_data(trace: Trace, epoch: int | None = None, name: str = "") -> dict:
    """What both faces draw from: the spans of one epoch in whole microseconds from its
    start (``[place, batch, start, end]``, rounded up, so that the view at ``t`` shows
    exactly ``trace.queues_at(start + t µs)``), the marks of a stateful loader
    (``[kind, t, yielded, in_flight]``), and which lanes there are. Plain JSON."""
    epoch = trace._epoch(epoch)
    spans = trace.spans(epoch)
    origin = next(r["t_ns"] for r in trace.records
                  if r["event"] == "epoch_start" and r["epoch"] == epoch)
    end = max(s.end_ns for s in spans) if spans else origin

    def us(t_ns: int) -> int:  # rounded up: the view at t shows the trace at origin + t µs
        return -((origin - t_ns) // 1000)

    workers = sorted({int(s.place.split(":")[1]) for s in spans
                      if s.place.split(":")[0] in ("queued", "fetch") and s.place != "fetch:main"})
    return {
        "name": name, "end": us(end), "workers": workers,
        "main_fetch": any(s.place == "fetch:main" for s in spans),
        "pin": any(s.place == "pinning" for s in spans),
        "reorder": any(s.place == "reorder" for s in spans),
        "copy": trace.info.get("copy") if any(s.place == "copy" for s in spans) else None,
        "spans": [[s.place, s.batch, us(s.start_ns), us(s.end_ns)] for s in spans],
        "marks": [[m.kind, us(m.t_ns), m.yielded, list(m.in_flight)] for m in trace.marks(epoch)],
    }


# --------------------------------------------------------------------------- the state at t
# render_state has a twin in queueflow.js that must return the same string: keep them in step.

def places_at(data: dict, t: int) -> dict[str, list[int]]:
    """Place -> batches at time ``t`` (µs from the epoch's start), in order of arrival."""
    here = defaultdict(list)
    for place, batch, start, end in data["spans"]:
        if start <= t < end:
            here[place].append(batch)
    return dict(here)


def _ms(us: int) -> str:
    tenths = (us + 50) // 100  # integers: the JS twin rounds the same way
    return f"{tenths // 10}.{tenths % 10}"


def _chips(batches: list) -> str:
    if not batches:
        return '<span class="mdl-qf-none">–</span>'
    return "".join(f'<span class="mdl-qf-chip" data-batch="{b}" style="background:'
                   f'{PALETTE[b % len(PALETTE)]}">{b}</span>' for b in batches if b is not None)


def _row(name: str, place: str, batches: list, note: str = "") -> str:
    note = f'<span class="mdl-qf-note">{note}</span>' if note else ""
    return (f'<div class="mdl-qf-row"><span class="mdl-qf-name">{name}</span>'
            f'<span class="mdl-qf-items" data-place="{place}">{_chips(batches)}</span>{note}</div>')


def _mark_row(data: dict, t: int) -> str:
    """The last checkpoint or resume at or before ``t``, with the batches then in flight."""
    passed = [mark for mark in data["marks"] if mark[1] <= t]
    if not passed:
        return ('<div class="mdl-qf-row mdl-qf-mark" data-mark="none"><span class="mdl-qf-name">'
                'checkpoint</span><span class="mdl-qf-note">none yet</span></div>')
    kind, at, yielded, flying = passed[-1]
    when = "between epochs" if yielded is None else f"after {yielded} yielded"
    words = ("in flight, fetched again on resume:" if kind == "checkpoint"
             else "dispatched again:")
    return (f'<div class="mdl-qf-row mdl-qf-mark" data-mark="{kind}"><span class="mdl-qf-name">'
            f'{"checkpoint" if kind == "checkpoint" else "resume"}</span><span class="mdl-qf-note">'
            f'at {_ms(at)} ms, {when}; {words}</span><span class="mdl-qf-items">{_chips(flying)}'
            f"</span></div>")


def render_state(data: dict, t: int) -> str:
    """Where every batch is at time ``t`` (µs): the queues and who is busy with what."""
    here = places_at(data, t)
    left = []
    for w in data["workers"]:
        left.append(f'<div class="mdl-qf-row"><span class="mdl-qf-name">worker {w}</span>'
                    f'<span class="mdl-qf-items mdl-qf-queue" data-place="queued:{w}">'
                    f'{_chips(here.get(f"queued:{w}", []))}</span><span class="mdl-qf-arrow">→'
                    f'</span><span class="mdl-qf-items mdl-qf-busy" data-place="fetch:{w}">'
                    f'{_chips(here.get(f"fetch:{w}", []))}</span></div>')
    right = []
    if data["workers"]:
        right.append(_row("result queue", "result", here.get("result", [])))
    if data["pin"]:
        right.append(_row("pin thread", "pinning", here.get("pinning", []), "pinning"))
        right.append(_row("pinned", "pinned", here.get("pinned", []), "waiting for the loop"))
    if data["workers"]:
        right.append(_row("reorder buffer", "reorder", here.get("reorder", [])))
    doing = next((p for p in MAIN_PLACES if here.get(p)), "idle")
    right.append(f'<div class="mdl-qf-row"><span class="mdl-qf-name">main loop</span>'
                 f'<span class="mdl-qf-doing" data-main="{doing}">{MAIN_WORDS[doing]} </span>'
                 f'<span class="mdl-qf-items" data-place="{doing}">{_chips(here.get(doing, []))}'
                 f"</span></div>")
    if data["copy"]:
        right.append(_row("H2D copy", "copy", here.get("copy", []), data["copy"]))
    head = (f'<div class="mdl-qf-clock" data-t="{t}">at <b>{_ms(t)} ms</b> of {_ms(data["end"])} ms'
            f"</div>")
    workers = ("".join(left) if left else
               '<div class="mdl-qf-row mdl-qf-note">no workers: the main loop fetches</div>')
    marks = _mark_row(data, t) if data["marks"] else ""
    return (f'{head}<div class="mdl-qf-columns"><div class="mdl-qf-box"><div class="mdl-qf-head">'
            f'index queue → worker process</div>{workers}</div><div class="mdl-qf-box">'
            f'<div class="mdl-qf-head">main process</div>{"".join(right)}</div></div>{marks}')


# --------------------------------------------------------------------------- the timeline

WIDTH, LABEL_WIDTH, RIGHT = 720, 104, 14  # px; the book column is ~750 wide
PLOT = WIDTH - LABEL_WIDTH - RIGHT
LANE, GAP = 18, 7
WAIT_INK, INK, MUTED = "#cf222e", "#1f2328", "#59636e"  # INK: on the light chips and bars
MARK_INK = "#8250df"  # checkpoints and resumes: legible on light and dark backgrounds
# What is drawn on the view's own background follows its text colour, light or dark theme.
ON_BACKGROUND = 'stroke="currentColor"'
MUTED_TEXT = 'fill="currentColor" fill-opacity="0.7"'
OUTLINES = {"step": f' stroke="{INK}" stroke-width="1"',
            "stage": f' stroke="{INK}" stroke-dasharray="3 2"'}


def _x(t: int, scale: int) -> float:
    return LABEL_WIDTH + t * PLOT / max(scale, 1)


def _bar(place: str, batch, start: int, end: int, y: int, scale: int, title: str,
         height: int = LANE, outline: str = "") -> str:
    x0, x1 = _x(start, scale), _x(end, scale)
    width = max(x1 - x0, 1.0)
    fill = PALETTE[batch % len(PALETTE)] if batch is not None else "#d0d7de"
    parts = [f'<g data-place="{place}"><title>{escape(title)}</title>'
             f'<rect x="{x0:.1f}" y="{y}" width="{width:.1f}" height="{height}" rx="2" '
             f'fill="{fill}"{outline}/>']
    if batch is not None and width >= 8 + 6 * len(str(batch)):
        parts.append(f'<text x="{x0 + width / 2:.1f}" y="{y + height / 2 + 4:.1f}" '
                     f'text-anchor="middle" font-size="11" fill="{INK}">{batch}</text>')
    parts.append("</g>")
    return "".join(parts)


def tick_step(scale: int) -> int:
    """The distance (µs) between two axis ticks: 1, 2 or 5 times a power of ten, at most 10
    steps to ``scale``."""
    step = 1
    while scale / step > 10:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2
    return step


def _ticks(scale: int) -> list[int]:
    """Axis ticks (µs), from 0 to ``scale``, ``tick_step`` apart."""
    return list(range(0, scale + 1, tick_step(scale)))


# NOTE [ A time axis per recording ]
# Each recording is drawn on its own time axis, fitted to its epoch: from 0 to the first
# tick at or after the epoch's end (axis_end). The epoch then fills more than four fifths of
# the width (a tick step is chosen so that the axis has at most ten, and so more than four,
# of them), and the axis ends on a labelled tick. A shared axis drew a 755 ms epoch on a
# 1,200 ms axis, a third of its lanes empty. What a shared axis gave, comparing recordings by
# their lengths, the view gives by numbers instead: each recording's epoch beside its name
# in the picker, in its summary and on its axis's labels. queueflow.js has the twin
# (axisEnd), which places the cursor and turns a click into a time on the axis of the
# recording shown.


def axis_end(end: int) -> int:
    """The time (µs) a recording's axis spans: its epoch's ``end``, up to the next tick
    (NOTE [ A time axis per recording ])."""
    end = max(end, 1)
    step = tick_step(end)
    return -(-end // step) * step


def timeline_svg(data: dict, scale: int | None = None, cursor: int | None = None) -> str:
    """The epoch as lanes over time: fetches in the workers, the pin thread, the main loop
    (steps; in red, its waits for data), the copy to the GPU, and the reorder buffer's
    size. ``scale`` (µs) is the time the width stands for, by default the recording's own
    axis (``axis_end``); ``cursor`` draws the time line the slider moves."""
    scale = max(scale or axis_end(data["end"]), 1)
    svg, height = _timeline(data, scale)
    return svg + ("" if cursor is None else _cursor(cursor, scale, height)) + "</svg>"


def _timeline(data: dict, scale: int) -> tuple[str, int]:
    """The timeline's SVG without its cursor and closing tag, and the height of its lanes."""
    out, y = [], 4
    by_place = defaultdict(list)
    for span in data["spans"]:
        by_place[span[0]].append(span)

    def label(text: str, sub: str = "") -> None:
        out.append(f'<text x="0" y="{y + 13}" class="mdl-lane">{escape(text)}</text>')
        if sub:
            out.append(f'<text x="0" y="{y + 24}" font-size="10" {MUTED_TEXT}>{escape(sub)}</text>')

    for w in data["workers"]:
        label(f"worker {w}")
        for _, b, start, end in by_place[f"fetch:{w}"]:
            out.append(_bar(f"fetch:{w}", b, start, end, y, scale,
                            f"batch {b}: worker {w} loads it, {_ms(start)}–{_ms(end)} ms"))
        y += LANE + GAP
    if data["pin"]:
        label("pin thread")
        for _, b, start, end in by_place["pinning"]:
            out.append(_bar("pinning", b, start, end, y, scale,
                            f"batch {b}: pinned, {_ms(start)}–{_ms(end)} ms"))
        y += LANE + GAP
    label("main loop")
    for place, words in (("fetch:main", "the main loop loads it"), ("stage", "staging copy "
                         "(pageable memory)"), ("step", "training step")):
        outline = OUTLINES.get(place, "")
        for _, b, start, end in by_place[place]:
            out.append(_bar(place, b, start, end, y, scale,
                            f"batch {b}: {words}, {_ms(start)}–{_ms(end)} ms",
                            height=LANE - 5, outline=outline))
    for place, b, start, end in by_place["wait"] + by_place["finish"]:
        x0 = _x(start, scale)
        title = (f"waiting for data ({_ms(end - start)} ms), then batch {b}" if place == "wait"
                 else f"the last next() ends the epoch ({_ms(end - start)} ms)")
        out.append(f'<rect data-place="{place}" x="{x0:.1f}" y="{y + LANE - 3}" '
                   f'width="{max(_x(end, scale) - x0, 1):.1f}" height="4" '
                   f'fill="{WAIT_INK if place == "wait" else MUTED}"><title>{title}</title></rect>')
    y += LANE + GAP
    if data["copy"]:
        label("H2D copy", data["copy"])
        for _, b, start, end in by_place["copy"]:
            out.append(_bar("copy", b, start, end, y, scale,
                            f"batch {b}: copied to the GPU ({data['copy']}), "
                            f"{_ms(start)}–{_ms(end)} ms"))
        y += LANE + GAP + 6
    if data["reorder"]:
        peak = most_at_once((s[2], s[3]) for s in by_place["reorder"])
        label("reorder buffer", f"size (peak {peak})")
        out.append(_occupancy(by_place["reorder"], y, scale, peak))
        y += LANE + 6 + GAP
    top_of_axis = y
    for tick in _ticks(scale):
        x = _x(tick, scale)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{y}" {ON_BACKGROUND} '
                   f'stroke-opacity="0.18"/><text x="{x:.1f}" y="{y + 13}" font-size="10" '
                   f'text-anchor="middle" {MUTED_TEXT}>{_ms(tick).removesuffix(".0")}</text>')
    out.append(f'<text x="{LABEL_WIDTH - 8}" y="{y + 13}" font-size="10" text-anchor="end" '
               f'{MUTED_TEXT}>ms</text>')
    for kind, at, yielded, flying in data["marks"]:
        x = _x(at, scale)
        name = "checkpoint" if kind == "checkpoint" else "resume"
        when = "between epochs" if yielded is None else f"after {yielded} batches yielded"
        title = (f"{name} at {_ms(at)} ms, {when}; in flight: "
                 f"{', '.join(map(str, flying)) or 'none'}")
        out.append(f'<g data-mark="{kind}"><title>{escape(title)}</title><line x1="{x:.1f}" '
                   f'x2="{x:.1f}" y1="0" y2="{top_of_axis}" stroke="{MARK_INK}" stroke-width="2"/>'
                   f'<text x="{x:.1f}" y="{top_of_axis + 25}" font-size="10" text-anchor="middle" '
                   f'fill="{MARK_INK}">{name}</text></g>')
    end_x = _x(data["end"], scale)
    out.append(f'<line x1="{end_x:.1f}" x2="{end_x:.1f}" y1="0" y2="{top_of_axis}" '
               f'{ON_BACKGROUND} stroke-dasharray="2 3"><title>the epoch ends</title></line>')
    legend, y = _legend(y + 36 + 8 * bool(data["marks"]), bool(by_place["stage"]),
                        bool(by_place["finish"]), bool(data["marks"]))
    out.append(legend)
    y += 10
    return (f'<svg class="mdl-qf-svg" viewBox="0 0 {WIDTH} {y}" width="{WIDTH}" height="{y}" '
            f'font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="12" '
            f'fill="currentColor" role="img" aria-label="timeline of one epoch: a lane per '
            f'worker, the pin thread, the main loop">{"".join(out)}', top_of_axis)


def _cursor(t: int, scale: int, height: int) -> str:
    x = _x(t, scale)
    return (f'<line class="mdl-qf-cursor" x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height}" '
            f'{ON_BACKGROUND} stroke-width="1.5"/>')


def _occupancy(spans: list, y: int, scale: int, peak: int) -> str:
    """A step chart of how many batches are in the buffer, the peak at the lane's top."""
    edges = sorted([(s[2], 1) for s in spans] + [(s[3], -1) for s in spans])
    count, peak, points = 0, max(peak, 1), [(LABEL_WIDTH, y + LANE + 4)]
    height = LANE + 4
    for t, change in edges:
        x = _x(t, scale)
        points.append((x, y + LANE + 4 - count * height / peak))
        count += change
        points.append((x, y + LANE + 4 - count * height / peak))
    path = " ".join(f"{x:.1f},{yy:.1f}" for x, yy in points)
    return f'<polyline points="{path}" fill="none" {ON_BACKGROUND} stroke-width="1.2"/>'


def _legend(y: int, staged: bool, finished: bool, marked: bool) -> tuple[str, int]:
    """The key, in rows as wide as the figure; and the baseline of its last row."""
    batch = f'<rect x="0" y="-9" width="19" height="10" rx="2" fill="{PALETTE[1]}"'
    keys = [(f'<rect x="0" y="-9" width="9" height="10" rx="2" fill="{PALETTE[1]}"/>'
             f'<rect x="10" y="-9" width="9" height="10" rx="2" fill="{PALETTE[2]}"/>',
             "a batch: loaded, pinned, copied"),
            (f'{batch}{OUTLINES["step"]}/>', "training step"),
            (f'<rect x="0" y="-4" width="19" height="4" fill="{WAIT_INK}"/>',
             "main loop waits for data")]
    if staged:
        keys.append((f'{batch}{OUTLINES["stage"]}/>', "staging copy"))
    if finished:
        keys.append((f'<rect x="0" y="-4" width="19" height="4" fill="{MUTED}"/>',
                     "the last next(): the epoch ends"))
    if marked:
        keys.append((f'<rect x="9" y="-11" width="2" height="14" fill="{MARK_INK}"/>',
                     "checkpoint, resume"))
    out, x = [], 0
    for icon, words in keys:
        width = 24 + len(words) * 6
        if x and x + width > WIDTH:
            x, y = 0, y + 18
        out.append(f'<g transform="translate({x} {y})">{icon}<text x="24" y="0" '
                   f'font-size="11">{escape(words)}</text></g>')
        x += width + 16
    return "".join(out), y


# --------------------------------------------------------------------------- summary

def summary_rows(trace: Trace, epoch: int | None = None) -> list[tuple[str, str, str]]:
    """(quantity, value, note) rows: the epoch's numbers as the view states them."""
    s = trace.summary(epoch)
    c = trace.info.get("config", {})
    samples = c.get("batch_size", 0) * s["batches"]
    rate = f"{s['batches_per_s']:.1f} batches/s" if s["batches_per_s"] else "–"
    notes = [f"{samples / s['duration_s']:.0f} samples/s" if samples else ""]
    if s["steady_batches_per_s"]:
        notes.append(f"{s['steady_batches_per_s']:.1f} batches/s once the first batch is in")
    rows = [("epoch", f"{s['duration_s'] * 1e3:.0f} ms", f"{plural(s['batches'], 'batch')}"
             + (f", {samples} samples" if samples else "")),
            ("throughput", rate, "; ".join(note for note in notes if note))]
    workers = any(r["lane"].startswith("worker") for r in trace.records)
    starting = any(r["event"] == "worker_start" for r in trace.records)  # not when persistent
    if s["waiting_s"] is not None:
        rows.append(("loop waited for data", f"{s['waiting_s'] * 1e3:.0f} ms",
                     f"{s['waiting_share']:.0%} of the epoch; the first batch took "
                     f"{s['first_batch_s'] * 1e3:.0f} ms" + (" (workers starting)" if starting else "")))
    if workers:
        rows.append(("largest reorder buffer", plural(s["max_reorder"], "batch"),
                     "batches that arrived before their turn" if c.get("in_order", True)
                     else "in_order=False: batches are yielded as they arrive"))
    return rows


def _settings_line(trace: Trace) -> str:
    c, info = trace.info.get("config"), trace.info
    if not c:
        return ""
    parts = [f"num_workers={c['num_workers']}"]
    if c["num_workers"]:
        parts += [f"prefetch_factor={c['prefetch_factor']}", f"in_order={c['in_order']}"]
    parts += [f"batch_size={c['batch_size']}", f"pin_memory={c['pin_memory']}",
              f"{c['load_ms']:g} ms per sample", f"{c['step_ms']:g} ms per step"]
    if c["slow_batch"] is not None:
        parts.append(f"one sample of batch {c['slow_batch']} {c['slow_ms']:g} ms slower")
    line = ", ".join(parts)
    if info.get("copy") == "modelled":
        line += (f". GPU copy modelled, not measured (no CUDA device): "
                 f"{c['sample_kb'] * c['batch_size']} KiB per batch at {c['bandwidth_gbps']:g} GB/s")
    elif info.get("copy") == "measured":
        line += f". GPU copy measured with CUDA events on {info.get('device')}"
    if info.get("pinning") == "stand-in copy":
        line += ". Pinning: a stand-in copy (no accelerator to pin for)"
    return line + "."


def summary_html(trace: Trace, epoch: int | None = None) -> str:
    rows = "".join(f'<tr data-quantity="{escape(q)}"><th>{escape(q)}</th><td class="mdl-value">'
                   f'{escape(v)}</td><td class="mdl-note">{escape(note)}</td></tr>'
                   for q, v, note in summary_rows(trace, epoch))
    line = _settings_line(trace)
    return (f'<table class="mdl-numbers">{rows}</table>'
            + (f'<p class="mdl-qf-settings">{escape(line)}</p>' if line else ""))


# --------------------------------------------------------------------------- the two faces

SPEEDS = (("0.05", "1/20 speed"), ("0.1", "1/10 speed"), ("0.25", "1/4 speed"), ("1", "real time"))


def _start_time(data: dict) -> int:
    """Where the slider starts: at the first checkpoint or resume, if any; otherwise the
    first moment the most batches wait, fetched, for the main loop (in the result queue,
    pinned, in the reorder buffer), or else in queues."""
    if data["marks"]:
        return data["marks"][0][1]
    ready = ("result", "pinned", "reorder")

    def held(t):
        here = places_at(data, t)
        return (sum(len(here.get(p, [])) for p in ready),
                sum(len(v) for p, v in here.items() if p.startswith("queued")))
    return max(sorted({span[2] for span in data["spans"]}), key=held, default=0)


def _icon(path: str) -> str:
    return (f'<svg viewBox="0 0 14 14" width="12" height="12" aria-hidden="true">'
            f'<path d="{path}" fill="currentColor"/></svg>')


def queue_flow_html(traces, *, epoch: int | None = None) -> HTMLFragment:
    """The static face: ``traces`` (a :class:`Trace`, or a dict of label -> Trace to switch
    between) as one self-contained HTML fragment: summary, timeline, and a player (play,
    pause, step from event to event, a time slider) showing the queues at each instant.
    Each timeline has its own time axis, fitted to its epoch; the picker says each
    recording's epoch, to compare them (NOTE [ A time axis per recording ])."""
    if isinstance(traces, Trace):
        traces = {"": traces}
    if not traces or not all(isinstance(t, Trace) for t in traces.values()):
        raise TypeError("queue_flow_html takes a Trace or a dict of label -> Trace "
                        "(record them with record_queue_flow)")
    datas = [view_data(trace, epoch, str(name)) for name, trace in traces.items()]
    start = _start_time(datas[0])
    root_id = new_id("queueflow")
    picker = ""
    if len(datas) > 1:
        picker = '<div class="mdl-qf-configs" role="radiogroup" aria-label="recorded settings">' + "".join(
            f'<label><input type="radio" name="{root_id}-trace" value="{i}"'
            f'{" checked" if i == 0 else ""}> {escape(d["name"])} <span class="mdl-qf-length">'
            f'{d["end"] / 1000:.0f} ms</span></label>'
            for i, d in enumerate(datas)) + "</div>"
    panels = "".join(
        f'<div class="mdl-qf-trace" data-trace="{i}"{"" if i == 0 else " hidden"}>'
        f"{summary_html(trace, epoch)}<div class=\"mdl-qf-figure\">"
        f"{timeline_svg(d, cursor=start if i == 0 else 0)}</div></div>"
        for i, (d, trace) in enumerate(zip(datas, traces.values())))
    speeds = "".join(f'<option value="{v}"{" selected" if v == "0.1" else ""}>{words}</option>'
                     for v, words in SPEEDS)
    player = (
        '<div class="mdl-qf-player">'
        f'<button type="button" data-role="back" title="previous event" '
        f'aria-label="previous event">{_icon("M11 2 4 7l7 5zM2 2h2v10H2z")}</button>'
        '<button type="button" data-role="play" aria-label="play">▶ play</button>'
        f'<button type="button" data-role="forward" title="next event" '
        f'aria-label="next event">{_icon("M3 2l7 5-7 5zM10 2h2v10h-2z")}</button>'
        f'<input type="range" class="mdl-qf-time" min="0" max="{datas[0]["end"]}" step="1" '
        f'value="{start}" aria-label="time in the epoch (µs)">'
        f'<select data-role="speed" aria-label="playback speed">{speeds}</select></div>')
    axes = (" Each recording has its own time axis, fitted to its epoch: compare them by "
            "their lengths beside their names." if len(datas) > 1 else "")
    body = (f"{picker}{panels}{player}"
            f'<div class="mdl-qf-state">{render_state(datas[0], start)}</div>'
            '<p class="mdl-footnote">A real epoch of minidataloader, recorded when this page '
            f"was built; drag the slider or press play to watch the batches move.{axes}</p>")
    return fragment(root_id=root_id, classes="mdl-queueflow", body=body,
                    assets=["queueflow.css", "queueflow.js"], mount="mountQueueFlow",
                    config={"traces": datas, "start": start, "plot": [LABEL_WIDTH, PLOT]})


def queue_flow_figure(trace: Trace, *, epoch: int | None = None, at_ms: float | None = None) -> HTMLFragment:
    """Just the timeline (and the summary) of one trace, as a static figure."""
    data = view_data(trace, epoch)
    cursor = None if at_ms is None else round(at_ms * 1000)
    css = "".join(f"<style>{asset(name)}</style>" for name in ("viz.css", "queueflow.css"))
    return HTMLFragment(f'<div class="mdl-viz mdl-queueflow">{summary_html(trace, epoch)}'
                        f'<div class="mdl-qf-figure">{timeline_svg(data, cursor=cursor)}</div>'
                        f"</div>{css}")


CONTROL_GROUPS = (
    ("Loader", ("num_workers", "prefetch_factor", "batch_size", "batches", "in_order", "pin_memory")),
    ("Time", ("load_ms", "step_ms", "slow_batch", "slow_ms")),
    ("Device", ("device", "sample_kb", "bandwidth_gbps")),
)


def queue_flow_widget(**settings):
    """The live face, for JupyterLab: controls, a "run" button that records a new epoch
    (:func:`record_queue_flow`), its summary and timeline, and a player whose time slider
    shows the queues at each instant. It records one epoch when built.

    Returns an ``ipywidgets.VBox`` with ``.controls`` (setting -> widget), ``.run()``
    (what the button does), ``.trace`` (the last recording), ``.time`` (the slider, in µs),
    ``.figure``, ``.state`` and ``.status`` (HTML widgets)."""
    import ipywidgets as widgets  # imported here: `import minidataloader_course.viz` stays light

    c = _config(settings)
    style, size = {"description_width": "120px"}, {"width": "300px"}
    controls = {}
    for name, value in c.items():
        common = dict(description=LABELS[name], style=style, layout=dict(size))
        if name == "device":
            controls[name] = widgets.Dropdown(options=[("CPU", "cpu"), ("GPU", "gpu")],
                                              value=value, **common)
        elif isinstance(DEFAULTS[name], bool):
            controls[name] = widgets.Checkbox(value=value, indent=True, **common)
        elif name == "slow_batch":  # -1: no slow sample
            controls[name] = widgets.IntSlider(value=-1 if value is None else value, min=-1,
                                               max=c["batches"] - 1, **common)
        elif name in ("sample_kb", "bandwidth_gbps"):
            kind = widgets.BoundedIntText if name == "sample_kb" else widgets.BoundedFloatText
            controls[name] = kind(value=value, min=LIMITS[name][0], max=LIMITS[name][1], **common)
        elif isinstance(DEFAULTS[name], int):
            controls[name] = widgets.IntSlider(value=value, min=LIMITS[name][0],
                                               max=LIMITS[name][1], **common)
        else:
            controls[name] = widgets.FloatSlider(value=value, min=LIMITS[name][0],
                                                 max=LIMITS[name][1], step=0.5, **common)
    button = widgets.Button(description="run one epoch", button_style="primary",
                            icon="play", layout={"width": "160px"})
    status = widgets.HTML()
    figure, state = widgets.HTML(), widgets.HTML()
    time_slider = widgets.IntSlider(value=0, min=0, max=1, description="time (µs)",
                                    style=style, layout={"width": "560px"}, continuous_update=True)
    play = widgets.Play(value=0, min=0, max=1, interval=50, step=1)
    widgets.jslink((play, "value"), (time_slider, "value"))
    css = "".join(f"<style>{asset(name)}</style>" for name in ("viz.css", "queueflow.css"))
    shown = {"data": None, "svg": ("", 0), "config": None}

    def current() -> dict:
        values = {name: control.value for name, control in controls.items()}
        values["slow_batch"] = None if values["slow_batch"] < 0 else values["slow_batch"]
        return values

    def on_change(_change=None):
        values = {name: control.value for name, control in controls.items()}
        controls["slow_batch"].max = values["batches"] - 1
        controls["prefetch_factor"].disabled = values["num_workers"] == 0
        controls["in_order"].disabled = values["num_workers"] == 0
        controls["slow_ms"].disabled = values["slow_batch"] < 0
        gpu = values["device"] == "gpu"
        controls["bandwidth_gbps"].disabled = not gpu or torch.cuda.is_available()  # measured
        if shown["config"] is not None and current() != shown["config"]:
            status.value = '<span class="mdl-muted">settings changed: press <b>run one epoch</b></span>'

    def draw_time(_change=None):
        data = shown["data"]
        if data is None:
            return
        t = min(time_slider.value, data["end"])
        svg, height = shown["svg"]
        figure.value = (f'{css}<div class="mdl-viz mdl-queueflow">{shown["summary"]}'
                        f'<div class="mdl-qf-figure">{svg}{_cursor(t, axis_end(data["end"]), height)}'
                        f"</svg></div></div>")
        state.value = f'{css}<div class="mdl-viz mdl-queueflow"><div class="mdl-qf-state">' \
                      f"{render_state(data, t)}</div></div>"

    def run(_button=None):
        config = current()
        button.disabled = True
        status.value = '<span class="mdl-muted">recording one epoch…</span>'
        try:
            trace = record_queue_flow(**config)
        except Exception as error:  # a bad combination: say it where the reader looks
            status.value = f'<span style="color:{WAIT_INK}">{escape(str(error))}</span>'
            return
        finally:
            button.disabled = False
        data = view_data(trace)
        shown.update(data=data, svg=_timeline(data, axis_end(data["end"])), config=config,
                     summary=summary_html(trace))
        box.trace = trace
        status.value = (f'<span class="mdl-muted">recorded {len(trace.records)} events; drag '
                        "the time slider or press ▶</span>")
        start = _start_time(data)
        for widget in (time_slider, play):
            widget.max = max(data["end"], 1)
        play.step = max(data["end"] // 200, 1)
        time_slider.value = start
        draw_time()

    for control in controls.values():
        control.observe(on_change, names="value")
    time_slider.observe(draw_time, names="value")
    button.on_click(run)
    groups = [widgets.VBox([widgets.HTML(f"<b>{legend}</b>"), *(controls[n] for n in names)])
              for legend, names in CONTROL_GROUPS]
    grid = widgets.GridBox(groups, layout={"grid_template_columns": "repeat(auto-fill, 310px)",
                                           "grid_gap": "4px 12px"})
    box = widgets.VBox([grid, widgets.HBox([button, status]), figure,
                        widgets.HBox([play, time_slider]), state])
    box.controls, box.figure, box.state, box.status, box.time, box.play = (
        controls, figure, state, status, time_slider, play)
    box.trace, box.run = None, run
    on_change()
    run()
    return box

