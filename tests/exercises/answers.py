"""Answers written the way a learner writes them: a reference solution's source taken out of
the package, with the imports and helpers it needs, to paste into a notebook cell or to save
as a module of the learner's own outside the package; and wrong variants of it (mutants).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import itertools
import pathlib
import sys

SOLUTIONS = "minidataloader.exercises.solutions"
_counter = itertools.count()


def solution_source(chapter: str, name: str) -> str:
    """The source a learner would write for exercise ``name`` of ``chapter`` ("ch05"): the
    solution module's imports, then the module's definitions the solution uses (other
    solutions, helpers, constants) in module order, then the solution itself."""
    source = inspect.getsource(importlib.import_module(f"{SOLUTIONS}.{chapter}"))
    tree = ast.parse(source)
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    definitions = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            definitions[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    definitions[target.id] = node
    if name not in definitions:
        raise KeyError(f"{SOLUTIONS}.{chapter} defines no {name!r}")
    needed: list[ast.AST] = []

    def visit(node):
        if node in needed:
            return
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and inner.id in definitions:
                if definitions[inner.id] is not node:
                    visit(definitions[inner.id])
        needed.append(node)

    visit(definitions[name])
    needed.sort(key=lambda node: node.lineno)
    lines = source.splitlines()

    def text(node) -> str:  # whole lines: a comment after the last statement stays
        return "\n".join(lines[node.lineno - 1:node.end_lineno])

    parts = ["\n".join(text(node) for node in imports)] + [text(node) for node in needed]
    return "\n\n\n".join(parts) + "\n"


def mutated(source: str, replacements: list[tuple[str, str]]) -> str:
    """``source`` with each ``old`` (which must occur exactly once) replaced by ``new``."""
    for old, new in replacements:
        count = source.count(old)
        if count != 1:
            raise ValueError(f"{old!r} occurs {count} times in the solution, not once")
        source = source.replace(old, new)
    return source


def learner_module(folder: pathlib.Path, source: str, stem: str = "learner"):
    """Save ``source`` as a module in ``folder`` (outside the package) and import it, as a
    learner imports a module of their own."""
    name = f"{stem}_{next(_counter)}"
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickle look classes up by module
    spec.loader.exec_module(module)
    return module
