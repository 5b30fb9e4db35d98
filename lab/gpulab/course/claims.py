"""Claims: statements in lessons that a probe can check on the learner's machine.

Claims live in `lessons/claims/<lesson>.toml`, one file per lesson that makes
them; ids are global, so any lesson may cite any claim. Each file holds one
table per claim, keyed by its id::

    [h200_hbm_bandwidth]
    statement = "An H200 SXM's HBM3e delivers up to 4.8 TB/s"
    value = 4.8                # or min = ..., max = ... for a range
    unit = "TB/s"
    device = "H200 SXM"
    source = "https://www.nvidia.com/en-us/data-center/h200/"
    probe = "hbm_bandwidth"
    tolerance = 0.15           # relative
    convention = "bytes read + bytes written"   # optional
    reading = "memcpy_bandwidth"               # the probe reading that measures it

A lesson ties a node to a claim with ``<!-- claim: h200_hbm_bandwidth -->``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.course.positions import toml_error, toml_lines
from gpulab.course.problems import CourseError, Problem
from gpulab.course.source import read_text

__all__ = ["CLAIM_ID", "Claim", "load_claims"]

CLAIM_ID = re.compile(r"^[a-z][a-z0-9_]*$")

_REQUIRED = ("statement", "unit", "device", "source", "probe", "tolerance")
_KNOWN = {*_REQUIRED, "value", "min", "max", "convention", "reading"}


@dataclass(frozen=True)
class Claim:
    """What a lesson asserts, where the figure comes from, and what measures it."""

    id: str
    statement: str
    unit: str
    device: str
    source: str
    probe: str
    tolerance: float
    value: float | None = None
    min: float | None = None
    max: float | None = None
    convention: str = ""
    reading: str = ""  # the key of the probe's reading that measures it
    line: int | None = None
    path: Path | None = None

    @property
    def expected(self) -> str:
        """The expected value or range as a person would write it."""
        if self.value is not None:
            return f"{self.value:g} {self.unit}"
        return f"{self.min:g}–{self.max:g} {self.unit}"


def load_claims(path: Path) -> dict[str, Claim]:
    """Load and check the claims in a folder of `.toml` files, or in one file.

    A missing path means no claims. Raises `CourseError` listing every
    malformed entry and every id defined twice.
    """
    if path.is_dir():
        claims: dict[str, Claim] = {}
        problems: list[Problem] = []
        for file in sorted(path.glob("*.toml")):
            try:
                found = _load_file(file)
            except CourseError as exc:
                problems.extend(exc.problems)
                continue
            for claim_id, claim in found.items():
                if claim_id in claims:
                    first = claims[claim_id]
                    problems.append(
                        Problem(
                            file,
                            claim.line,
                            f"claim {claim_id!r} is defined twice",
                            f"it is already defined in {first.path.name if first.path else '?'}"
                            f"{f':{first.line}' if first.line else ''}; keep one",
                        )
                    )
                else:
                    claims[claim_id] = claim
        if problems:
            raise CourseError(problems)
        return claims
    if not path.exists():
        return {}
    return _load_file(path)


def _load_file(path: Path) -> dict[str, Claim]:
    text = read_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_error(path, exc) from None
    claims: dict[str, Claim] = {}
    problems: list[Problem] = []
    lines = toml_lines(text)
    for claim_id, entry in data.items():
        line = lines.get((claim_id,))
        claim = _claim(path, line, claim_id, entry, problems)
        if claim is not None:
            claims[claim_id] = claim
    if problems:
        raise CourseError(problems)
    return claims


def _claim(
    path: Path, line: int | None, claim_id: str, entry: Any, problems: list[Problem]
) -> Claim | None:
    before = len(problems)

    def bad(message: str, hint: str = "") -> None:
        problems.append(Problem(path, line, f"claim {claim_id!r}: {message}", hint))

    if not CLAIM_ID.match(claim_id):
        bad("ids are lowercase letters, digits and underscores, starting with a letter")
        return None
    if not isinstance(entry, Mapping):
        bad("must be a table", f"write it as [{claim_id}] followed by its fields")
        return None
    missing = [k for k in _REQUIRED if k not in entry]
    unknown = sorted(set(entry) - _KNOWN)
    if missing:
        bad(f"missing {', '.join(missing)}", "see the format at the top of gpulab/course/claims.py")
    if unknown:
        bad(f"unknown field {', '.join(unknown)}", f"known fields: {', '.join(sorted(_KNOWN))}")
    has_value = "value" in entry
    has_range = "min" in entry and "max" in entry
    if has_value == has_range:
        bad("give either value or both min and max")
    numbers = {k: entry[k] for k in ("value", "min", "max", "tolerance") if k in entry}
    for key, number in numbers.items():
        if isinstance(number, bool) or not isinstance(number, int | float):
            bad(f"{key} must be a number, not {number!r}")
    texts = {
        k: entry[k]
        for k in (*_REQUIRED, "convention", "reading")
        if k in entry and k != "tolerance"
    }
    for key, value in texts.items():
        if not isinstance(value, str) or not value.strip():
            bad(f"{key} must be non-empty text")
    source = entry.get("source")
    if isinstance(source, str) and not source.startswith(("https://", "http://")):
        bad("source must be the URL of the datasheet, paper or measurement")
    if len(problems) > before:
        return None

    def num(key: str) -> float | None:
        value = entry.get(key)
        return None if value is None else float(value)

    return Claim(
        id=claim_id,
        statement=entry["statement"],
        unit=entry["unit"],
        device=entry["device"],
        source=entry["source"],
        probe=entry["probe"],
        tolerance=float(entry["tolerance"]),
        value=num("value"),
        min=num("min"),
        max=num("max"),
        convention=entry.get("convention", ""),
        reading=entry.get("reading", ""),
        line=line,
        path=path,
    )
