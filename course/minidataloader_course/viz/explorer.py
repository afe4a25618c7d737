"""The epoch-arithmetic explorer: which sample lands in which batch, and what is left over.

Two faces, one drawing:

* :func:`epoch_explorer_widget` — ipywidgets controls in JupyterLab; every change reruns
  :func:`epoch_layout` in the kernel (the shuffled order comes from ``torch.randperm``, as
  the real samplers draw it) and redraws.
* :func:`epoch_explorer_html` — a self-contained HTML fragment for the static book. Its
  script (``explorer.js``) carries ports of :func:`~minidataloader_course.viz.arithmetic.epoch_arithmetic`,
  of ``torch.randperm`` (the Mersenne Twister torch's CPU generator uses) and of
  :func:`epoch_layout` and :func:`render_view`, so it recomputes and redraws as the reader
  moves the controls, with the very orders torch gives. Tests run both ports against the
  Python originals.

Both faces draw the output of :func:`render_view`: the numbers, an SVG of the epoch, and
the torch code that produces it.

    controls ──► params ──► epoch_layout ──► render_view ──► HTML (numbers, SVG, code)
                  │            (kernel: Python + torch;   static page: the JS ports)
                  └─ effective_params: iterable ⇒ no shuffle, one replica
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

from minidataloader_course.viz._html import HTMLFragment, asset, escape, fragment, new_id
from minidataloader_course.viz._settings import check_choice, check_number, merged, plural
from minidataloader_course.viz.arithmetic import (
    SHARDINGS,
    EpochArithmetic,
    epoch_arithmetic,
    worker_shard,
)

# The reader's controls, in the order they appear, with their starting values.
DEFAULTS = {
    "dataset_size": 10, "batch_size": 3, "drop_last": False, "epochs": 1, "shuffle": False,
    "seed": 0, "show_epoch": 1, "replicas": 1, "sampler_drop_last": False, "iterable": False,
    "num_workers": 0, "sharding": "stride",
}
LIMITS = {  # (lowest, highest) a control offers; the functions themselves accept more
    "dataset_size": (1, 2000), "batch_size": (1, 256), "epochs": (1, 20), "seed": (0, 2**31 - 1),
    "show_epoch": (1, 20), "replicas": (1, 8), "num_workers": (0, 8),
}
MAX_DRAWN_SLOTS = 4000  # beyond this the cells would be specks: show the numbers only


# --------------------------------------------------------------------------- the model

@dataclass(frozen=True)
class Slot:
    index: int  # the dataset index
    step: int | None  # which batch of the epoch (0-based, in arrival order); None if dropped
    padded: bool = False  # a repeat that DistributedSampler added


@dataclass(frozen=True)
class Lane:
    label: str  # "loader", "rank 2", "worker 1"
    slots: tuple[Slot, ...]  # in the order this rank or worker handles them


@dataclass(frozen=True)
class EpochLayout:
    arithmetic: EpochArithmetic
    lanes: tuple[Lane, ...]
    epoch: int  # 0-based, as sampler.set_epoch counts


def epoch_order(dataset_size: int, *, shuffle: bool = False, seed: int = 0, epoch: int = 0,
                replicas: int = 1) -> list[int]:
    """The order the sampler visits the dataset in epoch ``epoch`` (0-based, every earlier
    epoch iterated to its end), drawn as torch draws it for
    ``DataLoader(shuffle=True, generator=torch.Generator().manual_seed(seed))``, or with
    replicas for ``DistributedSampler(shuffle=True, seed=seed)`` after
    ``sampler.set_epoch(epoch)``."""
    if not shuffle or dataset_size == 0:
        return list(range(dataset_size))
    if replicas > 1:
        generator = torch.Generator().manual_seed(seed + epoch)
        return torch.randperm(dataset_size, generator=generator).tolist()
    # Every epoch draws three times from the loader's generator: the iterator's base seed
    # for its workers, RandomSampler's permutation, and, when the epoch runs to its end, a
    # second permutation RandomSampler draws for the last `num_samples % n` (here 0) samples.
    generator = torch.Generator().manual_seed(seed)
    for _ in range(epoch + 1):
        torch.empty((), dtype=torch.int64).random_(generator=generator)
        order = torch.randperm(dataset_size, generator=generator).tolist()
        torch.randperm(dataset_size, generator=generator)
    return order


def _batched(indices, batch_size: int, drop_last: bool, steps: list[int],
             padded_from: int | None = None) -> list[Slot]:
    """Slots for one stream: slot i is in the stream's batch i // batch_size, which is the
    epoch's step ``steps[i // batch_size]``; an incomplete batch under drop_last is dropped."""
    kept = len(indices) // batch_size * batch_size if drop_last else len(indices)
    return [Slot(index, steps[i // batch_size] if i < kept else None,
                 padded_from is not None and i >= padded_from)
            for i, index in enumerate(indices)]


def epoch_layout(dataset_size: int, batch_size: int, drop_last: bool = False, *,
                 replicas: int = 1, sampler_drop_last: bool = False, shuffle: bool = False,
                 seed: int = 0, iterable: bool = False, num_workers: int = 0,
                 sharding: str = "stride", epoch: int = 0) -> EpochLayout:
    """Every sample of one epoch, placed: which rank or worker handles it, in which batch
    (counted in the order the training loop receives them), padded or dropped."""
    if iterable and shuffle:
        raise ValueError("the loader cannot shuffle an IterableDataset (torch raises "
                         "ValueError): shuffle inside its __iter__, or use shuffle=False")
    a = epoch_arithmetic(dataset_size, batch_size, drop_last, replicas=replicas,
                         sampler_drop_last=sampler_drop_last, iterable=iterable,
                         num_workers=num_workers, sharding=sharding)
    if iterable:
        shards = ([range(dataset_size)] if num_workers == 0 else
                  [worker_shard(dataset_size, w, num_workers, sharding) for w in range(num_workers)])
        # the loader takes one batch from each worker in turn; a worker that ran dry is skipped
        counts = [len(shard) // batch_size if drop_last else -(-len(shard) // batch_size)
                  for shard in shards]
        arrivals: list[list[int]] = [[] for _ in shards]  # per worker: its batches' steps
        step = 0
        for turn in range(max(counts, default=0)):
            for w, count in enumerate(counts):
                if turn < count:
                    arrivals[w].append(step)
                    step += 1
        labels = ["loader"] if num_workers == 0 else [f"worker {w}" for w in range(num_workers)]
        lanes = [Lane(label, tuple(_batched(shard, batch_size, drop_last, steps)))
                 for label, shard, steps in zip(labels, shards, arrivals)]
        return EpochLayout(a, tuple(lanes), epoch)

    order = epoch_order(dataset_size, shuffle=shuffle, seed=seed, epoch=epoch, replicas=replicas)
    steps = list(range(a.iterations_per_epoch))  # one rank's batches, in order
    if replicas == 1:
        return EpochLayout(a, (Lane("loader", tuple(_batched(order, batch_size, drop_last, steps))),),
                           epoch)
    # DistributedSampler: pad the order by cycling through it (or cut its tail) to R equal
    # shares, then deal position p to rank p % R. Cut samples are drawn where they would
    # have gone, marked dropped.
    total = a.samples_per_stream[0] * replicas
    lanes = []
    for rank in range(replicas):
        positions = range(rank, total, replicas)
        indices = [order[p % dataset_size] for p in positions]
        first_padded = sum(1 for p in positions if p < dataset_size)
        slots = _batched(indices, batch_size, drop_last, steps, first_padded)
        slots += [Slot(order[p], None) for p in range(total + rank, dataset_size, replicas)]
        lanes.append(Lane(f"rank {rank}", tuple(slots)))
    return EpochLayout(a, tuple(lanes), epoch)


# --------------------------------------------------------------------------- the view
# Every function below has a twin in explorer.js that must produce the same string
# (tests/course/viz/test_explorer_browser.py compares them): keep the two in step.

PALETTE = ("#8ecae6", "#ffb570", "#9bd38f", "#f4a3a8", "#c9b3e6",
           "#e6cf7a", "#8fd6cf", "#f7b6d9", "#b8c480", "#d7b49e")
INK, DROPPED_FILL, DROPPED_INK = "#1f2328", "#eceff3", "#8c959f"
WIDTH, LABEL_WIDTH, GRID_AREA_HEIGHT = 640, 72, 300  # px; the book column is ~650 wide
LEGEND = (("tick", "start of a batch"), ("dashed", "padded repeat (DistributedSampler)"),
          ("dropped", "dropped"), ("corner", "delivered more than once"))
SHARDING_WORDS = {
    "stride": "worker w reads samples w, w + W, w + 2W, ...",
    "blocks": "worker w reads one contiguous block of ceil(N / W) samples",
    "none": "not sharded: every worker reads the whole dataset",
}


def effective_params(params: dict) -> dict:
    """What the controls mean together: an IterableDataset is never shuffled by the loader
    and has no DistributedSampler; show_epoch stays within the epochs."""
    p = {**DEFAULTS, **params}
    if p["iterable"]:
        p.update(shuffle=False, replicas=1)
    if p["replicas"] == 1:
        p["sampler_drop_last"] = False
    p["show_epoch"] = max(1, min(p["show_epoch"], p["epochs"]))
    return p


def _numbers(a: EpochArithmetic) -> list[tuple[str, str, str]]:
    """(quantity, value, explanation) rows for the numbers table."""
    rank = " (each rank)" if a.replicas > 1 else ""
    full = a.iterations_per_epoch - len(a.partial_batches)
    parts = [f"{plural(full, 'full batch', 'full batches')} of {a.batch_size}"]
    if len(a.partial_batches) == 1:
        parts.append(f"1 partial batch of {a.partial_batches[0]}")
    elif a.partial_batches:
        sizes = ", ".join(str(size) for size in a.partial_batches)
        parts.append(f"{len(a.partial_batches)} partial batches ({sizes}), one per worker that ends short")
    if a.drop_last and any(n % a.batch_size for n in a.samples_per_stream):
        parts.append("incomplete batches dropped" if a.iterable and a.num_workers
                     else "the incomplete batch dropped")
    rows = [(f"iterations per epoch{rank}", str(a.iterations_per_epoch), ", ".join(parts)),
            ("last batch", plural(a.last_batch_size, "sample"),
             "" if a.last_batch_size in (0, a.batch_size) else "smaller than batch_size")]
    if a.replicas > 1:
        rule = "floor" if a.sampler_drop_last else "ceil"
        rows.append(("samples per rank", str(a.samples_per_stream[0]),
                     f"{rule}({a.dataset_size} / {a.replicas}), the same on every rank"))
    if a.iterable and a.num_workers:
        rows.append(("samples per worker", ", ".join(str(n) for n in a.samples_per_stream),
                     SHARDING_WORDS[a.sharding]))
    rows.append(("dropped per epoch", plural(a.samples_dropped, "sample"),
                 "not in any batch this epoch" if a.samples_dropped else ""))
    if a.replicas > 1 and not a.sampler_drop_last:
        rows.append(("padded per epoch", plural(a.samples_padded, "sample"),
                     "repeats of the first samples in the order, so that every rank gets as many"
                     if a.samples_padded else ""))
    if a.samples_duplicated:
        rows.append(("duplicated per epoch", plural(a.samples_duplicated, "sample"),
                     f"every sample arrives {a.num_workers} times"))
    if not a.len_is_estimate:
        note = "exact: the sampler's length divided into batches"
    else:
        off = a.reported_len - a.iterations_per_epoch
        note = "an estimate: len(dataset) / batch_size, blind to the workers; " + (
            "right here" if off == 0 else
            f"here the epoch has {plural(abs(off), 'batch', 'batches')} "
            + ("more" if off < 0 else "fewer"))
        if a.len_warning:
            note += "; torch warns mid-epoch if len() was called"
    rows.append(("len(loader)", str(a.reported_len), note))
    rows.append((f"iterations in {plural(a.epochs, 'epoch')}", str(a.total_iterations),
                 f"{a.iterations_per_epoch} × {a.epochs}"))
    return rows


def _code(p: dict) -> str:
    """The torch code whose epoch the view shows."""
    args = f"batch_size={p['batch_size']}"
    workers = f", num_workers={p['num_workers']}" if p["num_workers"] else ""
    drop = f", drop_last={p['drop_last']}"
    if p["iterable"]:
        w = p["num_workers"]
        lines = [f"loader = DataLoader(stream, {args}{workers}{drop})"]
        if w and p["sharding"] == "none":
            lines.append(f"# stream.__iter__ ignores get_worker_info(): all {w} workers yield every sample")
        elif w and p["sharding"] == "stride":
            lines.append(f"# in worker i, stream.__iter__ yields samples i, i + {w}, i + {2 * w}, ...")
        elif w:
            lines.append(f"# in worker i, stream.__iter__ yields block i of ceil(len / {w}) samples")
        return "\n".join(lines)
    if p["replicas"] > 1:
        return (f"sampler = DistributedSampler(dataset, num_replicas={p['replicas']}, rank=rank,\n"
                f"                             shuffle={p['shuffle']}, seed={p['seed']}, "
                f"drop_last={p['sampler_drop_last']})\n"
                f"loader = DataLoader(dataset, {args}, sampler=sampler{workers}{drop})\n"
                f"sampler.set_epoch({p['show_epoch'] - 1})  # before epoch {p['show_epoch']}")
    if p["shuffle"]:
        return (f"loader = DataLoader(dataset, {args}, shuffle=True{workers}{drop},\n"
                f"                    generator=torch.Generator().manual_seed({p['seed']}))")
    return f"loader = DataLoader(dataset, {args}{workers}{drop})"


def _text(x: int, y: int, body: str, cls: str = "", extra: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<text x="{x}" y="{y}"{klass}{extra}>{body}</text>'


def _cell(x: int, y: int, s: int, fill: str, label: str, title: str, *, dashed: bool = False,
          dropped: bool = False, tick: bool = False, corner: bool = False) -> str:
    """One sample: a square, maybe a number, and the marks that explain it."""
    d = s - 2
    stroke = (f' stroke="{INK}" stroke-width="1.5" stroke-dasharray="3 2"' if dashed else
              f' stroke="{DROPPED_INK}"' if dropped else "")
    parts = [f'<g><title>{escape(title)}</title>',
             f'<rect x="{x + 1}" y="{y + 1}" width="{d}" height="{d}" rx="2" fill="{fill}"{stroke}/>']
    if dropped:
        parts.append(f'<path d="M{x + 3} {y + 3}L{x + s - 3} {y + s - 3}" stroke="{DROPPED_INK}"/>')
    if tick:
        parts.append(f'<rect x="{x}" y="{y + 1}" width="2" height="{d}" fill="{INK}"/>')
    if corner:
        parts.append(f'<path d="M{x + s - 8} {y + 1}H{x + s - 1}V{y + 8}Z" fill="{INK}"/>')
    size = 11 if s >= 26 else 10 if s >= 20 else 9
    if s >= 16 and len(label) * size * 6 <= (s - 3) * 10:
        ink = DROPPED_INK if dropped else INK
        parts.append(_text(x + s // 2, y + s // 2 + size * 35 // 100, label, "mdl-cell",
                           f' font-size="{size}" fill="{ink}" text-anchor="middle"'))
    parts.append("</g>")
    return "".join(parts)


def _svg(layout: EpochLayout, show_epoch: int) -> str:
    a = layout.arithmetic
    lanes = layout.lanes
    n = a.dataset_size
    total = n + sum(len(lane.slots) for lane in lanes)
    if total > MAX_DRAWN_SLOTS:
        return (f'<p class="mdl-muted">{total} cells are too many to draw; the numbers '
                f"above still hold.</p>")
    grid = WIDTH - LABEL_WIDTH
    s = max(7, min(32, int(math.sqrt(grid * GRID_AREA_HEIGHT / max(total, 1)))))
    cols = grid // s
    delivered: list[list[tuple[int, str]]] = [[] for _ in range(n)]  # (step, lane) per sample
    for lane in lanes:
        for slot in lane.slots:
            if slot.step is not None:
                delivered[slot.index].append((slot.step, lane.label))
    out = []
    drawn = set()  # the marks used, for the legend
    y = 0
    out.append(_text(0, y + 14, '<tspan font-weight="600">The dataset</tspan> in index order — '
                     "number and colour: the step (batch) that delivers it", "mdl-heading"))
    y += 24
    out.append(_text(0, y + s // 2 + 4, "dataset", "mdl-lane"))
    for i in range(n):
        x, yy = LABEL_WIDTH + i % cols * s, y + i // cols * s
        if not delivered[i]:
            drawn.add("dropped")
            out.append(_cell(x, yy, s, DROPPED_FILL, "", f"sample {i}: dropped, not delivered "
                             "this epoch", dropped=True))
            continue
        first = min(step for step, _ in delivered[i])  # the earliest delivery gives the colour
        if len(delivered[i]) > 1:
            drawn.add("corner")
        where = ", ".join(f"step {step + 1}" + (f" on {label}" if len(lanes) > 1 else "")
                          for step, label in delivered[i])
        out.append(_cell(x, yy, s, PALETTE[first % len(PALETTE)], str(first + 1),
                         f"sample {i}: {where}", corner=len(delivered[i]) > 1))
    y += -(-n // cols) * s + 18
    out.append(_text(0, y + 14, f'<tspan font-weight="600">Epoch {show_epoch}</tspan> as the '
                     "loader delivers it, row by row — number: the dataset index", "mdl-heading"))
    y += 24
    for lane in lanes:
        out.append(_text(0, y + s // 2 + 4, lane.label, "mdl-lane"))
        previous = None
        for i, slot in enumerate(lane.slots):
            x, yy = LABEL_WIDTH + i % cols * s, y + i // cols * s
            if slot.step is None:
                drawn.add("dropped")
                out.append(_cell(x, yy, s, DROPPED_FILL, str(slot.index),
                                 f"sample {slot.index}: dropped", dropped=True))
            else:
                what = "a padded repeat of sample" if slot.padded else "sample"
                if slot.padded:
                    drawn.add("dashed")
                out.append(_cell(x, yy, s, PALETTE[slot.step % len(PALETTE)], str(slot.index),
                                 f"{what} {slot.index}: step {slot.step + 1}",
                                 dashed=slot.padded, tick=slot.step != previous))
            previous = slot.step
        y += max(1, -(-len(lane.slots) // cols)) * s + 6
    y += 8
    keys = [(kind, words) for kind, words in LEGEND if kind == "tick" or kind in drawn]
    if a.iterations_per_epoch > len(PALETTE):
        keys.append(("colours", f"colours repeat every {len(PALETTE)} steps"))
    x = 0
    for kind, words in keys:
        icon = 40 if kind == "colours" else 22
        if x and x + icon + len(words) * 6 > WIDTH:  # wrap the legend
            x, y = 0, y + 20
        if kind == "colours":
            for k in range(5):
                out.append(f'<rect x="{x + 7 * k}" y="{y + 2}" width="6" height="12" rx="1" '
                           f'fill="{PALETTE[k]}"/>')
        else:
            out.append(_cell(x, y, 16, DROPPED_FILL if kind == "dropped" else PALETTE[0], "",
                             words, dashed=kind == "dashed", dropped=kind == "dropped",
                             tick=kind == "tick", corner=kind == "corner"))
        out.append(_text(x + icon, y + 12, words, "mdl-key", ' font-size="11"'))
        x += icon + len(words) * 6 + 22
    y += 22
    return (f'<svg class="mdl-epoch-svg" viewBox="0 0 {WIDTH} {y}" width="{WIDTH}" height="{y}" '
            f'font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="13" '
            f'fill="currentColor" role="img" aria-label="the batches of one epoch laid over the dataset">'
            + "".join(out) + "</svg>")


def render_view(params: dict) -> str:
    """The explorer's view for ``params``: numbers, drawing, code (one HTML string)."""
    p = effective_params(params)
    layout = epoch_layout(
        p["dataset_size"], p["batch_size"], p["drop_last"], replicas=p["replicas"],
        sampler_drop_last=p["sampler_drop_last"], shuffle=p["shuffle"], seed=p["seed"],
        iterable=p["iterable"], num_workers=p["num_workers"], sharding=p["sharding"],
        epoch=p["show_epoch"] - 1)
    a = epoch_arithmetic(p["dataset_size"], p["batch_size"], p["drop_last"], p["epochs"],
                         replicas=p["replicas"], sampler_drop_last=p["sampler_drop_last"],
                         iterable=p["iterable"], num_workers=p["num_workers"],
                         sharding=p["sharding"])
    rows = "".join(f'<tr data-quantity="{escape(q)}"><th>{escape(q)}</th><td class="mdl-value">'
                   f'{escape(v)}</td><td class="mdl-note">{escape(note)}</td></tr>'
                   for q, v, note in _numbers(a))
    return (f'<table class="mdl-numbers">{rows}</table>'
            f'<div class="mdl-figure">{_svg(layout, p["show_epoch"])}</div>'
            f'<pre class="mdl-code"><code>{escape(_code(p))}</code></pre>')


# --------------------------------------------------------------------------- the two faces

GROUPS = (
    ("Batches", ("dataset_size", "batch_size", "drop_last", "epochs")),
    ("Order", ("shuffle", "seed", "show_epoch")),
    ("Split", ("replicas", "sampler_drop_last", "iterable", "num_workers", "sharding")),
)
LABELS = {
    "dataset_size": "samples N", "batch_size": "batch_size", "drop_last": "drop_last",
    "epochs": "epochs", "shuffle": "shuffle", "seed": "seed", "show_epoch": "show epoch",
    "replicas": "replicas (ranks)", "sampler_drop_last": "sampler drop_last",
    "iterable": "dataset", "num_workers": "num_workers", "sharding": "sharding",
}
CHOICES = {
    "iterable": (("false", "map-style"), ("true", "iterable")),
    "sharding": (("stride", "every W-th"), ("blocks", "blocks"), ("none", "none")),
}
# The settings with a slider, and the stretch a slider covers: narrower than the box's LIMITS,
# so that every small value is a few pixels apart and can be dragged to (across 1-2000, ten
# samples would be under one pixel); a larger value is typed into the box, and the slider
# then rests at its end.
SLIDERS = {"dataset_size": (1, 100), "batch_size": (1, 32), "replicas": (1, 8),
           "num_workers": (0, 8)}
WHY_STYLE = "color: var(--jp-error-color1, #cf222e); font-size: 12px; margin-left: 114px"
# What a value below a box's lowest would mean, said next to the box when the reader types one.
TOO_LOW = {
    "dataset_size": "a dataset needs at least one sample",
    "batch_size": "a batch holds at least one sample",
    "epochs": "a run has at least one epoch",
    "seed": "a seed is not negative",
    "show_epoch": "epochs are counted from 1",
    "replicas": "there is at least one rank",
    "num_workers": "0 workers means the main process loads; there are no fewer",
}


def refusal(name: str, value, epochs: int = LIMITS["epochs"][1]) -> str:
    """Why the box of ``name`` refuses ``value`` ("" if it takes it): the explorer offers
    ``LIMITS[name]``, and ``show_epoch`` goes up to ``epochs``. The view keeps the last
    settings it could draw, and the reason is shown next to the box. (explorer.js holds its
    twin, for the page.)"""
    low, high = LIMITS[name]
    label = LABELS[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not value.is_integer()):
        return f"{label} takes whole numbers"
    if value < low:
        return f"{TOO_LOW[name]} ({label}: {low} to {high})"
    if name == "show_epoch" and value > epochs:
        return f"the run has only {plural(epochs, 'epoch')} (set epochs first)"
    if value > high:
        return f"{label} goes up to {high} here"
    return ""
FOOTNOTE = ("Shuffled orders are torch's own: this page re-implements torch.randperm (the "
            "Mersenne Twister of torch's CPU generator), tested against torch.")


def _params(initial: dict) -> dict:
    """The starting values, checked against what the controls can show."""
    p = merged(initial, DEFAULTS, "explorer")
    for name, value in p.items():
        if name in LIMITS:
            check_number(name, value, *LIMITS[name])
        elif name == "sharding":
            check_choice(name, value, SHARDINGS)
        else:
            check_choice(name, value, (True, False))
    if p["iterable"] and (p["shuffle"] or p["replicas"] > 1):
        raise ValueError("an IterableDataset is neither shuffled by the loader nor split by "
                         "DistributedSampler: use shuffle=False and replicas=1 with iterable=True")
    return p


def _shown(controls) -> set[str]:
    shown = set(DEFAULTS if controls is None else controls)
    unknown = shown - set(DEFAULTS)
    if unknown:
        raise TypeError(f"unknown control(s) {sorted(unknown)}; the controls are {list(DEFAULTS)}")
    return shown


def _control(name: str, value, hidden: bool) -> str:
    text = escape(LABELS[name])
    attrs = f' data-control="{name}"' + (" hidden" if hidden else "")
    if isinstance(DEFAULTS[name], bool) and name != "iterable":
        checked = " checked" if value else ""
        return (f'<label class="mdl-control"{attrs}><span>{text}</span><span class="mdl-pair">'
                f'<input type="checkbox" data-param="{name}"{checked}></span></label>')
    if name in CHOICES:
        chosen = str(value).lower()
        options = "".join(f'<option value="{v}"{" selected" if v == chosen else ""}>'
                          f"{escape(words)}</option>" for v, words in CHOICES[name])
        return (f'<label class="mdl-control"{attrs}><span>{text}</span><span class="mdl-pair">'
                f'<select data-param="{name}">{options}</select></span></label>')
    low, high = LIMITS[name]
    bounds = f'min="{low}" max="{high}" step="1" value="{value}" data-param="{name}"'
    slider = ""
    if name in SLIDERS:
        slider_low, slider_high = SLIDERS[name]
        slider = (f'<input type="range" min="{slider_low}" max="{slider_high}" step="1" '
                  f'value="{_clamped(name, value)}" data-param="{name}" aria-label="{text}" '
                  f'title="drag: {slider_low} to {slider_high}; type up to {high}">')
    return (f'<label class="mdl-control"{attrs}><span>{text}</span><span class="mdl-pair">'
            f'{slider}<input type="number" {bounds}></span></label>')


def _clamped(name: str, value: int) -> int:
    """Where the slider of ``name`` rests for ``value``: the value, or its nearer end."""
    low, high = SLIDERS[name]
    return min(max(value, low), high)


def epoch_explorer_html(*, controls=None, **initial) -> HTMLFragment:
    """The explorer as one self-contained HTML fragment (a ``str`` that Jupyter displays).

    ``initial`` sets the starting values (names as in ``DEFAULTS``); ``controls`` lists the
    controls to show (all by default), so a chapter can start with fewer. The fragment
    recomputes everything in the browser; it loads nothing from anywhere."""
    p, shown = _params(initial), _shown(controls)
    groups = []
    for legend, names in GROUPS:
        inner = "".join(_control(name, p[name], name not in shown) for name in names)
        hidden = "" if shown & set(names) else " hidden"
        groups.append(f"<fieldset{hidden}><legend>{legend}</legend>{inner}</fieldset>")
    body = (f'<form class="mdl-controls" autocomplete="off">{"".join(groups)}</form>'
            f'<div class="mdl-view" aria-live="polite">{render_view(p)}</div>'
            f'<p class="mdl-footnote">{escape(FOOTNOTE)}</p>')
    return fragment(root_id=new_id("explorer"), classes="mdl-explorer", body=body,
                    assets=["explorer.css", "explorer.js"], mount="mountEpochExplorer",
                    config={"params": p})


def epoch_explorer_widget(*, controls=None, **initial):
    """The explorer as ipywidgets, for JupyterLab: the kernel recomputes on every change.
    Arguments as for :func:`epoch_explorer_html`.

    Returns an ``ipywidgets.VBox``; ``.controls`` maps each setting to its widget (a number
    box for numbers, where any integer may be typed), ``.sliders`` the settings that have
    one to their slider, ``.why`` each number setting to the HTML widget next to its box
    that says why a typed value is refused (:func:`refusal`; the view then keeps the last
    settings it could draw), and ``.view`` is the HTML widget that shows
    :func:`render_view`'s output."""
    import ipywidgets as widgets  # imported here: `import minidataloader_course.viz` stays light

    p, shown = _params(initial), _shown(controls)
    visible = {"display": None}
    hidden = {"display": "none"}
    style, size = {"description_width": "110px"}, {"width": "290px"}
    controls, sliders, why, rows = {}, {}, {}, {}  # from here on: the widgets
    for name, value in p.items():
        display = visible if name in shown else hidden
        common = dict(value=value, description=LABELS[name], style=style,
                      layout=dict(size, **display))
        if name in CHOICES:
            options = [(words, v == "true" if name == "iterable" else v) for v, words in CHOICES[name]]
            controls[name] = widgets.Dropdown(options=options, **common)
        elif isinstance(value, bool):
            controls[name] = widgets.Checkbox(indent=True, **common)
        else:
            # An unbounded box: a bounded one would clamp what the reader typed, or keep
            # the old value, without a word; here the kernel sees it and says why it refuses.
            controls[name] = widgets.IntText(**dict(common, layout=dict(display, width="200px")))
            why[name] = widgets.HTML(layout=dict(display))
        parts = [controls[name]]
        if name in SLIDERS:
            low, high = SLIDERS[name]
            sliders[name] = widgets.IntSlider(value=_clamped(name, value), min=low, max=high,
                                              readout=False,
                                              style=style, layout=dict(size, **display))
            parts.append(sliders[name])
        rows[name] = [*parts, *([why[name]] if name in why else [])]
    view = widgets.HTML()
    css = "".join(f"<style>{asset(name)}</style>" for name in ("viz.css", "explorer.css"))
    drawn = dict(p)  # the settings the view shows: the last ones it could draw

    def update(change=None):
        if change is not None and change["owner"] is controls["epochs"] and not refusal(
                "epochs", change["new"]) and controls["show_epoch"].value > change["new"]:
            controls["show_epoch"].value = change["new"]  # fewer epochs: as the page does
        current = {name: control.value for name, control in controls.items()}
        epochs = drawn["epochs"] if refusal("epochs", current["epochs"]) else current["epochs"]
        reasons = {name: refusal(name, current[name], epochs) for name in why}
        for name, reason in reasons.items():
            why[name].value = f'<span style="{WHY_STYLE}">{escape(reason)}</span>' if reason else ""
        if any(reasons.values()):
            return  # the view keeps what it drew; the reason is next to the box
        drawn.update(current)
        for name, slider in sliders.items():
            slider.value = _clamped(name, current[name])
        e = effective_params(current)
        for name, off in (("shuffle", e["iterable"]), ("seed", not e["shuffle"]),
                          ("replicas", e["iterable"]), ("sampler_drop_last", e["replicas"] == 1),
                          ("sharding", not (e["iterable"] and e["num_workers"]))):
            for widget in (controls[name], sliders.get(name)):
                if widget is not None:
                    widget.disabled = off
        view.value = f'{css}<div class="mdl-viz mdl-explorer">{render_view(e)}</div>'

    def follow(name: str, change) -> None:
        """A slider moved: its box takes the value, unless the slider only came to rest at
        its end for a larger value typed into the box."""
        if change["new"] != _clamped(name, controls[name].value):
            controls[name].value = change["new"]

    for name, slider in sliders.items():
        slider.observe(functools.partial(follow, name), names="value")
    for control in controls.values():
        control.observe(update, names="value")
    update()
    groups = [widgets.VBox([widgets.HTML(f"<b>{legend}</b>"),
                            *(part for n in names for part in rows[n])],
                           layout=visible if shown & set(names) else hidden)
              for legend, names in GROUPS]
    grid = widgets.GridBox(groups, layout={"grid_template_columns": "repeat(auto-fill, 300px)",
                                           "grid_gap": "4px 12px"})
    box = widgets.VBox([grid, view])
    box.controls, box.sliders, box.why, box.view = controls, sliders, why, view
    return box
