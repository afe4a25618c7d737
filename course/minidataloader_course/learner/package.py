"""The learner's own loader: a package of their own, ``notebooks/myloader/``, written a piece
at a time in the workbooks.

NOTE [ How the learner's package works ]
The book ships the package as stubs (``stubs/`` next to this file). Each piece of the loader
is a region of one of its files, between two marker lines:

    # >>> piece: RandomSampler (chapter 3)
    class RandomSampler(Sampler):
        ...
    # <<< piece: RandomSampler

A workbook cell ``%%piece sampler.RandomSampler`` replaces that region of
``myloader/sampler.py`` with the cell's code (see ``_magic.py``), then imports the package
afresh. Everything outside the regions (module docstrings, the imports the pieces use, given
helpers) comes with the book. A piece named ``Class.method`` is a method region inside a
class that is not itself a region (indented markers).

The package is made from the stubs when it is first needed, and is the learner's from then
on: ``.gitignore`` keeps it out of the repository, so a ``git pull`` never touches it. Their
work is never overwritten without asking:

- ``.pieces.json`` in the package records a hash of what a workbook cell (or a reset) last
  wrote into each region. A region that differs from it was edited elsewhere (in
  JupyterLab's editor, say): a cell that would overwrite it asks first, and keeps a copy in
  ``myloader/.backups/``.
- ``reset`` asks before replacing written pieces, and copies the whole package to
  ``myloader-backup-<time>/`` first.
- When the book gains a piece, ``ensure_package`` appends its stub to the learner's file;
  nothing else in the file changes.

Solutions have one source, each chapter's ``solution.py`` (and, for a piece grown in steps,
its step modules): an exercise with ``piece="sampler.RandomSampler"`` names the region, and
``fill_with_solutions`` writes the source of its reference there (tests use it to make "a
learner who finished chapter N", or "... who finished step k of chapter N").

NOTE [ A piece grown in steps ]
One chapter may ask for a piece in several checked steps: the iterator of chapter 6 first
runs one worker, then several, then reorders, then ... Each step is an exercise of its own,
registered in the chapter's order, with the same ``piece=`` and a name of its own
(``name="MultiProcessIterator, one worker"``; the last step may keep the plain name), its
own cases, rules and mutants. For a class, each step's reference subclasses the step before
it, under the same name, holding only what changes (NOTE [ A class grown over chapters ]
then gives the learner's file one class); the steps may live in modules of their own in the
chapter's folder. In the chapter, each step's exercise has its own ``%%piece`` stub cell: the
k-th such cell of a piece is its k-th step (``piece_steps``). The workbook makes the first a
stub and the others ``%piece`` cells that load the learner's version to grow, each followed
by ``check(<Name>, name=<the step's name>)``. A piece's exercises are ordered by chapter,
then by registration (``piece_exercises``): "the latest" is the last step of the latest
chapter, which milestones check and ``fill_with_solutions(package, N)`` writes.
"""

from __future__ import annotations

import ast
import datetime
import hashlib
import importlib
import inspect
import json
import pathlib
import re
import shutil
import sys
import textwrap
from dataclasses import dataclass

STUBS = pathlib.Path(__file__).resolve().parent / "stubs"
PACKAGE = "myloader"
STATE_FILE = ".pieces.json"
BACKUPS = ".backups"
_BEGIN = re.compile(r"^(?P<indent>[ \t]*)# >>> piece: (?P<name>[\w.]+)[ \t]*(?P<note>.*)$")


class PieceConflict(Exception):
    """The region was edited outside the workbook since a cell last wrote it."""

    def __init__(self, piece: str, current: str):
        super().__init__(piece)
        self.piece, self.current = piece, current


@dataclass(frozen=True)
class Region:
    module: str  # "sampler": the file myloader/sampler.py
    name: str  # "RandomSampler", or "MultiProcessIterator._reset" for a method
    note: str  # what the marker says after the name, e.g. "(chapter 3)"
    indent: str
    start: int  # the first line inside the region
    end: int  # the end marker's line

    @property
    def piece(self) -> str:
        return f"{self.module}.{self.name}"


def find_regions(text: str, module: str) -> dict[str, Region]:
    """The regions of one file, by name. A marker without its end is an error."""
    lines = text.split("\n")
    found: dict[str, Region] = {}
    for number, line in enumerate(lines):
        match = _BEGIN.match(line)
        if not match:
            continue
        name, indent = match.group("name"), match.group("indent")
        end_marker = f"{indent}# <<< piece: {name}"
        for end in range(number + 1, len(lines)):
            if lines[end].rstrip() == end_marker:
                break
        else:
            raise ValueError(f"{module}.py: the piece {name} has no end line "
                             f"{end_marker.strip()!r}")
        found[name] = Region(module, name, match.group("note").strip(), indent, number + 1, end)
    return found


