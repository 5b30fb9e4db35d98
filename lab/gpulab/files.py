"""Writing a file so that a reader sees the old one or the new one, never half of either.

Every file gpulab keeps (progress, workspace notebooks, saved measurements, the
app's state, feedback pages) is written through `atomic_write`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write"]


def atomic_write(path: Path, data: str | bytes, *, mode: int | None = None) -> None:
    """Write `data` (text as UTF-8, lines as given) to `path` through a temporary file in
    the same folder, renamed over it once whole; the folder is made where it is missing.
    `mode`: the file's permissions (default: readable by its owner only, as
    `tempfile.mkstemp` makes it). Raises OSError; `path` is then as it was."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
