"""Every figure of the book (``book/figures/*.svg``, those added later included), rendered by
Chromium as a reader's browser renders it: no text runs outside the picture (its viewBox),
outside the box it sits in (the smallest ``<rect>`` holding the text's anchor point, the
picture's background left out) or across any box's edge, and no two texts overlap. The
margin is 1 px. Each figure is opened as a file, so a figure that loads anything from
elsewhere (a font, an image) fails too (the ``page`` fixture refuses requests that leave
the machine). The judge itself is tested on made-up measurements, without a browser.

    .venv/bin/python -m pytest -m browser tests/book/test_figures_browser.py
"""

from __future__ import annotations

import pathlib

import pytest

FIGURES = sorted((pathlib.Path(__file__).resolve().parents[2] / "book" / "figures").glob("*.svg"))
MARGIN = 1  # px: a text may touch its box's edge, not cross it
BACKGROUND = 0.9  # a rect covering this much of the picture is its background, no box

# What the browser measures: every text's box (its glyphs' extent, as drawn), its anchor point
# (the x, y it is placed at), every rect's box, and the picture's (the viewBox), all in the
# page's pixels, through each element's own transforms.
MEASURE = """() => {
  const svg = document.documentElement;
  const matrix = svg.getScreenCTM();
  const view = svg.viewBox.baseVal;
  const corner = (x, y) => { const p = svg.createSVGPoint(); p.x = x; p.y = y;
                             return p.matrixTransform(matrix); };
  const size = svg.getBoundingClientRect();
  const [a, b] = view && view.width ? [corner(view.x, view.y),
                                       corner(view.x + view.width, view.y + view.height)]
                                    : [{x: size.left, y: size.top}, {x: size.right, y: size.bottom}];
  const box = (r) => ({left: r.left, top: r.top, right: r.right, bottom: r.bottom});
  const rects = Array.from(svg.querySelectorAll('rect')).map((rect) => box(rect.getBoundingClientRect()));
  const texts = [];
  for (const text of svg.querySelectorAll('text')) {
    const words = (text.textContent || '').trim().replace(/\\s+/g, ' ');
    const r = text.getBoundingClientRect();
    if (!words || r.width === 0) continue;
    const placed = text.x.baseVal.length ? text : (text.querySelector('tspan') || text);
    const point = svg.createSVGPoint();
    point.x = placed.x.baseVal.length ? placed.x.baseVal[0].value : 0;
    point.y = placed.y.baseVal.length ? placed.y.baseVal[0].value : 0;
    const anchor = point.matrixTransform(placed.getScreenCTM());
    texts.push({words, anchor: [anchor.x, anchor.y], ...box(r)});
  }
  return {picture: {left: a.x, top: a.y, right: b.x, bottom: b.y}, rects, texts};
}"""


def area(box: dict) -> float:
    return max(0.0, box["right"] - box["left"]) * max(0.0, box["bottom"] - box["top"])


def inside(inner: dict, outer: dict, margin: float = MARGIN) -> bool:
    return (inner["left"] >= outer["left"] - margin and inner["top"] >= outer["top"] - margin
            and inner["right"] <= outer["right"] + margin
            and inner["bottom"] <= outer["bottom"] + margin)


def overlap(one: dict, other: dict) -> tuple[float, float]:
    """How far two boxes overlap, across and down (negative: apart)."""
    return (min(one["right"], other["right"]) - max(one["left"], other["left"]),
            min(one["bottom"], other["bottom"]) - max(one["top"], other["top"]))


def holds(box: dict, point) -> bool:
    x, y = point
    return box["left"] <= x <= box["right"] and box["top"] <= y <= box["bottom"]


