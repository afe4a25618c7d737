"""Plumbing stays out of the reading flow (issue 31, item 5): a chapter's code cell whose only
job is to assert claims or to ``glue`` numbers into the prose carries ``remove-input`` (it
still runs; ``hide-input`` or ``remove-cell`` do as well), so that a reader does not meet
bare ``assert``s and ``glue(...)`` calls between the paragraphs.

A cell is plumbing when it asserts or glues something, and every top-level statement is

- an ``assert``;
- a ``glue(...)`` call (``myst_nb.glue`` under any name that ends in ``glue``);
- an import;
- an assignment whose names only the cell's plumbing reads (its asserts, its glue calls, its
  other plumbing assignments), and no later cell of the page: a name a later cell reads is
  set up for it, and the cell has that other job (read alone, without the page, a cell's
  name that nothing in it reads counts as one for later);
- a ``for``, ``if`` or ``with`` whose body is plumbing of the same kinds (its loop or
  ``as`` names counted as assigned).

Such a cell displays nothing of its own: a bare expression, a ``print`` or any other call
is a job of its own. IPython's magic lines are left out; a cell that does not parse is no
plumbing.
"""

from __future__ import annotations

import ast
import pathlib
import textwrap

import jupytext
import pytest

from minidataloader_course.authoring.workbooks import chapters

HIDDEN = ("remove-input", "hide-input", "remove-cell")
CHAPTERS = chapters()


def _is_glue(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    function = node.value.func
    name = function.id if isinstance(function, ast.Name) else (
        function.attr if isinstance(function, ast.Attribute) else "")
    return name.endswith("glue")


def _bound(node: ast.AST) -> set[str]:
    """The names a statement binds: assignment targets, loop and ``as`` names."""
    targets = {ast.Assign: lambda n: n.targets, ast.AnnAssign: lambda n: [n.target],
               ast.AugAssign: lambda n: [n.target], ast.For: lambda n: [n.target],
               ast.With: lambda n: [item.optional_vars for item in n.items
                                    if item.optional_vars is not None]}
    found = set()
    for target in targets.get(type(node), lambda n: [])(node):
        found |= {name.id for name in ast.walk(target) if isinstance(name, ast.Name)}
    return found


def _used(node: ast.AST) -> set[str]:
    return {name.id for name in ast.walk(node)
            if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Load)}


def _flatten(statements: list[ast.stmt]) -> list[ast.stmt] | None:
    """The simple statements of a cell, with the bodies of its ``for``, ``if`` and ``with``
    statements in place of them (the compound statement's own header kept as a "use"), or
    None when a statement is of another kind."""
    flat = []
    for node in statements:
        if isinstance(node, (ast.For, ast.If, ast.With)):
            inner = _flatten(node.body + getattr(node, "orelse", []))
            if inner is None:
                return None
            flat.append(node)  # its header binds and reads names
            flat += inner
        elif isinstance(node, (ast.Assert, ast.Import, ast.ImportFrom, ast.Assign,
                               ast.AnnAssign, ast.AugAssign)) or _is_glue(node):
            flat.append(node)
        else:
            return None
    return flat


def _reads(node: ast.AST) -> set[str]:
    """What a statement reads; for a compound statement, its header alone (its body's
    statements are read one by one)."""
    if isinstance(node, ast.For):
        return _used(node.iter)
    if isinstance(node, ast.If):
        return _used(node.test)
    if isinstance(node, ast.With):
        return set().union(*(_used(item.context_expr) for item in node.items))
    return _used(node)


def _parsed(source: str) -> ast.Module | None:
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        return ast.parse(textwrap.dedent("\n".join(lines)))
    except SyntaxError:
        return None


