"""The workbooks (``notebooks/NN_slug.ipynb``) are made from the chapters (``book/NN_slug.md``).

    python -m minidataloader_course.authoring.workbooks           # write every workbook
    python -m minidataloader_course.authoring.workbooks --check   # fail if one differs (what tests run)
    make workbooks                                         # the same as the first line

A chapter says what its workbook holds; nothing is written twice:

- every ``exercise`` directive becomes "## Exercise k: <title>", its statement, and each of
  its hints as a collapsed ``<details>`` block (a hint is an ``admonition`` whose class has
  ``hint``, titled e.g. "Hint 1: a nudge"; the book shows it as a collapsed dropdown);
- every cell tagged ``workbook`` is copied in the chapter's order. A cell meant for the
  workbook only also carries ``remove-cell`` (and, for code, ``skip-execution``), so that the
  book neither shows nor runs it. A markdown cell may hold collapsed admonitions (an
  experiment's "Discussion", a prediction's "Answer": ``:class: dropdown``), which become
  collapsed ``<details>`` blocks; no other MyST syntax;
- every check-yourself item (an ``admonition`` of class ``check-yourself`` titled "Check
  yourself: ...", with ``:name: chNN-slug``, the name it is registered under, and one
  collapsed "Answer" admonition inside) becomes "## Check yourself: ...", its question, an
  answer cell (``answer = None``), ``check_answer("chNN-slug", answer)`` and the Answer as a
  collapsed ``<details>`` block;
- the stub of an exercise is a ``workbook`` code cell tagged ``exercise``, after the exercise
  and before the next one; the generator puts ``check(<name>)`` after it. A stub whose first
  line is ``%%piece <module>.<Name>`` is a piece of the learner's own loader: its body is left
  empty in the chapter and filled here from the shipped stub file
  (``course/minidataloader_course/learner/stubs/<module>.py``), or, when an earlier chapter already
  asked for that piece, becomes ``%piece <module>.<Name>``: the learner's current version is
  loaded into the cell to be grown. A piece grown in steps (NOTE [ A piece grown in steps ]
  in ``learner/package.py``) has one such cell per step, in order: the k-th cell of a piece
  in a chapter is its k-th step, checked with ``check(<Name>, name=<the step's name>)``.

A workbook stands alone: what its text points at, it holds. A backticked name "above" (or
"below") is defined by a code cell before (after) it (``def``, ``class``, an assignment, an
import), or is a stub's, torch's or Python's; "the cell above that shows ..." has such a cell;
"the loader above" follows a cell that makes one; "the table" has a Markdown table. The
generator refuses a workbook otherwise, naming the cell and the sentence (``check_pointers``;
the same name resolution tells the tests which names a hint may use).

A workbook-only cell placed between an exercise (or item) and the next belongs to the first
one's section: put lead-ins and follow-ups right after the exercise directive (or item), and
sections of their own (with a "## " heading) before the exercise they lead to.
"""

from __future__ import annotations

import argparse
import ast
import collections
import difflib
import functools
import pathlib
import re
import sys
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parents[3]  # the clone: course/minidataloader_course/authoring
WORKBOOK_TAGS = ("workbook", "remove-cell", "skip-execution")
_EXERCISE = re.compile(r"^````\{exercise\}[ \t]*(?P<title>[^\n]*)\n(?P<body>.*?)^````[ \t]*$",
                       re.MULTILINE | re.DOTALL)
_HINT = re.compile(r"^```\{(?:admonition\}[ \t]*(?P<title>[^\n]*)|hint\}[ \t]*)\n"
                   r"(?P<options>(?::[^\n]*\n)*)(?P<body>.*?)^```[ \t]*$",
                   re.MULTILINE | re.DOTALL)
_QUESTION = re.compile(r"^````\{admonition\}[ \t]*(?P<title>[^\n]*)\n(?P<body>.*?)^````[ \t]*$",
                       re.MULTILINE | re.DOTALL)
_OPTION = re.compile(r"^:(\w[\w-]*):[ \t]*(.*)$", re.MULTILINE)
_CHOICE_OPTION = re.compile(r"^- \*\*([a-z])\.\*\*", re.MULTILINE)
_MYST_ONLY = re.compile(r"(?<!`)\{[a-z][\w:-]*\}`|^```\{|^:::", re.MULTILINE)  # a role, not `{x}`
_PIECE = re.compile(r"^%%piece[ \t]+(?P<piece>[\w.]+)[ \t]*$")


class ChapterError(ValueError):
    """A chapter breaks the workbook conventions; the message says where and what to do."""


@dataclass
class Hint:
    title: str
    body: str


@dataclass
class ExerciseText:
    title: str
    label: str
    statement: str
    hints: list[Hint]


@dataclass
class QuestionText:
    """A check-yourself item of a chapter: its title, name, question and Answer."""

    title: str
    name: str
    question: str
    answer: str


@dataclass
class Section:
    """One exercise, or one check-yourself item, and the workbook cells that follow it (up to
    the next exercise or item)."""

    exercise: ExerciseText | None = None
    question: QuestionText | None = None
    cells: list = field(default_factory=list)  # nbformat cells, as they go into the workbook


