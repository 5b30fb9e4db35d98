"""The fingerprint of an exercise's checks: what decides a grade besides the notebook.

`checks_hash` hashes the released notebook and the exercise's checks (hidden
ones included), with gpulab's version (`gpulab_version`). The gradebook keeps
each grade under it, so a later run regrades only what changed
(`gpulab.grading.classrun.plan`), and a cluster worker proves with it that it grades
with the coordinator's checks (`gpulab.grading.classrun.cluster.node`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from gpulab.course.manifest import ExerciseEntry
from gpulab.grading.checks.runner import check_files

__all__ = ["checks_hash", "gpulab_version"]


def _sha256(*paths: Path) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"(missing)")
    return digest.hexdigest()


def checks_hash(entry: ExerciseEntry) -> str:
    """What decides a grade besides the learner's notebook: released notebook and checks."""
    return _sha256(entry.notebook, *check_files(entry, hidden=True)) + f":{gpulab_version()}"


def gpulab_version() -> str:
    import gpulab

    return str(gpulab.__version__)