def is_plumbing(source: str, later: set[str] | None = None) -> bool:
    """Whether a code cell's only job is to assert or to glue (this module's docstring).
    ``later``: the names the page's later cells read (None: unknown)."""
    tree = _parsed(source)
    if tree is None:
        return False
    flat = _flatten(tree.body)
    if not flat or not any(isinstance(node, ast.Assert) or _is_glue(node) for node in flat):
        return False
    # An assignment (or loop) is plumbing while everything that reads its names is
    # plumbing: start from all of them and drop, until nothing changes, those that nothing
    # reads (their names are for later cells) or that something else reads
    binders = {id(node): _bound(node) for node in flat if _bound(node)}
    plumbing = set(binders)
    changed = True
    while changed:
        changed = False
        for node in flat:
            if id(node) not in plumbing:
                continue
            names = binders[id(node)]
            readers = [other for other in flat if other is not node and names & _reads(other)]
            for_later = names & later if later is not None else not readers
            if for_later or not all(isinstance(other, (ast.Assert, ast.If))
                                      or _is_glue(other) or id(other) in plumbing
                                      for other in readers):
                plumbing.discard(id(node))
                changed = True
    return plumbing == set(binders)


def _stored(node: ast.AST) -> set[str]:
    return {name.id for name in ast.walk(node)
            if isinstance(name, ast.Name) and isinstance(name.ctx, (ast.Store, ast.Del))}


def free_names(source: str) -> set[str]:
    """The names a cell reads from before it: read before the cell itself sets them, in the
    order the code runs (``x = x + 1`` reads the old ``x``; a loop that sets ``loader`` and
    then reads it reads its own)."""
    tree = _parsed(source)
    return _free(tree.body, set()) if tree is not None else set()


def _free(statements: list[ast.stmt], bound: set[str]) -> set[str]:
    """What ``statements`` read before they set it; ``bound`` grows with what they set."""
    free: set[str] = set()

    def read(node) -> None:
        if node is not None:
            free.update(_used(node) - bound)

    for node in statements:
        if isinstance(node, (ast.For, ast.AsyncFor)):
            read(node.iter)
            bound |= _stored(node.target)
            free |= _free(node.body + node.orelse, bound)
        elif isinstance(node, (ast.If, ast.While)):
            read(node.test)
            free |= _free(node.body + node.orelse, bound)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                read(item.context_expr)
                if item.optional_vars is not None:
                    bound |= _stored(item.optional_vars)
            free |= _free(node.body, bound)
        elif isinstance(node, ast.Try):
            free |= _free(node.body, bound)
            for handler in node.handlers:
                read(handler.type)
                if handler.name:
                    bound.add(handler.name)
                free |= _free(handler.body, bound)
            free |= _free(node.orelse + node.finalbody, bound)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)  # its body reads when it is called, not here
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.AugAssign):
            read(node.value)
            free.update(_stored(node.target) - bound)
            bound |= _stored(node.target)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            read(node.value)
            bound |= _stored(node)
        else:
            read(node)
            bound |= _stored(node)
    return free


def read_later(cells: list[str], names: set[str]) -> set[str]:
    """Which of ``names`` (set by a cell) the cells after it read, before one of them sets
    the name again."""
    pending, found = set(names), set()
    for source in cells:
        found |= pending & free_names(source)
        tree = _parsed(source)
        if tree is not None:
            pending -= _stored(tree)
        if not pending:
            break
    return found


def offenders(path: pathlib.Path) -> list[str]:
    """The plumbing cells of a chapter page that the reader sees: each as its first lines."""
    found, text = [], path.read_text()
    cells = [cell for cell in jupytext.read(path).cells if cell.cell_type == "code"]
    for index, cell in enumerate(cells):
        if set(cell.metadata.get("tags", [])) & set(HIDDEN):
            continue
        tree = _parsed(cell.source)
        names = _stored(tree) if tree is not None else set()
        later = read_later([c.source for c in cells[index + 1:]], names)
        if is_plumbing(cell.source, later):
            lines = cell.source.strip().splitlines()
            at = text.find(cell.source.strip())
            line = f"line {text.count(chr(10), 0, at) + 1}: " if at >= 0 else ""
            found.append(line + " | ".join(lines[:2]) + (" | ..." if len(lines) > 2 else ""))
    return found


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_no_plumbing_cell_sits_in_the_reading_flow(chapter):
    found = offenders(chapter)
    assert not found, (f"{chapter.name}: {len(found)} cell(s) only assert or glue: tag them "
                       f"remove-input (they still run):\n  " + "\n  ".join(found))


