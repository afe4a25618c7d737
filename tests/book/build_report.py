"""Which pages of the last book build had a failing cell: what `make book` prints at the end.

`make book` builds every page even when a cell fails (``nb_execution_raise_on_error: false``
in ``_config.yml``): such a page is built with the error shown at the failing cell, and the
cells after it left unrun. This reads the outcome of each page's latest execution from the
build's Sphinx environment, where myst-nb records it (``env.nb_metadata[page]["exec_data"]``):
pages that were not re-executed in this build (their source did not change, and a page that
failed is never cached) keep the outcome of the build that last ran them.

    python -m tests.book.build_report [_build]    # prints the failing pages; exit 1 if any
"""

from __future__ import annotations

import pathlib
import pickle
import sys


def failed_pages(build: pathlib.Path) -> dict[str, str]:
    """Page -> the name of the error its execution ended with, for every failed page."""
    with open(build / ".doctrees" / "environment.pickle", "rb") as file:
        env = pickle.load(file)
    failed = {}
    for page, data in sorted(getattr(env, "nb_metadata", {}).items()):
        outcome = data.get("exec_data") or {}
        if outcome.get("succeeded") is False:
            failed[page] = outcome.get("error") or "error"
    return failed


def main(argv: list[str]) -> int:
    build = pathlib.Path(argv[1] if len(argv) > 1 else "_build")
    failed = failed_pages(build)
    if not failed:
        print("make book: every page's cells ran")
        return 0
    print(f"\nmake book: {len(failed)} page(s) had a failing cell. Each is built, with the "
          "error shown at that cell; the tracebacks are in "
          f"{build / 'html' / 'reports'}/:")
    for page, error in failed.items():
        print(f"  {page}.md: {error}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
