"""``%%piece`` and ``%piece``: a workbook cell writes a piece of the learner's package.

    %%piece sampler.RandomSampler          save this cell as the piece, then import it
    class RandomSampler(Sampler):
        ...

    %%piece --overwrite sampler.RandomSampler   the same, even over edits made elsewhere
    %piece sampler.RandomSampler           bring your current version into this cell
"""

from __future__ import annotations

import ast
import difflib
import html
import importlib
import pathlib
import traceback

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display

from minidataloader_course.learner.package import (
    EDITED,
    STUB,
    PieceConflict,
    ensure_package,
    find_package,
    import_package,
    package_regions,
    split_piece,
    status,
    write_piece,
)


def _say(text: str) -> None:
    print(text)


def _folded(summary: str, code: str) -> dict[str, str]:
    """A display bundle: in a notebook, the code under a closed <details>; elsewhere (a
    terminal), the summary and the code as text."""
    return {"text/html": f"<details><summary>{html.escape(summary)}</summary>"
                         f"<pre>{html.escape(code)}</pre></details>",
            "text/plain": f"{summary}\n\n{code}"}


def _defined(code: str) -> list[str]:
    return [node.name for node in ast.parse(code).body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def _ask(question: str) -> bool:
    try:
        return input(question).strip().lower() in ("y", "yes")
    except Exception:  # no way to ask (a notebook run without a person): the answer is no
        return False


@magics_class
class PieceMagics(Magics):
    def __init__(self, shell, package: pathlib.Path):
        super().__init__(shell)
        self.package = package

    @line_cell_magic
    def piece(self, line: str, cell: str | None = None):
        words = line.split()
        force = "--overwrite" in words
        names = [w for w in words if not w.startswith("--")]
        if len(names) != 1:
            _say("usage: %%piece <module>.<Name> on the cell's first line, e.g. "
                 "%%piece sampler.RandomSampler")
            return
        piece = names[0]
        try:
            module, name = split_piece(piece)
        except KeyError as error:
            _say(error.args[0])
            return
        if cell is None:
            self._load(piece)
        else:
            self._save(piece, module, name, cell, force)

    def _load(self, piece: str) -> None:
        regions = package_regions(self.package)
        if piece not in regions:
            _say(f"your package has no piece {piece!r}")
            return
        code = regions[piece][1]
        self.shell.set_next_input(f"%%piece {piece}\n{code}", replace=True)
        source = self.package / (piece.split('.')[0] + '.py')
        _say(f"This cell now holds your {piece} from {source}.")
        # JupyterLab has replaced the cell; a front end that cannot (Colab, VS Code) has not,
        # and the kernel cannot tell which: the code is shown folded, for the second kind
        display(_folded(f"Still only %piece in this cell? Your {piece}, to copy:", code),
                raw=True)
        # the check after this cell checks what the file holds now, before you change it
        module, name = split_piece(piece)
        loaded = import_package(self.package)
        # a module the package's __init__ does not import (resumable.py) is imported here
        self.shell.user_ns[name.split(".")[0]] = getattr(
            importlib.import_module(f"{loaded.__name__}.{module}"), name.split(".")[0])
        self.shell.user_ns[self.package.name] = loaded

    def _save(self, piece: str, module: str, name: str, cell: str, force: bool) -> None:
        try:
            compile(cell, f"<%%piece {piece}>", "exec")
        except SyntaxError as error:
            _say(f"Not saved: line {error.lineno} of this cell is not valid Python "
                 f"({error.msg}). Fix it and run the cell again.")
            return
        wanted = name.split(".")[-1]
        defined = _defined(cell)
        if wanted not in defined:
            _say(f"Not saved: this cell is the piece {piece}, so it must define {wanted!r} "
                 f"(it defines {defined or 'nothing'}).")
            return
        path = self.package / f"{module}.py"
        try:
            outcome = write_piece(self.package, piece, cell, force=force)
        except KeyError as error:  # no such file or piece: the message says which there are
            _say(f"Not saved: {error.args[0]}")
            return
        except PieceConflict as conflict:
            diff = "\n".join(difflib.unified_diff(
                conflict.current.splitlines(), cell.strip("\n").splitlines(),
                f"{path.name} (edited outside this notebook)", "this cell", lineterm="", n=1))
            _say(f"{path} has a version of {name} that was edited outside this notebook "
                 f"since a cell last saved it:\n{diff}\n")
            if not _ask(f"Replace it with this cell's version? A copy of {path.name} is kept "
                        f"in {self.package.name}/.backups/. [y/N] "):
                _say(f"Not saved: your edited version stays in {path}. To keep it, copy it "
                     f"into this cell; to replace it, run the cell with "
                     f"%%piece --overwrite {piece}")
                return
            outcome = write_piece(self.package, piece, cell, force=True)
        try:
            package = import_package(self.package)
            loaded = importlib.import_module(f"{package.__name__}.{module}")
        except Exception:  # the learner's code fails at import: show where, keep the file
            _say(f"Saved {name} in {path}, but importing {self.package.name}.{module} then "
                 f"failed:\n{traceback.format_exc(limit=-3)}")
            return
        for defined_name in defined:
            if hasattr(loaded, defined_name):
                self.shell.user_ns[defined_name] = getattr(loaded, defined_name)
        self.shell.user_ns[self.package.name] = package
        verb = "saved" if outcome == "written" else "unchanged"
        _say(f"✎ {verb}: {name} in {self.package.name}/{module}.py")


def load(ipython) -> None:
    package = find_package()
    made = not (package / "__init__.py").exists()
    added = ensure_package(package)
    import_package(package, fresh=True)
    ipython.register_magics(PieceMagics(ipython, package))
    pieces = status(package)
    done = sum(state != STUB for state in pieces.values())
    edited = [piece for piece, state in pieces.items() if state == EDITED]
    note = ("made from the book's stubs" if made
            else f"the book added {', '.join(added)}" if added else "")
    _say(f"Your loader: {package} ({done} of {len(pieces)} pieces written"
         f"{'; ' + note if note else ''})")
    if edited:
        _say(f"  edited outside the workbooks: {', '.join(edited)}")