def region_text(text: str, region: Region) -> str:
    """What is inside a region, without the marker's indentation."""
    inside = "\n".join(text.split("\n")[region.start:region.end])
    return textwrap.dedent(inside).strip("\n")


def replace_region(text: str, region: Region, code: str) -> str:
    lines = text.split("\n")
    body = textwrap.indent(code.strip("\n"), region.indent).split("\n")
    return "\n".join(lines[:region.start] + body + lines[region.end:])


def digest(code: str) -> str:
    return hashlib.sha256(code.strip("\n").encode()).hexdigest()[:16]


def split_piece(piece: str) -> tuple[str, str]:
    module, _, name = piece.partition(".")
    if not name:
        raise KeyError(f"a piece is named <module>.<Name>, e.g. sampler.RandomSampler; got "
                       f"{piece!r}")
    return module, name


# ---------------------------------------------------------------------------------------
# The shipped stubs


def stub_files() -> list[pathlib.Path]:
    return sorted(STUBS.glob("*.py"))


def stub_regions() -> dict[str, Region]:
    """Every piece the book asks for, by piece name, in file order."""
    found = {}
    for path in stub_files():
        for region in find_regions(path.read_text(), path.stem).values():
            found[region.piece] = region
    return found


def stub_region(piece: str) -> str:
    """The shipped stub of a piece: what a workbook cell starts from."""
    module, name = split_piece(piece)
    path = STUBS / f"{module}.py"
    regions = find_regions(path.read_text(), module) if path.exists() else {}
    if name not in regions:
        raise KeyError(f"there is no piece {piece!r} in the stubs (pieces: "
                       f"{', '.join(stub_regions())})")
    return region_text(path.read_text(), regions[name])


# ---------------------------------------------------------------------------------------
# Finding and making the learner's package


def find_package(start: pathlib.Path | None = None) -> pathlib.Path:
    """Where the learner's package is, or is to be made.

    The ``myloader`` next to the notebook (the kernel's working folder), or on ``sys.path``;
    from a chapter opened in ``book/``, the one in ``../notebooks/``."""
    here = (start or pathlib.Path.cwd()).resolve()
    candidates = [here / PACKAGE]
    candidates += [pathlib.Path(entry or here).resolve() / PACKAGE for entry in sys.path]
    candidates += [here.parent / "notebooks" / PACKAGE, here / "notebooks" / PACKAGE]
    for candidate in candidates:
        if (candidate / "__init__.py").exists():
            return candidate
    if here.name != "notebooks" and (here.parent / "notebooks").is_dir():
        return here.parent / "notebooks" / PACKAGE
    if here.name != "notebooks" and (here / "notebooks").is_dir():
        return here / "notebooks" / PACKAGE
    return here / PACKAGE


