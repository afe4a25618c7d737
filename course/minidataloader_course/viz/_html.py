"""Helpers every visual shares to emit its static face: one self-contained HTML fragment.

A fragment is a ``<div>`` holding the view (pre-rendered by Python, so it reads even
without JavaScript), followed by inline ``<style>`` and ``<script>`` taken from the package's
asset files. The script finds its ``<div>`` by a unique id and takes over. Nothing in it
names another host: no CDN, no web font, no image URL; the book's browser test fails on any
request that leaves the machine, and :func:`external_references` lets unit tests check a
fragment without a browser. The same page may hold several fragments: every asset script
only (re)defines functions under ``window.minidataloader.viz``, and each fragment mounts its
own root.

    <div class="mdl-viz ..." id="mdl-explorer-3fa2c1d0-1">  pre-rendered view + controls
    <style>  viz.css + the view's css  </style>
    <script> viz.js + the view's js; mount("mdl-explorer-...", {config as JSON}) </script>
"""

from __future__ import annotations

import html
import itertools
import json
import re
import secrets
from importlib import resources

# A token per process plus a counter: ids stay unique on one page even when JupyterLab shows
# outputs left by an earlier kernel next to new ones.
_TOKEN = secrets.token_hex(4)
_counter = itertools.count(1)

escape = html.escape


class HTMLFragment(str):
    """A string of HTML that Jupyter (and the book) displays as HTML, not as text."""

    def _repr_html_(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return f"<HTMLFragment: {len(self):,} characters of self-contained HTML>"


def new_id(kind: str) -> str:
    return f"mdl-{kind}-{_TOKEN}-{next(_counter)}"


def asset(name: str) -> str:
    """The text of a .js/.css file shipped next to this module."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def script_json(value) -> str:
    """JSON that is safe inside a <script> element (no `</script>` or `<!--` can appear)."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def fragment(*, root_id: str, classes: str, body: str, assets: list[str], mount: str,
             config) -> HTMLFragment:
    """Assemble one self-contained fragment: the root <div>, its styles and its script.

    ``assets`` lists .css and .js files (``viz.css``/``viz.js`` are always included first);
    ``mount`` names the function under ``window.minidataloader.viz`` that takes the root id
    and ``config``."""
    names = ["viz.css", "viz.js", *assets]
    css = "\n".join(asset(name) for name in names if name.endswith(".css"))
    js = "\n".join(asset(name) for name in names if name.endswith(".js"))
    return HTMLFragment(
        f'<div class="mdl-viz {classes}" id="{root_id}">{body}</div>\n'
        f"<style>\n{css}</style>\n"
        f"<script>\n{js}\n"
        f"window.minidataloader.viz.{mount}({json.dumps(root_id)}, {script_json(config)});\n"
        f"</script>\n"
    )


_URL = re.compile(r"""(?ix)
    \b(?:https?|ftp|wss?):   # a scheme that leaves the machine
  | (?<![\w/])//[\w.-]+\.\w   # a protocol-relative //host.name
  | @import\b | \burl\(      # CSS that loads something
  | \b(?:src|href|srcset|action|poster)\s*=   # an HTML attribute that loads something
""")


def external_references(text: str) -> list[str]:
    """Everything in ``text`` that could make a browser load something from elsewhere."""
    return [text[max(0, m.start() - 30): m.end() + 30] for m in _URL.finditer(text)]
