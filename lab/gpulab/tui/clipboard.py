"""Copying text where the learner can paste it: tmux's paste buffer, beside OSC 52.

Textual copies with the terminal's clipboard sequence (OSC 52). tmux, the
usual way onto a GPU machine, drops that sequence by default (its
``set-clipboard external``), so inside tmux (``$TMUX`` set) the app also puts
the text into tmux's paste buffer with ``tmux load-buffer``: ``prefix ]``
pastes it, and ``-w`` asks tmux to hand it on to the outer terminal's
clipboard where its set-clipboard allows.
"""

from __future__ import annotations

import os
import subprocess

__all__ = ["TMUX_PASTE", "in_tmux", "to_tmux"]

TMUX_PASTE = "prefix ] pastes it"
"""How a tmux user pastes tmux's paste buffer (the prefix is ctrl+b unless changed)."""


def in_tmux() -> bool:
    """Whether the app runs inside tmux."""
    return bool(os.environ.get("TMUX"))


def to_tmux(text: str) -> str | None:
    """Put `text` into the paste buffer of the tmux the app runs in; None once it is there,
    else why not. Blocking (a short-lived tmux client): call it from a thread worker."""
    problem = ""
    for options in (["-w"], []):  # -w (tmux 3.2 and newer): the outer clipboard too
        try:
            done = subprocess.run(
                ["tmux", "load-buffer", *options, "-"],
                input=text,
                capture_output=True,
                text=True,
                timeout=5,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"tmux could not be run: {exc}"
        if done.returncode == 0:
            return None
        problem = done.stderr.strip() or f"tmux load-buffer ended with status {done.returncode}"
    return problem
