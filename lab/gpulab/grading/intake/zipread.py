"""Opening a hostile zip: the central directory really there is counted before `zipfile` reads it.

`zipfile.ZipFile` reads the whole central directory when it is built, one
`ZipInfo` per entry, before anyone can count them: a 4.6 MB upload holding a
zip whose directory lists ten million copies of one empty member cost the
grader 3.9 GB and a minute. Nor may the end records be believed: 240 nested
zips whose end records said "1 entry" over 2 MiB of directory (44 610 entries
each) cost 40 s of CPU on every run. `open_zip` first reads the
end-of-central-directory record, and the ZIP64 end record that its locator
points to, where `zipfile` finds them (the last record signature in the file's
final 64 KiB), and refuses a zip whose claimed entry count or directory size is
over `ZipLimits`; then it counts the central-directory headers really present
in the bytes `zipfile` would read as the directory, and refuses a zip that
holds more than it may, all before `ZipFile` exists. Where the records
disagree the larger number counts, and the headers found count too, so no
reading of them lets more through. Nothing here makes one object per entry.
"""

from __future__ import annotations

import os
import stat
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from gpulab.grading.checks.notebook import MAX_BYTES

__all__ = [
    "MIB",
    "Directory",
    "ZipLimits",
    "ZipRefused",
    "count_headers",
    "open_zip",
    "read_directory",
]

MIB = 2**20
_END = struct.Struct("<4s4H2LH")  # end of central directory record
_END64 = struct.Struct("<4sQ2H2L4Q")  # ZIP64 end of central directory record
_LOCATOR = struct.Struct("<4sLQL")  # ZIP64 end of central directory locator
_END_SIGNATURE, _END64_SIGNATURE, _LOCATOR_SIGNATURE = b"PK\5\6", b"PK\6\6", b"PK\6\7"
_HEADER_SIGNATURE = b"PK\1\2"  # a central directory header
_MAX_COMMENT = 0xFFFF
_NO_COUNT, _NO_SIZE = 0xFFFF, 0xFFFFFFFF  # "see the ZIP64 record"


@dataclass(frozen=True)
class ZipLimits:
    """How much of a zip the intake reads; a member or zip over a limit is refused with a problem.

    Sizes are counted on the bytes really unpacked, never taken from a zip's
    headers. `max_total_bytes` covers one outermost zip with every zip inside
    it; `max_ratio` applies to members that unpack to more than 1 MiB;
    `max_depth` is how many zips deep a notebook may lie below SUBMISSIONS
    (a learner's zip is 1; SUBMISSIONS itself, even a bulk zip, is 0);
    `max_zips` is how many zips are opened for one learner, at any depth,
    their own included. `max_members` and `max_directory_bytes` are checked
    on the zip's end records and on the directory headers really there,
    before its central directory is parsed: 2000 entries take about 300 KiB
    of directory, 2 MiB allows names of 1000 bytes each.
    """

    max_members: int = 2000
    max_member_bytes: int = MAX_BYTES
    max_total_bytes: int = 512 * MIB
    max_ratio: int = 200
    max_depth: int = 2
    max_directory_bytes: int = 2 * MIB
    max_zips: int = 16


class ZipRefused(Exception):
    """A zip that will not be opened, and why (without its path: the caller adds where)."""


@dataclass(frozen=True)
class Directory:
    """A zip's central directory as its end records describe it (the larger where they differ),
    and where those records lie: the directory `zipfile` reads ends where one of them starts."""

    entries: int
    size: int  # bytes
    ends: tuple[int, ...] = ()  # offsets of the end record and of the ZIP64 end records found