# ---------------------------------------------------------------------------------------
# The detector, on cells made up for it


@pytest.mark.parametrize("source", [
    "assert loss_a == loss_b",
    'glue("speedup", f"{ratio:.1f}")',
    'glue("speedup", ratio, display=False)',
    'from myst_nb import glue\nglue("n", n)',
    'myst_nb.glue("n", n)',
    'ratio = slow / fast\nassert ratio > 1.5\nglue("ratio", f"{ratio:.1f}")',
    "counts = trace.counts()\nbusy = counts['busy']\nassert busy > 0",  # a chain of names
    "for batch in loader_batches:\n    assert batch.shape[0] == 4",
    "%%time\nassert sum(sizes) == 10",
    "with torch.no_grad():\n    out = model(x)\n    assert out.shape == (4, 1)",
    "if HAS_CUDA:\n    assert pinned.is_pinned()\nelse:\n    glue('pinned', 'no GPU here')",
    "x: int = 3\nassert x == 3",
])
def test_plumbing_is_found(source):
    assert is_plumbing(source)


@pytest.mark.parametrize("source", [
    "batches = list(loader)\nbatches[0]",  # displays its last value
    "assert len(loader) == 4\nprint(len(loader))",  # prints
    "import torch\nfrom minidataloader import DataLoader",  # setup: no assert, no glue
    "ratio = slow / fast\nglue('ratio', ratio)\nshown = ratio * 2",  # shown: for later
    "assert check(solution.iterations_per_epoch).passed\ncheck(solution.last_batch_size)",
    "def helper():\n    return 3\n\nassert helper() == 3",  # defines a function
    "plot(trace)\nassert trace",  # draws
    "for batch in loader:\n    print(batch)",
    "x = (",  # does not parse
    "",
])
def test_a_cell_with_another_job_is_no_plumbing(source):
    assert not is_plumbing(source)


def test_a_name_a_later_cell_reads_is_set_up_for_it():
    source = "loader = DataLoader(data, batch_size=4)\nassert len(loader) == 3"
    assert is_plumbing(source, later={"print", "data"})
    assert not is_plumbing(source, later={"loader"})
    assert not is_plumbing("ratio = slow / fast\nglue('ratio', ratio)", later={"ratio"})
    assert is_plumbing("unused = 3\nassert ok", later=set())  # read by nothing at all


def test_a_later_cell_reads_a_name_only_before_it_sets_it_again():
    assert free_names("loader = make()\nfor b in loader:\n    total = total + b") == {
        "make", "total"}
    assert free_names("x = x + 1\nsteps += 1") == {"x", "steps"}
    assert free_names("import torch\ndef f():\n    return loader\nf()") == set()
    assert read_later(["loader = make()\nplot(loader)", "print(loader)"], {"loader"}) == set()
    assert read_later(["plot(loader)", "loader = make()"], {"loader", "other"}) == {"loader"}


def test_a_hidden_plumbing_cell_is_fine(tmp_path):
    page = tmp_path / "01_demo.md"
    page.write_text(
        "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
        "    format_version: 0.13\nkernelspec:\n  display_name: Python 3\n  language: python\n"
        "  name: python3\n---\n\n# 1. Demo\n\n"
        "```{code-cell} ipython3\n:tags: [remove-input]\n\nassert 1 + 1 == 2\n```\n\n"
        "```{code-cell} ipython3\nglue('two', 2)\n```\n\n"
        "```{code-cell} ipython3\n:tags: [hide-input]\n\nassert True\n```\n\n"
        "```{code-cell} ipython3\nloader = make()\nassert loader\n```\n\n"
        "```{code-cell} ipython3\nplot(loader)\n```\n")
    assert offenders(page) == ["line 22: glue('two', 2)"]  # the loader is for the cell after