def parse_exercise(title: str, body: str, where: str) -> ExerciseText:
    """Split an exercise directive into its label, statement and hints."""
    options = {}
    lines = body.split("\n")
    while lines and lines[0].startswith(":"):
        match = _OPTION.match(lines.pop(0))
        if match:
            options[match.group(1)] = match.group(2)
    rest = "\n".join(lines)
    hints, kept, last = [], [], 0
    for match in _HINT.finditer(rest):
        classes = dict(_OPTION.findall(match.group("options"))).get("class", "").split()
        if match.group("title") is not None and "hint" not in classes:
            continue  # another admonition: part of the statement
        if "dropdown" not in classes:
            raise ChapterError(f"{where}: a hint is collapsed until the reader opens it: give "
                               f"it `:class: dropdown hint`")
        hints.append(Hint(match.group("title") or "Hint", match.group("body").strip()))
        kept.append(rest[last:match.start()])
        last = match.end()
    kept.append(rest[last:])
    statement = re.sub(r"\n{3,}", "\n\n", "".join(kept)).strip()
    for text in [statement] + [hint.body for hint in hints]:
        myst = _MYST_ONLY.search(text)
        if myst:
            raise ChapterError(f"{where}: exercise {title!r} uses MyST syntax ({myst.group(0)!r}) "
                               f"that a notebook cannot show: write plain Markdown in statements "
                               f"and hints")
    if not statement:
        raise ChapterError(f"{where}: exercise {title!r} has no statement")
    return ExerciseText(title.strip(), options.get("label", ""), statement, hints)


def is_question(body: str) -> bool:
    """Whether a four-backtick admonition is a check-yourself item."""
    options = dict(_OPTION.findall(body.split("\n\n", 1)[0]))
    return "check-yourself" in options.get("class", "").split()


def parse_question(title: str, body: str, where: str) -> QuestionText:
    """Split a check-yourself admonition into its name, question and Answer."""
    options, lines = {}, body.split("\n")
    while lines and lines[0].startswith(":"):
        match = _OPTION.match(lines.pop(0))
        if match:
            options[match.group(1)] = match.group(2).strip()
    rest = "\n".join(lines)
    title = title.strip()
    if not title.startswith("Check yourself"):
        raise ChapterError(f"{where}: title a check-yourself item 'Check yourself: ...', not "
                           f"{title!r}")
    name = options.get("name", "")
    if not name:
        raise ChapterError(f"{where}: item {title!r} needs `:name: chNN-slug`, the name it is "
                           f"registered under (register(Choice(...)) in chNN.py)")
    answers = [m for m in _HINT.finditer(rest) if (m.group("title") or "").strip() == "Answer"]
    if len(answers) != 1 or "dropdown" not in dict(_OPTION.findall(
            answers[0].group("options"))).get("class", "").split():
        raise ChapterError(f"{where}: item {name!r} needs exactly one collapsed Answer inside "
                           f"it (```{{admonition}} Answer with `:class: dropdown answer`)")
    answer = answers[0]
    question = (rest[:answer.start()] + rest[answer.end():]).strip()
    for text in (question, answer.group("body")):
        myst = _MYST_ONLY.search(text)
        if myst:
            raise ChapterError(f"{where}: item {name!r} uses MyST syntax ({myst.group(0)!r}) that "
                               f"a notebook cannot show: write plain Markdown")
    if not question:
        raise ChapterError(f"{where}: item {name!r} has no question")
    return QuestionText(title, name, question, answer.group("body").strip())


def question_item(question: QuestionText, chapter: str, where: str):
    """The registered item a chapter's check-yourself admonition stands for, after checking
    that the two agree: the chapter, and for a multiple-choice item the letters of its
    options and the letter its Answer opens with."""
    from minidataloader_course.catalog import questions
    from minidataloader_course.checker.questions import Choice

    item = questions().get(question.name)
    if item is None or item.chapter != chapter:
        raise ChapterError(f"{where}: no check-yourself item {question.name!r} is registered in "
                           f"{chapter}.py: register(Choice(...)) or register(Prediction(...))")
    if isinstance(item, Choice):
        letters = _CHOICE_OPTION.findall(question.question)
        if letters != item.options:
            raise ChapterError(f"{where}: item {question.name!r} lists the options {letters} "
                               f"(as `- **a.** ...` lines), but is registered with "
                               f"{item.options}")
        if not question.answer.startswith(f"**{item.answer}.**"):
            raise ChapterError(f"{where}: the Answer of {question.name!r} opens with the right "
                               f"letter in bold, `**{item.answer}.**`")
    elif not question.answer.startswith("**"):
        raise ChapterError(f"{where}: the Answer of {question.name!r} opens with the right "
                           f"value in bold, e.g. `**2.**`")
    return item