def layout_flaws(measured: dict) -> list[str]:
    """What is wrong with a figure's layout, from what the browser measured."""
    picture, texts = measured["picture"], measured["texts"]
    boxes = [rect for rect in measured["rects"]
             if 0 < area(rect) < BACKGROUND * area(picture)]
    flaws = []

    def shift(text: dict, outer: dict) -> str:
        sides = {"left": outer["left"] - text["left"], "top": outer["top"] - text["top"],
                 "right": text["right"] - outer["right"],
                 "bottom": text["bottom"] - outer["bottom"]}
        return ", ".join(f"{px:.1f} px past its {side}" for side, px in sides.items()
                         if px > MARGIN)

    for text in texts:
        if not inside(text, picture):
            flaws.append(f"{text['words']!r} runs outside the picture ({shift(text, picture)})")
        holding = sorted((box for box in boxes if holds(box, text["anchor"])), key=area)
        if holding and not inside(text, holding[0]):
            flaws.append(f"{text['words']!r} runs outside its box ({shift(text, holding[0])})")
        for box in boxes:
            across, down = overlap(text, box)
            if (across > MARGIN and down > MARGIN and not inside(text, box)
                    and not inside(box, text) and box is not (holding or [None])[0]):
                flaws.append(f"{text['words']!r} runs across the edge of the box at "
                             f"({box['left']:.0f}, {box['top']:.0f})")
    for i, one in enumerate(texts):
        for other in texts[i + 1:]:
            across, down = overlap(one, other)
            if across > MARGIN and down > MARGIN:
                flaws.append(f"{one['words']!r} and {other['words']!r} overlap "
                             f"({across:.1f} × {down:.1f} px)")
    return flaws


def test_every_figure_is_found():
    assert len(FIGURES) >= 9
    assert all(path.name[:2] != "ch" or path.name[2:4].isdigit() for path in FIGURES)


@pytest.mark.browser
@pytest.mark.parametrize("figure", FIGURES, ids=lambda path: path.stem)
def test_no_text_runs_outside_its_box_or_the_picture_or_over_another(page, figure):
    page.goto(figure.as_uri())
    measured = page.evaluate(MEASURE)
    assert measured["texts"], f"{figure.name}: no text measured: the measuring is broken"
    flaws = layout_flaws(measured)
    assert not flaws, f"{figure.name}:\n  " + "\n  ".join(flaws)
    page.watch.assert_clean()


# ---------------------------------------------------------------------------------------
# The judge, on measurements made up to show each flaw


def text(words, left, top, right, bottom, anchor=None):
    return {"words": words, "left": left, "top": top, "right": right, "bottom": bottom,
            "anchor": anchor or [left + 1, bottom - 2]}


def rect(left, top, right, bottom):
    return {"left": left, "top": top, "right": right, "bottom": bottom}


PICTURE = rect(0, 0, 400, 200)
BACKGROUND_RECT = rect(0, 0, 400, 200)
BOX = rect(10, 10, 110, 60)


@pytest.mark.parametrize(("texts", "rects", "says"), [
    ([text("fits", 20, 20, 100, 40)], [BACKGROUND_RECT, BOX], None),
    ([text("touches", 9.5, 20, 110.5, 40)], [BOX], None),  # within the 1 px margin
    ([text("too long", 20, 20, 130, 40)], [BOX], "runs outside its box (20.0 px past its right)"),
    ([text("low", 20, 190, 60, 204)], [], "runs outside the picture (4.0 px past its bottom)"),
    ([text("a label", 100, 70, 160, 85, anchor=[101, 83])], [BOX], None),  # under the box
    ([text("crossing", 90, 50, 160, 66, anchor=[140, 64])], [BOX], "runs across the edge"),
    ([text("one", 20, 100, 80, 115), text("two", 70, 110, 120, 125)], [], "overlap"),
    ([text("one", 20, 100, 80, 115), text("two", 20, 115.5, 80, 130)], [], None),  # adjacent
])
def test_the_judge_finds_each_flaw(texts, rects, says):
    flaws = layout_flaws({"picture": PICTURE, "rects": rects, "texts": texts})
    if says is None:
        assert flaws == []
    else:
        assert len(flaws) == 1 and says in flaws[0], flaws
