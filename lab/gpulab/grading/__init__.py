"""Exercises and their checks: notebooks, the worker that runs learner code, the runner.

`check(name)` is the one-line call at the end of an exercise notebook: it
runs the exercise's checks on the saved notebook and shows the result.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check"]


def check(name: str, notebook: str | None = None) -> Any:
    """Run the checks of exercise `name` on the saved notebook and show the result."""
    from gpulab.grading.learn.panel import check as run

    return run(name, notebook)
