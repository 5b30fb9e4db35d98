"""The launcher before bubblewrap dies with the process that started it, even when that
process ended before the launcher could arrange it (a grader killed while a job starts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def _jail(spec: dict[str, object], *command: str) -> list[str]:
    return [sys.executable, "-m", "gpulab.grading.sandbox.jail", json.dumps(spec), "--", *command]


def test_a_parent_that_has_already_ended_stops_the_launcher() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    done = subprocess.run(
        _jail({"parent": gone.pid}, "/bin/sleep", "60"), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 125
    assert f"the process that started this job ({gone.pid}) has ended" in done.stderr


def test_the_launcher_runs_the_command_for_its_parent() -> None:
    done = subprocess.run(
        _jail({"parent": os.getpid()}, "/bin/echo", "ran"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, "ran\n")


def test_the_command_dies_with_the_parent(tmp_path: Path) -> None:
    """A middle process starts the launcher (a long sleep) and is killed: the sleep goes."""
    pid_file = tmp_path / "sleeper"
    middle = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"""
import json, os, subprocess, sys, time
spec = json.dumps({{"parent": os.getpid()}})
p = subprocess.Popen([sys.executable, "-m", "gpulab.grading.sandbox.jail", spec, "--", "/bin/sleep",
                      "300"], start_new_session=True)
open({str(pid_file)!r}, "w").write(str(p.pid))
time.sleep(300)
""",
        ]
    )
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.is_file() and pid_file.read_text()):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        sleeper = int(pid_file.read_text())
        while "sleep" not in Path(f"/proc/{sleeper}/cmdline").read_text(errors="replace"):
            assert time.monotonic() < deadline  # until the launcher has exec'd
            time.sleep(0.05)
        middle.kill()
        middle.wait()
        while Path(f"/proc/{sleeper}").exists():
            state = Path(f"/proc/{sleeper}/stat").read_text().rsplit(")", 1)[-1].split()[0]
            if state in ("Z", "X"):
                break
            assert time.monotonic() < deadline, "the command outlived its parent"
            time.sleep(0.05)
    finally:
        if middle.poll() is None:
            middle.kill()
