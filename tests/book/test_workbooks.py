"""The workbooks are made from the chapters (``minidataloader_course.authoring.workbooks``): the
committed ones are exactly what the generator makes, a chapter survives a round trip through
jupytext (JupyterLab's "Open With, Jupytext Notebook", then save), and the markup's rules
give errors that say what to fix."""

from __future__ import annotations

import pathlib
import re

import jupytext
import nbformat
import pytest

from minidataloader_course.authoring import workbooks
from minidataloader_course.authoring.workbooks import (ChapterError, build_workbook, install_cell,
                                                       workbook_text)

CHAPTERS = workbooks.chapters()


def ids(path: pathlib.Path) -> str:
    return path.stem


def test_every_chapter_has_a_workbook():
    assert sorted({workbooks.chapter_number(c) for c in CHAPTERS}) == list(range(1, 16))
    for chapter in CHAPTERS:  # a chapter of two pages (10) has a workbook per page
        assert workbooks.workbook_path(chapter).exists(), chapter.name


@pytest.mark.parametrize("chapter", CHAPTERS, ids=ids)
def test_committed_workbook_is_what_its_chapter_makes(chapter):
    committed = workbooks.workbook_path(chapter).read_text()
    assert workbook_text(chapter) == committed, (
        f"notebooks/{chapter.stem}.ipynb differs from what book/{chapter.name} makes: run "
        f"`make workbooks` and commit the result (edit the chapter, never the workbook)")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=ids)
def test_a_chapter_survives_a_round_trip_through_jupytext(chapter):
    """Opened as a notebook in JupyterLab and saved, a chapter makes the same workbook."""
    saved = jupytext.writes(jupytext.read(chapter), fmt="md:myst")
    assert workbook_text(chapter, saved) == workbook_text(chapter)


def _exercises(chapter: pathlib.Path) -> list[tuple[str, str]]:
    """(title, body) of every exercise directive, read straight from the chapter's text."""
    return re.findall(r"^````\{exercise\} ([^\n]*)\n(.*?)^````$", chapter.read_text(),
                      re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=ids)
def test_the_workbook_carries_the_chapters_statements_and_hints(chapter):
    notebook = build_workbook(chapter)
    markdown = [c.source for c in notebook.cells if c.cell_type == "markdown"]
    headings = [m for m in markdown if m.startswith("## Exercise ")]
    found = _exercises(chapter)
    assert len(headings) == len(found)
    for k, ((title, body), cell) in enumerate(zip(found, headings), 1):
        assert cell.startswith(f"## Exercise {k}: {title}\n")
        hints = re.findall(r"^```\{admonition\} ([^\n]*)\n:class: dropdown hint\n(.*?)^```$", body,
                           re.MULTILINE | re.DOTALL)
        assert hints, f"{chapter.name}: exercise {title!r} has no hint"
        for hint_title, hint_body in hints:
            assert (f"<details><summary>{hint_title}</summary>\n\n{hint_body.strip()}\n\n"
                    f"</details>") in cell
        first_paragraph = body.split("\n\n")[1].strip()
        assert first_paragraph in cell, f"{chapter.name}: {title!r}"
    assert not any("*Hint:*" in m for m in markdown), "hints are collapsed, never plain text"


def test_chapter_1s_statement_reaches_its_workbook():
    """The workbook used to paraphrase the chapter and lost its rules (issue 14)."""
    notebook = build_workbook(CHAPTERS[0])
    text = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert "(a float cannot hold every integer beyond `2**53`" in " ".join(text.split())


# ---------------------------------------------------------------------------------------
# The markup's rules, on a small chapter of its own

HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3 (ipykernel)
  language: python
  name: python3
---

# 1. A chapter

Book text.
"""
EXERCISE = """
````{exercise} Iterations per epoch
:label: demo-iterations

Write `iterations_per_epoch(dataset_size, batch_size, drop_last=False)`.

