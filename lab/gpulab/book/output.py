"""The book's output folder: checked before the build, swapped in after it.

A book is rendered into a fresh work folder beside the output and moved into
place at the end; an older book there is first moved aside and removed only
once the new one stands in its place. Every problem with the folder, or with
writing into it, is a `BookError` that names the path; nothing that was there
before is lost.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import suppress
from pathlib import Path

from gpulab.errors import GpulabError

__all__ = ["MARKER", "BookError", "check_out", "put_in_place", "work_folder", "write_error"]

MARKER = ".gpulab-book"
"""A file in every built book: only a folder holding it is ever replaced."""

_CHOOSE = "choose another --out"


class BookError(GpulabError):
    """The book cannot be built for a reason outside the course (the output folder)."""


def write_error(exc: OSError, doing: str) -> BookError:
    """`exc` as a `BookError` that says what failed, on which path, and why."""
    where = f": {exc.filename}" if exc.filename else ""
    return BookError(f"{doing}{where}: {exc.strerror or exc}")


def check_out(out: Path) -> Path:
    """`out` made absolute; refuses one that is a file, lies under a file, or is a folder
    of other files."""
    try:
        out = out.expanduser().resolve()
    except (RuntimeError, OSError) as exc:  # ~nobody, a loop of links
        raise BookError(f"{out}: {str(exc).rstrip('.')}: {_CHOOSE}") from None
    try:
        _check(out)
    except OSError as exc:
        found = write_error(exc, "cannot read where the book goes")
        raise BookError(f"{found}: {_CHOOSE}") from None
    return out


def _check(out: Path) -> None:
    existing = next(p for p in (out, *out.parents) if p.exists() or p == p.parent)
    if existing == out and not out.is_dir():
        raise BookError(f"{out} is a file, not a folder: {_CHOOSE}")
    if not existing.is_dir():
        raise BookError(
            f"{existing} is a file, not a folder, so no book can go into {out}: {_CHOOSE}"
        )
    if existing == out and any(out.iterdir()) and not (out / MARKER).is_file():
        raise BookError(
            f"{out} holds files that are not a gpulab book, and building "
            f"replaces the whole folder: choose an empty or new folder for --out"
        )


def work_folder(out: Path) -> Path:
    """A new, empty folder beside `out` (its parents made) to render the book into. An
    error names the folder that could not be made, or the folder that refused a new one
    (/proc says "No such file or directory" of the folder it will not make)."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        failed = exc.filename or out.parent
        raise BookError(
            f"cannot make the folder {failed} for the book {out} ({exc.strerror or exc}): {_CHOOSE}"
        ) from None
    try:
        return Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    except OSError as exc:
        raise BookError(
            f"cannot make a folder in {out.parent} for the book {out} "
            f"({exc.strerror or exc}): {_CHOOSE}"
        ) from None


def put_in_place(work: Path, out: Path) -> None:
    """Move the finished book `work` to `out`. A book already there is moved aside
    first, removed once the new one stands in its place, and put back if it cannot."""
    old: Path | None = None
    try:
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}-old-", dir=out.parent))
            os.replace(out, old)
    except OSError as exc:
        if old is not None:
            with suppress(OSError):
                old.rmdir()  # still empty: the old book did not move
        raise BookError(
            f"cannot move the book at {out} aside to replace it ({exc.strerror or exc}): {_CHOOSE}"
        ) from None
    try:
        os.replace(work, out)
    except OSError as exc:
        kept = ""
        if old is not None:
            try:
                os.replace(old, out)
            except OSError:
                kept = f"; the previous book is kept in {old}"
        raise BookError(
            f"cannot move the new book to {out} ({exc.strerror or exc}){kept}: {_CHOOSE}"
        ) from None
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
