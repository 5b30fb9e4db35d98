"""A grader killed with SIGKILL takes its learner code with it, and the next run clears up.

Red-team case V18: before, the checks processes and their sandboxes went on running
learner code with no time limit after the grader was killed, and the run's cgroups
and temporary folders stayed. Here a real `gpulab grade` grades a learner whose
answer never ends; the grader alone (not its process group) is killed, and every
process it had started must be gone within seconds; the folders and cgroups it
left are then removed by what the next run calls.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from gpulab.grading import sandbox
from gpulab.grading.checks.runner import remove_stale_folders

ROOT = Path(__file__).resolve().parents[2]
STUB = ROOT / "exercises" / "memory-hierarchy" / "roofline.ipynb"
GUARDS = sandbox.available()


def descendants(pid: int) -> set[int]:
    """Every process below `pid` now."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = {int(c) for c in (task / "children").read_text().split()}
            except OSError:
                continue
            todo.extend(children - found)
            found |= children
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(
    not GUARDS.bubblewrap, reason=f"no bubblewrap sandbox here: {GUARDS.bubblewrap_problem}"
)
def test_sigkill_of_the_grader_ends_its_learner_code(tmp_path: Path) -> None:
    notebook = nbformat.read(STUB, as_version=4)
    answer = next(
        c for c in notebook.cells if c.get("metadata", {}).get("gpulab", {}).get("role") == "answer"
    )
    answer.source = (
        "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "while True:\n    pass\n" + answer.source
    )
    (tmp_path / "class" / "looper").mkdir(parents=True)
    nbformat.write(notebook, tmp_path / "class" / "looper" / "roofline.ipynb")
    grader = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gpulab",
            "grade",
            str(tmp_path / "class"),
            "--out",
            str(tmp_path / "out"),
            "--exercises",
            "roofline",
            "--workers",
            "1",
            "--timeout",
            "300",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        started: set[int] = set()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # until the learner's worker spins
            started |= descendants(grader.pid)
            workers = [
                p for p in started if alive(p) and b"gpulab.grading.checks.worker" in _cmdline(p)
            ]
            if workers:
                break
            time.sleep(0.2)
        assert workers, "the learner's worker never started"
        time.sleep(1)
        started |= descendants(grader.pid)
        os.kill(grader.pid, signal.SIGKILL)  # the grader alone, as `kill -9 PID` does
        grader.wait()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(alive(p) for p in started):
            time.sleep(0.2)
        left = {p: _cmdline(p)[:120] for p in started if alive(p)}
        assert left == {}, f"still running after the grader was killed: {left}"
    finally:
        with __import__("contextlib").suppress(ProcessLookupError):
            os.killpg(grader.pid, signal.SIGKILL)
    stale = [p for p in Path(tempfile.gettempdir()).glob(f"gpulab-check-{grader.pid}-*")]
    assert stale, "the killed run's checks folder should be there for the next run to remove"
    removed = remove_stale_folders()
    assert set(stale) <= set(removed) and not any(p.exists() for p in stale)
    if GUARDS.cgroup:
        left_cgroups = sandbox.remove_stale_cgroups(GUARDS.cgroup)
        assert any("gpulab-run-" in c for c in left_cgroups), left_cgroups


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
