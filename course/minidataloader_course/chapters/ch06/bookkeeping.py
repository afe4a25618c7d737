"""The bookkeeping of torch's multi-process iterator, after each ``next()``, for a scripted
run: what the check-yourself tables of chapter 6 ask the learner to predict, and what its
figure draws.

Real workers finish their batches in an order that depends on timing. Here torch's own
iterator runs as it is (its workers start, its bookkeeping is its own code), but the batches
it receives come from a script, in a fixed order, instead of from its result queue: the same
questions then have one answer on every machine.
"""

from __future__ import annotations

import torch.utils.data as tud

from minidataloader_course.chapters.multiprocess_cases import more_workers_than_cpus_is_fine


class ScriptedArrivals:
    """Stands in for the result queue of an iterator: ``get`` gives the batches in the order
    of ``script`` (batch numbers), each as the string ``"batch k"``; ``sent()`` says how many
    tasks the iterator has sent (a batch cannot arrive before it is sent)."""

    def __init__(self, script, sent):
        self.script, self.sent = list(script), sent
        self.received: list[int] = []  # what the iterator has read, in order

    def get(self, timeout=None):
        number = self.script.pop(0)
        if number >= self.sent():
            raise AssertionError(f"the script has batch {number} arrive before it is sent")
        self.received.append(number)
        return number, f"batch {number}"


def state(iterator, num_workers: int, handed_out=None, received=()) -> dict:
    """What torch's iterator holds now, in the chapter's words: the tasks sent so far, the
    batch due next, the batches waiting in the reorder buffer, and for each worker the
    batches sent to it and not yet handed out (in flight); and what it ``received`` from the
    result queue since the last state."""
    info = iterator._task_info  # batch number -> (worker,) or (worker, the batch, arrived)
    return {"handed out": handed_out, "received": list(received),
            "sent": iterator._send_idx, "due": iterator._rcvd_idx,
            "buffer": sorted(n for n, task in info.items() if len(task) == 2),
            "in flight": [sorted(n for n, task in info.items() if task[0] == worker)
                          for worker in range(num_workers)]}


def torch_bookkeeping(num_workers: int, prefetch_factor: int, batches: int, arrivals,
                      in_order: bool = True) -> list[dict]:
    """The state of torch's iterator after ``iter(loader)`` and after each ``next()`` of an
    epoch of ``batches`` batches, when they arrive in the order ``arrivals``. The last row
    says ``"StopIteration"`` in ``handed out``."""
    loader = tud.DataLoader(range(batches), batch_size=1, num_workers=num_workers,
                            prefetch_factor=prefetch_factor, in_order=in_order,
                            multiprocessing_context="fork")
    with more_workers_than_cpus_is_fine():
        iterator = iter(loader)
    try:
        iterator._data_queue = queue = ScriptedArrivals(arrivals, lambda: iterator._send_idx)
        rows = [state(iterator, num_workers)]
        while True:
            before = len(queue.received)
            try:
                batch = next(iterator)
            except StopIteration:
                rows.append(state(iterator, num_workers, "StopIteration",
                                  queue.received[before:]))
                return rows
            rows.append(state(iterator, num_workers, int(batch.split()[1]),
                              queue.received[before:]))
    finally:
        iterator._shutdown_workers()


# The scripted runs of the chapter's tables (and figure): (num_workers, prefetch_factor,
# batches, arrivals, in_order).
ONE_WORKER = (1, 1, 3, [0, 1, 2], True)
FIGURE = (2, 2, 6, [1, 0, 3, 2, 5, 4], True)  # book/figures/ch06_bookkeeping.svg
ROUND_ROBIN = (2, 2, 7, [0, 1, 2, 3, 4, 5, 6], True)
REORDER = (2, 2, 6, [1, 3, 0, 2, 5, 4], True)
OUT_OF_ORDER = (2, 2, 8, [1, 3, 4, 0, 2, 5, 6, 7], False)


def one_worker_table() -> list[tuple]:
    """After iter(loader) and each next(): (tasks sent, batch due next)."""
    return [(row["sent"], row["due"]) for row in torch_bookkeeping(*ONE_WORKER)[:4]]


def round_robin_table() -> list[tuple]:
    """After iter(loader) and the first four next(): (tasks sent, worker 0's batches in
    flight, worker 1's)."""
    return [(row["sent"], *row["in flight"]) for row in torch_bookkeeping(*ROUND_ROBIN)[:5]]


def reorder_table() -> list[tuple]:
    """After each of the first five next(): (tasks sent, batch due next, the reorder
    buffer)."""
    return [(row["sent"], row["due"], row["buffer"]) for row in torch_bookkeeping(*REORDER)[1:6]]


def out_of_order_table() -> list[tuple]:
    """With in_order=False, after each of the first four next(): (the batch handed out,
    worker 0's batches in flight, worker 1's)."""
    return [(row["handed out"], *row["in flight"])
            for row in torch_bookkeeping(*OUT_OF_ORDER)[1:5]]


