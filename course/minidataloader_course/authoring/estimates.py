"""The time estimates of the chapters, computed by a stated rule (the front page's section
"How the times are computed"; course/README.md says why these numbers), never typed:

    python -m minidataloader_course.authoring.estimates --measure   # after `make book`:
        # the cells' run time of every chapter page, from the build, into cell_seconds.json
    python -m minidataloader_course.authoring.estimates             # write the estimates
    python -m minidataloader_course.authoring.estimates --check     # fail if one differs
    make estimates                                                   # the first two

The estimate of a chapter page, in minutes:

    core-path words / READING_SPEED  +  folded words x FOLDED_READ / READING_SPEED
    + EXERCISE_MINUTES x exercises + ITEM_MINUTES x check-yourself items
    + MILESTONE_MINUTES x milestones + the page's cells' measured run time

rounded to ROUNDING minutes. Words are counted as ``/work/shared/tools/prose_words.py``
counts them (its rules are copied into ``prose_words`` below), without the estimate's own
block. Exercises and items are the catalog's, each on the page that asks it; a milestone
is on the page that runs it.

What it writes:

- in each chapter page, one line between the markers ``% time-estimate`` and
  ``% /time-estimate`` (MyST comments: the book shows the line alone). A page without the
  markers gets them, with the line, after its "Core path" paragraph (or, without one, after
  its title paragraph);
- on the front page (``intro.md``), the column "time (estimate)" of the table under "What
  you write", and the total in the sentence "about N hours in all".

NOTE [ Where the cells' run time comes from ]
myst-nb records, for every page it executes, the notebook's run time in seconds (kernel start
included) in the Sphinx environment: ``env.nb_metadata[docname]["exec_data"]["runtime"]``,
pickled in ``_build/.doctrees/environment.pickle``. It is there whatever the execution mode:
``force`` (``make book-strict``, two pages at a time) times the run; ``cache`` (``make book``,
one page at a time, the build to measure from) times it when it
runs a page and otherwise copies the time jupyter-cache stored with the cached notebook
(``execution_seconds`` in ``_build/.jupyter_cache``). So the one place to read covers both
builds, and a page read from the cache still has the time of its real run. (nbclient's
``record_timing`` would put times into each cell's metadata, but myst-nb does not keep the
executed notebooks' metadata anywhere this command could read.) The times are measured on
whatever machine built the book: a busy one makes them longer. They are a small part of an
estimate (seconds to a few minutes against hours), so the rule takes them as measured.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import pickle
import re
import sys
from dataclasses import dataclass

from minidataloader_course.authoring.workbooks import ROOT, chapters

CELL_SECONDS = pathlib.Path(__file__).with_name("cell_seconds.json")

# The rule (course/README.md, "How the time estimates are computed", says why these numbers)
READING_SPEED = 150  # words per minute: technical prose read to learn, its code read too
FOLDED_READ = 0.25  # the part of the folded words a reader opens: hints, deep dives
EXERCISE_MINUTES = 20
ITEM_MINUTES = 3  # a check-yourself item
MILESTONE_MINUTES = 10
ROUNDING = 5  # minutes

START, END = "% time-estimate", "% /time-estimate"  # MyST comments: the book shows neither
_BLOCK = re.compile(rf"^{re.escape(START)}[ \t]*\n.*?^{re.escape(END)}[ \t]*\n?",
                    re.MULTILINE | re.DOTALL)
RULE_SECTION = "how-the-times-are-computed"  # the front page's section that states the rule


class EstimateError(ValueError):
    """The estimates cannot be made: the message says what to do."""


# ---------------------------------------------------------------------------------------
# Words, counted as /work/shared/tools/prose_words.py counts them (its rules, copied)

_FOLDED = re.compile(r"dropdown|toggle|\{solution|\{hint|\{tip\}|going deeper|:class: *(tip|hint)",
                     re.IGNORECASE)


def prose_words(text: str, with_estimate: bool = False) -> tuple[int, int]:
    """(all words, folded words) of a page's prose: outside code cells and fenced code;
    folded words are inside dropdowns, toggles, hints, solutions and tips (what a reader
    opens on purpose). The estimate's own block is left out, unless ``with_estimate`` (the
    word budget counts what the reader reads, the line included)."""
    lines = (text if with_estimate else _BLOCK.sub("", text)).splitlines()
    stack: list[tuple[str, bool]] = []
    words = folded = 0
    in_code = None
    for i, line in enumerate(lines):
        fence_line = re.match(r"^(`{3,}|~{3,})(.*)$", line.strip())
        if fence_line:
            fence, rest = fence_line.group(1), fence_line.group(2)
            if in_code:
                if fence == in_code and not rest.strip():
                    in_code = None
                continue
            if stack and fence == stack[-1][0] and not rest.strip():
                stack.pop()
                continue
            if rest.startswith("{code-cell}") or not rest.startswith("{"):
                in_code = fence
                continue
            options = " ".join(option for option in lines[i + 1:i + 6]
                               if option.lstrip().startswith(":"))
            stack.append((fence, bool(_FOLDED.search(rest)
                                      or re.search(r"dropdown|toggle", options))))
            continue
        if in_code or line.lstrip().startswith(":") or line.startswith(("---", "+++")):
            continue
        count = len(re.findall(r"[A-Za-z\u4e00-\u9fff][\w'’-]*", re.sub(r"`[^`]*`", " x ", line)))
        words += count
        if any(fold for _, fold in stack):
            folded += count
    return words, folded


# ---------------------------------------------------------------------------------------
# What a page asks of the reader, from the catalog


@dataclass
class Page:
    """One chapter page and what its estimate is made of."""

    path: pathlib.Path
    core_words: int
    folded_words: int
    exercises: int
    items: int
    milestones: int
    cell_seconds: float

    @property
    def chapter(self) -> int:
        return int(self.path.name[:2])

    def minutes(self) -> float:
        """The rule, unrounded."""
        return ((self.core_words + FOLDED_READ * self.folded_words) / READING_SPEED
                + EXERCISE_MINUTES * self.exercises + ITEM_MINUTES * self.items
                + MILESTONE_MINUTES * self.milestones + self.cell_seconds / 60)


def _asked_on(path: pathlib.Path) -> tuple[list[str], list[str], list[int]]:
    """The exercises (registered names), check-yourself items and milestones a page asks."""
    import jupytext

    from minidataloader_course import catalog
    from minidataloader_course.authoring import workbooks

    tag = f"ch{path.name[:2]}"
    _, sections = workbooks.read_sections(jupytext.read(path), path)
    exercises, items = [], []
    for section in sections:
        if section.question is not None:
            items.append(section.question.name)
            continue
        stub = next(cell for _, cell in section.cells if "exercise" in workbooks._tags(cell))
        piece = workbooks._PIECE.match(stub.source.split("\n", 1)[0])
        if piece:
            exercises.append(workbooks.piece_exercise(piece.group("piece"), tag, path.name)[0].name)
        else:
            exercises.append(catalog.exercises()[workbooks.defined_name(stub.source,
                                                                        path.name)].name)
    text = path.read_text()
    milestones = [number for number in catalog.milestones()
                  if re.search(rf"^milestone\({number}\)", text, re.MULTILINE)]
    return exercises, items, milestones


def measured_seconds(path: pathlib.Path = CELL_SECONDS) -> dict[str, float]:
    return json.loads(path.read_text()) if path.exists() else {}


def pages(root: pathlib.Path = ROOT, seconds: dict[str, float] | None = None) -> list[Page]:
    """Every chapter page, with what its estimate is made of."""
    seconds = measured_seconds() if seconds is None else seconds
    found, missing = [], []
    for path in chapters(root):
        words, folded = prose_words(path.read_text())
        exercises, items, milestones = _asked_on(path)
        if path.stem not in seconds:
            missing.append(path.stem)
        found.append(Page(path, words - folded, folded, len(exercises), len(items),
                          len(milestones), seconds.get(path.stem, 0.0)))
    if missing:
        raise EstimateError(
            f"no measured run time for {', '.join(missing)}: build the book first (`make book`), "
            f"then run `python -m minidataloader_course.authoring.estimates --measure` "
            f"(or `make estimates`, which does both steps after the build)")
    return found


def rounded(minutes: float) -> int:
    return max(ROUNDING, ROUNDING * round(minutes / ROUNDING))


def duration(minutes: int) -> str:
    """``2 h 10 min``, ``2 h``, ``45 min``."""
    hours, rest = divmod(minutes, 60)
    return " ".join(part for part in (f"{hours} h" if hours else "",
                                      f"{rest} min" if rest else "") if part)


def minutes_of(text: str) -> float:
    """The minutes a duration of the front page's table says: ``2 h 10 min``, ``45 min``,
    ``2.5 h``."""
    found = re.fullmatch(r"\s*(?:(?P<hours>\d+(?:\.\d+)?)\s*h)?\s*(?:(?P<minutes>\d+)\s*min)?\s*",
                         text)
    if not found or not (found.group("hours") or found.group("minutes")):
        raise ValueError(f"not a duration: {text!r}")
    return 60 * float(found.group("hours") or 0) + int(found.group("minutes") or 0)


def seconds_text(seconds: float) -> str:
    return f"{round(seconds)} s" if seconds < 90 else f"{round(seconds / 60)} min"


def _counted(number: int, word: str) -> str:
    return f"{number} {word}{'' if number == 1 else 's'}"


def estimate_line(page: Page) -> str:
    """The line a chapter page shows near its top."""
    parts = [f"{page.core_words:,} words", _counted(page.exercises, "exercise")]
    if page.items:
        parts.append(_counted(page.items, "question"))
    if page.milestones:
        parts.append(_counted(page.milestones, "milestone"))
    parts.append(f"cells {seconds_text(page.cell_seconds)}")
    return (f"**Time:** about {duration(rounded(page.minutes()))}: {', '.join(parts)} "
            f"([how](../intro.md#{RULE_SECTION})).")


def estimate_block(page: Page) -> str:
    return f"{START}\n\n{estimate_line(page)}\n\n{END}\n"


# ---------------------------------------------------------------------------------------
# Writing them


def _insertion_point(lines: list[str]) -> int:
    """Where a page without the markers gets its estimate: after the "Core path" paragraph
    that opens the chapter (or block: an admonition), else after the title's paragraph."""
    title = next((i for i, line in enumerate(lines) if line.startswith("# ")), None)
    if title is None:
        raise EstimateError("the page has no title (a line '# N. Title')")
    blocks, i = [], title + 1
    while i < len(lines) and len(blocks) < 6:
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i >= len(lines):
            break
        start, fence = i, re.match(r"^(`{3,}|~{3,})", lines[i])
        if fence:  # a directive: up to its closing fence
            i += 1
            while i < len(lines) and lines[i].strip() != fence.group(1):
                i += 1
            i += 1
        else:
            while i < len(lines) and lines[i].strip():
                i += 1
        text = "\n".join(lines[start:i])
        if text.startswith(("## ", "+++", "```{code-cell}")) or "Learning goals" in text:
            break
        blocks.append((start, i, text))
    if not blocks:
        return title + 1
    core = next((end for _, end, text in blocks if "core path" in text.lower()), None)
    return core if core is not None else blocks[0][1]