def defined_name(source: str, where: str) -> str:
    """The one top-level function or class a stub defines."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise ChapterError(f"{where}: the stub does not parse: {error}") from error
    names = [node.name for node in tree.body
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    if len(names) != 1:
        raise ChapterError(f"{where}: a stub defines exactly one function or class, found {names}")
    return names[0]


def _markdown(source: str, **metadata):
    import nbformat

    return nbformat.v4.new_markdown_cell(source, metadata=metadata)


def _code(source: str, **metadata):
    import nbformat

    return nbformat.v4.new_code_cell(source, metadata=metadata)


def _tags(cell) -> list[str]:
    return list(cell.metadata.get("tags", []))


def _check_workbook_only(cell, where: str) -> None:
    tags = _tags(cell)
    if "workbook" in tags and "remove-cell" in tags:
        needed = WORKBOOK_TAGS if cell.cell_type == "code" else WORKBOOK_TAGS[:2]
        missing = [t for t in needed if t not in tags]
        if missing:
            raise ChapterError(f"{where}: a workbook-only cell needs the tags {list(needed)} "
                               f"(missing {missing}): {cell.source[:60]!r}")
    elif "exercise" in tags:
        raise ChapterError(f"{where}: a stub is for the workbook only: tag it "
                           f"{list(WORKBOOK_TAGS)} and 'exercise'")


def _collapsed_blocks(text: str, where: str) -> str:
    """A workbook markdown cell's collapsed admonitions (``:class: dropdown ...``: the
    discussion of an experiment, the answer to a prediction) as ``<details>`` blocks, which a
    notebook shows collapsed too. Any other MyST syntax is refused: a notebook cannot show it."""

    def details(match) -> str:
        classes = dict(_OPTION.findall(match.group("options"))).get("class", "").split()
        if match.group("title") is None or "dropdown" not in classes:
            raise ChapterError(f"{where}: a workbook cell may hold only collapsed admonitions "
                               f"(`{{admonition}} Title` with `:class: dropdown`): "
                               f"{match.group(0)[:60]!r}")
        return (f"<details><summary>{match.group('title').strip()}</summary>\n\n"
                f"{match.group('body').strip()}\n\n</details>")

    text = _HINT.sub(details, text)
    myst = _MYST_ONLY.search(text)
    if myst:
        raise ChapterError(f"{where}: a workbook cell uses MyST syntax ({myst.group(0)!r}) that a "
                           f"notebook cannot show: write plain Markdown (a collapsed admonition "
                           f"is the one exception)")
    return text


def _workbook_copy(cell, where: str = "a workbook cell"):
    """The cell as the workbook gets it: only the tags that mean something there."""
    tags = [t for t in _tags(cell) if t not in WORKBOOK_TAGS]
    metadata = {"tags": tags} if tags else {}
    if cell.cell_type == "code":
        return _code(cell.source, **metadata)
    return _markdown(_collapsed_blocks(cell.source, where), **metadata)


def chapter_number(path: pathlib.Path) -> int:
    return int(path.name[:2])


def chapter_title(notebook, path: pathlib.Path) -> str:
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^# \d+\.\s*(.+)$", cell.source, re.MULTILINE)
            if match:
                return match.group(1).strip()
    raise ChapterError(f"{path.name}: no '# N. Title' heading")


def read_sections(notebook, path: pathlib.Path) -> tuple[list, list[Section]]:
    """The workbook cells before the first exercise, and one section per exercise."""
    preamble: list = []
    sections: list[Section] = []
    for index, cell in enumerate(notebook.cells):
        where = f"{path.name}, cell {index + 1}"
        if cell.cell_type == "markdown":
            found = [(m.start(), Section(exercise=parse_exercise(m.group("title"),
                                                                 m.group("body"), where)))
                     for m in _EXERCISE.finditer(cell.source)]
            found += [(m.start(), Section(question=parse_question(m.group("title"),
                                                                  m.group("body"), where)))
                      for m in _QUESTION.finditer(cell.source)
                      if is_question(m.group("body"))]
            if found and "workbook" in _tags(cell):
                raise ChapterError(f"{where}: an exercise or a check-yourself item cannot sit in "
                                   f"a workbook-only cell")
            sections += [section for _, section in sorted(found, key=lambda pair: pair[0])]
        _check_workbook_only(cell, where)
        if "workbook" not in _tags(cell):
            continue
        if "exercise" in _tags(cell) and (not sections or sections[-1].exercise is None):
            raise ChapterError(f"{where}: a stub before the first exercise, or after a "
                               f"check-yourself item: put it right after its exercise")
        (sections[-1].cells if sections else preamble).append((where, cell))
    return preamble, sections


# ---------------------------------------------------------------------------------------
# The stubs of the learner's pieces


def piece_stub(piece: str, where: str) -> str:
    from minidataloader_course.learner import stub_region

    try:
        return stub_region(piece)
    except KeyError as error:
        raise ChapterError(f"{where}: {error.args[0]}") from None


def piece_exercise(piece: str, chapter: str, where: str, step: int = 1):
    """The exercise of this chapter that asks for ``piece`` in its ``step``-th ``%%piece``
    cell (the chapter's only one, or its step-th step), and whether the learner already has
    a version of it to grow (an earlier chapter asked for it, or an earlier step)."""
    from minidataloader_course.learner import piece_exercises

    try:
        asking = piece_exercises().get(piece, [])
    except ValueError as error:  # steps that do not chain
        raise ChapterError(f"{where}: {error}") from None
    here = [e for e in asking if e.chapter == chapter]
    if not here:
        raise ChapterError(f"{where}: no exercise of {chapter} has piece={piece!r}; register "
                           f"one (Exercise(piece=...)), or one per step")
    if step > len(here):
        raise ChapterError(f"{where}: this is {chapter}'s %%piece cell number {step} for "
                           f"{piece!r}, and {len(here)} exercise(s) of {chapter} ask for it: "
                           f"register one per step, in the chapter's order (NOTE [ A piece "
                           f"grown in steps ])")
    earlier = step > 1 or any(e.chapter < chapter for e in asking)
    return here[step - 1], earlier


def _steps_before(path: pathlib.Path) -> collections.Counter:
    """For each piece, its ``%%piece`` cells in the pages of the same chapter before this one
    (chapter 10 has two pages): the steps already asked for."""
    import jupytext

    try:
        pages = chapter_pages(chapter_number(path), path.parent.parent)
    except (ChapterError, OSError):
        return collections.Counter()  # a page outside a table of contents: on its own
    names = [page.name for page in pages]
    counted: collections.Counter = collections.Counter()
    for page in pages[:names.index(path.name)] if path.name in names else []:
        for cell in jupytext.read(page).cells:
            if "exercise" in _tags(cell):
                piece = _PIECE.match(cell.source.split("\n", 1)[0])
                if piece:
                    counted[piece.group("piece")] += 1
    return counted


def _is_last_page(path: pathlib.Path) -> bool:
    try:
        return chapter_pages(chapter_number(path), path.parent.parent)[-1].name == path.name
    except (ChapterError, OSError):
        return True


def check_steps_asked(path: pathlib.Path, asked: collections.Counter) -> None:
    """After a chapter's last page: every step registered for a piece has its cell."""
    if not _is_last_page(path):
        return
    from minidataloader_course.learner import piece_steps

    tag = f"ch{chapter_number(path):02d}"
    for piece, cells in asked.items():
        steps = piece_steps(piece, tag)
        if cells != len(steps):
            raise ChapterError(f"{path.name}: {tag} has {cells} %%piece cell(s) for {piece!r}, "
                               f"and {len(steps)} exercises ask for it "
                               f"({', '.join(e.name for e in steps)}): one cell per step")


def stub_exercise(cell, chapter: str, where: str, asked: collections.Counter):
    """The exercise a stub cell answers, and whether the learner grows a version they have;
    ``asked`` counts the ``%%piece`` cells of each piece so far in the chapter (updated)."""
    from minidataloader_course.catalog import exercises

    piece = _PIECE.match(cell.source.split("\n", 1)[0])
    if piece:
        asked[piece.group("piece")] += 1
        return piece_exercise(piece.group("piece"), chapter, where, asked[piece.group("piece")])
    name = defined_name(cell.source, where)
    exercise = exercises().get(name)
    if exercise is None or exercise.chapter != chapter:
        raise ChapterError(f"{where}: the stub defines {name!r}, which is no exercise of "
                           f"{chapter}")
    return exercise, False


def _stub_cells(cell, chapter: str, where: str, statement: str,
                asked: collections.Counter) -> list:
    """The stub cell as the workbook gets it, and its check cell."""
    first, _, body = cell.source.partition("\n")
    piece = _PIECE.match(first)
    if piece and body.strip():
        raise ChapterError(f"{where}: leave the body of a %%piece cell empty: it comes from "
                           f"the stub file")
    exercise, earlier = stub_exercise(cell, chapter, where, asked)
    if piece:
        if earlier:
            source = f"%piece {piece.group('piece')}"
        else:
            source = f"%%piece {piece.group('piece')}\n{piece_stub(piece.group('piece'), where)}"
        metadata = {"piece": piece.group("piece")}
        name = piece.group("piece").split(".")[1]
        from minidataloader_course.learner import piece_steps

        if len(piece_steps(piece.group("piece"), chapter)) > 1:
            metadata["exercise"] = exercise.name  # which step this cell is
    else:
        source = cell.source
        name = exercise.name
        metadata = {}
    if "raise NotImplementedError" not in source and not source.startswith("%piece "):
        raise ChapterError(f"{where}: a stub raises NotImplementedError")
    if not re.search(rf"`{re.escape(name)}\b", statement):
        raise ChapterError(f"{where}: the stub of {name!r} follows an exercise whose statement "
                           f"does not name it: is it under the right exercise?")
    metadata["solution"] = f"{chapter}.{exercise.reference.__name__}"  # chapters.<chNN>.solution
    stub = _code(source, tags=["exercise"], minidataloader=metadata)
    called = "" if exercise.name == name else f", name={exercise.name!r}"
    return [stub, _code(f"check({name}{called})")]


# ---------------------------------------------------------------------------------------
# What a workbook's text points at (issue 29): a workbook stands alone, so every name its
# text calls "above" or "below" is defined in its code cells or importable, and a hint names
# only what the learner has. The two checks share this name resolution.

_FENCE = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.MULTILINE | re.DOTALL)
_INLINE = re.compile(r"`((?:[^`\n]|\n(?![ \t]*\n))+)`")  # a span may wrap a line, not a paragraph
_NAME_SPAN = re.compile(r"^(?P<name>[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)(?:\([^()]*\))?:?$")
_POINTED = re.compile(r"`(?P<name>[A-Za-z_][\w.]*)(?:\([^`]*\))?`(?:[ \t\n]*\([^()]*\))?,?"
                      r"[ \t\n]+(?:as[ \t\n]+)?(?P<where>above|below)\b")
