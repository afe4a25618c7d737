"""A book one can finish (issue 31): the core path of the front page and the chapters, counted
as the project's word budget counts it (prose outside code and outside folded blocks: hints,
solutions, "Going deeper"), stays within its budget. Deep dives go into folded blocks or
appendices, which the budget leaves out."""

from __future__ import annotations

from minidataloader_course.authoring.estimates import prose_words
from minidataloader_course.authoring.workbooks import ROOT, chapters

BUDGET = 45_000  # words on the core path: a third shorter than the 66,593 of stop 34


def core_words(path) -> int:
    words, folded = prose_words(path.read_text(), with_estimate=True)
    return words - folded


def test_the_core_path_stays_within_its_budget():
    pages = [ROOT / "intro.md", *chapters()]
    counted = {path.name: core_words(path) for path in pages}
    total = sum(counted.values())
    longest = sorted(counted.items(), key=lambda item: -item[1])[:3]
    assert total <= BUDGET, (
        f"the core path has {total:,} words, over its budget of {BUDGET:,}: fold a deep dive "
        f"(an admonition 'Going deeper: ...' with :class: dropdown) or move it to an "
        f"appendix; the longest pages: {longest}")


def test_the_count_is_the_budgets_own():
    """The same rules as the budget's tool: a folded block and code are not counted."""
    page = ("Two words.\n\n```{admonition} Going deeper: more\n:class: dropdown\nFour folded "
            "words here.\n```\n\n```{code-cell} ipython3\nx = 1\n```\n")
    assert prose_words(page) == (6, 4)
