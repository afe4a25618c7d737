"""A Sphinx extension for the book: each chapter's launch buttons (Binder, Colab) open the
chapter's workbook, ``notebooks/NN_slug.ipynb``, not the chapter's MyST source (which Colab
cannot open and which holds no stubs); pages without a workbook (the front page, the
appendices) get no launch buttons. The buttons are links: no page loads anything from the
services they point at."""

from __future__ import annotations

import pathlib
import re

_CHAPTER = re.compile(r"^book/(\d\d_[\w-]+)$")


def _workbook_of(app, pagename: str) -> str | None:
    match = _CHAPTER.match(pagename)
    if match is None:
        return None
    workbook = f"notebooks/{match.group(1)}.ipynb"
    return workbook if (pathlib.Path(app.srcdir) / workbook).exists() else None


def point_at_the_workbook(app, pagename, templatename, context, doctree) -> None:
    buttons = context.get("header_buttons", [])
    launch = [b for b in buttons if b.get("label") == "launch-buttons"]
    if not launch:
        return
    workbook = _workbook_of(app, pagename)
    if workbook is None:
        buttons.remove(launch[0])
        return
    for button in launch[0]["buttons"]:
        for source in (f"{pagename}.md", f"{pagename}.ipynb"):
            button["url"] = button["url"].replace(source, workbook)


def setup(app):
    # after sphinx_book_theme's add_launch_buttons (priority 501)
    app.connect("html-page-context", point_at_the_workbook, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
