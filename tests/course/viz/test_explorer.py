"""The explorer's two faces without a browser: the ipywidget reacts to its controls, the
static fragment is self-contained and unique per embedding, and `import minidataloader_course.viz`
stays light. (Its JavaScript is tested in test_explorer_browser.py; its model of an epoch
against real loaders in test_arithmetic.py.)"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from minidataloader_course.viz import epoch_explorer_html, epoch_explorer_widget, render_view
from minidataloader_course.viz._html import HTMLFragment, external_references
from minidataloader_course.viz.arithmetic import epoch_arithmetic
from minidataloader_course.viz.explorer import (
    DEFAULTS,
    LIMITS,
    SLIDERS,
    effective_params,
    refusal,
)

from ._runs import run_in_kernel


def numbers(view_html: str) -> dict[str, str]:
    """The numbers table of a rendered view, quantity -> value."""
    return dict(re.findall(r'<tr data-quantity="([^"]+)"><th>[^<]*</th><td class="mdl-value">'
                           r"([^<]*)</td>", view_html))


def lanes(view_html: str) -> list[str]:
    return re.findall(r'<text x="0" y="\d+" class="mdl-lane">([^<]+)</text>', view_html)


def test_importing_viz_pulls_in_no_widget_or_plotting_library():
    code = ("import sys, minidataloader_course.viz\n"
            "print(','.join(m for m in ('ipywidgets', 'IPython', 'matplotlib', 'pandas')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "", f"`import minidataloader_course.viz` imported {out.stdout.strip()}"


# --------------------------------------------------------------------------- static face

def test_fragment_is_self_contained_and_displays_as_html():
    html = epoch_explorer_html(dataset_size=12, batch_size=5, shuffle=True, seed=3)
    assert isinstance(html, HTMLFragment) and html._repr_html_() == str(html)
    assert external_references(html) == []
    assert "<script" in html and "mountEpochExplorer" in html and "<style>" in html
    assert "characters of self-contained HTML" in repr(html)
    # the pre-rendered view (shown until the script runs) is the Python rendering
    assert render_view(dict(DEFAULTS, dataset_size=12, batch_size=5, shuffle=True, seed=3)) in html


def test_two_fragments_on_one_page_have_distinct_ids():
    first, second = epoch_explorer_html(), epoch_explorer_html()
    ids = [re.findall(r'\bid="([^"]+)"', html) for html in (first, second)]
    assert len(ids[0]) == len(ids[1]) == 1 and ids[0] != ids[1]


def test_hidden_controls_keep_their_values():
    html = epoch_explorer_html(controls=["dataset_size", "batch_size"], drop_last=True)
    assert re.search(r'data-control="drop_last" hidden', html)
    assert not re.search(r'data-control="batch_size" hidden', html)
    assert re.search(r'data-param="drop_last" checked', html)


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(batchsize=3), TypeError, "unknown explorer setting"),
    (dict(controls=["epoch"]), TypeError, "unknown control"),
    (dict(batch_size=0), ValueError, "batch_size should be an integer from 1 to 256"),
    (dict(dataset_size=10**6), ValueError, "dataset_size should be"),
    (dict(drop_last="yes"), ValueError, "drop_last should be True or False"),
    (dict(sharding="random"), ValueError, "sharding should be one of"),
    (dict(iterable=True, shuffle=True), ValueError, "shuffle=False"),
    (dict(iterable=True, replicas=2), ValueError, "replicas=1"),
])
def test_bad_settings_say_what_to_change(kwargs, error, words):
    with pytest.raises(error, match=words):
        epoch_explorer_html(**kwargs)


@pytest.mark.parametrize("text", [
    '<script src="x.js">', "https://cdn.example.org/a.js", "//cdn.example.org/lib.js",
    "background: url(data.png)", "@import 'theme.css'", '<img srcset="a.png 2x">',
])
def test_the_external_reference_check_catches(text):
    assert external_references(f"<div>{text}</div>")


# --------------------------------------------------------------------------- live face

@pytest.fixture
def widget():
    pytest.importorskip("ipywidgets")
    return epoch_explorer_widget(dataset_size=10, batch_size=3)


def expected_numbers(**params) -> dict[str, str]:
    p = effective_params(params)
    a = epoch_arithmetic(p["dataset_size"], p["batch_size"], p["drop_last"], p["epochs"],
                         replicas=p["replicas"], sampler_drop_last=p["sampler_drop_last"],
                         iterable=p["iterable"], num_workers=p["num_workers"],
                         sharding=p["sharding"])
    return {"iterations": str(a.iterations_per_epoch), "last": f"{a.last_batch_size} sample"
            + ("" if a.last_batch_size == 1 else "s"), "len": str(a.reported_len)}


def seen(widget) -> dict[str, str]:
    shown = numbers(widget.view.value)
    iterations = next(v for q, v in shown.items() if q.startswith("iterations per epoch"))
    return {"iterations": iterations, "last": shown["last batch"], "len": shown["len(loader)"]}


def test_widget_starts_with_the_numbers_of_its_settings(widget):
    assert seen(widget) == expected_numbers(dataset_size=10, batch_size=3) == {
        "iterations": "4", "last": "1 sample", "len": "4"}
    assert set(widget.controls) == set(DEFAULTS)


def test_widget_recomputes_when_a_control_moves(widget):
    before = widget.view.value
    widget.controls["batch_size"].value = 4
    assert seen(widget) == {"iterations": "3", "last": "2 samples", "len": "3"}
    widget.controls["drop_last"].value = True
    assert seen(widget) == {"iterations": "2", "last": "4 samples", "len": "2"}
    assert numbers(widget.view.value)["dropped per epoch"] == "2 samples"
    widget.controls["dataset_size"].value = 37
    assert seen(widget) == expected_numbers(dataset_size=37, batch_size=4, drop_last=True)
    assert widget.view.value != before


def test_widget_draws_one_lane_per_rank_or_worker(widget):
    assert lanes(widget.view.value) == ["dataset", "loader"]
    widget.controls["replicas"].value = 3
    assert lanes(widget.view.value) == ["dataset", "rank 0", "rank 1", "rank 2"]
    assert numbers(widget.view.value)["padded per epoch"] == "2 samples"  # 10 -> 3 x 4
    widget.controls["iterable"].value = True
    widget.controls["num_workers"].value = 2
    assert lanes(widget.view.value) == ["dataset", "worker 0", "worker 1"]
    assert seen(widget) == expected_numbers(dataset_size=10, batch_size=3, iterable=True,
                                            num_workers=2, replicas=3)


def test_widget_greys_out_what_has_no_effect(widget):
    controls = widget.controls
    assert controls["seed"].disabled and controls["sampler_drop_last"].disabled
    controls["shuffle"].value = True
    assert not controls["seed"].disabled
    controls["iterable"].value = True
    assert controls["shuffle"].disabled and controls["replicas"].disabled
    assert controls["sharding"].disabled  # no workers yet
    controls["num_workers"].value = 3
    assert not controls["sharding"].disabled


def test_widget_shuffled_order_follows_the_seed(widget):
    widget.controls["shuffle"].value = True
    first = widget.view.value
    widget.controls["seed"].value = 1
    assert widget.view.value != first
    widget.controls["seed"].value = 0
    assert widget.view.value == first
    widget.controls["epochs"].value = 2
    widget.controls["show_epoch"].value = 2
    assert widget.view.value != first  # a new epoch, a new order
    widget.controls["epochs"].value = 1  # showing epoch 2 of 1 is not possible
    assert widget.controls["show_epoch"].value == 1 and not widget.why["show_epoch"].value
    assert widget.view.value == first


@pytest.mark.parametrize(("name", "value", "reason"), [
    ("dataset_size", 0, "a dataset needs at least one sample (samples N: 1 to 2000)"),
    ("dataset_size", 2001, "samples N goes up to 2000 here"),
    ("batch_size", -3, "a batch holds at least one sample (batch_size: 1 to 256)"),
    ("num_workers", -1, "0 workers means the main process loads; there are no fewer"),
    ("show_epoch", 2, "the run has only 1 epoch (set epochs first)"),
    ("epochs", 0, "a run has at least one epoch (epochs: 1 to 20)"),
])
def test_widget_says_why_it_refuses_a_value_and_keeps_its_view(widget, name, value, reason):
    """Typed into the box, a value the explorer cannot draw is refused next to the box, in
    words; the view keeps the last settings it drew, and a good value clears the reason."""
    before, original = widget.view.value, widget.controls[name].value
    widget.controls[name].value = value
    assert reason in widget.why[name].value
    assert widget.view.value == before
    assert [other for other, why in widget.why.items() if why.value] == [name]
    if name in widget.sliders:
        assert widget.sliders[name].value == original
    widget.controls[name].value = original
    assert widget.why[name].value == "" and widget.view.value == before


def test_every_small_value_is_a_slider_position_of_its_own():
    # a slider about 180 px wide: over 1-2000, N=10 and N=3 would be under one pixel apart
    for name, (low, high) in SLIDERS.items():
        assert LIMITS[name][0] == low <= DEFAULTS[name] <= high <= 100, name
    page = str(epoch_explorer_html())
    assert re.search(r'<input type="range" min="1" max="100"[^>]*data-param="dataset_size"', page)
    assert re.search(r'<input type="number" min="1" max="2000"[^>]*data-param="dataset_size"', page)


def test_a_value_typed_beyond_the_slider_stays_and_the_slider_rests_at_its_end(widget):
    widget.controls["dataset_size"].value = 500
    assert widget.sliders["dataset_size"].value == SLIDERS["dataset_size"][1]
    assert widget.controls["dataset_size"].value == 500
    assert seen(widget) == expected_numbers(dataset_size=500, batch_size=3)
    widget.sliders["dataset_size"].value = 12  # dragged back into its stretch: the box follows
    assert widget.controls["dataset_size"].value == 12


def test_a_slider_moves_its_box(widget):
    widget.sliders["batch_size"].value = 4
    assert widget.controls["batch_size"].value == 4
    assert seen(widget) == {"iterations": "3", "last": "2 samples", "len": "3"}


@pytest.mark.parametrize(("name", "value", "epochs"), [
    (name, value, epochs) for name, (low, high) in LIMITS.items()
    for value in (low - 1, low, high, high + 1, 2.5) for epochs in (1, 20)])
def test_refusal_takes_exactly_what_the_controls_offer(name, value, epochs):
    low, high = LIMITS[name]
    if name == "show_epoch":
        high = epochs
    takes = isinstance(value, int) and low <= value <= high
    assert (refusal(name, value, epochs) == "") == takes


def test_widget_hides_the_controls_not_asked_for():
    pytest.importorskip("ipywidgets")
    box = epoch_explorer_widget(controls=["dataset_size", "batch_size"], drop_last=True)
    assert box.controls["drop_last"].layout.display == "none"
    assert box.controls["batch_size"].layout.display is None
    assert [group.layout.display for group in box.children[0].children] == [None, "none", "none"]
    assert numbers(box.view.value)["dropped per epoch"] == "1 sample"  # 10 % 3, still dropped


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_book_cells_run_in_a_real_kernel():
    html_cell, widget_cell, check_cell = run_in_kernel(
        "from minidataloader_course.viz import epoch_explorer_html, epoch_explorer_widget\n"
        "epoch_explorer_html(dataset_size=10, batch_size=3)",
        "w = epoch_explorer_widget(dataset_size=10, batch_size=3)\n"
        "w.controls['batch_size'].value = 5\nw",
        "import re\n"
        "print(dict(re.findall(r'data-quantity=\"([^\"]+)\"><th>[^<]*</th><td class=\"mdl-value\">"
        "([^<]*)<', w.view.value))['iterations per epoch'])", timeout=120)
    assert "text/html" in html_cell.outputs[0]["data"]
    assert "application/vnd.jupyter.widget-view+json" in widget_cell.outputs[0]["data"]
    assert check_cell.outputs[0]["text"].strip() == "2"