_THE_CELL = re.compile(r'\bthe (?:code )?cell above\b(?: that (?:shows|prints|says) "(?P<shows>[^"]+)")?',
                       re.IGNORECASE)
_THE_LOADER = re.compile(r"\bthe loader (?P<where>above|below)\b", re.IGNORECASE)
_THE_TABLE = re.compile(r"\b(?:read|see|in|of|from) the table\b(?!')|\bthe table "
                        r"(?P<where>above|below)\b", re.IGNORECASE)
_TABLE_ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*\n[ \t]*\|[ \t:|-]*-[ \t:|-]*\|?[ \t]*$",
                        re.MULTILINE)
_LOADER_MADE = re.compile(r"\bDataLoader\(|\bloader\s*=")
# Objects whose methods and attributes a learner uses without defining them.
_COMMON_TYPES = ("list", "dict", "set", "tuple", "str", "bytes", "int", "float", "object",
                 "queue.Queue", "threading.Thread", "threading.Event", "multiprocessing.Process",
                 "multiprocessing.Queue", "multiprocessing.Event", "torch.Tensor",
                 "torch.Generator", "itertools")


def code_names(source: str) -> set[str]:
    """What a cell of code defines: functions and classes (their methods too), assigned
    names and attributes (``self.x`` as ``self.x`` and ``x``), imports, parameters and loop
    variables. IPython's magics are left out; code that does not parse defines nothing."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name)):
            names |= {f"{node.value.id}.{node.attr}", node.attr}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names |= {alias.asname or alias.name.split(".")[0], alias.name}
    return names


def code_spans(text: str) -> list[str]:
    """The code a Markdown text holds: its fenced blocks and its inline spans."""
    blocks = _FENCE.findall(text)
    return blocks + [" ".join(span.split()) for span in _INLINE.findall(_FENCE.sub("", text))]


def text_names(text: str) -> set[str]:
    """The names a text writes in backticks: ``len(x)`` gives ``len``, and every ``self.x``
    and every ``name`` a span of code holds."""
    names: set[str] = set()
    for span in code_spans(text):
        names |= set(re.findall(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)", span))
        names |= {part for name in list(names) for part in name.split(".")}
    return names


def _resolve(dotted: str):
    """The object a dotted name stands for, from the builtins, the standard library, torch,
    minidataloader or the course; raises LookupError when none has it."""
    import builtins
    import importlib

    head, *rest = dotted.split(".")
    if hasattr(builtins, head):
        target = getattr(builtins, head)
    elif head in sys.stdlib_module_names or head in ("torch", "minidataloader",
                                                     "minidataloader_course", "numpy"):
        try:
            target = importlib.import_module(head)
        except ImportError as error:
            raise LookupError(dotted) from error
    else:
        raise LookupError(dotted)
    for part in rest:
        try:
            target = getattr(target, part)
        except AttributeError:
            try:
                target = importlib.import_module(f"{target.__name__}.{part}")
            except (ImportError, AttributeError) as error:
                raise LookupError(dotted) from error
    return target


@functools.cache
def is_public(name: str) -> bool:
    """Whether Python, torch, minidataloader or the course defines ``name``: a builtin, a
    module, a name of ``torch``, ``torch.utils.data``, ``torch.utils.data.DataLoader``,
    ``minidataloader`` or ``minidataloader_course``, a method of a common type (``put``,
    ``is_alive``), a dunder (``__next__``), or a dotted path through any of these."""
    last = name.split(".")[-1]
    if re.fullmatch(r"__\w+__", last):
        return True  # Python's data model
    if last.startswith("_"):
        return False  # a library's private name is no API a learner is given
    try:
        _resolve(name)
        return True
    except LookupError:
        pass
    if "." in name:
        return False
    homes = ["torch", "torch.utils.data", "torch.utils.data.DataLoader",
             "torch.utils.data.dataloader", "minidataloader", "minidataloader_course",
             *_COMMON_TYPES]
    for home in homes:
        try:
            if hasattr(_resolve(home), name):
                return True
        except LookupError:
            continue
    return False


_STUB_NAMES: set[str] | None = None


def stub_names() -> set[str]:
    """What the learner's package defines from the start: every name of the shipped stubs."""
    global _STUB_NAMES
    if _STUB_NAMES is None:
        from minidataloader_course.learner import stub_files

        _STUB_NAMES = set().union(*(code_names(path.read_text()) for path in stub_files()))
    return _STUB_NAMES


