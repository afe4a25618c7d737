"""Answers written the way a learner writes them: a reference solution's source taken out of
the package, with the imports and helpers it needs, to paste into a notebook cell or to save
as a module of the learner's own outside the package; a piece of the learner's loader written
into their own package (``myloader``), as a ``%%piece`` cell writes it; and wrong variants of
both (mutants).
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import inspect
import itertools
import pathlib
import sys

from minidataloader_course.learner import (
    PACKAGE,
    fill_with_solutions,
    import_package,
    reference_source,
    write_piece,
)
from minidataloader_course.milestones import piece_object

SOLUTIONS = "minidataloader_course.chapters"
_counter = itertools.count()


def solution_source(chapter: str, name: str) -> str:
    """The source a learner would write for exercise ``name`` of ``chapter`` ("ch05"): the
    solution module's imports, then the module's definitions the solution uses (other
    solutions, helpers, constants) in module order, then the solution itself."""
    source = inspect.getsource(importlib.import_module(f"{SOLUTIONS}.{chapter}.solution"))
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
        raise KeyError(f"{SOLUTIONS}.{chapter}.solution defines no {name!r}")
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

    used = {inner.id for node in needed for inner in ast.walk(node) if isinstance(inner, ast.Name)}

    def imported(node) -> str:
        """An import as the learner writes it. One of another chapter's solution brings the
        book's earlier pieces (chapter 5's use chapter 3's): only the names used."""
        if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith(SOLUTIONS)):
            return text(node)
        names = [alias for alias in node.names if (alias.asname or alias.name) in used]
        return ast.unparse(ast.ImportFrom(node.module, names, 0)) if names else ""

    header = "\n".join(line for line in map(imported, imports) if line)
    parts = [header] + [text(node) for node in needed]
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


@contextlib.contextmanager
def learners_piece(folder: pathlib.Path, exercise, source: str | None = None):
    """The package of a learner who finished the exercise's chapter, ``folder/myloader``:
    every piece up to that chapter holds its reference, and the exercise's piece ``source``
    (its reference by default). Yields the piece, imported afresh from the files, as a
    ``%%piece`` cell binds it."""
    package = folder / PACKAGE
    fill_with_solutions(package, int(exercise.chapter[2:]))
    if source is not None:
        write_piece(package, exercise.piece, source, force=True)
    try:
        yield piece_object(import_package(package), exercise.piece)
    finally:
        if str(folder.resolve()) in sys.path:  # import_package put it there
            sys.path.remove(str(folder.resolve()))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


@contextlib.contextmanager
def answered(folder: pathlib.Path, exercise, changes=()):
    """The exercise answered where a learner answers it, with ``changes`` (see ``mutated``)
    made to the reference: a piece in the learner's package, anything else in a module of the
    learner's own. Yields the answer."""
    if exercise.piece:
        with learners_piece(folder, exercise,
                            mutated(reference_source(exercise), changes)) as piece:
            yield piece
    else:
        source = mutated(solution_source(exercise.chapter, exercise.name), changes)
        yield getattr(learner_module(folder, source), exercise.name)