def with_estimate(text: str, block: str) -> str:
    """The page's text with ``block`` between its markers (added where they are missing)."""
    if _BLOCK.search(text):
        return _BLOCK.sub(lambda _: block, text, count=1)
    lines = text.split("\n")
    at = _insertion_point(lines)
    return "\n".join(lines[:at] + [""] + block.rstrip("\n").split("\n") + lines[at:])


def has_markers(text: str) -> bool:
    return bool(_BLOCK.search(text))


_TIME_COLUMN = "time (estimate)"
_TOTAL = re.compile(r"about\s+\d+\s+hours\s+in\s+all")


def with_front_page_times(intro: str, minutes: dict[int, int]) -> str:
    """The front page with the table's "time (estimate)" column (the table under "What you
    write") and the total ("about N hours in all") made from ``minutes`` per chapter."""
    head, section = intro.split("## What you write", 1)
    section, rest = (section.split("\n## ", 1) + [""])[:2]
    lines = section.split("\n")
    header = next((i for i, line in enumerate(lines) if _TIME_COLUMN in line), None)
    if header is None:
        raise EstimateError(f"intro.md: the table under 'What you write' has no column "
                            f"{_TIME_COLUMN!r}")
    column = [cell.strip() for cell in lines[header].strip().strip("|").split("|")].index(
        _TIME_COLUMN)
    written = set()
    for i in range(header + 2, len(lines)):
        if not lines[i].startswith("|"):
            break
        cells = lines[i].strip().strip("|").split("|")
        number = cells[0].strip()
        if number.isdigit() and int(number) in minutes:
            cells[column] = f" {duration(minutes[int(number)])} "
            lines[i] = "|" + "|".join(cells) + "|"
            written.add(int(number))
    if written != set(minutes):
        raise EstimateError(f"intro.md: the table has no row for chapters "
                            f"{sorted(set(minutes) - written)}")
    section = "\n".join(lines)
    total = round(sum(minutes.values()) / 60)
    if not _TOTAL.search(section):
        raise EstimateError("intro.md: the section 'What you write' has no sentence with "
                            "'about N hours in all' for the total")
    section = _TOTAL.sub(f"about {total} hours in all", section, count=1)
    return head + "## What you write" + section + ("\n## " + rest if rest else "")