def _markdown_tables(text: str) -> bool:
    return bool(_TABLE_ROW.search(text))


def _sentence_at(text: str, at: int) -> str:
    """The sentence of ``text`` that holds position ``at``, on one line."""
    ends = (". ", "? ", "! ", ".\n", "?\n", "\n\n")
    starts = [text.rfind(end, 0, at) + len(end) for end in ends if text.rfind(end, 0, at) >= 0]
    stops = [text.find(end, at) + 1 for end in ends if text.find(end, at) >= 0]
    return " ".join(text[max(starts or [0]):min(stops or [len(text)])].split())


def check_pointers(cells: list, where: str) -> None:
    """Refuse a workbook whose text points at what it does not hold: a backticked name
    "above" (or "below") that no code cell before (after) it defines and that is neither a
    stub's, torch's nor Python's; "the cell above" with no code cell before it; "the loader
    above" with no loader made before it; "the table" with no table in the workbook."""
    code = [code_names(c.source) if c.cell_type == "code" else set() for c in cells]
    tables = [c.cell_type == "markdown" and _markdown_tables(c.source) for c in cells]
    loaders = [c.cell_type == "code" and bool(_LOADER_MADE.search(c.source)) for c in cells]
    firsts = [i for i, c in enumerate(cells) if c.cell_type == "code"][:1]  # the install cell
    problems: list[str] = []
    for index, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        before, after = slice(0, index), slice(index + 1, None)
        text = cell.source

        def refuse(at: int, what: str, text: str = text, index: int = index) -> None:
            problems.append(f"the workbook's cell {index + 1} says "
                            f"{_sentence_at(text, at)!r}, but {what}")

        for match in _POINTED.finditer(text):
            name, side = match.group("name"), match.group("where")
            scope = code[before] if side == "above" else code[after]
            known = set().union(*scope) if scope else set()
            if not (name in known or name.split(".")[0] in known or name in stub_names()
                    or is_public(name)):
                refuse(match.start(), f"no code cell {side} it defines `{name}`")
        for match in _THE_CELL.finditer(text):
            shows = match.group("shows")
            if not any(c.cell_type == "code" and (shows is None or shows in c.source)
                       for i, c in enumerate(cells[:index]) if i not in firsts):
                refuse(match.start(), "no code cell before it" + (f" shows {shows!r}" if shows
                                                                  else " comes"))
        for match in _THE_LOADER.finditer(text):
            scope = loaders[before] if match.group("where").lower() == "above" else loaders[after]
            if not any(scope):
                refuse(match.start(), f"no cell {match.group('where').lower()} it makes a loader")
        for match in _THE_TABLE.finditer(text):
            side = (match.group("where") or "").lower()
            scope = {"above": tables[before], "below": tables[after]}.get(side, tables)
            if not any(scope):
                refuse(match.start(), "the workbook shows no table" + (f" {side} it" if side
                                                                       else ""))
    if problems:
        raise ChapterError(f"{where}: the workbook points at what it does not hold: "
                           + "; ".join(problems) + ". Bring each into the workbook (a `workbook` "
                           "cell, or tag the book's cell `workbook`) or reword the sentence")


