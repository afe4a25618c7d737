"""python -m minidataloader.exercises.learner {status,reset,create} [--path PATH] ...

status   which pieces of your package are still stubs, written in a workbook, or edited
reset    put the stubs back (all pieces, or those named); asks first, keeps a backup
create   make the package from the stubs if it is missing, and add pieces the book gained
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from . import STUB, ensure_package, find_package, reset, status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minidataloader.exercises.learner",
                                     description=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["status", "reset", "create"])
    parser.add_argument("pieces", nargs="*", help="reset only these, e.g. sampler.RandomSampler")
    parser.add_argument("--path", type=pathlib.Path,
                        help="your package (default: notebooks/myloader, found from here)")
    parser.add_argument("--yes", action="store_true", help="reset without asking")
    arguments = parser.parse_args(argv)
    package = (arguments.path or find_package()).resolve()

    if arguments.command == "create":
        added = ensure_package(package)
        print(f"{package}: " + (f"added {', '.join(added)}" if added else "up to date"))
        return 0
    if not (package / "__init__.py").exists():
        print(f"no package at {package} (make one with: create)", file=sys.stderr)
        return 2
    pieces = status(package)
    if arguments.command == "status":
        width = max(map(len, pieces))
        for piece, state in pieces.items():
            print(f"{piece:<{width}}  {state}")
        return 0
    unknown = [p for p in arguments.pieces if p not in pieces]
    if unknown:
        print(f"no such piece: {', '.join(unknown)} (pieces: {', '.join(pieces)})",
              file=sys.stderr)
        return 2
    chosen = arguments.pieces or list(pieces)
    written = [p for p in chosen if pieces[p] != STUB]
    if written and not arguments.yes:
        print(f"This puts the stubs back in place of {len(written)} piece(s) of yours: "
              f"{', '.join(written)}.\nA copy of the whole package is kept next to it.")
        try:
            answer = input("Reset? [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing changed")
            return 1
    kept = reset(package, arguments.pieces or None)
    print(f"reset {package}" + (f"; your previous version is in {kept}" if kept else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
