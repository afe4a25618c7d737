"""Check-yourself items: every registered item, whatever its chapter, passes with its right
answer and explains itself with every wrong one; the chapters and the registry agree. An item
added to any chapter is covered here without a line of test."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from minidataloader_course import Choice, Prediction, check_answer, questions, register
from minidataloader_course.authoring import workbooks
from minidataloader_course.checker.questions import same_value, type_mix_up

ITEMS = questions()
CHAPTERS_WITH_ITEMS = tuple(range(1, 16))  # every chapter has its items: 4 to 8 each


def quietly(call, *args):
    with contextlib.redirect_stdout(io.StringIO()):  # check_answer prints outside Jupyter
        return call(*args)


def wrong_answers(item) -> list:
    """Every wrong option of a multiple-choice item; for a prediction, its known mistakes and
    one more wrong value."""
    if isinstance(item, Choice):
        return list(item.why)
    right = item.right_answer()
    if isinstance(right, bool):
        other = not right
    elif isinstance(right, (int, float)):
        other = right + 1
    elif isinstance(right, (list, tuple)):
        other = list(right) + [0]
    else:
        other = f"not {right}"
    return [*item.mistakes, other]


def shown(value) -> str:
    """How a chapter's Answer writes the right value, in bold, at its start."""
    return str(list(value)) if isinstance(value, tuple) else str(value)


def chapter_items() -> dict[str, tuple[str, object]]:
    """Every check-yourself item written in a chapter: name -> (chapter file, its text)."""
    import jupytext

    found = {}
    for path in workbooks.chapters():
        notebook = jupytext.read(path)
        for cell in notebook.cells:
            if cell.cell_type != "markdown":
                continue
            for match in workbooks._QUESTION.finditer(cell.source):
                if workbooks.is_question(match.group("body")):
                    text = workbooks.parse_question(match.group("title"), match.group("body"),
                                                    path.name)
                    assert text.name not in found, f"{text.name} is written twice"
                    found[text.name] = (path.name, text)
    return found


WRITTEN = chapter_items()


def test_there_are_items():
    assert ITEMS


@pytest.mark.parametrize("name", sorted(ITEMS))
def test_the_right_answer_passes(name):
    item = ITEMS[name]
    verdict = quietly(check_answer, name, item.right_answer())
    assert verdict.status == "passed", str(verdict)


@pytest.mark.parametrize("name", sorted(ITEMS))
def test_every_wrong_answer_is_explained(name):
    item = ITEMS[name]
    for wrong in wrong_answers(item):
        verdict = quietly(check_answer, name, wrong)
        assert verdict.status == "failed", f"{wrong!r} passed:\n{verdict}"
        assert len(verdict.problem) > 20, f"{wrong!r}: no explanation:\n{verdict}"
        if isinstance(item, Choice):
            assert verdict.problem == item.why[wrong]
            assert item.answer not in verdict.summary.split(":")[-1]  # the answer is not given
        else:
            key = tuple(wrong) if isinstance(wrong, list) else wrong
            try:
                known = key in item.mistakes
            except TypeError:  # a table of lists is unhashable: no known mistake, as judge() says
                known = False
            if known:
                assert verdict.problem == item.mistakes[key]


@pytest.mark.parametrize("name", sorted(ITEMS))
def test_no_answer_yet_is_a_friendly_verdict(name):
    verdict = quietly(check_answer, name, None)
    assert verdict.status == "not answered"
    assert str(verdict).startswith("not answered yet") and "replace None" in str(verdict)


@pytest.mark.parametrize("name", sorted(ITEMS))
def test_every_item_is_in_its_chapter_with_its_answer_first(name):
    item = ITEMS[name]
    assert name in WRITTEN, f"{name} is registered but no chapter asks it (:name: {name})"
    path, text = WRITTEN[name]
    assert path.startswith(name[2:4]), f"{name} is asked in {path}"
    # an item measured where it runs (chapter 9's copy time, on a GPU) writes its model's value
    right = getattr(item, "book_answer", item.right_answer)()
    assert text.answer.startswith(f"**{shown(right)}"), (
        f"{path}: the Answer of {name} must open with the right answer in bold, "
        f"**{shown(right)}.**, not {text.answer[:30]!r}")