def hint_names(hint: str) -> list[str]:
    """The names a hint points at: every ``self.x`` in its code, and every backticked name or
    call (``helper``, ``helper(...)``), without those the hint's own code defines."""
    spans = code_spans(hint)
    own = set().union(*(code_names(span) for span in spans)) if spans else set()
    found = []
    for span in spans:
        for attribute in re.findall(r"\bself\.(\w+)", span):
            found.append(f"self.{attribute}")
        named = _NAME_SPAN.match(span.strip())
        if named and not named.group("name").startswith("self."):
            found.append(named.group("name"))
    return [name for name in dict.fromkeys(found) if name not in own]


def unknown_in_hint(hint: str, known: set[str], internals: set[str]) -> list[str]:
    """The names of ``hint`` the learner cannot know: an attribute ``self.x`` that neither
    ``known`` (the statement, the workbook's cells before, the stub) nor Python nor torch
    defines; a helper or method the reference defines (``internals``) that ``known`` lacks."""
    missing = []
    for name in hint_names(hint):
        if name.startswith("self."):
            attribute = name.split(".", 1)[1]
            if name in known or attribute in known or is_public(attribute):
                continue
            missing.append(name)
            continue
        last = name.split(".")[-1]
        if name in known or last in known or name.split(".")[0] in known or is_public(name):
            continue
        if last in internals or last.startswith("_"):
            missing.append(name)
    return missing


