"""course/EXERCISES.md, made from the declarations: for every chapter, its learning goals (as
the chapter states them) with what assesses each, and for every exercise the rules its
statement states with the hidden cases that test each and the plausible wrong answers (the
chapter's mutants) that break it.

    python -m minidataloader_course.authoring.tables           # write course/EXERCISES.md
    python -m minidataloader_course.authoring.tables --check   # fail if it is stale

Nothing here is written by hand: a goal's assessments come from the ``goals`` of the
exercises, items and milestones; a rule and its cases from the exercise's ``rules``; the
mistakes that break a rule from the mutants' ``breaks``.
"""

from __future__ import annotations

import argparse
import re
import sys

from minidataloader_course import catalog
from minidataloader_course.authoring.workbooks import ROOT, chapter_number, chapter_pages, chapters

TABLES = ROOT / "course" / "EXERCISES.md"
_GOALS = re.compile(r"^```\{admonition\} Learning goals\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def learning_goals(number: int) -> list[str]:
    """The bullets of a chapter's "Learning goals" boxes (chapter 10 has two pages), each on
    one line, without its final ``;`` or ``.``."""
    goals = []
    for page in chapter_pages(number):
        block = _GOALS.search(page.read_text())
        if block is None:
            raise ValueError(f"{page.name} has no Learning goals box")
        bullets = re.split(r"^- ", block.group(1), flags=re.MULTILINE)[1:]
        goals += [" ".join(bullet.split()).rstrip(";.") for bullet in bullets]
    return goals


def assessments(number: int) -> dict[int, list[str]]:
    """Goal number -> what assesses it: exercises and items by name, in backticks, then
    milestones as "milestone N"."""
    chapter = f"ch{number:02d}"
    found: dict[int, list[str]] = {}
    for items in (catalog.exercises(), catalog.questions()):
        for name, item in items.items():
            if item.chapter == chapter:
                for goal in item.goals:
                    found.setdefault(goal, []).append(f"`{name}`")
    for milestone in catalog.milestones().values():
        for goal in milestone.goals.get(chapter, ()):
            found.setdefault(goal, []).append(f"milestone {milestone.number}")
    return found


def _cases(rule) -> str:
    numbers, runs = list(rule.cases), []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    text = ", ".join(f"{a}–{b}" if b > a + 1 else f"{a}, {b}" if b == a + 1 else str(a)
                     for a, b in runs)
    return text + (f" ({rule.note})" if rule.note else "")


def rule_text(rule) -> str:
    """The rule's text, marked when it is torch's detail rather than the concept."""
    return f"{rule.text} *(torch's detail: {rule.parity})*" if rule.parity else rule.text


def _mistakes(mistakes: list[str]) -> str:
    """The mistakes as table text: a ``|`` would end the cell."""
    return "; ".join(m.replace("|", "\\|") for m in mistakes) or "**none**"


def tables() -> str:
    out = ["# Exercises: goals, rules and the cases that test them", "",
           "Made by `python -m minidataloader_course.authoring.tables` from the chapters' "
           "learning goals and the declarations in `course/minidataloader_course/chapters/"
           "chNN/checks.py` (`rules`, `goals`), `mutants.py` (`breaks`: the plausible wrong "
           "answers that break each rule, every one refused by the check) and `milestone.py`: "
           "never edit it by hand.", "",
           "*Expected from*: **torch** means the check computes the expected values by running "
           "torch (the exercise's `oracle`), **reference** the model solution (where the rule is "
           "the book's own design or arithmetic). Delegation to torch's or the package's pieces "
           "is refused on every case; types are compared strictly on every case.", "",
           "*torch's detail*: a rule marked so is torch's exact behaviour rather than the "
           "concept (the rule's `parity`). A learner whose answer fails only such rules' cases "
           "is told \"✔ the concept; N of torch's exact cases left\"; it is still no pass, and "
           "milestones demand both.", ""]
    exercises = catalog.exercises()
    breaking: dict[tuple[str, int], list[str]] = {}
    for mutant in catalog.mutants():
        breaking.setdefault((mutant.exercise, mutant.breaks), []).append(mutant.mistake)
    for number in sorted({chapter_number(page) for page in chapters()}):
        title = chapter_pages(number)[0].read_text().split("\n# ", 1)[1].split("\n", 1)[0]
        title = re.sub(r"^\d+\.\s*", "", title)
        out += [f"## Chapter {number}: {title}", "", "| learning goal | assessed by |",
                "|---|---|"]
        found = assessments(number)
        for index, goal in enumerate(learning_goals(number), 1):
            out.append(f"| {goal} | {', '.join(found.get(index, [])) or '**nothing**'} |")
        out += ["", "| exercise (expected from) | rule | cases | mistakes that break it |",
                "|---|---|---|---|"]
        for name, exercise in exercises.items():
            if exercise.chapter != f"ch{number:02d}":
                continue
            for index, rule in enumerate(exercise.rules, 1):
                head = f"`{name}` ({exercise.expected_from})" if index == 1 else ""
                out.append(f"| {head} | {rule_text(rule)} | {_cases(rule)} | "
                           f"{_mistakes(breaking.get((name, index), []))} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minidataloader_course.authoring.tables",
                                     description="Make course/EXERCISES.md.")
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    arguments = parser.parse_args(argv)
    made = tables()
    if arguments.check:
        if TABLES.read_text() != made:
            print(f"{TABLES} is stale: run `make workbooks`", file=sys.stderr)
            return 1
        return 0
    TABLES.write_text(made)
    print(f"wrote {TABLES.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
