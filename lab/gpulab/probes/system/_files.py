"""Reading a machine's files for the system probe, and gathering what its sections find.

`Files` finds each file under the probe's root (a fake tree in tests, "/"
otherwise) and names it as the machine names it; `why` says in words why a
file could not be read; `Collector` gathers the readings, tables and
problems, and runs each section so that a bug in one becomes an error
reading. Used by every section of the probe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpulab.probes.model import Reading, Table, Value

__all__: list[str] = []


# ---- reading files under a root -------------------------------------------------------------


def why(exc: BaseException) -> str:
    """Why a file could not be read, in words: "missing", "permission denied", ..."""
    if isinstance(exc, FileNotFoundError):
        return "missing"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


@dataclass(frozen=True)
class Files:
    """Files of the machine, found under `root` and named as the machine names them."""

    root: Path

    def path(self, name: str) -> Path:
        return self.root / name.lstrip("/")

    def show(self, path: Path) -> str:
        try:
            inside = path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)
        return "/" if inside == "." else "/" + inside

    def read(self, path: Path | str) -> str:
        """The file's text, stripped; OSError when it cannot be read."""
        path = self.path(path) if isinstance(path, str) else path
        return path.read_text(encoding="utf-8", errors="replace").strip()


class Collector:
    """The readings, tables and problems a probe gathers, section by section."""

    def __init__(self) -> None:
        self.readings: list[Reading] = []
        self.tables: list[Table] = []
        self.problems: list[str] = []

    def add(self, reading: Reading) -> Reading:
        self.readings.append(reading)
        return reading

    def value(self, key: str) -> Value:
        found = next((r for r in self.readings if r.key == key and r.status == "ok"), None)
        return found.value if found else None

    def guarded(self, section: str, run: Callable[[Files, Collector], None], files: Files) -> None:
        """Run one section; a bug in it becomes an error reading, not a lost result."""
        try:
            run(files, self)
        except Exception as exc:  # a probe must turn any failure into a result
            self.add(
                Reading.failed(
                    f"{section}_failed", f"{section} section", f"{type(exc).__name__}: {exc}"
                )
            )