```{admonition} Hint 1: a question
:class: dropdown hint
Think of `//`.
```

```{admonition} Hint 2: the idea
:class: dropdown hint
`dataset_size // batch_size`, and one more for a remainder.
```

```{admonition} Hint 3: a skeleton
:class: dropdown hint
Fill the blanks:
~~~python
def iterations_per_epoch(dataset_size, batch_size, drop_last=False):
    full, rest = ____
    if ____:
        return ____
    return ____
~~~
```
````
"""
STUB = """
```{code-cell} ipython3
:tags: [workbook, exercise, remove-cell, skip-execution]

def iterations_per_epoch(dataset_size, batch_size, drop_last=False):
    raise NotImplementedError
```
"""
ONLY_HERE = """
+++ {"tags": ["workbook", "remove-cell"]}

Try it:

```{code-cell} ipython3
:tags: [workbook, remove-cell, skip-execution]

print(iterations_per_epoch(10, 3))
```

+++

More book text.
"""
DEMO = pathlib.Path("book/01_demo.md")


def make(text: str):
    return build_workbook(DEMO, HEADER + text)


def test_a_small_chapter_becomes_a_workbook():
    notebook = make(EXERCISE + STUB + ONLY_HERE)
    nbformat.validate(notebook)
    cells = [(c.cell_type, c.source) for c in notebook.cells]
    assert cells[0][1].startswith("# Workbook 1: A chapter")
    assert cells[1] == ("code", install_cell())
    assert cells[2][1].startswith("## Exercise 1: Iterations per epoch\n\nWrite `iterations")
    assert "<details><summary>Hint 1: a question</summary>\n\nThink of `//`.\n\n</details>" in cells[2][1]
    assert "Hint 2: the idea" in cells[2][1]
    stub = notebook.cells[3]
    assert stub.metadata["tags"] == ["exercise"]
    assert stub.metadata["minidataloader"] == {"solution": "ch01.iterations_per_epoch"}
    assert cells[4] == ("code", "check(iterations_per_epoch)")
    assert cells[5:] == [("markdown", "Try it:"), ("code", "print(iterations_per_epoch(10, 3))")]
    assert all("More book text" not in source for _, source in cells)
    assert all(c.outputs == [] for c in notebook.cells if c.cell_type == "code")


def test_a_piece_stub_comes_from_the_learners_stub_file():
    stub = STUB.replace("def iterations_per_epoch(dataset_size, batch_size, drop_last=False):\n"
                        "    raise NotImplementedError\n", "%%piece sampler.SequentialSampler\n")
    text = EXERCISE.replace("Write `iterations_per_epoch(dataset_size, batch_size, "
                            "drop_last=False)`.", "Write `SequentialSampler`.")
    notebook = build_workbook(pathlib.Path("book/03_demo.md"),
                              HEADER.replace("# 1.", "# 3.") + text + stub)
    cell = notebook.cells[3]
    assert cell.source.startswith("%%piece sampler.SequentialSampler\nclass SequentialSampler(")
    assert cell.metadata["minidataloader"] == {"piece": "sampler.SequentialSampler",
                                               "solution": "ch03.SequentialSampler"}
    assert notebook.cells[4].source == "check(SequentialSampler)"


DISCUSSION = """
+++ {"tags": ["workbook"]}

Make every sample ten times slower: what happens to the best `num_workers`?

```{admonition} Discussion
:class: dropdown
More workers pay off, up to the number of cores.
```

+++
"""


def test_a_collapsed_admonition_in_a_workbook_cell_becomes_details():
    notebook = make(EXERCISE + STUB + DISCUSSION)
    text = notebook.cells[-1].source
    assert text.startswith("Make every sample ten times slower")
    assert text.endswith("<details><summary>Discussion</summary>\n\nMore workers pay off, up "
                         "to the number of cores.\n\n</details>")
    assert "{admonition}" not in text


# ---------------------------------------------------------------------------------------
# Hint 3: a skeleton (a ~~~python block with ____ blanks), in the workbook and in the book

SKELETON = ("~~~python\ndef iterations_per_epoch(dataset_size, batch_size, drop_last=False):\n"
            "    full, rest = ____\n    if ____:\n        return ____\n    return ____\n~~~")


