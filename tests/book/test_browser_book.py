"""The built book in a real browser (headless Chromium): the front page and the chapters
render, their figures load, exercises show with their solutions and their hint tiers collapsed,
a tier and a check-yourself item's Answer open on a click, no check in the book failed,
nothing is requested from another host and the console stays clean. Screenshots go to
_build/screenshots/.

Runs after the strict book build (``make test``); the fixtures are in conftest.py.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

CHAPTER_1 = "book/01_epochs_batches_iterations.html"
CHAPTER_6 = "book/06_workers_and_queues.html"
CHAPTER_10 = "book/10_when_things_go_wrong.html"
CHAPTER_PAGES = ("book/[0-9][0-9]_*.html", "book/appendix_*.html")
WIDE = {"width": 1400, "height": 900}  # wide enough for the page's contents panel


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
        answers = page.locator(".admonition.check-yourself .admonition.answer")
        assert answers.count() == page.locator(".admonition.check-yourself").count(), name
        for k in range(answers.count()):  # check-yourself items: the Answer collapsed
            assert "toggle-hidden" in answers.nth(k).get_attribute("class"), (
                f"{name}: the Answer of check-yourself item {k + 1} is open")
        page.watch.assert_clean()


def open_on_click(page, box) -> None:
    """Open a collapsed admonition (a hint tier, an Answer) the way a reader does."""
    body = box.locator("p").last
    assert "toggle-hidden" in box.get_attribute("class") and not body.is_visible()
    box.locator("button.toggle-button").first.click()
    page.wait_for_timeout(300)
    assert "toggle-hidden" not in box.get_attribute("class") and body.is_visible()


def test_a_hint_tier_and_an_answer_open_on_a_click(page, built_book):
    open_page(page, built_book / CHAPTER_1)
    hints = page.locator("div.exercise").first.locator(".admonition.hint")
    assert [hints.nth(k).locator(".admonition-title").inner_text().strip()
            for k in range(hints.count())] == ["Hint 1: a question", "Hint 2: the idea",
                                               "Hint 3: a skeleton"]
    open_on_click(page, hints.nth(1))
    assert "toggle-hidden" in hints.nth(2).get_attribute("class")  # one tier at a time
    skeleton = hints.nth(2)
    skeleton.locator("button.toggle-button").first.click()
    page.wait_for_timeout(300)
    code = skeleton.locator("div.highlight pre").first  # a code block, whole lines shown
    assert code.is_visible() and "____" in code.inner_text()
    assert code.evaluate("(pre) => pre.scrollWidth <= pre.clientWidth + 1")

    items = page.locator(".admonition.check-yourself")
    assert items.count() >= 4
    first = items.first
    assert first.locator(".admonition-title").first.inner_text().startswith("Check yourself")
    answer = first.locator(".admonition.answer")
    open_on_click(page, answer)
    assert "b. The batch sampler decides" in answer.inner_text()
    answer.scroll_into_view_if_needed()
    page.screenshot(path=str(built_book.parent / "screenshots" / "chapter_01_answer.png"))
    page.watch.assert_clean()


def chapter_pages(built_book):
    return sorted(path for pattern in CHAPTER_PAGES for path in built_book.glob(pattern))


def test_code_boxes_show_whole_lines(page, built_book):
    """No code box cuts a long line at its right edge: every line fits or wraps."""
    page.set_viewport_size(WIDE)
    for path in chapter_pages(built_book):
        open_page(page, path)
        cut = page.evaluate("""() => Array.from(
            document.querySelectorAll('article div.highlight pre'))
            .filter((pre) => pre.offsetParent !== null && pre.scrollWidth > pre.clientWidth + 1)
            .map((pre) => pre.textContent.split('\\n').reduce((a, b) => a.length > b.length ? a : b))""")
        assert cut == [], f"{path.name}: lines cut at the right edge: {cut[:3]}"
    page.watch.assert_clean()


def troubleshooting_table_and_contents_panel(page) -> dict:
    """Where the troubleshooting table and the page's contents panel (the right sidebar)
    lie, horizontally, and whether the table shows all it holds."""
    return page.evaluate("""() => {
        const table = Array.from(document.querySelectorAll('article table')).find(
            (t) => (t.querySelector('th') || {}).textContent === 'you see (torch)');
        const panel = document.querySelector('.bd-sidebar-secondary');
        table.scrollIntoView();
        const shown = panel && getComputedStyle(panel).display !== 'none'
            && panel.getBoundingClientRect().width > 0;
        return {right: table.getBoundingClientRect().right,
                panel_left: shown ? panel.getBoundingClientRect().left : null,
                scroll: table.scrollWidth, client: table.clientWidth};
    }""")


@pytest.mark.parametrize("name", [CHAPTER_10, "book/appendix_troubleshooting.html"])
def test_the_troubleshooting_table_fits_beside_the_contents_panel(page, built_book, name):
    """The wide table of chapter 10 (and the appendix) keeps clear of the contents panel,
    its third column whole."""
    page.set_viewport_size(WIDE)
    open_page(page, built_book / name)
    where = troubleshooting_table_and_contents_panel(page)
    assert where["panel_left"] is not None, "no contents panel at this width"
    assert where["right"] <= where["panel_left"] + 1, where
    assert where["scroll"] <= where["client"] + 1, where
    page.screenshot(path=str(built_book.parent / "screenshots" / "troubleshooting_table.png"))
    page.watch.assert_clean()


@pytest.mark.parametrize(("name", "view"), [(CHAPTER_1, ".mdl-explorer"),
                                             (CHAPTER_6, ".mdl-queueflow")])
def test_the_visuals_follow_the_dark_theme(page, built_book, name, view):
    """In the book's dark mode a visual is a dark panel with light text, with no light
    panel around it."""
    page.add_init_script("localStorage.setItem('mode', 'dark')")  # the theme's own setting
    open_page(page, built_book / name)
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    page.locator(view).first.scroll_into_view_if_needed()
    lightness = page.evaluate("""(selector) => {
        const light = (colour) => {  // 0: black, 1: white; a transparent colour: null
            const [r, g, b, a = 1] = colour.match(/[\\d.]+/g).map(Number);
            return a === 0 ? null : (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
        };
        const view = document.querySelector(selector);
        const output = view.closest('.output');
        return {view: light(getComputedStyle(view).backgroundColor),
                text: light(getComputedStyle(view).color),
                around: light(getComputedStyle(output).backgroundColor)};
    }""", view)
    assert lightness["view"] < 0.15 and lightness["text"] > 0.8, lightness
    assert lightness["around"] is None or lightness["around"] < 0.15, lightness
    page.screenshot(path=str(built_book.parent / "screenshots" / f"dark_{view[5:]}.png"))
    page.watch.assert_clean()


def test_the_explorer_says_why_it_refuses_a_value(page, built_book):
    """Chapter 1's explorer: N=0 is refused, with the reason next to the box; the numbers
    stay those of the last settings drawn."""
    open_page(page, built_book / CHAPTER_1)
    explorer = page.locator(".mdl-explorer").first
    explorer.scroll_into_view_if_needed()
    numbers = explorer.locator(".mdl-numbers")
    before = numbers.inner_text()
    explorer.locator('input[type=number][data-param="dataset_size"]').fill("0")
    reason = explorer.locator('[data-control="dataset_size"] .mdl-why')
    assert reason.is_visible()
    assert "a dataset needs at least one sample" in reason.inner_text()
    assert numbers.inner_text() == before
    explorer.locator('input[type=number][data-param="dataset_size"]').fill("11")
    assert not reason.is_visible() and numbers.inner_text() != before
    page.watch.assert_clean()


def test_launch_buttons_open_the_chapters_workbook_and_load_nothing(page, built_book):
    """Binder and Colab links on a chapter point at its workbook (notebooks/NN_slug.ipynb,
    which holds the stubs), not at its MyST source; an appendix has none; links only."""
    open_page(page, built_book / "book" / "03_samplers.html")
    links = [page.locator(".dropdown-launch-buttons a").nth(i).get_attribute("href")
             for i in range(page.locator(".dropdown-launch-buttons a").count())]
    assert len(links) == 2, links
    assert all(link.startswith("https://") and "notebooks/03_samplers.ipynb" in link
               for link in links), links
    assert not any("book/03_samplers" in link for link in links), links
    page.watch.assert_clean()  # no request for the services the links point at
    open_page(page, built_book / "book" / "appendix_glossary.html")
    assert page.locator(".dropdown-launch-buttons a").count() == 0
    page.watch.assert_clean()
