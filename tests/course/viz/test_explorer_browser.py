"""The explorer's static face in headless Chromium: it renders, recomputes when the reader
moves a control, its JavaScript ports equal the Python originals over a grid (arithmetic,
torch.randperm, the layout, the rendered view), two copies on one page stay independent, and
nothing leaves the machine."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import random

import pytest
import torch

from minidataloader_course.viz import epoch_explorer_html, epoch_layout, render_view
from minidataloader_course.viz.arithmetic import epoch_arithmetic
from minidataloader_course.viz.explorer import DEFAULTS, LIMITS, refusal

from ._runs import iterable_grid, luminance, map_grid

pytestmark = pytest.mark.browser
SCREENSHOTS = pathlib.Path(__file__).resolve().parents[3] / "_build" / "screenshots"

MAP_CASES = map_grid(300)
ITERABLE_CASES = iterable_grid(40)


def plain(value):
    """A dataclass as the JSON the browser hands back (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(value)))


def arithmetic_grid() -> list[dict]:
    rng = random.Random(11)
    cases = [{k: v for k, v in case.items() if k not in ("shuffle", "seed")} for case in MAP_CASES]
    cases += [dict(case, iterable=True) for case in ITERABLE_CASES]
    for _ in range(300):  # larger sizes, and the two splits crossed with drop_last
        iterable = rng.random() < 0.4
        cases.append(dict(
            dataset_size=rng.randint(0, 5000), batch_size=rng.randint(1, 300),
            drop_last=rng.random() < 0.5, epochs=rng.randint(0, 50),
            replicas=1 if iterable else rng.randint(1, 16),
            sampler_drop_last=rng.random() < 0.5, iterable=iterable,
            num_workers=rng.randint(0, 12), sharding=rng.choice(["stride", "blocks", "none"])))
    return cases


def view_grid() -> list[dict]:
    rng = random.Random(12)
    cases = [dict(DEFAULTS), dict(DEFAULTS, dataset_size=1000, batch_size=64, shuffle=True),
             dict(DEFAULTS, dataset_size=2000, iterable=True, num_workers=4, sharding="none")]
    while len(cases) < 60:
        cases.append(dict(
            dataset_size=rng.randint(1, 120), batch_size=rng.randint(1, 20),
            drop_last=rng.random() < 0.5, epochs=rng.randint(1, 4), shuffle=rng.random() < 0.6,
            seed=rng.choice([0, 1, 99, 2**31 - 1]), show_epoch=rng.randint(1, 4),
            replicas=rng.choice([1, 1, 2, 3, 5]), sampler_drop_last=rng.random() < 0.5,
            iterable=rng.random() < 0.3, num_workers=rng.randint(0, 4),
            sharding=rng.choice(["stride", "blocks", "none"])))
    return cases


