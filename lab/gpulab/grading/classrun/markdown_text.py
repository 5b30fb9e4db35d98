"""Text from a learner, made safe to put in Markdown.

What a grading run writes in a learner's Markdown feedback (their name, the
values in the checks' messages, their tracebacks) comes from the learner, so
every character that could make markup is escaped: `md_inline` for text on one
line, `md_cell` for a table cell, `md_block` for a message that may span lines.
`gpulab.grading.classrun.feedback` uses them to write the `.md` page.
"""

from __future__ import annotations

import re

__all__ = ["md_block", "md_cell", "md_inline"]

# Characters that can start Markdown or HTML markup anywhere in a line.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|&~#])")
# ... and the ones that do only at the start of a line (lists, quotes, headings).
_MD_LINE_START = re.compile(r"^(\s*|\s*\d+(?=[.)]))([-+=.)])")


def _md_escape(line: str) -> str:
    line = _MD_SPECIAL.sub(r"\\\1", line)
    return _MD_LINE_START.sub(r"\1\\\2", line)


def md_inline(text: str) -> str:
    """Text on one line of Markdown: line breaks become spaces, markup is escaped."""
    return _md_escape(" ".join(text.splitlines()))


def md_cell(text: str) -> str:
    """Text in a Markdown table cell: `|` escaped, line breaks as <br>."""
    return "<br>".join(_md_escape(line) for line in text.splitlines())


def md_block(text: str) -> str:
    """A message: one escaped line, or a fenced block (tracebacks keep their layout)."""
    lines = text.splitlines()
    if len(lines) <= 1:
        return md_inline(text)
    runs = [len(run) for run in re.findall(r"`+", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return "\n".join([f"{fence}text", *lines, fence])
