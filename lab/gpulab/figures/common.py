"""Small helpers the figure declarations share: numbers from rows, tick marks, labels."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpulab.figures.model import Missing

__all__ = ["binary_size", "number", "pairs", "percent", "power_ticks"]


def number(value: Any) -> float | None:
    """A table cell as a float, or None when it holds no number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def pairs(
    rows: Iterable[Mapping[str, Any]], x: str, y: str, what: str
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The (x, y) numbers of every row that has both, sorted by x; `Missing` if none."""
    found = sorted(
        (a, b)
        for a, b in ((number(r.get(x)), number(r.get(y))) for r in rows)
        if a is not None and b is not None
    )
    if not found:
        raise Missing(f"{what}: no row has numbers for both {x!r} and {y!r}")
    return tuple(a for a, _ in found), tuple(b for _, b in found)


def binary_size(n: float) -> str:
    """A size in bytes as people write it: 16 KiB, 60 MiB, 1 GiB."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n:g} B"


def power_ticks(base: int, low: int, high: int, label: Any = None) -> tuple[tuple[float, str], ...]:
    """Ticks at base**low … base**high, labelled by `label(value)` (default: the number)."""
    name = label or (lambda v: f"{v:g}")
    return tuple((float(base**e), str(name(float(base**e)))) for e in range(low, high + 1))


def percent(fraction: float) -> str:
    """0.5207 -> "52.1 %", 0.05317 -> "5.32 %"."""
    return f"{100 * fraction:.3g} %"
