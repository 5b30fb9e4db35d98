"""The book's index: entries for the search page's script, and the static A–Z list.

Every entry points at one place in the book (a lesson node, an exercise, a
GPU of the specs page) by a link relative to the book's root. The search
script finds entries by their title and text; the A–Z list shows titles
alone, grouped by first letter, and needs no JavaScript.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import groupby

__all__ = ["IndexEntry", "a_to_z", "plain_text", "search_json"]

_MAX_TEXT = 600
_TAGS = re.compile(r"<[^>]+>")
_MARKS = re.compile(r"[`*_~#>|\[\]]|\]\([^)]*\)|<!--.*?-->", re.DOTALL)


@dataclass(frozen=True)
class IndexEntry:
    """One searchable place: its title, where it is, its kind and its words."""

    title: str
    href: str  # relative to the book's root
    where: str  # the lesson title, "Exercises" or "Specs"
    kind: str  # "lesson", "node", "exercise", "gpu", "topic"
    text: str = ""


def plain_text(markdown: str) -> str:
    """Markdown or HTML reduced to words on one line, for searching."""
    text = _MARKS.sub(" ", _TAGS.sub(" ", markdown))
    return " ".join(text.split())


def search_json(entries: Iterable[IndexEntry]) -> str:
    """The entries as the JSON the search script reads, safe inside ``<script>``."""
    rows = [
        {"t": e.title, "u": e.href, "w": e.where, "k": e.kind, "x": e.text[:_MAX_TEXT]}
        for e in entries
    ]
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")


def _letter(title: str) -> str:
    first = unicodedata.normalize("NFKD", title.lstrip(" \"'`(*_"))[:1].upper()
    return first if "A" <= first <= "Z" else "#"


def _sort_key(entry: IndexEntry) -> tuple[str, str, str]:
    return (_letter(entry.title), entry.title.casefold().lstrip(" \"'`(*_"), entry.where)


def a_to_z(entries: Iterable[IndexEntry]) -> list[tuple[str, list[IndexEntry]]]:
    """Entries grouped by first letter, A to Z, with titles starting otherwise under "#"."""
    ordered = sorted(entries, key=_sort_key)
    groups = [
        (letter, list(group)) for letter, group in groupby(ordered, key=lambda e: _letter(e.title))
    ]
    groups.sort(key=lambda g: (g[0] == "#", g[0]))
    return groups
