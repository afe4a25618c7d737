"""The package's structural rules (ARCHITECTURE.md, "The import rules, and why"): what core
may import, what `import minidataloader` may pull in, and the core's line budget."""

import ast
import io
import pathlib
import subprocess
import sys
import tokenize

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "minidataloader"
CORE_MODULES = [
    "__init__.py", "_tracing.py", "dataset.py", "sampler.py", "distributed.py", "collate.py",
    "fetch.py", "worker.py", "worker_group.py", "pin_memory.py", "dataloader.py",
]
CORE_LINE_BUDGET = 1300


def core_files():
    return [PACKAGE / name for name in CORE_MODULES if (PACKAGE / name).exists()]


def test_core_never_imports_torch_utils_data():
    offenders = []
    for path in core_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
                if node.module == "torch.utils":
                    names += [f"torch.utils.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                if name == "torch.utils.data" or name.startswith("torch.utils.data."):
                    offenders.append(f"{path.name}:{node.lineno} imports {name}")
    assert not offenders, "core must not depend on torch.utils.data:\n" + "\n".join(offenders)


def test_import_pulls_in_no_heavy_extras():
    # (torch.utils.data is not on the list: `import torch` itself imports it in torch 2.13;
    # the AST test above keeps core from depending on it.)
    code = (
        "import sys, minidataloader\n"
        "heavy = [m for m in ('pandas', 'matplotlib', 'ipywidgets', 'IPython')"
        " if m in sys.modules]\n"
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
