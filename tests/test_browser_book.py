"""The built book in a real browser (headless Chromium): the front page and the chapters
render, their figures load, exercises show with their solutions collapsed and open on a
click, no check in the book failed, nothing is requested from another host and the console
stays clean. Screenshots go to _build/screenshots/.

Runs after the strict book build (``make test``); the fixtures are in conftest.py.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

CHAPTER_1 = "book/01_epochs_batches_iterations.html"
CHAPTER_PAGES = ("book/[0-9][0-9]_*.html", "book/appendix_*.html")


def open_page(page, path):
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)  # let the theme's and the toggle buttons' scripts finish


def broken_images(page) -> list[str]:
    """The src of every image that did not load (or loaded empty)."""
    return page.evaluate(
        "() => Array.from(document.images)"
        ".filter(img => !(img.complete && img.naturalWidth > 0)).map(img => img.src)")


def screenshot(page, built_book, name):
    page.screenshot(path=str(built_book.parent / "screenshots" / name), full_page=True)


def test_front_page(page, built_book):
    page.goto((built_book / "index.html").as_uri())  # a redirect to the root document
    page.wait_for_url("**/intro.html", timeout=10_000)
    page.wait_for_load_state("load")
    assert "minidataloader" in page.title()
    assert "rebuilt piece by piece" in page.locator("h1").first.inner_text()
    figure = page.locator("figure img").first
    assert figure.get_attribute("src").endswith("pipeline.svg")
    assert figure.evaluate("img => img.naturalWidth") > 0
    assert broken_images(page) == []
    chapter_link = page.locator(f"table a[href$='{CHAPTER_1}']")
    assert chapter_link.count() == 1
    text = page.locator("article").inner_text()
    for phrase in ("make lab", "check(iterations_per_epoch)", "✔ passed", "not attempted yet"):
        assert phrase in text, phrase
    screenshot(page, built_book, "front_page.png")
    chapter_link.click()
    page.wait_for_load_state("load")
    assert page.url.endswith(CHAPTER_1)
    page.watch.assert_clean()


def test_chapter_1(page, built_book):
    open_page(page, built_book / CHAPTER_1)
    assert page.locator("h1").first.inner_text().startswith("1. Epochs, batches and iterations")
    assert page.title().startswith("1. Epochs, batches and iterations")

    images = page.locator("article img")
    assert images.count() >= 3  # the four-layer diagram and two plots at least
    assert broken_images(page) == []
    assert page.locator("figure img[src$='four_layers.svg']").count() == 1

    exercises = page.locator("div.exercise")
    solutions = page.locator("div.solution")
    assert exercises.count() >= 4
    assert solutions.count() == exercises.count()
    for i in range(solutions.count()):
        solution = solutions.nth(i)
        assert "toggle-hidden" in solution.get_attribute("class"), f"solution {i} is open"
        assert not solution.locator("pre").first.is_visible()
    screenshot(page, built_book, "chapter_01.png")

    first = solutions.first
    first.locator("button.toggle-button").click()
    page.wait_for_timeout(300)
    assert "toggle-hidden" not in first.get_attribute("class")
    assert first.locator("pre").first.is_visible()  # the included reference solution
    verdict = first.locator(".mdl-verdict")
    assert verdict.is_visible() and verdict.inner_text().startswith("✔ passed")
    first.scroll_into_view_if_needed()
    page.screenshot(path=str(built_book.parent / "screenshots" / "chapter_01_solution.png"))

    link = page.locator("a[href$='01_epochs_batches_iterations.ipynb']")
    assert link.count() >= 1, "no link to the workbook"
    page.watch.assert_clean()


def test_every_chapter_page_is_clean(page, built_book):
    """Whatever chapters exist: they load cleanly, their images load, and every check the
    book runs (in the solutions) passed."""
    pages = sorted(path for pattern in CHAPTER_PAGES for path in built_book.glob(pattern))
    assert pages, "no chapter pages in the build"
    for path in pages:
        open_page(page, path)
        name = path.relative_to(built_book).as_posix()
        assert broken_images(page) == [], name
        assert page.locator(".mdl-verdict.mdl-failed").count() == 0, f"{name}: a check failed"
        assert page.locator(".mdl-verdict.mdl-not-attempted").count() == 0, name
        assert page.locator(".mdl-verdict.mdl-passed").count() >= page.locator(
            "div.exercise").count(), f"{name}: an exercise's solution runs no check"
        exercises = page.locator("div.exercise")
        for i in range(exercises.count()):  # hints: there, and collapsed until opened
            hints = exercises.nth(i).locator(".admonition.hint")
            assert hints.count() >= 1, f"{name}: exercise {i + 1} has no hint"
            for k in range(hints.count()):
                assert "toggle-hidden" in hints.nth(k).get_attribute("class"), (
                    f"{name}: a hint of exercise {i + 1} is open")
        page.watch.assert_clean()