def chapter_minutes(found: list[Page]) -> dict[int, int]:
    """Minutes per chapter: the sum of its pages' rounded estimates (what the pages show)."""
    minutes: dict[int, int] = {}
    for page in found:
        minutes[page.chapter] = minutes.get(page.chapter, 0) + rounded(page.minutes())
    return minutes


def written(root: pathlib.Path = ROOT, seconds: dict[str, float] | None = None
            ) -> dict[pathlib.Path, str]:
    """Every file the command writes, with what it writes there."""
    found = pages(root, seconds)
    made = {page.path: with_estimate(page.path.read_text(), estimate_block(page))
            for page in found}
    intro = root / "intro.md"
    made[intro] = with_front_page_times(intro.read_text(), chapter_minutes(found))
    return made


# ---------------------------------------------------------------------------------------
# Measuring


def runtimes_from_build(build: pathlib.Path) -> dict[str, float]:
    """The run time in seconds of every chapter page the build executed (NOTE [ Where the
    cells' run time comes from ]), by the page's file name without ``.md``."""
    pickled = build / ".doctrees" / "environment.pickle"
    if not pickled.exists():
        raise EstimateError(f"{pickled} not found: build the book first (`make book`)")
    with open(pickled, "rb") as file:
        environment = pickle.load(file)  # noqa: S301 - our own build's file
    found = {}
    for docname, data in getattr(environment, "nb_metadata", {}).items():
        runtime = (data.get("exec_data") or {}).get("runtime")
        stem = docname.rsplit("/", 1)[-1]
        if runtime is not None and re.match(r"\d\d_", stem):
            found[stem] = round(float(runtime), 1)
    return found


