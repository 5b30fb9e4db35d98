"""Emptying a job's cgroup: cgroup.kill where the kernel has it, else process by process.

This machine's CI has cgroup v1, so the kernel's own cgroup.kill cannot be
exercised here; these tests run `empty_and_remove` on a folder laid out like a
cgroup (its control files as plain files) holding a real process, and check
what gpulab does: it writes 1 to cgroup.kill when there is one, and kills every
process cgroup.procs lists either way.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.grading.sandbox.cgroups import empty_and_remove


def _child() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


@pytest.mark.parametrize("with_kill_file", [True, False], ids=["v2 cgroup.kill", "v1"])
def test_every_listed_process_is_killed_and_cgroup_kill_is_written(
    tmp_path: Path, with_kill_file: bool
) -> None:
    folder = tmp_path / "gpulab-job-1"
    folder.mkdir()
    child = _child()
    try:
        (folder / "cgroup.procs").write_text(f"{child.pid}\n")
        if with_kill_file:
            (folder / "cgroup.kill").write_text("0")
        empty_and_remove([folder])
        assert child.wait(timeout=10) == -9  # SIGKILL
        if with_kill_file:
            assert (folder / "cgroup.kill").read_text() == "1"
    finally:
        child.kill()
        child.wait()
