"""`gpulab doctor` asks about what the course tools need, not only the GPU stack."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from gpulab.course import load_course
from gpulab.course.workspace import init_workspace
from gpulab.grading.learn.readiness import learner_checks

ROOT = Path(__file__).resolve().parents[2]


def by_name() -> dict[str, tuple[str, str]]:
    return {c.name: (c.status, c.found) for c in learner_checks()}


def test_pytest_jupyterlab_the_workspace_and_bubblewrap(tmp_path: Path) -> None:
    checks = by_name()
    assert checks["exercise checks"][0] == "pass"  # this environment has pytest
    assert checks["JupyterLab"][0] == "pass"
    assert checks["your workspace"] == ("warn", "none yet: the exercises have nowhere to go")
    assert checks["grading sandbox"][0] == ("pass" if shutil.which("bwrap") else "skip")
    workspace, _ = init_workspace(load_course(ROOT / "lessons"), tmp_path / "ws")
    assert by_name()["your workspace"] == ("pass", str(workspace.root))
    shutil.rmtree(workspace.root)
    status, found = by_name()["your workspace"]
    assert status == "fail" and "is not a gpulab workspace" in found


def test_the_doctor_command_lists_them() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gpulab", "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    names = [item["name"] for item in json.loads(done.stdout)]
    assert names[-4:] == ["exercise checks", "JupyterLab", "your workspace", "grading sandbox"]