def test_a_skeleton_stays_a_fenced_block_apart_from_the_text_in_the_workbook():
    cell = make(EXERCISE + STUB).cells[2].source
    assert ("<details><summary>Hint 3: a skeleton</summary>\n\nFill the blanks:\n\n"
            f"{SKELETON}\n\n</details>") in cell


def test_jupyterlabs_markdown_shows_the_skeleton_as_code_inside_the_collapsed_hint():
    """CommonMark, as JupyterLab's renderer reads it: Markdown inside ``<details>`` is read
    only after a blank line; then the fence is a code block, not a paragraph of text."""
    markdown_it = pytest.importorskip("markdown_it")
    cell = make(EXERCISE + STUB).cells[2]
    page = markdown_it.MarkdownIt("commonmark").render(cell.source)
    hint = page.split("<summary>Hint 3: a skeleton</summary>", 1)[1].split("</details>", 1)[0]
    assert "<p>Fill the blanks:</p>" in hint
    code = re.search(r'<pre><code class="language-python">(.*?)</code></pre>', hint, re.DOTALL)
    assert code, hint
    assert code.group(1) == SKELETON.split("\n", 1)[1].rsplit("\n", 1)[0] + "\n"


@pytest.mark.parametrize("body", [
    "Fill the blanks:\n" + SKELETON + "\nThen run the check.",  # glued to the text around it
    "Fill the blanks:\n\n\n" + SKELETON + "\n\n\nThen run the check.",  # too far apart
])
def test_a_skeleton_gets_one_blank_line_before_and_after_it(body):
    assert workbooks.details_block("Hint 3: a skeleton", body) == (
        "<details><summary>Hint 3: a skeleton</summary>\n\nFill the blanks:\n\n"
        f"{SKELETON}\n\nThen run the check.\n\n</details>")


def test_a_skeletons_blanks_and_own_names_are_no_unknown_names():
    from minidataloader_course.authoring.workbooks import hint_names, unknown_in_hint

    hint = ("Fill the blanks:\n~~~python\ndef __next__(self):\n    index = ____\n"
            "    for worker, batch in enumerate(____):\n        results[worker] = ____\n"
            "    return len(____)\n~~~")
    # results: read, never defined here, nor a design of the reference: the learner's own
    assert sorted(hint_names(hint)) == ["enumerate", "len", "results"]
    assert unknown_in_hint(hint, set(), {"results_of", "_dispatch"}) == []


def test_a_skeleton_still_may_not_hand_over_the_references_attributes_and_helpers():
    from minidataloader_course.authoring.workbooks import unknown_in_hint

    hint = ("~~~python\ndef __next__(self):\n    self.waiting = ____\n"
            "    while self.sent < ____:\n        _dispatch(____)\n        send_next(____)\n~~~")
    internals = {"waiting", "sent", "_dispatch", "send_next"}
    assert unknown_in_hint(hint, set(), internals) == [
        "self.waiting", "self.sent", "_dispatch", "send_next"]
    # what the statement or the stub defines, the skeleton may use
    assert unknown_in_hint(hint, {"self.waiting", "sent", "send_next"}, internals) == [
        "_dispatch"]


def test_a_skeleton_that_does_not_parse_still_has_its_own_names():
    from minidataloader_course.authoring.workbooks import hint_names, skeleton_locals

    code = "elif ____:\n    total = ____\n    for a, b in ____:\n"
    assert skeleton_locals(code) == {"total", "a", "b"}
    assert hint_names(f"~~~python\n{code}    self.count += 1\n~~~") == ["self.count"]
    # an attribute left blank is the learner's to name: it names nothing
    assert hint_names("~~~python\nself.____ = ____\nself.count = 0\n~~~") == ["self.count"]


