"""Untrusted submissions as entries: a folder or zip listed, an entry's bytes copied under limits.

This is where the intake (`gpulab.grading.intake`) meets the files a class
handed in; the intake only sorts the entries listed here to learners and
exercises. `list_folder` walks a submissions folder without following a
link, down to a learner's folder and `MAX_FOLDERS` below it; `open_checked`
opens a zip once its end records are within `ZipLimits`
(`gpulab.grading.intake.zipread`) and `list_zip` lists its members. Either way an
entry that must not be read (a link, a FIFO, an encrypted member, a name
outside the zip) is listed with the reason and never opened; hidden files and
macOS litter are not listed at all (`ignored`). `unpack` copies one entry,
counting its bytes as they come against a cap, the outermost zip's `Budget`
and the ratio to its packed size, and stops with `Refused` as soon as one is
passed: a zip is never extracted wholesale.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import stat
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from gpulab.grading.intake.names import clean, reason
from gpulab.grading.intake.zipread import MIB, ZipLimits, ZipRefused, open_zip

__all__ = [
    "CHUNK",
    "MAX_FOLDERS",
    "Archive",
    "Budget",
    "Entry",
    "Refused",
    "ignored",
    "list_folder",
    "list_zip",
    "open_checked",
    "unpack",
]

CHUNK = 64 * 1024  # bytes read at a time, so a cap is passed by less than this
MAX_FOLDERS = 3  # sub-folders a notebook may sit in below the learner's folder or zip
# What reading a hostile zip can raise, besides our own refusals.
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    NotImplementedError,
    RuntimeError,
    OSError,
    ValueError,
    struct.error,
    KeyError,
)


class Refused(Exception):
    """One entry that will not be read, and why (the path is added by the caller)."""


@dataclass(eq=False)
class Budget:
    """The bytes unpacked so far from one outermost zip and every zip inside it."""

    where: str
    used: int = 0


@dataclass(eq=False)
class Archive:
    """An open zip, the budget it draws on, and how many zips deep it lies."""

    zip: zipfile.ZipFile
    budget: Budget
    depth: int


@dataclass(frozen=True)
class Entry:
    """A file or folder in a submissions folder or zip, not yet read."""

    parts: tuple[str, ...]  # its path below the folder or zip
    where: str  # that path as messages show it
    is_dir: bool = False
    refused: str | None = None  # why it must not be read
    path: Path | None = None  # on disk
    info: zipfile.ZipInfo | None = None
    archive: Archive | None = None  # the zip that holds it


def list_folder(root: Path, problems: list[str]) -> Iterator[Entry]:
    """The entries below `root`, down to a learner's folder and `MAX_FOLDERS` below that.

    Links are listed refused, not followed. Folders deeper than that are not
    looked into, and said so: one problem line per learner, naming the first.
    An unreadable `root` raises `OSError`; an unreadable folder below it is a
    problem.
    """
    deep: dict[str, list[str]] = {}

    def walk(folder: str, parts: tuple[str, ...]) -> Iterator[Entry]:
        try:
            with os.scandir(folder) as listing:
                items = sorted(listing, key=lambda item: item.name)
        except OSError as exc:
            if not parts:
                raise
            problems.append(f"{clean(folder)}: cannot read this folder: {reason(exc)}")
            return
        for item in items:
            here, where = (*parts, item.name), clean(item.path)
            if ignored(item.name):
                continue
            try:
                if item.is_symlink():
                    yield Entry(here, where, refused="a symbolic link, not followed")
                elif item.is_dir(follow_symlinks=False):
                    yield Entry(here, where, is_dir=True)
                    if len(here) <= 1 + MAX_FOLDERS:
                        yield from walk(item.path, here)
                    else:
                        deep.setdefault(here[0], []).append(where)
                elif item.is_file(follow_symlinks=False):
                    yield Entry(here, where, path=Path(item.path))
                else:
                    yield Entry(here, where, refused="not a regular file")
            except OSError as exc:
                yield Entry(here, where, refused=f"cannot be read: {reason(exc)}")

    yield from walk(os.fspath(root), ())
    for found in deep.values():
        more = f" (and {len(found) - 1} more such folders)" if len(found) > 1 else ""
        problems.append(
            f"{found[0]}: more than {MAX_FOLDERS} folders deep in the learner's "
            f"folder; not looked into{more}"
        )


def open_checked(path: Path, where: str, limits: ZipLimits) -> zipfile.ZipFile | str:
    """An open zip, or why it cannot be used, said as a problem.

    Its end records are read first (`open_zip`): a zip that says it holds
    too many entries, or too long a list of them, is never parsed. One
    whose count lies is caught once parsed, its cost bounded by the list's size.
    """
    try:
        opened = open_zip(path, limits)
    except ZipRefused as refusal:
        return f"{where}: {clean(str(refusal))}"
    except _ZIP_ERRORS as exc:
        return f"{where}: not a readable zip file: {reason(exc)}"
    if len(opened.infolist()) > limits.max_members:
        opened.close()
        return (
            f"{where}: {len(opened.infolist())} entries, more than the "
            f"{limits.max_members} a zip may hold"
        )
    return opened


def list_zip(archive: Archive, where: str) -> Iterator[Entry]:
    """The members of a zip; those that must not be read are listed with the reason."""
    for info in archive.zip.infolist():
        name = info.filename
        parts = tuple(part for part in re.split(r"[/\\]", name) if part not in ("", "."))
        shown = f"{where}/{clean(name)}"
        if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name) or ".." in parts:
            yield Entry((), shown, refused="a path outside the zip (absolute or with ..), not read")
        elif stat.S_ISLNK(info.external_attr >> 16):
            yield Entry(parts, shown, refused="a symbolic link, not read")
        elif info.flag_bits & 0x1:
            yield Entry(parts, shown, refused="encrypted; submit it without a password")
        elif parts and not any(ignored(part) for part in parts):
            yield Entry(parts, shown, is_dir=info.is_dir(), info=info, archive=archive)


def ignored(name: str) -> bool:
    """Hidden files and folders (.ipynb_checkpoints, .DS_Store) and macOS zip litter."""
    return name.startswith(".") or name == "__MACOSX"


def unpack(entry: Entry, dest: Path, cap: int, limits: ZipLimits) -> str:
    """Copy `entry` to `dest`, counting bytes as they come; the sha256 hex of the copy.

    Raises `Refused` (and leaves no `dest`) once the copy passes `cap`, the
    zip's total, or its ratio: at most `cap` + `CHUNK` bytes are ever read.
    """
    archive = entry.archive
    packed = max(entry.info.compress_size, 1) if entry.info else 1
    digest, size = hashlib.sha256(), 0
    try:
        with _open(entry) as source, dest.open("xb") as out:
            while chunk := source.read(CHUNK):
                size += len(chunk)
                if size > cap:
                    raise Refused(f"larger than {_mib(cap)} when unpacked")
                if archive is not None:
                    archive.budget.used += len(chunk)
                    if archive.budget.used > limits.max_total_bytes:
                        raise Refused(
                            f"{archive.budget.where} unpacks to more than "
                            f"{_mib(limits.max_total_bytes)} in all"
                        )
                    if size > MIB and size > limits.max_ratio * packed:
                        raise Refused(
                            f"unpacks to more than {limits.max_ratio} times "
                            "its packed size (a zip bomb?)"
                        )
                out.write(chunk)
                digest.update(chunk)
    except Refused:
        dest.unlink(missing_ok=True)
        raise
    except _ZIP_ERRORS as exc:
        dest.unlink(missing_ok=True)
        raise Refused(f"cannot be read: {reason(exc)}") from None
    return digest.hexdigest()


def _open(entry: Entry) -> IO[bytes]:
    if entry.archive is not None and entry.info is not None:
        return entry.archive.zip.open(entry.info)
    assert entry.path is not None
    # No link is followed, and a FIFO put where a file was cannot block the run.
    fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Refused("not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _mib(size: int) -> str:
    return f"{size / MIB:g} MiB"
