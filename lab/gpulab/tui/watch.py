"""Watching a notebook for saves, as ``rustlings watch`` watches its exercises.

`NotebookWatch.poll` is called about once a second (the exercise screen's
timer). It compares the file's modification time and size with what it saw
last; a change is reported once the file has stopped changing for one poll,
so a save that writes in several steps starts one check, not several.
UI-free and cheap: one ``stat`` per poll.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["NotebookWatch"]

Stamp = tuple[int, int] | None
"""A file's (modification time in ns, size), or None when it is missing."""


class NotebookWatch:
    """Says when a notebook was saved (changed, then left alone for a poll)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen: Stamp = self._stamp()
        self._moving: Stamp = self._seen
        self._changing = False

    def _stamp(self) -> Stamp:
        try:
            info = self.path.stat()
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size

    def poll(self) -> bool:
        """True once after each settled change of the file (never for a missing file)."""
        now = self._stamp()
        if now != self._moving:
            self._moving, self._changing = now, now != self._seen
            return False
        if not self._changing:
            return False
        self._changing = False
        self._seen = now
        return now is not None