def _read_state(package: pathlib.Path) -> dict[str, str]:
    try:
        return json.loads((package / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}


def _write_state(package: pathlib.Path, state: dict[str, str]) -> None:
    (package / STATE_FILE).write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")


def ensure_package(package: pathlib.Path) -> list[str]:
    """Make the package from the stubs if it is not there; add the pieces (and files) the
    book has gained since. Returns what was added; nothing the learner wrote changes."""
    added = []
    package.mkdir(parents=True, exist_ok=True)
    state = _read_state(package)
    for stub in stub_files():
        target = package / stub.name
        stub_text = stub.read_text()
        if not target.exists():
            target.write_text(stub_text)
            added.append(target.name)
            for region in find_regions(stub_text, stub.stem).values():
                state[region.piece] = digest(region_text(stub_text, region))
            continue
        text = target.read_text()
        have = find_regions(text, stub.stem)
        for name, region in find_regions(stub_text, stub.stem).items():
            if name in have or "." in name:  # a new method region needs its class: not added
                continue
            lines = stub_text.split("\n")[region.start - 1:region.end + 1]
            text = text.rstrip("\n") + "\n\n\n" + "\n".join(lines) + "\n"
            state[region.piece] = digest(region_text(stub_text, region))
            added.append(region.piece)
        target.write_text(text)
    _write_state(package, state)
    return added


def package_regions(package: pathlib.Path) -> dict[str, tuple[Region, str]]:
    """The learner's regions, by piece name: (region, the text inside)."""
    found = {}
    for path in sorted(package.glob("*.py")):
        text = path.read_text()
        for region in find_regions(text, path.stem).values():
            found[region.piece] = (region, region_text(text, region))
    return found


STUB, WRITTEN, EDITED = "stub", "written in a workbook", "edited outside the workbooks"


def status(package: pathlib.Path) -> dict[str, str]:
    """Each piece: still the stub, written by a workbook cell, or edited elsewhere."""
    state = _read_state(package)
    stubs = stub_regions()
    result = {}
    for piece, (_, code) in package_regions(package).items():
        if piece in stubs and code == stub_region(piece):
            result[piece] = STUB
        elif state.get(piece) == digest(code):
            result[piece] = WRITTEN
        else:
            result[piece] = EDITED
    return result


def _is_safe_to_replace(package: pathlib.Path, piece: str, current: str) -> bool:
    recorded = _read_state(package).get(piece)
    if recorded == digest(current):
        return True
    try:
        return current == stub_region(piece)
    except KeyError:
        return False


def write_piece(package: pathlib.Path, piece: str, code: str, force: bool = False) -> str:
    """Put ``code`` in the piece's region. Returns "written" or "unchanged"; raises
    :class:`PieceConflict` if the region was edited elsewhere (unless ``force``, which keeps
    a copy of the file in ``.backups/`` first)."""
    module, name = split_piece(piece)
    path = package / f"{module}.py"
    if not path.exists():
        raise KeyError(f"your package has no file {module}.py (pieces: "
                       f"{', '.join(package_regions(package))})")
    text = path.read_text()
    regions = find_regions(text, module)
    if name not in regions:
        raise KeyError(f"{module}.py has no piece {name!r}: the lines '# >>> piece: {name}' "
                       f"and '# <<< piece: {name}' mark where it goes")
    current = region_text(text, regions[name])
    if current == code.strip("\n"):
        state = _read_state(package)
        state[piece] = digest(current)
        _write_state(package, state)
        return "unchanged"
    if not force and not _is_safe_to_replace(package, piece, current):
        raise PieceConflict(piece, current)
    if not _is_safe_to_replace(package, piece, current):
        backup(package, path)
    path.write_text(replace_region(text, regions[name], code))
    _forget_bytecode(path)
    state = _read_state(package)
    state[piece] = digest(code)
    _write_state(package, state)
    return "written"


def backup(package: pathlib.Path, path: pathlib.Path) -> pathlib.Path:
    folder = package / BACKUPS
    folder.mkdir(exist_ok=True)
    copy = folder / f"{path.name}.{_stamp()}"
    shutil.copy2(path, copy)
    return copy


def _stamp() -> str:
    return datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")


def _forget_bytecode(path: pathlib.Path) -> None:
    # A cached .pyc is trusted when the source's size and mtime (in whole seconds) match:
    # a piece rewritten within the same second with the same size would run the old code.
    for cached in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        cached.unlink(missing_ok=True)


def backup_package(package: pathlib.Path) -> pathlib.Path:
    """A copy of the whole package, ``myloader-backup-<time>/`` next to it."""
    kept = package.with_name(f"{package.name}-backup-{_stamp()}")
    shutil.copytree(package, kept, ignore=shutil.ignore_patterns("__pycache__"))
    return kept


def reset(package: pathlib.Path, pieces: list[str] | None = None) -> pathlib.Path | None:
    """Put the stubs back: every file, or only the given pieces. The package is copied to
    ``myloader-backup-<time>/`` next to it first; returns that folder (None if there was
    nothing to keep)."""
    kept = backup_package(package) if package.exists() else None
    if pieces is None:
        for path in package.glob("*.py"):
            path.unlink()
        for cached in (package / "__pycache__").glob("*.pyc"):
            cached.unlink()
        (package / STATE_FILE).unlink(missing_ok=True)
        ensure_package(package)
    else:
        for piece in pieces:
            write_piece(package, piece, stub_region(piece), force=True)
    return kept


# ---------------------------------------------------------------------------------------
# The reference pieces (one source: the chapters' solution.py)


def piece_exercises() -> dict[str, list]:
    """The exercises that ask for each piece, in chapter order, and within a chapter in the
    order they are registered: a piece's steps in their order (NOTE [ A piece grown in
    steps ])."""
    from minidataloader_course.catalog import exercises

    found: dict[str, list] = {}
    for exercise in sorted(exercises().values(), key=lambda e: e.chapter):  # a stable sort
        if exercise.piece:
            found.setdefault(exercise.piece, []).append(exercise)
    for asking in found.values():
        _check_steps(asking)
    return found


def piece_steps(piece: str, chapter: str) -> list:
    """The exercises of ``chapter`` (``"ch06"``) that ask for ``piece``, in order: one, or the
    steps the piece grows in there."""
    return [e for e in piece_exercises().get(piece, []) if e.chapter == chapter]


def _check_steps(asking: list) -> None:
    """A class piece's steps in one chapter: each step's reference subclasses the one before
    it, under the same name (else the learner's one class could not be assembled)."""
    for before, after in zip(asking, asking[1:]):
        if before.chapter != after.chapter or not isinstance(after.reference, type):
            continue
        if not (after.reference.__bases__[:1] == (before.reference,)
                and after.reference.__name__ == before.reference.__name__):
            raise ValueError(
                f"{after.piece}: the step {after.name!r} follows {before.name!r} in "
                f"{after.chapter}, so its reference must be a class of the same name that "
                f"subclasses that step's (NOTE [ A piece grown in steps ])")


def reference_source(exercise) -> str:
    """The reference's source as it goes into the piece's region."""
    _, name = split_piece(exercise.piece)
    target = exercise.reference
    for attribute in name.split(".")[1:]:  # a method piece: that method of the class
        target = getattr(target, attribute)
    if isinstance(target, type) and _earlier_versions(target):
        return _grown_class_source(target)
    return textwrap.dedent(inspect.getsource(target))


# NOTE [ A class grown over chapters ]
# A class piece that a later chapter grows (the iterator, the DataLoader) is written there as
# a subclass of the earlier chapter's reference, with the same name, holding only the methods
# that change: the book shows what changed, and nothing is written twice. The steps of one
# chapter grow a class the same way (NOTE [ A piece grown in steps ]). The learner's file
# holds one class, so its source is assembled: the first version's header, then every method
# in the first version's order, each as the latest version writes it; a method a later
# version adds follows the method defined before it there.


def _earlier_versions(cls: type) -> list[type]:
    """The references of the same class from earlier chapters, latest first."""
    found = []
    base = cls.__bases__[0] if cls.__bases__ else object
    while base.__name__ == cls.__name__ and base.__module__.startswith(_SOLUTIONS):
        found.append(base)
        base = base.__bases__[0] if base.__bases__ else object
    return found


_SOLUTIONS = "minidataloader_course.chapters."


def _grown_class_source(cls: type) -> str:
    versions = [*reversed(_earlier_versions(cls)), cls]
    header = ast.parse(textwrap.dedent(inspect.getsource(versions[0]))).body[0]
    bases = ", ".join(ast.unparse(base) for base in header.bases)
    methods: list[str] = []
    sources: dict[str, str] = {}
    for version in versions:
        previous = None
        for name, value in vars(version).items():
            if not inspect.isfunction(value):
                continue
            if name not in sources:
                at = methods.index(previous) + 1 if previous else len(methods)
                methods.insert(at, name)
            sources[name] = textwrap.indent(textwrap.dedent(inspect.getsource(value)), "    ")
            previous = name
    body = "\n".join(sources[name] for name in methods)
    return f"class {cls.__name__}{f'({bases})' if bases else ''}:\n{body}"


def fill_with_solutions(package: pathlib.Path, chapter: int = 99,
                        through: str | None = None) -> list[str]:
    """Write the reference of every piece asked for up to ``chapter`` (the latest version
    of a piece that several chapters, or steps, grow): the package of a learner who finished
    that chapter. With ``through``, an exercise's name: the package of a learner who finished
    the chapters before its chapter, then its chapter's exercises up to and including that
    one (in the order they are registered, the chapter's); for a step, the piece holds that
    step (``chapter`` is then ignored). Pieces not yet asked for keep what they hold (in a
    new package, the stub). Returns the pieces written."""
    ensure_package(package)
    done_here: set[str] = set()
    if through is not None:
        from minidataloader_course.catalog import exercises

        known = exercises()
        if through not in known:
            raise KeyError(f"there is no exercise called {through!r}")
        chapter = int(known[through].chapter[2:])
        in_chapter = [name for name, e in known.items() if e.chapter == known[through].chapter]
        done_here = set(in_chapter[:in_chapter.index(through) + 1])
    written = []
    for piece, asking in piece_exercises().items():
        done = [e for e in asking if int(e.chapter[2:]) < chapter or (
            int(e.chapter[2:]) == chapter and (through is None or e.name in done_here))]
        if done:
            write_piece(package, piece, reference_source(done[-1]), force=True)
            written.append(piece)
    return written


# ---------------------------------------------------------------------------------------
# Importing it


def import_package(package: pathlib.Path, fresh: bool = True):
    """Import the learner's package from its folder (afresh: what the files say now). Its
    parent folder goes on ``sys.path``, so that worker processes started with spawn, which
    import what they run, find it too."""
    parent = str(package.resolve().parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    if fresh:
        for name in [n for n in sys.modules if n == package.name or
                     n.startswith(package.name + ".")]:
            del sys.modules[name]
        importlib.invalidate_caches()
    return importlib.import_module(package.name)
