"""Output into a pipe whose reader went away (``gpulab show x | head``).

Python ignores SIGPIPE, so a write to such a pipe raises `BrokenPipeError`; the
command line catches it, and `drop_stdout` then sends the rest of stdout to
/dev/null, so what is still buffered does not raise again at exit.
"""

from __future__ import annotations

import os
import sys

__all__ = ["drop_stdout"]


def drop_stdout() -> None:
    """Send the rest of stdout to /dev/null: its reader went away (`| head`), and what
    is still buffered must not raise again when Python flushes it at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