@pytest.mark.slow
def test_a_skeleton_shows_as_code_in_the_books_collapsed_hint(tmp_path):
    """The book: a code block inside a dropdown hint inside an exercise, built by Jupyter Book
    with the book's own configuration and stylesheet (a small book of one page)."""
    import subprocess
    import sys

    import yaml

    bs4 = pytest.importorskip("bs4")
    root = pathlib.Path(__file__).resolve().parents[2]
    config = yaml.safe_load((root / "_config.yml").read_text())
    config["execute"] = {"execute_notebooks": "off"}
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(config))
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: page\n")
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "minidataloader.css").write_text(
        (root / "_static" / "minidataloader.css").read_text())
    (tmp_path / "page.md").write_text("# A page\n" + EXERCISE)
    jupyter_book = pathlib.Path(sys.executable).parent / "jupyter-book"
    built = subprocess.run([str(jupyter_book), "build", str(tmp_path)],
                           capture_output=True, text=True, timeout=600, cwd=root)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    page = bs4.BeautifulSoup((tmp_path / "_build" / "html" / "page.html").read_text(),
                             "html.parser")
    exercise = page.select_one("div.exercise")
    hints = exercise.select("div.dropdown.hint.admonition")
    assert [h.select_one(".admonition-title").get_text() for h in hints] == [
        "Hint 1: a question", "Hint 2: the idea", "Hint 3: a skeleton"]
    code = hints[2].select_one("div.highlight-python pre")
    assert code is not None, hints[2]
    assert code.get_text() == SKELETON.split("\n", 1)[1].rsplit("\n", 1)[0] + "\n"
    assert [p.get_text() for p in hints[2].find_all("p")] == ["Hint 3: a skeleton", "Fill the blanks:"]


@pytest.mark.parametrize(("text", "message"), [
    (EXERCISE, "has 0 stub cells"),
    (EXERCISE + STUB + DISCUSSION.replace(":class: dropdown\n", ""), "collapsed admonitions"),
    (EXERCISE + STUB + DISCUSSION.replace("`num_workers`", "{term}`num_workers`"), "MyST syntax"),
    (EXERCISE + STUB + STUB, "has 2 stub cells"),
    (EXERCISE.replace("dropdown hint", "hint") + STUB, "collapsed"),
    (EXERCISE.replace("Think of `//`.", "See {doc}`02_dataset`.") + STUB, "MyST syntax"),
    (EXERCISE + STUB.replace("exercise, remove-cell, skip-execution", "exercise, remove-cell"),
     "skip-execution"),
    (EXERCISE.replace("iterations_per_epoch(", "last_batch_size(") + STUB, "does not name it"),
    (EXERCISE + STUB.replace("def iterations_per_epoch", "def no_such_exercise"),
     "no exercise"),
    (EXERCISE.replace("`iterations_per_epoch(", "`SequentialSampler` `iterations_per_epoch(")
     + STUB.replace("\ndef iterations", "%%piece sampler.SequentialSampler\ndef iterations"),
     "leave the body"),
    (STUB + EXERCISE, "before the first exercise"),
    (EXERCISE.replace("~~~", "```") + STUB, "fenced with ~~~"),
])
def test_broken_markup_says_what_to_fix(text, message):
    with pytest.raises(ChapterError, match=re.escape(message)):
        make(text)


def test_the_check_mode_finds_a_stale_workbook(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "notebooks").mkdir()
    chapter = tmp_path / "book" / "01_demo.md"
    chapter.write_text(HEADER + EXERCISE + STUB)
    assert workbooks.main(["--root", str(tmp_path)]) == 0
    assert workbooks.main(["--root", str(tmp_path), "--check"]) == 0
    chapter.write_text(HEADER + EXERCISE.replace("Think of", "Think about") + STUB)
    assert workbooks.main(["--root", str(tmp_path), "--check"]) == 1


# ---------------------------------------------------------------------------------------
# Check-yourself items

SETUP = """
```{code-cell} ipython3
:tags: [workbook, remove-cell, skip-execution]

from minidataloader_course import check, check_answer
```
"""
ITEM = """
````{admonition} Check yourself: why not one sample at a time?
:class: check-yourself
:name: ch01-why-mini-batches

Why do we not train with batches of one sample?

- **a.** torch refuses it.
- **b.** Noisy gradients, and the fixed cost of a step dominates.
- **c.** Fewer updates.
- **d.** More memory.

```{admonition} Answer
:class: dropdown answer

**b.** Each update follows one sample.
```
````
"""
SEE_IT = """
+++ {"tags": ["workbook", "remove-cell"]}

See it:

+++
"""


