"""Spec values that quote gpulab's own recordings, checked against them.

A value in specs.toml that gpulab measured (our H200's copy rate, its L2
latency) says where the recording holds it, as ``FILE#PATH`` (or a list of them)::

    cupy_copy = { value = 4261, unit = "GB/s", recorded = "reference/h200.json#bw.copy" }
    l2 = { value = 287.5, unit = "cycles", recorded = "gpulab:probes/recorded/h200.json#\
    results[probe=pointer_chase_latency].readings[key=l2_latency_cycles].value" }

(one line in the file).
`FILE` is relative to the folder of specs.toml, or to the gpulab package with
``gpulab:``. `PATH` walks the JSON: ``name`` takes a key, ``[3]`` an item of a
list, ``[key=text]`` the item of a list of objects whose `key` is `text`, and
``[*]`` every item. A value agrees when the recording's numbers, each rounded
to the decimals the spec writes, are the spec's; a range's `min` and `max` are the
smallest and largest of the numbers its paths reach (a list of paths, or a
``[*]``). So a lesson's number, sourced by its spec, cannot drift from the
measurement it quotes: re-recording changes the check's answer, not silently
the lesson.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from gpulab.course.problems import Problem
from gpulab.course.specs_model import Specs, SpecValue

__all__ = ["RecordingError", "check_recorded", "numbers_at"]

_PACKAGE = "gpulab:"
_STEP = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]|(\.)")


class RecordingError(ValueError):
    """A recorded path that does not lead to numbers: what and where it stopped."""


def numbers_at(data: Any, path: str) -> list[float]:
    """The numbers `path` reaches in the JSON `data` (see the module's docstring)."""
    nodes = [data]
    walked = ""
    position = 0
    while position < len(path):
        step = _STEP.match(path, position)
        if step is None:
            raise RecordingError(f"cannot read the path at {path[position:]!r}")
        position = step.end()
        if step.group(3):
            continue
        key, selector = step.group(1), step.group(2)
        nodes = [_step(node, key, selector, walked or "the top") for node in nodes]
        nodes = [item for group in nodes for item in group]
        walked += f"[{selector}]" if key is None else f".{key}" if walked else key
        if not nodes:
            raise RecordingError(f"{walked} reaches nothing")
    numbers = []
    for node in nodes:
        if isinstance(node, bool) or not isinstance(node, int | float):
            raise RecordingError(f"{walked} is {node!r:.60}, not a number")
        numbers.append(float(node))
    return numbers


def _step(node: Any, key: str | None, selector: str | None, where: str) -> list[Any]:
    if key is not None:
        if not isinstance(node, dict) or key not in node:
            keys = ", ".join(list(node)[:12]) if isinstance(node, dict) else type(node).__name__
            raise RecordingError(f"{where} has no {key!r} (it has: {keys})")
        return [node[key]]
    assert selector is not None
    if not isinstance(node, list):
        raise RecordingError(f"{where} is not a list, so [{selector}] cannot apply")
    if selector == "*":
        return list(node)
    if selector.lstrip("-").isdigit():
        index = int(selector)
        if not -len(node) <= index < len(node):
            raise RecordingError(f"{where} has {len(node)} items, so no [{selector}]")
        return [node[index]]
    field, equals, wanted = selector.partition("=")
    if not equals:
        raise RecordingError(f"[{selector}] is neither an index, * nor key=value")
    found = [item for item in node if isinstance(item, dict) and str(item.get(field)) == wanted]
    if len(found) != 1:
        raise RecordingError(f"{where} has {len(found)} items with {field} = {wanted!r}, not one")
    return found


def _decimals(number: float) -> int:
    written = f"{number:g}"
    return len(written.split(".")[1]) if "." in written and "e" not in written else 0


def _agrees(written: float, measured: float) -> bool:
    return round(measured, _decimals(written)) == written


@cache
def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _file(reference: str, specs_folder: Path) -> Path:
    if reference.startswith(_PACKAGE):
        import gpulab

        return Path(gpulab.__file__).parent / reference.removeprefix(_PACKAGE)
    return specs_folder / reference


def _measured(value: SpecValue, specs_folder: Path) -> list[float]:
    numbers = []
    for reference in value.recorded:
        file_part, _, path = reference.partition("#")
        file = _file(file_part, specs_folder)
        try:
            data = _load(file)
        except OSError as exc:
            raise RecordingError(f"{file_part}: cannot read it ({exc.strerror})") from None
        except ValueError as exc:
            raise RecordingError(f"{file_part}: not JSON ({exc})") from None
        try:
            numbers += numbers_at(data, path)
        except RecordingError as exc:
            raise RecordingError(f"{file_part}#{path}: {exc}") from None
    return numbers


def check_recorded(specs: Specs) -> list[Problem]:
    """A problem for each spec value that disagrees with the recording it names."""
    problems = []
    for value in specs.values():
        if not value.recorded:
            continue

        def bad(message: str, hint: str = "", value: SpecValue = value) -> None:
            problems.append(Problem(specs.path, value.line, f"{value.ref}: {message}", hint))

        try:
            measured = _measured(value, specs.path.parent)
        except RecordingError as exc:
            bad(f"recorded: {exc}")
            continue
        shown = ", ".join(f"{n:g}" for n in measured)
        if value.value is not None:
            if not all(_agrees(value.value, n) for n in measured):
                bad(
                    f"{value.value:g} {value.unit} differs from the recording's {shown}",
                    "write the recorded number (rounded as you like), and check the lessons "
                    "that quote it",
                )
        elif value.min is not None and value.max is not None:
            low, high = min(measured), max(measured)
            if not (_agrees(value.min, low) and _agrees(value.max, high)):
                bad(
                    f"{value.min:g}–{value.max:g} {value.unit} differs from the recording's "
                    f"{low:g}–{high:g} ({shown})",
                    "write the recorded range, and check the lessons that quote it",
                )
        else:
            bad("recorded is for numbers, not text")
    return problems