def internals(source: str) -> set[str]:
    """What a solution's module designs: its functions, classes, methods and attributes
    (``self.x`` as ``x``), not its local variables, which a hint may name as it likes."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id == "self"):
            names.add(node.attr)
    return names


@functools.cache  # every later chapter reads the earlier ones again
def _piece_statement_names(path: pathlib.Path) -> frozenset[str]:
    """The names the statements of a chapter's pieces write: the learner's package has them
    from then on, whatever chapter they read next."""
    import jupytext

    _, sections = read_sections(jupytext.read(path), path)
    return frozenset().union(*(
        text_names(section.exercise.statement) for section in sections
        if section.exercise is not None and any(
            "exercise" in _tags(cell) and _PIECE.match(cell.source.split("\n", 1)[0])
            for _, cell in section.cells)))


def exercise_contexts(path: pathlib.Path) -> list[tuple[str, ExerciseText, set[str]]]:
    """For every exercise of a chapter: (its registered name, its text, what its learner has:
    the names its statement writes, the code cells and statements of the workbook before its
    hints, its stub, the shipped stubs, and what the statements of the pieces of earlier
    chapters asked the learner's package to define)."""
    import jupytext

    preamble, sections = read_sections(jupytext.read(path), path)
    tag, asked = f"ch{path.name[:2]}", _steps_before(path)
    known: set[str] = set(stub_names())
    for earlier in chapters(path.parent.parent):
        if chapter_number(earlier) < chapter_number(path):
            known |= _piece_statement_names(earlier)

    def add(cell) -> None:
        if cell.cell_type == "code":
            known.update(code_names(cell.source))
        else:
            known.update(text_names(cell.source))

    for _, cell in preamble:
        add(cell)
    found = []
    for section in sections:
        if section.question is not None:
            known.update(text_names(section.question.question))
            for _, cell in section.cells:
                add(cell)
            continue
        known.update(text_names(section.exercise.statement))
        stub = next(cell for _, cell in section.cells if "exercise" in _tags(cell))
        add(stub)
        name = stub_exercise(stub, tag, path.name, asked)[0].name
        found.append((name, section.exercise, set(known)))
        for _, cell in section.cells:
            add(cell)
    return found


# ---------------------------------------------------------------------------------------
# The workbook


def _intro(number: int, title: str, stem: str, pieces: bool, milestone: bool,
           questions: bool = False) -> str:
    lines = [
        f"# Workbook {number}: {title}",
        "",
        f"The exercises of chapter {number} of the minidataloader book, each followed by a "
        f"check. This notebook is made from the chapter (`book/{stem}.md`) by "
        f"`make workbooks`: the statements and hints are the chapter's own, and the chapter "
        f"explains everything used here.",
        "",
        "1. Run the first code cell.",
        "2. For each exercise, replace `raise NotImplementedError` with your code and run the "
        "cell.",
        "3. Run the `check(...)` cell below it. The verdict is **✔ passed**, **✘ failed** "
        "(with the case that went wrong, what was expected, what your code gave and a hint), "
        "or **not attempted yet** while your code still raises `NotImplementedError`.",
        "",
        "Your code runs in a separate process with a time limit: an endless loop or a crash "
        "gives a verdict instead of freezing this notebook. Stuck? Open the hints one at a "
        "time: a nudge first, then more.",
    ]
    if pieces:
        lines += [
            "",
            "Cells that start with `%%piece` build **your own DataLoader**. Running one saves "
            "the cell into your package, `myloader/` next to this notebook (the first line names the file "
            "and the piece), and later chapters build on what you saved there. Keep what a "
            "piece needs inside its cell (imports and helpers included): the cell is all "
            "that goes into the file. A cell that starts with `%piece` loads your current "
            "version of a piece, to grow it. `python -m minidataloader_course "
            "status` lists your pieces; `... reset` starts over (it asks first and "
            "keeps a backup).",
        ]
    if milestone:
        lines += [
            "",
            "The **milestone** at the end checks your package as a whole against torch's "
            "`DataLoader`, and names the piece to look at when something differs.",
        ]
    if questions:
        lines += [
            "",
            "**Check yourself** questions test what the chapter explains: replace `None` in "
            "the answer cell with your answer (a letter, or your prediction), run it, then run "
            "the `check_answer` cell below it. A prediction is checked against the real "
            "thing, run by the check. The collapsed Answer explains it; open it after "
            "answering.",
        ]
    return "\n".join(lines)


def repository_url(root: pathlib.Path = ROOT) -> str:
    """The repository's address, as ``_config.yml`` gives it to the book's buttons."""
    import yaml

    return yaml.safe_load((root / "_config.yml").read_text())["repository"]["url"]


def install_cell() -> str:
    """Every workbook's first code cell: it works in the repository's JupyterLab, in a folder
    made by ``python -m minidataloader_course init``, and in a hosted notebook with nothing
    installed, where it installs the library and the course from the repository (torch as
    the service has it)."""
    url = repository_url()
    return "\n".join([
        "# The course, installed where it is missing (a hosted notebook: Colab, Binder, ...)",
        "import importlib.util",
        "",
        'if importlib.util.find_spec("minidataloader_course") is None:',
        '    print("Installing minidataloader and its course from the repository; the torch '
        'already installed here is kept ...")',
        f'    %pip install --quiet "minidataloader @ git+{url}" '
        f'"minidataloader_course @ git+{url}#subdirectory=course"',
    ])


def _question_cells(question: QuestionText, chapter: str, where: str) -> list:
    """A check-yourself item as the workbook gets it: the question, an answer cell, the
    check, and the Answer collapsed."""
    item = question_item(question, chapter, where)
    answer_cell = _code(f"answer = None  # {item.prompt()}", tags=["answer"],
                        minidataloader={"question": question.name})
    return [_markdown(f"## {question.title}\n\n{question.question}"), answer_cell,
            _code(f'check_answer("{question.name}", answer)'),
            _markdown(f"<details><summary>Answer</summary>\n\n{question.answer}\n\n</details>")]


def _hints_markdown(hints: list[Hint]) -> str:
    return "\n\n".join(f"<details><summary>{hint.title}</summary>\n\n{hint.body}\n\n</details>"
                       for hint in hints)


def build_workbook(path: pathlib.Path, text: str | None = None):
    """The workbook of one chapter, as an nbformat notebook."""
    import jupytext
    import nbformat

    source = path.read_text() if text is None else text
    chapter = jupytext.reads(source, fmt="md:myst")
    number = chapter_number(path)
    tag = f"ch{number:02d}"
    preamble, sections = read_sections(chapter, path)
    if not any(section.exercise for section in sections):
        raise ChapterError(f"{path.name}: no exercise")
    every = [cell for _, cell in preamble] + [cell for s in sections for _, cell in s.cells]
    pieces = any(_PIECE.match(c.source.split("\n", 1)[0]) for c in every)
    milestone = any(c.cell_type == "code" and re.search(r"^milestone\(", c.source, re.MULTILINE)
                    for c in every)
    asks = any(section.question for section in sections)
    if asks and not any(c.cell_type == "code" and "check_answer" in c.source
                        for _, c in preamble):
        raise ChapterError(f"{path.name}: the chapter has check-yourself items: import "
                           f"check_answer in the workbook's setup cell (from "
                           f"minidataloader_course import check, check_answer)")

    cells = [_markdown(_intro(number, chapter_title(chapter, path), path.stem, pieces,
                              milestone, asks)), _code(install_cell())]
    cells += [_workbook_copy(cell, where) for where, cell in preamble]
    k, asked = 0, _steps_before(path)
    for section in sections:
        if section.question is not None:
            cells += _question_cells(section.question, tag, path.name)
            cells += [_workbook_copy(cell, where) for where, cell in section.cells]
            continue
        k += 1
        exercise = section.exercise
        text = f"## Exercise {k}: {exercise.title}\n\n{exercise.statement}"
        if exercise.hints:
            text += "\n\n" + _hints_markdown(exercise.hints)
        cells.append(_markdown(text))
        stubs = [(where, c) for where, c in section.cells if "exercise" in _tags(c)]
        if len(stubs) != 1:
            raise ChapterError(f"{path.name}: exercise {exercise.title!r} has {len(stubs)} stub "
                               f"cells; it needs exactly one (a workbook cell tagged 'exercise')")
        for where, cell in section.cells:
            if "exercise" in _tags(cell):
                cells += _stub_cells(cell, tag, where, exercise.statement, asked)
            else:
                cells.append(_workbook_copy(cell, where))
    check_steps_asked(path, asked)
    check_pointers(cells, path.name)
    for index, cell in enumerate(cells):
        cell["id"] = f"{tag}-{index:02d}"
    notebook = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                       "name": "python3"},
        "language_info": {"name": "python"}})
    notebook.nbformat_minor = 5
    return notebook


