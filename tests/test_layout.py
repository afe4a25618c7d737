"""The house's structural rules (ARCHITECTURE.md, "What may import what, and why"): what the
library's core may import, what `import minidataloader` may pull in, the core's line budget,
the library apart from the course, no import cycles between files or between folders,
chapters that share only through shared modules, and the index of the NOTEs."""

from __future__ import annotations

import ast
import io
import pathlib
import re
import subprocess
import sys
import tokenize

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "minidataloader"
COURSE = ROOT / "course" / "minidataloader_course"
CORE_MODULES = [
    "__init__.py", "_tracing.py", "dataset.py", "sampler.py", "distributed.py", "collate.py",
    "fetch.py", "worker.py", "worker_group.py", "pin_memory.py", "dataloader.py",
]
CORE_LINE_BUDGET = 1300


def core_files():
    return [PACKAGE / name for name in CORE_MODULES if (PACKAGE / name).exists()]


# ---------------------------------------------------------------------------------------
# The import graph: every import of every module, those inside functions included


def module_name(path: pathlib.Path) -> str:
    base = ROOT if path.is_relative_to(PACKAGE) else COURSE.parent
    parts = list(path.relative_to(base).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def python_files() -> list[pathlib.Path]:
    return sorted([*PACKAGE.rglob("*.py"), *COURSE.rglob("*.py")])


MODULES = {module_name(path): path for path in python_files()}


def imported_names(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, dotted name) of everything a module imports, relative imports resolved:
    ``from X import y`` imports the module ``X.y`` if there is one, else (a name of) ``X``."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                dotted = f"{base}.{alias.name}"
                found.append((node.lineno, dotted if dotted in MODULES else base))
    return found


def resolved(dotted: str) -> str | None:
    """The module of ours a dotted name is, or is in (None: not ours)."""
    while dotted:
        if dotted in MODULES:
            return dotted
        dotted = dotted.rpartition(".")[0]
    return None


def module_graph() -> dict[str, set[str]]:
    graph = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for _, dotted in imported_names(path):
            target = resolved(dotted)
            if target and target != name:
                graph[name].add(target)
    return graph


def folder_of(module: str) -> str:
    path = MODULES[module]
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def folder_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for source, targets in module_graph().items():
        edges = graph.setdefault(folder_of(source), set())
        edges.update(folder_of(t) for t in targets if folder_of(t) != folder_of(source))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected component with more than one node."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_cycles_finds_a_cycle_and_only_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_files():
    found = cycles(module_graph())
    assert not found, "modules that import each other (directly or not):\n" + "\n".join(
        " <-> ".join(cycle) for cycle in found)


def test_no_import_cycle_between_folders():
    found = cycles(folder_graph())
    assert not found, "folders that import each other (directly or not):\n" + "\n".join(
        " <-> ".join(cycle) for cycle in found)


def test_the_library_never_imports_the_course():
    offenders = [f"{path.relative_to(ROOT)}:{line} imports {dotted}"
                 for path in PACKAGE.rglob("*.py") for line, dotted in imported_names(path)
                 if dotted.split(".")[0] == "minidataloader_course"]
    assert not offenders, "\n".join(offenders)


def test_nothing_in_the_library_refers_to_the_repository():
    words = re.compile(r"\b(book/|notebooks/|data/|course/|_toc\.yml|_config\.yml)")
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if "parents[" in code or (words.search(code) and "open(" in code):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


CHAPTER = re.compile(r"minidataloader_course\.chapters\.(ch\d\d)(?:\.(\w+))?")


def test_a_chapter_uses_another_only_through_its_public_solution():
    """What several chapters share lives in a shared module. A chapter may build on an earlier
    chapter's model solution (the learner's package grows the same way), by public names."""
    offenders = []
    for path in (COURSE / "chapters").glob("ch[0-9][0-9]/*.py"):
        here = path.parent.name
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [(f"{node.module}.{a.name}", a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                names = [(a.name, a.name.rpartition(".")[2]) for a in node.names]
            else:
                continue
            for dotted, name in names:
                match = CHAPTER.match(dotted)
                if not match or match.group(1) == here:
                    continue
                module = match.group(2)
                if module == "solution" and (dotted.endswith(".solution") or not
                                             name.startswith("_")) and match.group(1) < here:
                    continue
                offenders.append(f"{here}/{path.name}:{node.lineno} imports {dotted}")
    assert not offenders, "\n".join(offenders)


# ---------------------------------------------------------------------------------------
# The core


def test_core_never_imports_torch_utils_data():
    offenders = [f"{path.name}:{line} imports {dotted}" for path in core_files()
                 for line, dotted in imported_names(path)
                 if dotted == "torch.utils.data" or dotted.startswith("torch.utils.data.")]
    assert not offenders, "core must not depend on torch.utils.data:\n" + "\n".join(offenders)


def test_import_pulls_in_no_heavy_extras():
    # (torch.utils.data is not on the list: `import torch` itself imports it in torch 2.13;
    # the AST test above keeps core from depending on it.)
    code = (
        "import sys, minidataloader\n"
        "heavy = [m for m in ('pandas', 'matplotlib', 'ipywidgets', 'IPython',"
        " 'minidataloader_course') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"`import minidataloader` imported {out.stdout.strip()}"


def count_code_lines(source: str) -> int:
    """Lines holding code: no comments, docstrings or blank lines."""
    lines = set()
    previous = tokenize.NEWLINE
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        is_docstring = token.type == tokenize.STRING and previous in (
            tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT)
        if token.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                              tokenize.DEDENT, tokenize.ENDMARKER) and not is_docstring:
            lines.update(range(token.start[0], token.end[0] + 1))
        if token.type not in (tokenize.COMMENT, tokenize.NL):
            previous = token.type
    return len(lines)


def test_count_code_lines_ignores_comments_docstrings_and_blanks():
    source = '"""Module doc."""\n\n# a comment\ndef f(x):\n    """Doc\n    more."""\n    return (x +\n            1)  # why\n'
    assert count_code_lines(source) == 3


def test_core_fits_the_line_budget():
    counts = {path.name: count_code_lines(path.read_text()) for path in core_files()}
    total = sum(counts.values())
    assert total <= CORE_LINE_BUDGET, f"core has {total} lines of code (budget {CORE_LINE_BUDGET}): {counts}"


# ---------------------------------------------------------------------------------------
# The NOTE index

NOTE = re.compile(r"NOTE \[ (.+?) \]")


def notes_in_code() -> dict[str, str]:
    """Each NOTE's title and the file that holds it: where it is written out, not cited (a
    citation says "see NOTE [ ... ]" or names the NOTE inside a sentence)."""
    found = {}
    for path in python_files():
        for line in path.read_text().splitlines():
            stripped = line.strip().lstrip("#").strip()
            match = NOTE.match(stripped)
            if match and stripped == match.group(0):
                found[match.group(1)] = str(path.relative_to(ROOT))
    return found


def notes_in_architecture() -> dict[str, str]:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    section = text.split("## Where each NOTE lives", 1)[1].split("\n## ", 1)[0]
    return {title.replace("`", ""): file for title, file in
            re.findall(r"^\| (.+?) \| `([^`]+)` \|", section, re.MULTILINE)
            if title not in ("NOTE", "---")}


def test_architecture_lists_every_note_where_it_lives():
    code, listed = notes_in_code(), notes_in_architecture()
    assert code, "no NOTE found: the search is broken"
    missing = {title: file for title, file in code.items() if title not in listed}
    stale = {title: file for title, file in listed.items() if code.get(title) != file}
    assert not missing and not stale, (f"NOTEs missing from ARCHITECTURE.md: {missing}; "
                                       f"listed where they are not: {stale}")
