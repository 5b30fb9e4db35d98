"""Every ``GPULAB_*`` environment variable gpulab reads or sets, in one place.

Each is a `Variable`: its name, who sets it (you, or gpulab itself for the
processes it starts) and what it means. Code reads one with `Variable.get` and
names one with `Variable.name`, never by a string of its own; the README's
table "Environment variables" lists the same ones (``tests/test_environment.py``
keeps the three in step). Standard library only: the grading sandbox, which
imports nothing else, names its variables here too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "ALL",
    "BOOK_DIR",
    "CHECK_SEED",
    "COURSE_DIR",
    "IMAGE",
    "JOB",
    "SANDBOX",
    "SPAWNER",
    "STATE_DIR",
    "WORKSPACE",
    "Variable",
]


@dataclass(frozen=True)
class Variable:
    """One environment variable: its name, who sets it, what it means."""

    name: str
    set_by: str  # "you" (the learner, the instructor, a course author), or "gpulab"
    meaning: str

    def get(self, environ: Mapping[str, str] | None = None) -> str | None:
        """Its value in `environ` (default: this process's environment); None where it is
        unset or empty."""
        value = (os.environ if environ is None else environ).get(self.name, "")
        return value or None


COURSE_DIR = Variable(
    "GPULAB_COURSE_DIR",
    "you, or `--course`",
    "the course's `lessons/` folder to use instead of the one gpulab ships",
)
BOOK_DIR = Variable(
    "GPULAB_BOOK_DIR",
    "you, or `--course`",
    "the book's folder (its `templates/` and `assets/`) to use instead of the shipped one",
)
STATE_DIR = Variable(
    "GPULAB_STATE_DIR",
    "you",
    "where gpulab keeps your progress, saved measurements, workspace and app state "
    "(default: the platform's user state folder)",
)
WORKSPACE = Variable(
    "GPULAB_WORKSPACE",
    "you",
    "the workspace to use, instead of the one `gpulab init` last made or chose",
)
CHECK_SEED = Variable(
    "GPULAB_CHECK_SEED",
    "you",
    "a number: the hidden checks draw their inputs from it, so that a run's draws can be "
    "replayed (each report names its seed)",
)
IMAGE = Variable(
    "GPULAB_IMAGE",
    "you",
    "the container image the `container_image` probe runs with the GPUs passed in",
)
SANDBOX = Variable(
    "GPULAB_SANDBOX",
    "gpulab",
    "a grading run's sandbox policy (JSON), handed to the checks processes it starts",
)
JOB = Variable(
    "GPULAB_JOB",
    "gpulab",
    "a grading run's tag, carried by every process that runs learner code, so that a run "
    "finds and ends what its jobs left behind",
)
SPAWNER = Variable(
    "GPULAB_SPAWNER",
    "gpulab",
    "the pid a learner's worker must end with (outside the sandbox)",
)

ALL = (COURSE_DIR, BOOK_DIR, STATE_DIR, WORKSPACE, CHECK_SEED, IMAGE, SANDBOX, JOB, SPAWNER)
"""Every variable, those you set first."""
