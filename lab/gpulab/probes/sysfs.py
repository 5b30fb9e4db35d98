"""Reading one sysfs file, as the topology probe does and as the NVML recorder records it."""

from __future__ import annotations

from pathlib import Path

__all__ = ["sysfs_text"]


def sysfs_text(path: str) -> str | None:
    """A sysfs file's text, stripped, or None when it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