def test_every_item_written_in_a_chapter_is_registered():
    assert set(WRITTEN) <= set(ITEMS)


def test_no_item_name_is_also_a_label_of_the_book():
    """An item's name is a MyST target (`:name:`): a section label ``(name)=`` of the same
    name anywhere in the book breaks the strict build."""
    book = workbooks.chapters()[0].parent
    labels = {label for path in book.glob("*.md")
              for label in re.findall(r"^\(([\w-]+)\)=$", path.read_text(), flags=re.MULTILINE)}
    assert not labels & set(ITEMS), sorted(labels & set(ITEMS))


@pytest.mark.parametrize("number", CHAPTERS_WITH_ITEMS)
def test_a_chapter_asks_four_to_eight_items(number):
    asked = [name for name in ITEMS if name.startswith(f"ch{number:02d}-")]
    assert 4 <= len(asked) <= 8, asked


def test_a_choice_answer_is_read_kindly_and_a_letter_is_asked_for():
    item = next(i for i in ITEMS.values() if isinstance(i, Choice))
    assert quietly(item.judge, f" {item.answer.upper()}. ").status == "passed"
    verdict = quietly(item.judge, 2)
    assert verdict.status == "failed" and "one of the letters" in verdict.summary
    assert "in doubt" not in str(verdict)  # no "report a wrong verdict" for a question


def test_an_unknown_item_says_what_it_knows():
    verdict = quietly(check_answer, "ch03-permutations-for-2", 3)
    assert verdict.status == "failed" and "ch03-permutations-for-25" in verdict.hint


def test_a_prediction_is_judged_by_its_value():
    assert same_value(3, 3.0) is None and same_value([4, 3, 3], (4, 3, 3)) is None
    assert same_value(3, 4) and same_value([4, 3], [4, 3, 3]) and same_value(True, 1)


def test_the_right_value_in_another_type_is_named_as_a_type_problem():
    verdict = quietly(check_answer, "ch02-genfromtxt-rows", "769")
    assert verdict.status == "failed", str(verdict)
    assert "the answer is the string '769'; give the number 769" in verdict.summary, str(verdict)
    assert "type" in verdict.problem and "in doubt" not in str(verdict)
    assert type_mix_up([1, 2], {2, 1}) == "the answer is the set {1, 2}; give the list [1, 2]"
    assert type_mix_up(True, 1) == "the answer is the number 1; give the boolean True"
    assert type_mix_up("fork", 3) is None and type_mix_up(2, 2.5) is None
    assert type_mix_up(2, "two") is None and type_mix_up(3, 3.0) is None  # 3.0 is accepted
    wrong = quietly(check_answer, "ch02-genfromtxt-rows", "768")
    assert "you predicted '768'" in wrong.summary  # a wrong value stays a wrong value


def test_a_prediction_runs_the_real_thing_without_touching_the_learners_rng():
    import torch

    item = Prediction("ch99-rng", measure=lambda: int(torch.randint(10, ())),
                      why="the real run draws a number")
    torch.manual_seed(0)
    item.judge(3)
    after = torch.rand(1)
    torch.manual_seed(0)
    assert torch.equal(after, torch.rand(1))


@pytest.mark.parametrize(("arguments", "message"), [
    (dict(name="copy-on-read", answer="a", why={"b": "no"}), "chNN-slug"),
    (dict(name="ch99-x", answer="a", why={"c": "no"}), "without gaps"),
    (dict(name="ch99-x", answer="a", why={"b": " "}), "a reason for every wrong one"),
    (dict(name="ch99-x", answer="ab", why={"c": "no"}), "single letters"),
])
def test_a_badly_declared_item_says_what_to_fix(arguments, message):
    with pytest.raises(ValueError, match=message):
        register(Choice(**arguments))
