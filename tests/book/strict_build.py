"""The build `make test` runs (`make book-strict`): every page executed again (``force``, not
the cache), any warning an error, missing references too, two pages read at a time.

    python -m tests.book.strict_build

NOTE [ Two pages at a time, in the strict build only ]
Reading a page executes it, and reading takes most of the build: about seven minutes one
page after the other on two cores, about four two at a time (measured 2026-12-07; Sphinx's
parallel read, ``-j 2``, forks two readers). Jupyter Book's command line has no ``-j``; its
``build_sphinx`` has ``jobs``, so this module runs the command line with that set.
Sphinx reads in parallel only when every extension declares that it may. Two that Jupyter
Book loads declare nothing, so Sphinx would warn and read serially, and under ``-W`` the
warning fails the build. Both are idle in this build, so here they are declared safe:
- sphinx_multitoc_numbering (loaded by sphinx_external_toc) renumbers the sections of
  ``numbered: true`` tables of contents across parts, and ours numbers none (checked below);
- sphinx_jupyterbook_latex acts only when the builder is LaTeX's.
The reader's ``make book`` stays serial: its pages' timing cells run on whatever else the
reader's machine is doing, and it executes only pages that changed (the cache).
"""

from __future__ import annotations

import functools
import importlib
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
JOBS = 2


def strict_config() -> pathlib.Path:
    """_config.yml with every page executed again, written into _build."""
    config = (ROOT / "_config.yml").read_text()
    assert "execute_notebooks: cache" in config, "_config.yml no longer says `cache`"
    strict = ROOT / "_build" / "_config_strict.yml"
    strict.parent.mkdir(exist_ok=True)
    strict.write_text(config.replace("execute_notebooks: cache", "execute_notebooks: force"))
    return strict


IDLE_IN_A_STRICT_BUILD = ("sphinx_multitoc_numbering", "sphinx_jupyterbook_latex")


def declare_idle_extensions_parallel_safe() -> None:
    assert "numbered" not in (ROOT / "_toc.yml").read_text(), (
        "_toc.yml numbers its sections now: sphinx_multitoc_numbering has work to do, so "
        "build with one job (see NOTE [ Two pages at a time, in the strict build only ])")
    for name in IDLE_IN_A_STRICT_BUILD:
        module = importlib.import_module(name)
        module.setup = _declared_parallel_safe(module.setup)


def _declared_parallel_safe(setup):
    def declared(app):
        return {**(setup(app) or {}), "parallel_read_safe": True, "parallel_write_safe": True}
    return declared


def main() -> None:
    from jupyter_book import sphinx as jupyter_book_sphinx
    from jupyter_book.cli.main import main as jupyter_book

    declare_idle_extensions_parallel_safe()
    # the command line imports build_sphinx when it runs, so it gets this one
    jupyter_book_sphinx.build_sphinx = functools.partial(jupyter_book_sphinx.build_sphinx,
                                                         jobs=JOBS)
    sys.argv = ["jupyter-book", "build", str(ROOT), "--all", "-W", "-n", "--keep-going",
                "--config", str(strict_config())]
    jupyter_book()


if __name__ == "__main__":
    main()
