"""The time estimates are computed, by the rule course/README.md states
(``minidataloader_course.authoring.estimates``), never typed: words counted as the word
budget's tool counts them, exercises, items and milestones from the catalog, and the cells'
run time measured by a book build. The command is tried on copies of the chapters and the
front page; the last tests compare the committed files with what it writes."""

from __future__ import annotations

import collections
import json
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from minidataloader_course import catalog
from minidataloader_course.authoring import estimates
from minidataloader_course.authoring.estimates import END, START, EstimateError, Page

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROSE_WORDS = pathlib.Path("/work/shared/tools/prose_words.py")  # the word budget's tool
CHAPTERS = estimates.chapters(ROOT)


def without_estimate(path: pathlib.Path) -> str:
    """A chapter page as it was before any estimate was written into it."""
    return estimates._BLOCK.sub("", path.read_text()).replace("\n\n\n", "\n\n")


def copy_of_the_book(folder: pathlib.Path) -> pathlib.Path:
    """The chapters (without their estimates), the front page and the configuration, copied
    into ``folder``."""
    (folder / "book").mkdir()
    for path in CHAPTERS:
        (folder / "book" / path.name).write_text(without_estimate(path))
    for name in ("intro.md", "_toc.yml", "_config.yml"):
        shutil.copy(ROOT / name, folder / name)
    return folder


def seconds(value: float = 42.0) -> dict[str, float]:
    return {path.stem: value for path in CHAPTERS}


# ---------------------------------------------------------------------------------------
# The rule


def test_the_rule_adds_reading_exercises_items_milestones_and_cells():
    page = Page(pathlib.Path("book/06_demo.md"), core_words=3000, folded_words=1200,
                exercises=6, items=4, milestones=1, cell_seconds=90)
    reading = (3000 + 0.25 * 1200) / 150  # 22 minutes at 150 words a minute
    assert page.minutes() == pytest.approx(reading + 6 * 20 + 4 * 3 + 10 + 1.5)
    assert estimates.rounded(page.minutes()) == 165  # 165.5, to 5 minutes
    assert estimates.duration(165) == "2 h 45 min"
    assert (estimates.duration(120), estimates.duration(45)) == ("2 h", "45 min")
    assert estimates.rounded(1.0) == 5  # never "0 min"


@pytest.mark.parametrize(("text", "minutes"), [("2 h 10 min", 130), ("2.5 h", 150),
                                               ("45 min", 45), ("3 h", 180)])
def test_a_duration_of_the_front_page_reads_back(text, minutes):
    assert estimates.minutes_of(text) == minutes


def test_the_words_are_those_the_word_budget_counts():
    """The rules of the budget's tool, copied: the same numbers on every page."""
    if not PROSE_WORDS.exists():
        pytest.skip(f"{PROSE_WORDS} is not on this machine")
    printed = subprocess.run([sys.executable, str(PROSE_WORDS), str(ROOT)], capture_output=True,
                             text=True, check=True, timeout=120).stdout
    counted = {match.group(1): (int(match.group(2)), int(match.group(3)))
               for match in re.finditer(r"^(\S+\.md)\s+(\d+) words,\s+(\d+) folded", printed,
                                        re.MULTILINE)}
    for path in CHAPTERS:
        text = path.read_text()
        if not estimates.has_markers(text):  # the tool counts the estimate's line; we do not
            assert estimates.prose_words(text) == counted[path.name], path.name


def test_the_estimates_own_line_is_not_counted():
    page = "# 1. A chapter\n\nOne two three.\n"
    block = f"{START}\n\n**Time:** about 2 h (many words here). [How](https://x)\n\n{END}\n"
    assert estimates.prose_words(estimates.with_estimate(page, block)) == (
        estimates.prose_words(page))


def test_the_pages_ask_what_the_catalog_holds():
    """Every exercise, item and milestone counted once, on a page of its chapter."""
    found = estimates.pages(ROOT, seconds())
    per_chapter = collections.defaultdict(lambda: [0, 0, 0])
    for page in found:
        counts = per_chapter[page.chapter]
        counts[0] += page.exercises
        counts[1] += page.items
        counts[2] += page.milestones
    for number in range(1, 15):
        chapter = f"ch{number:02d}"
        assert per_chapter[number] == [
            sum(e.chapter == chapter for e in catalog.exercises().values()),
            sum(q.chapter == chapter for q in catalog.questions().values()),
            int(number in catalog.milestones())], chapter


