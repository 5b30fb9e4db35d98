"""What gpulab itself needs for a learner's work, as items of `gpulab doctor`'s checklist.

The probes' checklist asks about the machine (driver, CUDA, cgroups, NUMA);
these ask about the course tools: pytest, which runs an exercise's checks;
JupyterLab, where the notebooks are written; the learner's workspace; and
bubblewrap, without which `gpulab grade` refuses to grade (tried for real: where it is
installed but cannot make a sandbox here, the item says what it could not do and the fix).
"""

from __future__ import annotations

import importlib.util
import shutil
import sys

from gpulab.probes.doctor import Check

__all__ = ["learner_checks"]


def learner_checks() -> list[Check]:
    """The course tools' items of the checklist; never raises."""
    return [
        _module("pytest", "exercise checks", "pytest runs an exercise's checks"),
        _module("jupyterlab", "JupyterLab", "the exercises are notebooks"),
        _workspace(),
        _bubblewrap(),
    ]


def _module(name: str, what: str, why: str) -> Check:
    if importlib.util.find_spec(name) is not None:
        return Check(what, "pass", f"{name} is installed beside gpulab")
    return Check(
        what,
        "fail",
        f"{name} is not installed beside gpulab ({why})",
        f"{sys.executable} -m pip install {name}, or reinstall gpulab (it depends on it)",
    )


def _workspace() -> Check:
    from gpulab.course.workspace import WorkspaceError, current_workspace

    try:
        workspace = current_workspace()
    except WorkspaceError as exc:
        return Check(
            "your workspace",
            "fail",
            str(exc).splitlines()[0],
            "gpulab init DIR makes a new one (or names an existing one again)",
        )
    if workspace is None:
        return Check(
            "your workspace",
            "warn",
            "none yet: the exercises have nowhere to go",
            "gpulab init (copies the exercises into ./gpulab-exercises)",
        )
    return Check("your workspace", "pass", str(workspace.root))


def _bubblewrap() -> Check:
    found = shutil.which("bwrap")
    if found is not None:
        from gpulab.grading.sandbox import available

        problem = available().bubblewrap_problem  # a sandbox tried for real, once
        if not problem:
            return Check("grading sandbox", "pass", f"bubblewrap at {found} (for gpulab grade)")
        what, _, fix = problem.partition(" To fix it: ")
        return Check(
            "grading sandbox",
            "warn",
            f"bubblewrap at {found}, but gpulab grade cannot use it: {what}",
            fix or "see the line above",
        )
    return Check(
        "grading sandbox",
        "skip",
        "bubblewrap is not installed: only an instructor's gpulab grade needs it",
        "apt install bubblewrap (where you grade)",
    )
