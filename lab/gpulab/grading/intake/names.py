"""Learners' names in a grading run: platform file names taken apart, slugs, text safe to show.

A slug is a function of one learner alone: the folder or zip name (``Ada
Lovelace`` gives ``ada-lovelace``), or on a platform the name and the id
(``ada-lovelace-1234``). Once given, it is the learner's for good: the
gradebook keeps each learner's identity (`identity`, a hash of their key) with
their slug, and `settle_slugs` gives every learner it already holds that slug
again, whoever else hands in later. Learners new to the gradebook whose names
give one slug, or a slug another learner holds, are a clash: each newcomer in
it gets the slug and a hash of their own key, so no learner takes or moves
another's slug, whatever the order they are found in, and a problem line names
them all.

Text a learner chose (a name, a file name, a message) is shown at most `cut`
long: `MAX_TEXT` characters, `MAX_NAME` for what is meant for one line, with a
marker that says how much was left out. This is the one place that cuts
learner text; `clean` here and `gpulab.grading.gradebook.verdict.plain` both cut with it.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "MAX_NAME",
    "MAX_TEXT",
    "Holder",
    "Key",
    "clean",
    "cut",
    "flat",
    "identity",
    "looks_like",
    "raw",
    "reason",
    "settle_slugs",
    "slug",
]

Key = tuple[str, ...]  # ("plain", name) or (platform, name, id)

MAX_TEXT = 4096
"""The most characters kept of one text a learner can fill: a check's message, a traceback,
a problem line (which may quote a file name)."""
MAX_NAME = 256
"""The most characters kept of learner text meant for one line: a learner's name, a
prediction in words."""


@dataclass(frozen=True)
class Holder:
    """A slug the gradebook has given, and to whom: the learner of `identity`, or, in a
    gradebook older than identities (`identity` ""), the learner named `name`."""

    slug: str
    name: str
    identity: str = ""


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


def identity(key: Key) -> str:
    """Who a learner is, as the gradebook keeps it: sha256 hex of their key (their name as
    it was read, and a platform's name for it and id)."""
    return hashlib.sha256(_key_bytes(key)).hexdigest()


def settle_slugs(
    learners: Mapping[Key, tuple[str, str, Sequence[str]]],
    held: Iterable[Holder] = (),
) -> tuple[dict[Key, str], list[str]]:
    """Each learner's final slug, and a problem line per clash.

    `learners` maps a key to (display name, slug, where it came from);
    `held` are the slugs the gradebook has given. A learner the gradebook
    knows keeps their slug (one known only by name, from a gradebook older
    than identities, claims the slug stored with their name if it is theirs:
    their slug, plain or hashed). Of the rest, a slug that one learner alone
    gives and nobody holds stays as it is; otherwise each of them gets
    ``<slug>-<6 hex of sha256 of their key>``, lengthened only should it meet
    another slug. A held slug never moves.
    """
    holders = list(held)
    slugs = _kept(learners, holders)
    taken = {h.slug for h in holders} | set(slugs.values())
    owner = {h.slug: h.name for h in holders} | {slugs[key]: learners[key][0] for key in slugs}
    by_slug: dict[str, list[Key]] = defaultdict(list)
    for key, (_, wanted, _) in learners.items():
        if key not in slugs:
            by_slug[wanted].append(key)
    for wanted, keys in by_slug.items():
        if len(keys) == 1 and wanted not in taken:
            slugs[keys[0]] = wanted
            taken.add(wanted)
    problems = []
    for wanted, keys in sorted(by_slug.items()):
        if len(keys) == 1 and slugs.get(keys[0]) == wanted:
            continue
        graded = []
        for key in sorted(keys, key=_key_bytes):
            width = 6
            while _hashed(wanted, key, width) in taken:
                width += 2
            slugs[key] = found = _hashed(wanted, key, width)
            taken.add(found)
            name, _, sources = learners[key]
            graded.append(f"{name} ({', '.join(sources)}) as {found}")
        if wanted in owner:
            problems.append(
                f"{wanted} stays the slug of {owner[wanted]}, who had it first; "
                f"graded apart: {'; '.join(graded)}"
            )
        else:
            problems.append(
                f"{len(keys)} learners whose names give the one slug {wanted}, graded "
                f"apart: {'; '.join(graded)}"
            )
    return slugs, problems


def _kept(
    learners: Mapping[Key, tuple[str, str, Sequence[str]]], holders: Sequence[Holder]
) -> dict[Key, str]:
    """The slugs the gradebook already gave the learners among `learners`: by identity, or
    in a gradebook older than identities by name and a slug that is theirs."""
    by_identity = {h.identity: h.slug for h in holders if h.identity}
    by_name = {h.slug: h.name for h in holders if not h.identity}
    kept: dict[Key, str] = {}
    for key, (name, wanted, _) in learners.items():
        mine = by_identity.get(identity(key))
        if mine is None:
            mine = next((s for s in (wanted, _hashed(wanted, key)) if by_name.get(s) == name), None)
            if mine is not None:
                del by_name[mine]
        if mine is not None:
            kept[key] = mine
    return kept


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


def clean(text: str | os.PathLike[str], limit: int = MAX_TEXT) -> str:
    """Text safe to show and to write as UTF-8: undecodable bytes and control characters as
    '�', at most `limit` characters (`cut`)."""
    text = raw(os.fspath(text)).decode("utf-8", "replace")
    more = max(len(text) - limit, 0)
    shown = "".join(char if char.isprintable() else "\ufffd" for char in text[:limit])
    return cut(shown, limit, more=more)


def cut(text: str | Sequence[str], limit: int = MAX_TEXT, *, more: int = 0) -> str:
    """`text` in at most `limit` characters: whole when it fits, else its start and the marker
    "… (cut: N more characters)", N counting the learner's characters left out (`more` of
    them dropped already by the caller). Text already cut to `limit` comes back as it is.

    `text` may come as pieces, each showing one character of the learner's (an
    escape such as ``\\x1b``): a piece is kept or left out whole.
    """
    if not more and (len(text) if isinstance(text, str) else sum(map(len, text))) <= limit:
        return "".join(text)
    room = limit - len(_marker(len(text) + more))
    kept, used = 0, 0
    if isinstance(text, str):
        kept = max(room, 0)
    else:
        for piece in text:
            if used + len(piece) > room:
                break
            used, kept = used + len(piece), kept + 1
    return "".join(text[:kept]) + _marker(len(text) - kept + more)


def _marker(left_out: int) -> str:
    return f"… (cut: {left_out} more characters)"


def reason(exc: BaseException) -> str:
    """Why a call failed, as text safe to show: an OS error's own words, else the exception's."""
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return clean(text or type(exc).__name__)


def _hashed(wanted: str, key: Key, width: int = 6) -> str:
    """The slug a learner gets in a clash: their slug and the start of their identity."""
    return f"{wanted[:57]}-{identity(key)[:width]}"


def _key_bytes(key: Key) -> bytes:
    return b"\0".join(raw(part) for part in key)


def _letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text)