def test_a_page_without_a_measurement_says_to_build_the_book_first():
    partial = seconds()
    del partial[CHAPTERS[3].stem]
    with pytest.raises(EstimateError, match=rf"{CHAPTERS[3].stem}: build the book first "
                                            r"\(`make book`\)"):
        estimates.pages(ROOT, partial)


# ---------------------------------------------------------------------------------------
# What the command writes, on copies


def test_the_command_writes_one_line_per_page_and_the_front_pages_times(tmp_path):
    root = copy_of_the_book(tmp_path)
    measured = tmp_path / "cell_seconds.json"
    measured.write_text(json.dumps(seconds(42.0)))
    command = ["--root", str(root), "--seconds", str(measured)]
    assert estimates.main(command + ["--check"]) == 1  # nothing written yet
    assert estimates.main(command) == 0
    assert estimates.main(command + ["--check"]) == 0
    found = {page.path.name: page for page in estimates.pages(root, seconds(42.0))}
    total = 0
    for path in sorted((root / "book").glob("[0-9][0-9]_*.md")):
        text = path.read_text()
        assert text.count(START) == 1 and text.count(END) == 1, path.name
        line = text.split(START, 1)[1].split(END, 1)[0].strip()
        page = found[path.name]
        minutes = estimates.rounded(page.minutes())
        assert line.startswith(f"**Time:** about {estimates.duration(minutes)}: "
                               f"{page.core_words:,} words, {page.exercises} exercise"), line
        assert line.endswith("cells 42 s ([how](../intro.md#how-the-times-are-computed))."), line
        assert "\n" not in line
        # right after the "Core path" statement (a paragraph or a box), before the goals
        block = f"{START}\n\n{line}\n\n{END}\n"
        core = text.index("Core path")
        goals = text.index("Learning goals")
        assert core < text.index(block) < goals, path.name
        assert text[core:text.index(block)].count("\n\n") <= 6, path.name  # the statement's end
        # nothing else changed
        assert text.replace(f"\n{START}\n\n{line}\n\n{END}\n", "", 1) == (
            without_estimate(ROOT / "book" / path.name)), path.name
        total += minutes
    intro = (root / "intro.md").read_text()
    rows = {int(cells[0]): cells for cells in (
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in intro.split("## What you write", 1)[1].splitlines() if line.startswith("| "))
        if cells[0].isdigit()}
    per_chapter = estimates.chapter_minutes(list(found.values()))
    assert {number: cells[-1] for number, cells in rows.items()} == {
        number: estimates.duration(minutes) for number, minutes in per_chapter.items()}
    assert f"about {round(total / 60)} hours in all" in " ".join(intro.split())
    untouched = (ROOT / "intro.md").read_text()
    assert intro.split("## What you write")[0] == untouched.split("## What you write")[0]


def test_the_estimate_goes_after_the_core_path_paragraph_and_is_replaced_in_place():
    page = ("---\njupytext: {}\n---\n\n# 6. Workers\n\nThe title's paragraph.\n\n"
            "**Core path.** Queues, the window, the reorder buffer.\n\n```{admonition} Learning "
            "goals\n:class: tip\n- one\n```\n\nMore.\n")
    first = estimates.with_estimate(page, f"{START}\n\nline one\n\n{END}\n")
    assert ("**Core path.** Queues, the window, the reorder buffer.\n\n"
            f"{START}\n\nline one\n\n{END}\n\n```{{admonition}} Learning goals") in first
    second = estimates.with_estimate(first, f"{START}\n\nline two\n\n{END}\n")
    assert second == first.replace("line one", "line two")


