"""CSV cells a spreadsheet will not run: learner text in a gradebook an LMS imports.

A spreadsheet that opens a CSV may read a cell as a formula when it starts
with ``=``, ``+``, ``-`` or ``@``, or with a tab or a carriage return (OWASP's
list), even after the spaces some spreadsheets skip. Unicode has other forms
of those characters that a spreadsheet or an import step may fold into them:
the full-width ``＝ ＋ － ＠``, the small ``﹦ ﹢ ﹣ ﹫``, the raised and lowered
``⁼ ⁺ ₌ ₊``. NFKC is that folding, so a cell is judged by the NFKC form of its
first character that is not a space (`formula`), and such a cell is written
after a quote (`cell`), which a spreadsheet shows and does not run. Every cell
is first made `plain` and cut to `MAX_NAME` characters, as the gradebook
stores a name.
"""

from __future__ import annotations

import unicodedata

from gpulab.grading.gradebook.verdict import plain
from gpulab.grading.intake.names import MAX_NAME

__all__ = ["FORMULA_START", "cell", "formula"]

FORMULA_START = frozenset("=+-@\t\r")
"""The characters that make a cell a formula, in their NFKC form."""


def cell(text: str) -> str:
    """A CSV text cell on one line, `plain` and at most `MAX_NAME` characters long, that a
    spreadsheet will not run: one that `formula` finds starts with a quote.

    Line breaks become spaces: the csv module leaves a lone CR unquoted when
    lines end in LF, and a gradebook cell has no use for one.
    """
    text = plain(text, MAX_NAME)
    if formula(text):
        text = "'" + text
    return " ".join(text.splitlines())


def formula(text: str) -> bool:
    """Whether a spreadsheet may read `text` as a formula: its first character that is not a
    space, in NFKC form, is in `FORMULA_START`.

    A space is any character whose NFKC form is Unicode white space (a blank,
    a no-break or ideographic space, a line break), a tab and a CR excepted.
    Each character is folded alone, so no mark after a ``=`` can compose
    with it into a character that hides it.
    """
    for char in text:
        for folded in unicodedata.normalize("NFKC", char):
            if folded in FORMULA_START:
                return True
            if not folded.isspace():
                return False
    return False
