"""The indexes stay complete: every module of the course's ``shared`` and ``viz`` packages and
of the library's ``bench`` is named in its package's docstring (the reader's map), and every
module a worker may import (the shared modules, the chapters' demos) imports in a fresh
process, as a worker started with spawn imports it."""

from __future__ import annotations

import importlib
import pathlib
import subprocess
import sys

import pytest

import minidataloader_course

COURSE = pathlib.Path(minidataloader_course.__file__).parent
INDEXED = {"minidataloader_course.shared": COURSE / "shared",
           "minidataloader_course.viz": COURSE / "viz",
           "minidataloader.bench": COURSE.parents[1] / "minidataloader" / "bench"}


def modules(folder: pathlib.Path) -> list[str]:
    return sorted(path.stem for path in folder.glob("*.py")
                  if path.stem not in ("__init__", "__main__"))


@pytest.mark.parametrize("package", INDEXED)
def test_the_package_docstring_names_every_module(package):
    doc = importlib.import_module(package).__doc__
    missing = [name for name in modules(INDEXED[package]) if name not in doc]
    assert not missing, f"{package}'s docstring does not list {missing}"


def test_every_module_a_worker_may_import_imports_in_a_fresh_process():
    names = [f"minidataloader_course.shared.{name}" for name in modules(COURSE / "shared")]
    names += [f"minidataloader_course.chapters.{folder.name}.{name}"
              for folder in sorted((COURSE / "chapters").glob("ch[0-9][0-9]"))
              for name in modules(folder)]
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    run = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True,
                         timeout=180)
    assert run.returncode == 0, run.stderr