def test_the_block_is_valid_myst_and_shows_its_line_alone():
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    page = Page(CHAPTERS[0], 2400, 800, 6, 4, 1, 40.0)  # (2,400 + 200) / 150 + 120 + 12 + 10 + 0.7
    text = estimates.with_estimate("# 1. A chapter\n\nIts first paragraph.\n\nMore.\n",
                                   estimates.estimate_block(page))
    html = create_md_parser(MdParserConfig(), RendererHTML).render(text)
    shown = re.sub(r"<!--.*?-->", "", html)  # a MyST comment: Sphinx shows nothing of it
    assert START not in shown and END not in shown and "% " not in shown
    assert re.findall(r"<p>(.*?)</p>", shown) == [
        "Its first paragraph.",
        "<strong>Time:</strong> about 2 h 40 min: 2,400 words, 6 exercises, 4 questions, "
        "1 milestone, cells 40 s (<a href=\"../intro.md#how-the-times-are-computed\">how</a>).",
        "More."]


@pytest.mark.parametrize("page, heading", [
    ("course/README.md", "## How the time estimates are computed"),
    ("intro.md", "## How the times are computed"),  # where every chapter's line links
])
def test_the_rule_stated_is_the_rule_the_module_uses(page, heading):
    section = (ROOT / page).read_text().split(heading, 1)[1].split("\n## ", 1)[0]
    text = " ".join(section.split())
    for stated in (f"{estimates.READING_SPEED} words a minute", f"{estimates.EXERCISE_MINUTES} "
                   f"minutes", f"{estimates.ITEM_MINUTES} minutes",
                   f"{estimates.MILESTONE_MINUTES} minutes", "a quarter",
                   f"{estimates.ROUNDING} minutes", "make estimates"):
        assert stated in text, stated
    assert estimates.FOLDED_READ == 0.25  # "a quarter"


@pytest.mark.slow
def test_the_run_time_is_read_from_a_book_build(tmp_path):
    """A book of one chapter page whose cell sleeps 1.5 s, built by Jupyter Book as `make
    book` builds (cached execution): its run time reaches cell_seconds.json."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["sphinx"]["config"]["extensions"] = [
        name for name in config["sphinx"]["config"]["extensions"] if "launch_links" not in name]
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(config))
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/01_demo\n")
    (tmp_path / "book").mkdir()
    header = CHAPTERS[0].read_text().split("\n---\n", 1)[0] + "\n---\n"
    (tmp_path / "book" / "01_demo.md").write_text(
        header + "\n# 1. A demo\n\nText.\n\n```{code-cell} ipython3\nimport time\n\n"
        "time.sleep(1.5)\n```\n")
    jupyter_book = pathlib.Path(sys.executable).parent / "jupyter-book"
    built = subprocess.run([str(jupyter_book), "build", str(tmp_path)], capture_output=True,
                           text=True, timeout=600, cwd=tmp_path)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    target = tmp_path / "cell_seconds.json"
    kept = estimates.measure(tmp_path / "_build", tmp_path, target)
    assert list(kept) == ["01_demo"] and kept["01_demo"] >= 1.5
    assert json.loads(target.read_text()) == kept
    (tmp_path / "book" / "02_more.md").write_text((tmp_path / "book" / "01_demo.md").read_text())
    with pytest.raises(EstimateError, match="no run time for 02_more: build the whole book"):
        estimates.measure(tmp_path / "_build", tmp_path, target)


def test_measuring_without_a_build_says_to_build_the_book(tmp_path):
    with pytest.raises(EstimateError, match=r"build the book first \(`make book`\)"):
        estimates.measure(tmp_path / "_build", ROOT, tmp_path / "cell_seconds.json")


# ---------------------------------------------------------------------------------------
# The committed files are what the command writes


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_a_chapters_committed_estimate_is_what_the_command_writes(chapter):
    """TRANSITION (stop 35): a page gets its markers when the lead first runs the command
    after merging; until then its comparison is skipped."""
    text = chapter.read_text()
    if not estimates.has_markers(text):
        pytest.skip(f"{chapter.name} has no {START} markers yet: run `make estimates` after "
                    f"`make book`")
    made = estimates.written(ROOT)[chapter]
    assert text == made, (f"{chapter.name}: its time estimate differs from what the rule "
                          f"gives: run `make estimates` after `make book`, and commit")


def test_the_front_pages_times_are_what_the_command_writes():
    intro = ROOT / "intro.md"
    assert intro.read_text() == estimates.written(ROOT)[intro], (
        "intro.md: the table's times or their total differ from what the rule gives: run "
        "`make estimates` after `make book`, and commit")
