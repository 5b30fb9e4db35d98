"""The learner's progress as the app holds it: loaded once, saved promptly.

`Keeper` wraps a `ProgressStore` and its `Progress`. Screens change the
progress and call `changed()`; the app saves soon after (debounced), when a
screen is left, and on exit, so a killed app loses at most a second of reading.

``gpulab check`` and the check in an exercise notebook write the same file
while the app runs: `sync` takes in the exercise results they wrote, and every
save does so first, so the app never overwrites a newer result with an older one.
"""

from __future__ import annotations

from gpulab.course import Progress, ProgressStore

__all__ = ["Keeper"]


class Keeper:
    """The progress, the store it came from, and whether it needs saving."""

    def __init__(self, store: ProgressStore) -> None:
        self.store = store
        self.progress: Progress = store.load()
        self.dirty = False

    @property
    def warning(self) -> str | None:
        """Why the saved progress could not be read, if it could not."""
        return self.store.warning

    def changed(self) -> None:
        """Mark the progress as needing a save."""
        self.dirty = True

    def sync(self) -> bool:
        """Take in newer exercise results saved by others; True when any was taken."""
        saved = self.store.peek()
        return saved is not None and bool(self.progress.adopt_exercises(saved))

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