# ---------------------------------------------------------------------------------------
# The figure: the first states of the FIGURE run, drawn (the committed SVG is this drawing,
# tests/course/ch06 checks that it is)

_PANEL, _GAP, _TOP = 228, 10, 8
_FLIGHT = 'fill="#ffffff" stroke="#3f6fb5"'
_EARLY = 'fill="#fff3e0" stroke="#e65100"'


def _text(x, y, words, size=12, anchor="middle", weight="", colour="#37474f") -> str:
    bold = ' font-weight="bold"' if weight else ""
    return (f'  <text x="{x}" y="{y}" text-anchor="{anchor}" font-size="{size}"{bold} '
            f'fill="{colour}">{words}</text>')


def _chip(x, y, number, style) -> str:
    return (f'  <rect x="{x}" y="{y}" width="30" height="24" rx="5" {style} stroke-width="1.5"/>\n'
            + _text(x + 15, y + 17, number, size=13))


def _what_happened(row: dict, before: dict) -> tuple[str, str]:
    if row["handed out"] is None:
        return f"sends tasks 0 to {row['sent'] - 1}, in turn", ""
    if not row["received"]:
        first = f"takes {row['handed out']} from the buffer"
    else:
        first = "receives " + ", then ".join(map(str, row["received"]))
    new = [(n, w) for w, numbers in enumerate(row["in flight"]) for n in numbers
           if n >= before["sent"]]
    sent = "; sends " + ", ".join(f"{n} to worker {w}" for n, w in new) if new else \
        "; sends nothing"
    return first, f"hands out {row['handed out']}{sent}"


def figure_svg(rows: list[dict]) -> str:
    """The states ``rows`` (from ``torch_bookkeeping``) as panels side by side."""
    width = len(rows) * (_PANEL + _GAP) - _GAP + 2 * _TOP
    height = 318
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" '
             f'font-size="13">',
             "  <title>The bookkeeping of torch's multi-process iterator, after each next()"
             "</title>",
             "  <desc>Panels side by side, one per moment: after iter(loader), then after each "
             "next(). Each panel says what the iterator received from the result queue and what "
             "it handed out and sent, then its counts (tasks sent, the batch due next) and, for "
             "each worker, the batches in flight: white while the worker still has them, orange "
             "once they have arrived early and wait in the reorder buffer.</desc>"]
    for index, row in enumerate(rows):
        x = _TOP + index * (_PANEL + _GAP)
        middle = x + _PANEL // 2
        title = "after iter(loader)" if index == 0 else f"after next() {index}"
        first, second = _what_happened(row, rows[index - 1] if index else row)
        parts += [
            f'  <rect x="{x}" y="{_TOP}" width="{_PANEL}" height="258" rx="10" fill="#eef3fb" '
            f'fill-opacity="0.45" stroke="#3f6fb5" stroke-width="1.2"/>',
            _text(middle, 32, title, size=14, weight="bold", colour="#1e4a8a"),
            _text(middle, 56, first), _text(middle, 74, second),
            f'  <rect x="{x + 14}" y="88" width="94" height="28" rx="6" fill="#e8f5e9" '
            f'stroke="#2e7d32" stroke-width="1.5"/>',
            _text(x + 61, 107, f"sent {row['sent']}", size=13, colour="#1b5e20"),
            f'  <rect x="{x + 120}" y="88" width="94" height="28" rx="6" fill="#e3edf9" '
            f'stroke="#1e4a8a" stroke-width="1.5"/>',
            _text(x + 167, 107, f"due {row['due']}", size=13, colour="#1e4a8a"),
        ]
        lanes = [(f"worker {w}", numbers) for w, numbers in enumerate(row["in flight"])]
        lanes.append(("buffer", row["buffer"]))
        for lane, (label, numbers) in enumerate(lanes):
            y = 140 + 44 * lane
            parts.append(_text(x + 14, y + 17, label, anchor="start"))
            if label == "buffer":
                parts.append(f'  <line x1="{x + 14}" y1="{y - 10}" x2="{x + _PANEL - 14}" '
                             f'y2="{y - 10}" stroke="#90a4ae" stroke-dasharray="4 3"/>')
            for slot, number in enumerate(numbers):
                style = _EARLY if number in row["buffer"] else _FLIGHT
                parts.append(_chip(x + 84 + 38 * slot, y, number, style))
    legend = 280
    parts += [_chip(_TOP + 6, legend, "k", _FLIGHT),
              _text(_TOP + 46, legend + 17, "batch k sent to its worker, not yet received",
                    anchor="start"),
              _chip(_TOP + 6 + 470, legend, "k", _EARLY),
              _text(_TOP + 516, legend + 17, "received before its turn: in the reorder buffer",
                    anchor="start"),
              "</svg>", ""]
    return "\n".join(parts)
