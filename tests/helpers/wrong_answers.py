"""Helpers for the wrong answers' corpora (tests/grading/test_wrong_*_answers.py)."""

from __future__ import annotations

from gpulab.course.manifest import ExerciseEntry
from gpulab.grading.build import solution_path
from gpulab.grading.checks.notebook import read_notebook


def solution_lines(exercise: ExerciseEntry) -> set[str]:
    """The reference answers' longer lines: no failure message may quote one."""
    lines: set[str] = set()
    for cell in read_notebook(solution_path(exercise)).cells:
        if cell.get("metadata", {}).get("gpulab", {}).get("role") != "answer":
            continue
        inside = False
        for line in cell.source.splitlines():
            marker = line.strip()
            if marker in ("### BEGIN SOLUTION", "### END SOLUTION"):
                inside = marker.startswith("### BEGIN")
            elif inside and len(marker.split("#")[0].strip()) >= 30:
                lines.add(marker.split("#")[0].strip())
    return lines
