"""Reading course files: UTF-8 text with a clear error that names the line."""

from __future__ import annotations

from pathlib import Path

from gpulab.course.problems import CourseError

__all__ = ["read_text"]


def read_text(path: Path) -> str:
    """Return the file's text, or raise `CourseError` naming the bad line.

    Files must be UTF-8; a byte that does not decode is reported with its
    line and column so the author can find it.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CourseError.at(path, None, "file not found", "create it or fix the name") from None
    except OSError as exc:
        raise CourseError.at(path, None, f"cannot read the file: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise CourseError.at(
            path,
            line,
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at column {column})",
            "save the file as UTF-8",
        ) from None
    return text.removeprefix("\ufeff").replace("\r\n", "\n")
