"""The exception tree drawn in gpulab/errors.py is the one the code defines."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path

import gpulab
from gpulab.errors import GpulabError

# Modules that need an optional extra or a GPU library to import; their errors are found by
# reading the source instead.
_OPTIONAL = (
    "gpulab.grading.classrun.cluster.client",
    "gpulab.grading.classrun.cluster.coordinator",
    "gpulab.grading.classrun.cluster.node",
)


def _defined() -> dict[str, str]:
    """Every subclass of GpulabError in gpulab: name -> its parent's name."""
    for module in pkgutil.walk_packages(gpulab.__path__, "gpulab."):
        if module.name.startswith(_OPTIONAL) or module.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(module.name)
        except ImportError as exc:  # a module for a GPU machine (CuPy)
            if "cupy" not in str(exc):
                raise
    found: dict[str, str] = {}
    todo = [GpulabError]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("gpulab."):
                found[sub.__name__] = cls.__name__
                todo.append(sub)
    for name in _OPTIONAL:  # class X(GpulabError) in their source
        source = importlib.util.find_spec(name)
        assert source is not None and source.origin is not None
        text = Path(source.origin).read_text(encoding="utf-8")
        for child, parent in re.findall(r"^class (\w+)\((\w+)\):", text, re.M):
            if parent == "GpulabError":
                found[child] = parent
    return found


def _drawn() -> dict[str, str]:
    """The tree in errors.py's docstring: name -> parent's name."""
    doc = gpulab.errors.__doc__ or ""
    drawn: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        found = re.match(r"^\s{4}([│ ]*)(?:[├└]── )?([A-Z]\w+)\b", line)
        if not found or not found.group(2).endswith(
            ("Error", "Unavailable", "Mismatch", "Probe", "Exercise", "Busy")
        ):
            continue
        depth = len(found.group(1)) // 4 + (1 if "──" in line else 0)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            drawn[found.group(2)] = stack[-1][1]
        stack.append((depth, found.group(2)))
    return drawn


def test_the_drawn_tree_is_the_defined_one() -> None:
    defined = _defined()
    assert len(defined) >= 20
    assert _drawn() == defined
