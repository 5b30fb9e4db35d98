"""The learner's progress as the app holds it: loaded once, saved promptly.

`Keeper` wraps a `ProgressStore` and its `Progress`. The app changes the
progress (screens ask it to, by message) and calls `changed()`; it saves soon
after (debounced), when the screen changes, and on exit, so a killed app loses
at most a second of reading.

``gpulab check`` and the check in an exercise notebook write the same file
while the app runs: `sync` takes in the exercise results they wrote, and every
save does so first, so the app never overwrites a newer result with an older one;
`file_changed` tells cheaply (one ``stat``) whether the file changed since the last look.

The app's own look (how wide the lesson's tree is) is not progress: it is kept
in ``app.json`` beside the progress file, read once and written when it changes.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from gpulab.course import Progress, ProgressStore
from gpulab.files import atomic_write

__all__ = ["TREE_WIDTH", "Keeper"]

TREE_WIDTH = (45, 20, 80)
"""The lesson tree's width in percent of the screen: default, narrowest, widest."""


class Keeper:
    """The progress, the store it came from, whether it needs saving, and the app's look."""

    def __init__(self, store: ProgressStore) -> None:
        self.store = store
        self.first_run = not store.path.exists()
        """No progress was saved before: the learner has never used gpulab here."""
        self.progress: Progress = store.load()
        self.dirty = False
        self._seen: tuple[int, int] | None = None  # the file's (mtime in ns, size) last looked at
        self._look_file = store.path.with_name("app.json")
        self._look = _read_json(self._look_file)

    @property
    def warning(self) -> str | None:
        """Why the saved progress could not be read, if it could not."""
        return self.store.warning

    @property
    def tree_width(self) -> int:
        """The lesson tree's width in percent of the screen (see `TREE_WIDTH`)."""
        default, low, high = TREE_WIDTH
        value = self._look.get("tree_width", default)
        if not isinstance(value, int) or isinstance(value, bool):
            return default
        return min(max(value, low), high)

    @tree_width.setter
    def tree_width(self, percent: int) -> None:
        _, low, high = TREE_WIDTH
        self._look["tree_width"] = min(max(percent, low), high)
        with contextlib.suppress(OSError):  # a comfort: the session keeps it regardless
            _write_json(self._look_file, self._look)

    def changed(self) -> None:
        """Mark the progress as needing a save."""
        self.dirty = True

    def file_changed(self) -> bool:
        """Whether the progress file changed since the last call (or this is the first);
        then `sync` may have something to take in."""
        try:
            info = self.store.path.stat()
        except OSError:
            return False
        stamp = (info.st_mtime_ns, info.st_size)
        if stamp == self._seen:
            return False
        self._seen = stamp
        return True

    def sync(self) -> bool:
        """Take in newer exercise results and hints saved by others (``gpulab check``,
        ``gpulab hint``, the notebook's check); True when any was taken."""
        saved = self.store.peek()
        if saved is None:
            return False
        hints = self.progress.adopt_hints(saved)
        return bool(self.progress.adopt_exercises(saved)) or hints

    def save(self) -> str | None:
        """Save if anything changed; returns an error message instead of raising."""
        if not self.dirty:
            return None
        self.sync()
        try:
            self.store.save(self.progress)
        except OSError as exc:
            return f"could not save progress to {self.store.path}: {exc.strerror or exc}"
        self.dirty = False
        return None


def _read_json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict[str, object]) -> None:
    atomic_write(path, json.dumps(data, indent=1, sort_keys=True))
