"""Exercises, their checks, and the grading of a class: one sub-package per part.

Each package imports only those below it (``pyproject.toml``'s import contracts
hold them to it; each one's rule is in its ``__init__``):

- `classrun`: ``gpulab grade``: a class's notebooks planned, run in parallel,
  kept in the gradebook, fed back and reported; `classrun.cluster`: the same
  jobs on Dask and Slurm (``gpulab grade --cluster``, ``gpulab worker``);
- `learn`: the learner's side: the result of ``gpulab check`` and of the
  notebook's ``check(...)``, kept in their progress; JupyterLab; doctor items;
- `build`: ``gpulab dev build`` and ``gpulab dev check``: exercises generated
  from their solutions, and proved;
- `gradebook`: what a run decides (`gradebook.verdict`) and the SQLite file
  that keeps it;
- `intake`: a class's submissions, folders and zips, taken in as private copies;
- `checks`: one exercise's checks on one notebook: the runner, the pytest
  plugin, the learner's worker, kernel answers;
- `sandbox`: bubblewrap, rlimits and cgroups around learner code, and a job's
  time as its limits count it (the standard library only).

`pages` is the Jinja2 environment of the HTML (``templates/``) a run and a
notebook show; `machines` is `checks.machines` under its old path, kept for the
explore cells of learners' notebooks started before the split. `check(name)` is
the one-line call at the end of an exercise notebook: it runs the exercise's
checks on the saved notebook and shows the result.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check"]


def check(name: str, notebook: str | None = None) -> Any:
    """Run the checks of exercise `name` on the saved notebook and show the result."""
    from gpulab.grading.learn.panel import check as run

    return run(name, notebook)
