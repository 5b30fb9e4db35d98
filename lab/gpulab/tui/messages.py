"""Messages the screens send up to the app."""

from __future__ import annotations

from textual.message import Message

__all__ = ["ProgressChanged"]


class ProgressChanged(Message):
    """The learner's progress changed; `now` asks for an immediate save."""

    def __init__(self, *, now: bool = False) -> None:
        super().__init__()
        self.now = now
