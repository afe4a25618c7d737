"""python -m minidataloader_course COMMAND ...

status                 which pieces of your package are still stubs, written in a workbook,
                       or edited elsewhere
reset [PIECE ...]      put the stubs back (all pieces, or those named); asks first, keeps a
                       backup
milestone N [PACKAGE]  check your package against torch's DataLoader (--start-method M: how
                       worker processes start)
create                 make your package from the stubs if it is missing, and add the pieces
                       the book gained since
fill N                 write the book's solution into every piece up to chapter N (to start
                       at a later chapter); asks first, keeps a backup
init DIR               a folder to work in, anywhere: every workbook, and your package of
                       stubs in DIR/myloader; never replaces a file of yours without asking

Your package is notebooks/myloader (found from here), or the folder --path names.
"""

from __future__ import annotations

import argparse
import multiprocessing
import pathlib
import shutil
import sys

from minidataloader_course.catalog import milestones
from minidataloader_course.learner import (
    PACKAGE,
    STUB,
    backup_package,
    ensure_package,
    fill_with_solutions,
    find_package,
    piece_exercises,
    reset,
    status,
)
from minidataloader_course.milestones import run_milestone

PROG = "python -m minidataloader_course"
WORKBOOKS = pathlib.Path(__file__).resolve().parent / "workbooks"  # shipped with the course


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--path", type=pathlib.Path,
                       help="your package (default: notebooks/myloader, found from here)")
    commands.add_parser("status", parents=[where], help="the state of every piece")
    reset_ = commands.add_parser("reset", parents=[where], help="put stubs back")
    reset_.add_argument("pieces", nargs="*", help="only these, e.g. sampler.RandomSampler")
    reset_.add_argument("--yes", action="store_true", help="reset without asking")
    milestone = commands.add_parser("milestone", help="check your package against torch")
    milestone.add_argument("number", type=int, help="the milestone: " + ", ".join(
        f"{n} ({m.title})" for n, m in milestones().items()))
    milestone.add_argument("package", nargs="?", type=pathlib.Path,
                           help="your package's folder (default: notebooks/myloader)")
    milestone.add_argument("--start-method", choices=["fork", "spawn", "forkserver"],
                           help="how worker processes start (default: your system's)")
    commands.add_parser("create", parents=[where], help="make your package if it is missing")
    fill = commands.add_parser("fill", parents=[where], help="the book's solutions, up to N")
    fill.add_argument("chapter", type=int, help="the last chapter whose pieces to fill")
    fill.add_argument("--yes", action="store_true", help="replace written pieces without asking")
    init = commands.add_parser("init", help="a folder with every workbook and your package")
    init.add_argument("folder", type=pathlib.Path)
    init.add_argument("--yes", action="store_true", help="replace changed workbooks without asking")
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    if arguments.command == "milestone":
        if arguments.start_method:
            multiprocessing.set_start_method(arguments.start_method, force=True)
        verdict = run_milestone(arguments.number, arguments.package)
        print(verdict)
        return 0 if verdict.passed else 1
    if arguments.command == "init":
        return _init(arguments.folder.resolve(), arguments.yes)
    package = (arguments.path or find_package()).resolve()
    if arguments.command == "create":
        added = ensure_package(package)
        print(f"{package}: " + (f"added {', '.join(added)}" if added else "up to date"))
        return 0
    if not (package / "__init__.py").exists():
        print(f"no package at {package} (make one with: {PROG} create)", file=sys.stderr)
        return 2
    pieces = status(package)
    if arguments.command == "status":
        width = max(map(len, pieces))
        for piece, state in pieces.items():
            print(f"{piece:<{width}}  {state}")
        return 0
    if arguments.command == "fill":
        return _fill(package, pieces, arguments.chapter, arguments.yes)
    return _reset(package, pieces, arguments.pieces, arguments.yes)


def _asked(question: str) -> bool:
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def _init(folder: pathlib.Path, yes: bool) -> int:
    """Every workbook the course ships, and a package of stubs, into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for source in sorted(WORKBOOKS.glob("[0-9][0-9]_*.ipynb")):
        target = folder / source.name
        if target.exists() and target.read_bytes() == source.read_bytes():
            print(f"  {target.name}: unchanged")
            continue
        if target.exists() and not (yes or _asked(f"{target} differs from the course's "
                                                  f"workbook: replace it (your copy is kept "
                                                  f"as {target.name}.bak)?")):
            print(f"  {target.name}: kept yours")
            continue
        if target.exists():
            shutil.copy2(target, target.with_name(target.name + ".bak"))
        shutil.copy2(source, target)
        print(f"  {target.name}: written")
    package = folder / PACKAGE
    made = not (package / "__init__.py").exists()
    added = ensure_package(package)
    print(f"  {PACKAGE}/: " + ("made from the stubs" if made else
                               f"added {', '.join(added)}" if added else "yours, unchanged"))
    print(f"{folder}: open a workbook there with Jupyter, e.g. jupyter lab {folder}")
    return 0


def _fill(package: pathlib.Path, pieces: dict[str, str], chapter: int, yes: bool) -> int:
    asking = [piece for piece, exercises in piece_exercises().items()
              if any(int(e.chapter[2:]) <= chapter for e in exercises)]
    written = [piece for piece in asking if pieces.get(piece, STUB) != STUB]
    if written and not yes:
        print(f"This puts the book's solutions in place of {len(written)} piece(s) of yours: "
              f"{', '.join(written)}.\nA copy of the whole package is kept next to it.")
        if not _asked("Fill?"):
            print("nothing changed")
            return 1
    kept = backup_package(package) if written else None
    filled = fill_with_solutions(package, chapter)
    print(f"{package}: the book's solutions in {len(filled)} piece(s) up to chapter {chapter}"
          + (f"; your previous version is in {kept}" if kept else ""))
    return 0


def _reset(package: pathlib.Path, pieces: dict[str, str], named: list[str], yes: bool) -> int:
    unknown = [p for p in named if p not in pieces]
    if unknown:
        print(f"no such piece: {', '.join(unknown)} (pieces: {', '.join(pieces)})",
              file=sys.stderr)
        return 2
    written = [p for p in named or pieces if pieces[p] != STUB]
    if written and not yes:
        print(f"This puts the stubs back in place of {len(written)} piece(s) of yours: "
              f"{', '.join(written)}.\nA copy of the whole package is kept next to it.")
        if not _asked("Reset?"):
            print("nothing changed")
            return 1
    kept = reset(package, named or None)
    print(f"reset {package}" + (f"; your previous version is in {kept}" if kept else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
