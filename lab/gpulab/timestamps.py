"""The one way gpulab writes the time: UTC, ISO 8601, to the second."""

from __future__ import annotations

import datetime as dt

__all__ = ["utc_now"]


def utc_now() -> str:
    """Now, as ``2026-12-05T01:20:00+00:00``: what progress, grades, runs and probe
    results store."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