def workbook_text(path: pathlib.Path, text: str | None = None) -> str:
    import nbformat

    return nbformat.writes(build_workbook(path, text)) + "\n"


def chapters(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    return sorted((root / "book").glob("[0-9][0-9]_*.md"))


def chapter_pages(number: int, root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    """The pages of chapter ``number`` (chapter 10 has two), in the order of ``_toc.yml``."""
    pages = [line.split("book/", 1)[1].strip() for line in (root / "_toc.yml").read_text()
             .splitlines() if "file: book/" in line]
    found = [root / "book" / f"{page}.md" for page in pages if page[:2] == f"{number:02d}"]
    if not found:
        raise ChapterError(f"_toc.yml has no chapter {number}")
    return found


def workbook_path(chapter: pathlib.Path) -> pathlib.Path:
    return chapter.parent.parent / "notebooks" / f"{chapter.stem}.ipynb"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minidataloader_course.authoring.workbooks",
        description="Make notebooks/NN_slug.ipynb from book/NN_slug.md.")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; fail if a committed workbook differs")
    parser.add_argument("--root", type=pathlib.Path, default=ROOT,
                        help="the repository (default: %(default)s)")
    arguments = parser.parse_args(argv)
    stale = []
    for chapter in chapters(arguments.root):
        target = workbook_path(chapter)
        try:
            made = workbook_text(chapter)
        except ChapterError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        current = target.read_text() if target.exists() else ""
        if made == current:
            continue
        if arguments.check:
            stale.append(target)
            diff = difflib.unified_diff(current.splitlines(), made.splitlines(),
                                        str(target), "made from " + chapter.name, lineterm="", n=1)
            print("\n".join(list(diff)[:40]), file=sys.stderr)
        else:
            target.write_text(made)
            print(f"wrote {target.relative_to(arguments.root)}")
    if stale:
        print(f"\n{len(stale)} workbook(s) differ from their chapters: run `make workbooks` "
              f"and commit the result", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
