"""The nbgrader half of `bench/grading.py` grades what gpulab grades.

`bench/nbgrader/` is a port of four CPU exercises into nbgrader's format; when
an exercise gains a check or its solution changes, the port must follow, or the
benchmark refuses to run (it did, once, a week after the checks changed). Here
the same comparison runs with the tests, so the drift is seen the day it starts.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_nbgrader_port_is_in_step_with_the_exercises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = importlib.util.spec_from_file_location(
        "bench_nbgrader_assignment", ROOT / "bench" / "nbgrader" / "assignment.py"
    )
    assert spec is not None and spec.loader is not None
    assignment = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, assignment)  # its dataclasses look it up
    spec.loader.exec_module(assignment)
    assert assignment.problems() == []
