"""The exception hierarchy of gpulab.

Every error a user can meet derives from one root, so the CLI and the TUI can
catch it in one place and show its message instead of a traceback::

    GpulabError
    └── CourseError            bad course content: manifest, lesson, claims
        (carries one or more Problem records, each with file, line and a fix)
"""

from __future__ import annotations

__all__ = ["GpulabError"]


class GpulabError(Exception):
    """Root of every error gpulab raises on purpose.

    The message says what was wrong, where, and what to do about it.
    """
