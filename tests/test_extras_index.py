"""The extras' indexes stay complete: every module of minidataloader.demo, .viz and .bench is
named in its package's docstring (the reader's map), and imports in a fresh process, as a
worker started with spawn imports it."""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys

import pytest

import minidataloader

PACKAGE = pathlib.Path(minidataloader.__file__).parent
EXTRAS = ("demo", "viz", "bench")


def modules(extra: str) -> list[str]:
    return sorted(path.stem for path in (PACKAGE / extra).glob("*.py")
                  if path.stem not in ("__init__", "__main__"))


@pytest.mark.parametrize("extra", EXTRAS)
def test_the_package_docstring_names_every_module(extra):
    doc = importlib.import_module(f"minidataloader.{extra}").__doc__
    missing = [name for name in modules(extra) if name not in doc]
    assert not missing, f"minidataloader/{extra}/__init__.py does not list {missing}"


def test_every_demo_module_imports_in_a_fresh_process():
    names = [f"minidataloader.demo.{name}" for name in modules("demo")]
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    run = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr


def test_demo_imports_neither_bench_nor_exercises():
    """The benchmark and the checkers use the demo datasets; the demo uses neither (no loop)."""
    for name in modules("demo"):
        tree = ast.parse((PACKAGE / "demo" / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                imported = ["." * node.level + (node.module or "")]
            elif isinstance(node, ast.Import):
                imported = [alias.name for alias in node.names]
            else:
                continue
            for module in imported:
                assert not module.startswith(("minidataloader.bench", "minidataloader.exercises",
                                              "..")), f"demo/{name}.py imports {module}"
