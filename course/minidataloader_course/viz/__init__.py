"""The book's visuals, each with two faces: a live ipywidget for JupyterLab and a
self-contained HTML/JS fragment for the static book (no kernel, nothing loaded from
elsewhere). Importing this package imports neither ipywidgets nor IPython, matplotlib or
pandas; the widget functions import what they need when called.

    arithmetic.py  epoch arithmetic: iterations, last batch, padding, workers' shares
                   (chapters 1, 7 and 12 compute with it; explorer.js ports it)
    explorer.py    the epoch-arithmetic explorer        (explorer.js, explorer.css)
    trace.py       recording a loader's events: TraceRecorder -> Trace (JSON, DataFrame)
    queueflow.py   the queue-flow view of a traced epoch (queueflow.js, queueflow.css)
    _html.py       what every static face shares         (viz.js, viz.css)
    _settings.py   checking a view's settings; counts in words

A new visual: a module with a Python face and, for the book, an HTML face built with
``_html.fragment`` (its .js/.css beside it), twins tested against each other in
``tests/course/viz/`` (see ARCHITECTURE.md).
"""

from minidataloader_course.viz.explorer import (
    epoch_explorer_html,
    epoch_explorer_widget,
    epoch_layout,
    epoch_order,
    render_view,
)
from minidataloader_course.viz.queueflow import (
    queue_flow_figure,
    queue_flow_html,
    queue_flow_widget,
    record_queue_flow,
)
from minidataloader_course.viz.trace import Trace, TraceRecorder

__all__ = ["epoch_explorer_html", "epoch_explorer_widget", "epoch_layout", "epoch_order",
           "render_view", "Trace", "TraceRecorder", "record_queue_flow", "queue_flow_html",
           "queue_flow_widget", "queue_flow_figure"]