def test_a_check_yourself_item_becomes_a_question_an_answer_cell_a_check_and_the_answer():
    notebook = make(SETUP + EXERCISE + STUB + ITEM + SEE_IT)
    cells = notebook.cells
    assert "**Check yourself** questions" in cells[0].source
    start = next(k for k, c in enumerate(cells) if c.source.startswith("## Check yourself"))
    question, answer, check, shown, after = cells[start:start + 5]
    assert question.source.startswith("## Check yourself: why not one sample at a time?\n\n"
                                      "Why do we not train")
    assert "- **d.** More memory." in question.source and "Answer" not in question.source
    assert answer.source == 'answer = None  # your choice: "a", "b", "c" or "d"'
    assert answer.metadata == {"tags": ["answer"],
                               "minidataloader": {"question": "ch01-why-mini-batches"}}
    assert check.source == 'check_answer("ch01-why-mini-batches", answer)'
    assert shown.source == ("<details><summary>Answer</summary>\n\n**b.** Each update follows "
                            "one sample.\n\n</details>")
    assert after.source == "See it:"


@pytest.mark.parametrize(("text", "message"), [
    (SETUP + EXERCISE + STUB + ITEM.replace(":name: ch01-why-mini-batches\n", ""), ":name:"),
    (SETUP + EXERCISE + STUB + ITEM.replace("ch01-why-mini-batches", "ch01-no-such-item"),
     "no check-yourself item"),
    (SETUP + EXERCISE + STUB + ITEM.replace("- **d.** More memory.\n", ""), "lists the options"),
    (SETUP + EXERCISE + STUB + ITEM.replace("**b.** Each", "**c.** Each"), "`**b.**`"),
    (SETUP + EXERCISE + STUB + ITEM.replace(":class: dropdown answer", ":class: answer"),
     "collapsed Answer"),
    (SETUP + EXERCISE + STUB + ITEM.replace("Check yourself: why", "Quiz: why"),
     "Check yourself: ..."),
    (EXERCISE + STUB + ITEM, "import check_answer"),
    (SETUP + EXERCISE + ITEM + STUB, "after a check-yourself item"),
    (SETUP + EXERCISE + STUB + ITEM.replace("Why do we not", "See {doc}`02_dataset`: why do we not"),
     "MyST syntax"),
])
def test_broken_item_markup_says_what_to_fix(text, message):
    with pytest.raises(ChapterError, match=re.escape(message)):
        make(text)


def test_a_chapter_of_two_pages_makes_a_workbook_per_page(tmp_path):
    """Both pages are chapter 1: each makes its own workbook, with the exercises it states."""
    (tmp_path / "book").mkdir()
    (tmp_path / "notebooks").mkdir()
    second = (EXERCISE.replace("Iterations per epoch", "Last batch size")
              .replace("iterations_per_epoch(dataset_size, batch_size, drop_last=False)`",
                       "last_batch_size(dataset_size, batch_size, drop_last=False)`"),
              STUB.replace("iterations_per_epoch", "last_batch_size"))
    (tmp_path / "book" / "01_first.md").write_text(HEADER + EXERCISE + STUB)
    (tmp_path / "book" / "01_second.md").write_text(HEADER.replace("# 1. A chapter",
                                                                   "# 1. A chapter: more")
                                                    + "".join(second))
    assert workbooks.main(["--root", str(tmp_path)]) == 0
    made = {path.name: path.read_text() for path in (tmp_path / "notebooks").glob("*.ipynb")}
    assert sorted(made) == ["01_first.ipynb", "01_second.ipynb"]
    assert "check(iterations_per_epoch)" in made["01_first.ipynb"]
    assert "check(last_batch_size)" in made["01_second.ipynb"]
    assert "Workbook 1: A chapter: more" in made["01_second.ipynb"]