def open_zip(path: Path, limits: ZipLimits) -> zipfile.ZipFile:
    """`path` opened as a zip, once its end records and the directory headers really there are
    within `limits`; else `ZipRefused`.

    The file is opened once, without following a link or waiting on a FIFO,
    and that open file is what `zipfile` reads; closing the zip closes it.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ZipRefused(f"cannot be read: {exc.strerror or exc}") from None
    file = os.fdopen(fd, "rb")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ZipRefused("not a regular file")
        directory = read_directory(file)
        if directory is None:
            raise ZipRefused("not a readable zip file: it has no end of central directory")
        _check_count(directory.entries, limits)
        if directory.size > limits.max_directory_bytes:
            raise ZipRefused(
                f"its central directory takes {directory.size / MIB:.1f} MiB, "
                f"more than the {limits.max_directory_bytes / MIB:g} MiB a zip's "
                "list of members may take"
            )
        _check_count(count_headers(file, directory), limits)
        return _OwnZip(file)
    except BaseException:
        file.close()
        raise


def _check_count(entries: int, limits: ZipLimits) -> None:
    if entries > limits.max_members:
        raise ZipRefused(f"{entries} entries, more than the {limits.max_members} a zip may hold")


def read_directory(file: IO[bytes]) -> Directory | None:
    """The entry count and size of a zip's central directory from its end records, or None.

    None: no end record where `zipfile` looks, so not a zip. The entry
    count is the larger of the total and this-disk counts, in the plain and
    the ZIP64 record (whose fields read 0xFFFF... in the plain one when the
    ZIP64 one holds the number); the size likewise.
    """
    size = file.seek(0, os.SEEK_END)
    start = max(size - _END.size - _MAX_COMMENT, 0)
    file.seek(start)
    tail = file.read()
    if tail[-_END.size : -_END.size + 4] == _END_SIGNATURE and tail[-2:] == b"\0\0":
        at = len(tail) - _END.size  # no comment: zipfile's first guess
    else:
        at = tail.rfind(_END_SIGNATURE)
        if at < 0 or len(tail) - at < _END.size:
            return None
    _, _, _, here, total, length, _, _ = _END.unpack_from(tail, at)
    end = start + at
    found = _zip64_records(file, end)
    counts = [n for n in (here, total) if n != _NO_COUNT or not found]
    sizes = [length] if length != _NO_SIZE or not found else []
    for _, record in found:
        counts += record[6:8]
        sizes.append(record[8])
    return Directory(max(counts, default=0), max(sizes, default=0), (end, *(at for at, _ in found)))


def count_headers(file: IO[bytes], directory: Directory) -> int:
    """How many central directory headers `zipfile` could find in `file`, whatever the end
    records claim: an upper bound on the `ZipInfo`s it would make.

    `zipfile` reads the directory as the `size` bytes just before an end
    record (the plain one, or a ZIP64 one), and every entry it makes from
    them starts with the header signature at an offset of its own. So the
    signatures in those bytes, before each end record found, bound the
    entries, counted at C speed without parsing one. Only a zip whose own
    names, extra fields or comments spell the signature counts more than
    its entries, and that zip is the learner's doing.
    """
    merged: list[list[int]] = []
    for start, end in sorted((max(end - directory.size, 0), end) for end in directory.ends):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    count = 0
    for start, end in merged:
        file.seek(start)
        count += file.read(end - start).count(_HEADER_SIGNATURE)
    return count


def _zip64_records(file: IO[bytes], end: int) -> list[tuple[int, tuple[int, ...]]]:
    """The ZIP64 end records for the end record at offset `end`, with their offsets: where
    zipfile 3.11 looks (just before the locator) and where the locator says (newer
    versions), when they are there."""
    if end < _LOCATOR.size:
        return []
    file.seek(end - _LOCATOR.size)
    signature, _, offset, _ = _LOCATOR.unpack(file.read(_LOCATOR.size))
    if signature != _LOCATOR_SIGNATURE:
        return []
    found = []
    for at in sorted({end - _LOCATOR.size - _END64.size, offset}):
        if 0 <= at <= end - _END64.size:
            file.seek(at)
            record = _END64.unpack(file.read(_END64.size))
            if record[0] == _END64_SIGNATURE:
                found.append((at, record))
    return found


class _OwnZip(zipfile.ZipFile):
    """A ZipFile over a file it was handed, which it closes with itself."""

    def __init__(self, file: IO[bytes]) -> None:
        self._own = file
        super().__init__(file)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._own.close()