def open_explorers(page, folder, *fragments):
    """Open a page holding these explorer fragments, from a file, once every one is mounted."""
    path = folder / "explorer.html"
    path.write_text('<!doctype html><html><head><meta charset="utf-8"><title>explorer</title>'
                    '</head><body style="max-width: 750px; margin: 16px auto">'
                    + "".join(fragments) + "</body></html>", encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_function("(count) => document.querySelectorAll("
                           "'.mdl-explorer[data-mounted]').length === count", arg=len(fragments))


@pytest.fixture
def explorer_page(page, tmp_path):
    """A page holding two explorers."""
    open_explorers(page, tmp_path, epoch_explorer_html(dataset_size=10, batch_size=3),
                   epoch_explorer_html(dataset_size=20, batch_size=4, shuffle=True, seed=5,
                                       epochs=2))
    return page


def in_browser(page, function: str, cases: list) -> list:
    """window.minidataloader.viz.explorer[function](case) for every case, in the page."""
    return page.evaluate("([name, cases]) => cases.map((c) => "
                         "window.minidataloader.viz.explorer[name](c))", [function, cases])


def shown(page, root: int) -> dict[str, str]:
    """The numbers table of explorer number `root` (0 or 1), quantity -> value."""
    return page.evaluate(
        """(root) => Object.fromEntries(Array.from(
               document.querySelectorAll('.mdl-explorer')[root].querySelectorAll('tr[data-quantity]'),
               (tr) => [tr.dataset.quantity, tr.querySelector('.mdl-value').textContent]))""", root)


def lanes(page, root: int) -> list[str]:
    return page.evaluate("""(root) => Array.from(document.querySelectorAll('.mdl-explorer')[root]
                                .querySelectorAll('svg text.mdl-lane'), (t) => t.textContent)""", root)


def test_renders_and_recomputes_as_controls_move(explorer_page):
    page = explorer_page
    first = page.locator(".mdl-explorer").nth(0)
    assert first.locator("svg.mdl-epoch-svg rect").count() > 20
    assert shown(page, 0)["iterations per epoch"] == "4" and shown(page, 0)["last batch"] == "1 sample"
    second_before = shown(page, 1)

    first.locator('input[type=number][data-param="batch_size"]').fill("4")
    assert shown(page, 0)["iterations per epoch"] == "3"
    assert first.locator('input[type=range][data-param="batch_size"]').input_value() == "4"

    slider = first.locator('input[type=range][data-param="dataset_size"]')
    slider.evaluate("(el) => { el.value = '37'; el.dispatchEvent(new Event('input', {bubbles: true})); }")
    first.locator('input[data-param="drop_last"]').check()
    a = epoch_arithmetic(37, 4, drop_last=True)
    assert shown(page, 0)["iterations per epoch"] == str(a.iterations_per_epoch) == "9"
    assert shown(page, 0)["dropped per epoch"] == f"{a.samples_dropped} sample"

    first.locator('input[type=number][data-param="replicas"]').fill("3")
    assert lanes(page, 0) == ["dataset", "rank 0", "rank 1", "rank 2"]
    assert shown(page, 0)["samples per rank"] == "13"  # ceil(37 / 3)
    assert shown(page, 0)["padded per epoch"] == "2 samples"

    first.locator('select[data-param="iterable"]').select_option("true")
    first.locator('input[type=number][data-param="num_workers"]').fill("2")
    assert lanes(page, 0) == ["dataset", "worker 0", "worker 1"]
    assert first.locator('input[data-param="shuffle"]').is_disabled()
    assert shown(page, 0)["len(loader)"] == str(epoch_arithmetic(37, 4, True, iterable=True,
                                                                 num_workers=2).reported_len)

    first.locator('input[type=number][data-param="batch_size"]').fill("")  # mid-typing
    assert lanes(page, 0) == ["dataset", "worker 0", "worker 1"]  # the last valid view stays
    assert shown(page, 1) == second_before  # the other explorer did not move
    page.watch.assert_clean()


def test_a_value_typed_beyond_the_slider_is_drawn_and_the_slider_rests_at_its_end(explorer_page):
    page = explorer_page
    first = page.locator(".mdl-explorer").nth(0)
    first.locator('input[type=number][data-param="dataset_size"]').fill("500")
    assert first.locator('input[type=range][data-param="dataset_size"]').input_value() == "100"
    assert first.locator('input[type=number][data-param="dataset_size"]').input_value() == "500"
    assert shown(page, 0)["len(loader)"] == str(epoch_arithmetic(500, 3).reported_len)
    page.watch.assert_clean()


def test_the_drawing_follows_shuffle_seed_and_epoch(explorer_page):
    page = explorer_page
    second = page.locator(".mdl-explorer").nth(1)
    figure = second.locator(".mdl-figure")
    start = figure.inner_html()
    params = dict(DEFAULTS, dataset_size=20, batch_size=4, shuffle=True, seed=5, epochs=2)
    assert in_browser(page, "renderView", [params]) == [render_view(params)]
    second.locator('input[type=number][data-param="show_epoch"]').fill("2")
    assert figure.inner_html() != start
    second.locator('input[type=number][data-param="seed"]').fill("6")
    rendered = second.locator(".mdl-view").inner_html()
    now = dict(params, seed=6, show_epoch=2)
    assert rendered.count("<svg") == 1 and in_browser(page, "renderView", [now]) == [render_view(now)]
    assert "manual_seed(6)" in rendered and "Epoch 2</tspan>" in rendered
    page.watch.assert_clean()


def test_javascript_arithmetic_equals_python(explorer_page):
    cases = arithmetic_grid()
    for case, result in zip(cases, in_browser(explorer_page, "epochArithmetic", cases)):
        args = dict(case)
        expected = epoch_arithmetic(args.pop("dataset_size"), args.pop("batch_size"), **args)
        assert result == plain(expected), case
    errors = explorer_page.evaluate("""(cases) => cases.map((c) => {
        try { window.minidataloader.viz.explorer.epochArithmetic(c); return null; }
        catch (error) { return error.name; } })""", [
        dict(dataset_size=-1, batch_size=2), dict(dataset_size=5, batch_size=0),
        dict(dataset_size=5, batch_size=2, sharding="random"),
        dict(dataset_size=5, batch_size=2, iterable=True, replicas=2)])
    assert errors == ["RangeError"] * 4
    explorer_page.watch.assert_clean()


def test_javascript_randperm_equals_torch(explorer_page):
    rng = random.Random(13)
    cases = [(n, seed) for n in (0, 1, 2, 3, 10, 623, 624, 625, 1500, 3000)
             for seed in (0, 1, 5489, 2**31 - 1, 2**32 - 1, 2**32 + 7)]
    cases += [(rng.randint(0, 400), rng.randint(0, 2**40)) for _ in range(60)]
    got = explorer_page.evaluate("""(cases) => cases.map(([n, seed]) => {
        const ex = window.minidataloader.viz.explorer;
        return ex.randperm(n, new ex.Generator(seed)); })""", cases)
    for (n, seed), perm in zip(cases, got):
        assert perm == torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist(), (n, seed)
    explorer_page.watch.assert_clean()


def test_javascript_layout_equals_python(explorer_page):
    cases = []
    for case in MAP_CASES[:150]:
        for epoch in range(case["epochs"]):
            cases.append(dict({k: v for k, v in case.items() if k != "epochs"}, epoch=epoch))
    cases += [dict(case, iterable=True) for case in ITERABLE_CASES]
    for case, result in zip(cases, in_browser(explorer_page, "epochLayout", cases)):
        args = dict(case)
        expected = epoch_layout(args.pop("dataset_size"), args.pop("batch_size"), **args)
        assert result == plain(expected), case
    explorer_page.watch.assert_clean()


def test_javascript_view_equals_python(explorer_page):
    cases = view_grid()
    for case, html in zip(cases, in_browser(explorer_page, "renderView", cases)):
        assert html == render_view(case), case
    explorer_page.watch.assert_clean()


def why(page, root: int, name: str) -> str | None:
    """What explorer `root` says next to the box of `name` (None: nothing shown)."""
    return page.evaluate("""([root, name]) => {
        const box = document.querySelectorAll('.mdl-explorer')[root]
            .querySelector(`input[type=number][data-param="${name}"]`);
        const note = box.closest('.mdl-control').querySelector('.mdl-why');
        return note && !note.hidden && note.offsetParent !== null ? note.textContent : null;
    }""", [root, name])


def test_a_refused_value_is_explained_next_to_its_box(explorer_page):
    """N=0 (or any value the explorer cannot draw) is refused in words, next to the box; the
    view keeps the last settings it drew; a good value clears the words."""
    page = explorer_page
    first = page.locator(".mdl-explorer").nth(0)
    before = shown(page, 0)
    box = first.locator('input[type=number][data-param="dataset_size"]')
    box.fill("0")
    assert why(page, 0, "dataset_size") == refusal("dataset_size", 0) != ""
    assert "a dataset needs at least one sample" in why(page, 0, "dataset_size")
    assert box.get_attribute("aria-invalid") == "true"
    assert shown(page, 0) == before
    box.fill("")  # someone typing: neither taken nor refused
    assert shown(page, 0) == before
    box.fill("12")
    assert why(page, 0, "dataset_size") is None and box.get_attribute("aria-invalid") == "false"
    assert shown(page, 0)["iterations per epoch"] == "4"

    show = first.locator('input[type=number][data-param="show_epoch"]')
    show.fill("2")  # the first explorer runs 1 epoch
    assert why(page, 0, "show_epoch") == refusal("show_epoch", 2, epochs=1)
    first.locator('input[type=number][data-param="epochs"]').fill("3")
    assert why(page, 0, "show_epoch") is None  # the view drew again, from what it holds
    first.locator('input[type=number][data-param="batch_size"]').fill("300")
    assert why(page, 0, "batch_size") == "batch_size goes up to 256 here"
    assert why(page, 1, "batch_size") is None  # the other explorer says nothing
    page.watch.assert_clean()


def test_javascript_refusal_equals_python(explorer_page):
    cases = [[name, value, epochs] for name, (low, high) in LIMITS.items()
             for value in (low - 1, low, (low + high) // 2, high, high + 1, 2.5, -7)
             for epochs in (1, 3, 20)]
    got = explorer_page.evaluate("""(cases) => cases.map(([name, value, epochs]) =>
        window.minidataloader.viz.explorer.refusal(name, value, epochs))""", cases)
    assert got == [refusal(*case) for case in cases]
    explorer_page.watch.assert_clean()


def test_dark_theme(page, tmp_path):
    """Under the book's dark theme (and JupyterLab's), the explorer is a dark panel with
    light text: it follows the page instead of staying a white box."""
    fragment = epoch_explorer_html(dataset_size=10, batch_size=3)
    for dark in ('<html data-theme="dark">', '<html><body data-jp-theme-light="false">'):
        path = tmp_path / "dark.html"
        path.write_text(f'<!doctype html>{dark}<head><meta charset="utf-8"><title>dark</title>'
                        f'</head><body style="background:#121212">{fragment}</body></html>',
                        encoding="utf-8")
        page.goto(path.as_uri())
        page.wait_for_function("() => document.querySelector('.mdl-explorer[data-mounted]')")
        colours = page.evaluate("""() => {
            const view = document.querySelector('.mdl-explorer');
            const style = getComputedStyle(view);
            return [style.backgroundColor, style.color,
                    getComputedStyle(view.querySelector('svg text.mdl-heading')).fill];
        }""")
        assert [luminance(c) for c in colours] == [pytest.approx(0.05, abs=0.05), *[
            pytest.approx(0.9, abs=0.1)] * 2], (dark, colours)
    page.watch.assert_clean()


def test_screenshot(page, tmp_path):
    """A picture for people: the explorer at book width, as chapter 1 and a distributed
    setting would show it."""
    page.set_viewport_size({"width": 800, "height": 900})
    open_explorers(page, tmp_path,
                   epoch_explorer_html(dataset_size=10, batch_size=3, shuffle=True, seed=0),
                   epoch_explorer_html(dataset_size=22, batch_size=4, shuffle=True, replicas=4),
                   epoch_explorer_html(dataset_size=20, batch_size=3, iterable=True, num_workers=3))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "epoch_explorer.png"), full_page=True)
    assert (SCREENSHOTS / "epoch_explorer.png").stat().st_size > 10_000
    page.watch.assert_clean()
