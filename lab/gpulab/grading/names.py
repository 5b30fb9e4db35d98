"""Learners' names in a grading run: platform file names taken apart, slugs, text safe to show.

A slug is a function of one learner alone: the folder or zip name (``Ada
Lovelace`` gives ``ada-lovelace``), or on a platform the name and the id
(``ada-lovelace-1234``). Learners whose names give one slug are a clash
(`settle_slugs`): each gets the slug and a hash of their own key, so no learner
takes another's slug, whatever the order they are found in or who else handed
in, and a problem line names them all.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["Key", "clean", "flat", "looks_like", "raw", "reason", "settle_slugs", "slug"]

Key = tuple[str, ...]  # ("plain", name) or (platform, name, id)

# The name is the shortest that fits: the first id anchors it, and what a learner named
# their upload comes after it, so an upload named like another learner's file stays theirs.
_MOODLE = re.compile(
    r"(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?:file|onlinetext)_"
    r"(?P<file>.*)",
    re.S,
)
_CANVAS = re.compile(r"(?P<name>.+?)_(?:LATE_)?(?P<id>\d+)_\d+_(?P<file>.+)", re.S)
_COPY_MARK = re.compile(r"[\s_-]*(?:\(\d+\)|copy|\d+)$")  # "roofline (1)", "roofline copy"


def flat(name: str) -> tuple[str, str, str, str] | None:
    """A Moodle or Canvas file name as (platform, learner's name, id, file), or None.

    A Moodle folder is a Moodle name with an empty file. Where both patterns
    fit, the one whose id comes first is the platform's.
    """
    found = [
        (len(m["name"]), kind, m)
        for kind, m in (("moodle", _MOODLE.fullmatch(name)), ("canvas", _CANVAS.fullmatch(name)))
        if m
    ]
    if not found:
        return None
    _, kind, match = min(found, key=lambda item: item[0])
    return kind, match["name"], match["id"], match["file"]


def slug(name: str, suffix: str = "") -> str:
    """A file-name stem for a learner: ASCII letters, digits, '.', '_' and '-', lowercased.

    `suffix` (a platform's id) is kept after a '-', up to 20 characters.
    """
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^A-Za-z0-9._-]", "", re.sub(r"\s+", "-", text.strip()))
    text = text.lower().lstrip(".-")
    if not suffix:
        return text[:64] or "learner"
    return f"{text[:43] or 'learner'}-{suffix[:20]}"


def settle_slugs(
    learners: Mapping[Key, tuple[str, str, Sequence[str]]],
) -> tuple[dict[Key, str], list[str]]:
    """Each learner's final slug, and a problem line per clash.

    `learners` maps a key to (display name, slug, where it came from). A slug
    that one learner alone gives stays as it is; on a clash each learner in it
    gets ``<slug>-<6 hex of sha256 of their key>``, lengthened only should it
    meet another slug.
    """
    by_slug: dict[str, list[Key]] = defaultdict(list)
    for key, (_, wanted, _) in learners.items():
        by_slug[wanted].append(key)
    slugs = {keys[0]: wanted for wanted, keys in by_slug.items() if len(keys) == 1}
    taken, problems = set(slugs.values()), []
    for wanted, keys in sorted(by_slug.items()):
        if len(keys) == 1:
            continue
        graded = []
        for key in sorted(keys, key=_key_bytes):
            digest, width = hashlib.sha256(_key_bytes(key)).hexdigest(), 6
            while f"{wanted[:57]}-{digest[:width]}" in taken:
                width += 2
            slugs[key] = found = f"{wanted[:57]}-{digest[:width]}"
            taken.add(found)
            name, _, sources = learners[key]
            graded.append(f"{name} ({', '.join(sources)}) as {found}")
        problems.append(
            f"{len(keys)} learners whose names give the one slug {wanted}, graded "
            f"apart: {'; '.join(graded)}"
        )
    return slugs, problems


def looks_like(name: str, exercises: Iterable[str]) -> str | None:
    """The exercise a file seems meant for though it is not named <exercise>.ipynb, or None.

    Compared: the letters and digits of the name before its first dot, with a
    copy mark ("(1)", "copy", "-2") taken off or not. Roofline.ipynb,
    roofline.py, "roofline (1).ipynb" and env_report.ipynb all match.
    """
    stem = name.split(".")[0].lower()
    guesses = {_letters(stem), _letters(_COPY_MARK.sub("", stem))} - {""}
    return next((e for e in sorted(exercises) if _letters(e.lower()) in guesses), None)


def raw(text: str) -> bytes:
    """The bytes a name was read from: a file name's undecodable bytes are surrogate escapes."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def clean(text: str | os.PathLike[str]) -> str:
    """Text safe to show and to write as UTF-8: undecodable bytes and control characters as '�'."""
    text = raw(os.fspath(text)).decode("utf-8", "replace")
    return "".join(char if char.isprintable() else "\ufffd" for char in text)


def reason(exc: BaseException) -> str:
    """Why a call failed, as text safe to show: an OS error's own words, else the exception's."""
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return clean(text or type(exc).__name__)


def _key_bytes(key: Key) -> bytes:
    return b"\0".join(raw(part) for part in key)


def _letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text)