def measure(build: pathlib.Path, root: pathlib.Path = ROOT,
            target: pathlib.Path = CELL_SECONDS) -> dict[str, float]:
    """Store the measured run time of every chapter page in ``target``; every page must have
    one."""
    found = runtimes_from_build(build)
    missing = [path.stem for path in chapters(root) if path.stem not in found]
    if missing:
        raise EstimateError(f"the build in {build} has no run time for {', '.join(missing)}: "
                            f"build the whole book (`make book`), then measure again")
    kept = {path.stem: found[path.stem] for path in chapters(root)}
    target.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minidataloader_course.authoring.estimates",
                                     description="Compute the chapters' time estimates and "
                                                 "write them into the chapters and intro.md.")
    parser.add_argument("--measure", nargs="?", const=ROOT / "_build", type=pathlib.Path,
                        metavar="BUILD", help="first store the cells' run times from a book "
                                              "build (default: _build) in cell_seconds.json")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; fail if a file differs from what it would write")
    parser.add_argument("--root", type=pathlib.Path, default=ROOT, help="the repository")
    parser.add_argument("--seconds", type=pathlib.Path, default=CELL_SECONDS,
                        help="the measured run times (default: %(default)s)")
    arguments = parser.parse_args(argv)
    try:
        if arguments.measure is not None:
            kept = measure(arguments.measure, arguments.root, arguments.seconds)
            print(f"wrote {arguments.seconds.name}: {len(kept)} pages, "
                  f"{sum(kept.values()):.0f} s of cells in all")
        made = written(arguments.root, measured_seconds(arguments.seconds))
    except EstimateError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    stale = [path for path, text in made.items() if path.read_text() != text]
    if arguments.check:
        for path in stale:
            print(f"{path.relative_to(arguments.root)}: its time estimate is stale: run "
                  f"`python -m minidataloader_course.authoring.estimates`", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(made[path])
        print(f"wrote {path.relative_to(arguments.root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
