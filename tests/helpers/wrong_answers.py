"""Helpers for the wrong answers' corpora (tests/grading/test_wrong_*_answers.py)."""

from __future__ import annotations

from pathlib import Path

from gpulab.course.manifest import ExerciseEntry
from gpulab.environment import CHECK_SEED
from gpulab.grading.build import solution_path
from gpulab.grading.checks.notebook import read_notebook
from gpulab.grading.checks.runner import CheckReport, run_checks


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


CORPUS_SEED = "20261207"
"""The hidden checks' draws the corpora are graded with, unless GPULAB_CHECK_SEED names others.

A wrong answer's mistake can hide on some draws, or show in another check first, so a
corpus graded with fresh draws in every run fails now and then where nothing changed.
CI grades every corpus with these draws; to look for draws where a message no longer
names its mistake, run the corpora again with other seeds:
``for s in $(seq 1 20); do GPULAB_CHECK_SEED=$s pytest tests/grading -k says_why; done``.
"""


def corpus_env() -> dict[str, str]:
    """The checks process's environment for a corpus: the draws of `CORPUS_SEED`, or of
    ``GPULAB_CHECK_SEED`` where it is set."""
    return {CHECK_SEED.name: CHECK_SEED.get() or CORPUS_SEED}


def run_corpus(exercise: ExerciseEntry, notebook: Path) -> CheckReport:
    """`notebook` judged as a grading run judges it (visible and hidden checks), with the
    corpora's draws (`corpus_env`)."""
    return run_checks(exercise, notebook, hidden=True, env=corpus_env())
