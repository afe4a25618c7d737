"""The book's visuals, each with two faces: a live ipywidget for JupyterLab and a
self-contained HTML/JS fragment for the static book (no kernel, nothing loaded from
elsewhere). Importing this package imports neither ipywidgets nor IPython, matplotlib or
pandas; the widget functions import what they need when called.

    explorer.py   the epoch-arithmetic explorer        (explorer.js, explorer.css)
    _html.py      what every static face shares         (viz.js, viz.css)
"""

from minidataloader.viz.explorer import (
    epoch_explorer_html,
    epoch_explorer_widget,
    epoch_layout,
    epoch_order,
    render_view,
)

__all__ = ["epoch_explorer_html", "epoch_explorer_widget", "epoch_layout", "epoch_order",
           "render_view"]
