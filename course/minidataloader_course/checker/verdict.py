"""The verdict ``check`` returns: plain text for a terminal, a small coloured box in Jupyter."""

from __future__ import annotations

import html
import sys
from dataclasses import dataclass

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted"
NOT_ANSWERED = "not answered"  # a check-yourself item whose answer is still None
_MARK = {PASSED: "✔ passed", FAILED: "✘ failed", NOT_ATTEMPTED: "not attempted yet",
         NOT_ANSWERED: "not answered yet"}
_COLOURS = {  # border, background, heading text
    PASSED: ("#2e7d32", "#edf7ee", "#1b5e20"),
    FAILED: ("#c62828", "#fdeeee", "#b71c1c"),
    NOT_ATTEMPTED: ("#757575", "#f4f4f4", "#424242"),
    NOT_ANSWERED: ("#757575", "#f4f4f4", "#424242"),
}
# a failure on torch's exact cases only: the concept is right (NOTE [ Concept cases and
# torch's exact cases ] in check.py). Still no pass, in its own colours
CONCEPT_MARK = "✔ the concept"
_CONCEPT_COLOURS = ("#ef6c00", "#fff6e8", "#9a4a00")
OUTPUT_SHOWN_LINES = 12
OUTPUT_SHOWN_CHARS = 1_200
ISSUES = "https://github.com/minidataloader/minidataloader/issues"  # a test compares _config.yml
IF_IN_DOUBT = ("sure your code is right? Run the check again (on a busy computer a time limit "
               "can run out), and read the case, the expected value and the hint above. If it "
               f"still fails, report it with this verdict at {ISSUES}")


@dataclass
class Verdict:
    """The result of ``check(...)``.

    ``status`` is "passed", "failed", "not attempted" (or, for a check-yourself item,
    "not answered"); ``passed`` is a bool. On failure ``case``, ``expected`` and ``got`` say
    what went wrong where (any may be empty), ``problem`` says it in a sentence and ``hint``
    suggests what to look at. ``output`` is what the code printed (truncated), ``note``
    anything else worth knowing. ``in_doubt`` is what to do when the verdict itself may be
    wrong (:data:`IF_IN_DOUBT`: rerun the check, report it): only a failure that may be the
    checker's or the machine's sets it (a time limit ran out, the child was killed or exited
    unexpectedly, the checker could not compare); a plain wrong answer's verdict has none.
    ``case_number`` is the number (from 1) of the hidden case that failed, or None: the
    exercise's ``rules`` name their cases by these numbers. ``concept`` is True for a failure
    on torch's exact cases only (rules with ``parity``): every concept case was right, and the
    verdict opens with "✔ the concept; " instead of "✘ failed: ". It is still no pass.
    """

    exercise: str
    status: str
    summary: str
    case: str = ""
    expected: str = ""
    got: str = ""
    problem: str = ""
    hint: str = ""
    output: str = ""
    printed: int = 0
    note: str = ""
    in_doubt: str = ""
    case_number: int | None = None
    concept: bool = False

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def heading(self) -> str:
        """The first line: the mark, then the summary."""
        if self.concept and self.status == FAILED:
            return f"{CONCEPT_MARK}; {self.summary}"
        return f"{_MARK[self.status]}: {self.summary}"

    def _rows(self) -> list[tuple[str, str]]:
        rows = [("case", self.case), ("expected", self.expected), ("got", self.got),
                ("problem", self.problem), ("hint", self.hint), ("note", self.note),
                ("in doubt", self.in_doubt if self.status == FAILED else "")]
        return [(label, text) for label, text in rows if text]

    def _output_excerpt(self) -> str:
        if not self.output:
            return ""
        lines = self.output[:OUTPUT_SHOWN_CHARS].splitlines()[:OUTPUT_SHOWN_LINES]
        excerpt = "\n".join(lines)
        if self.printed > len(excerpt):
            excerpt += f"\n… ({self.printed - len(excerpt):,} more characters not shown)"
        return excerpt

    def __str__(self) -> str:
        text = [self.heading()]
        text += [f"  {label + ':':<9} {value}" for label, value in self._rows()]
        excerpt = self._output_excerpt()
        if excerpt:
            text.append("  your code printed:")
            text += [f"    {line}" for line in excerpt.splitlines()]
        return "\n".join(text)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        concept = self.concept and self.status == FAILED
        border, background, ink = _CONCEPT_COLOURS if concept else _COLOURS[self.status]
        mark, separator = (CONCEPT_MARK, "; ") if concept else (_MARK[self.status], ": ")
        e = html.escape
        rows = "".join(
            f'<tr><td style="padding:1px 10px 1px 0;vertical-align:top;text-align:left;color:#555">{e(label)}</td>'
            f'<td style="padding:1px 0;text-align:left;white-space:pre-wrap;font-family:monospace">{e(value)}</td></tr>'
            for label, value in self._rows())
        excerpt = self._output_excerpt()
        printed = (f'<div style="color:#555;margin-top:4px">your code printed:</div>'
                   f'<pre style="margin:2px 0 0;padding:4px;background:#fff;max-height:12em;'
                   f'overflow:auto">{e(excerpt)}</pre>') if excerpt else ""
        return (
            f'<div class="mdl-verdict mdl-{self.status.replace(" ", "-")}'
            f'{" mdl-concept" if concept else ""}" style="border-left:5px '
            f'solid {border};background:{background};padding:6px 10px;margin:4px 0;'
            f'font-size:0.92em;line-height:1.4">'
            f'<div style="color:{ink};font-weight:bold">{e(mark)}{separator}'
            f'<span style="font-weight:normal">{e(self.summary)}</span></div>'
            f'{_table(rows)}{printed}</div>')


def _table(rows: str) -> str:
    return f'<table style="margin-top:4px;border:none">{rows}</table>' if rows else ""


def shown(verdict):
    """Print the verdict (a check's, a milestone's) where a returned value is not shown by
    itself: IPython (Jupyter) and the interactive interpreter display it, a script or a test
    would print nothing."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython else None
    if shell is None and not hasattr(sys, "ps1"):
        print(verdict)
    return verdict
