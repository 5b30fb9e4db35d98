"""The README's first command on a fresh copy of the repository: `make lab`, as a learner.

`make lab` must set up its environment, make the learner's workspace (never
writing exercises/) and start the app; an exercise solved in the workspace
must then pass its checks in the app and through that environment's
`gpulab check`. This is the environment the learner has: gpulab's runtime
dependencies, pinned as the Makefile pins them, and nothing of the test extra.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpulab.course import load_course
from helpers.learner_env import ROOT, TEST_ONLY, distributions, shared_folder, solve, tree_digest
from helpers.terminal import Terminal, needs_tmux

pytestmark = [
    needs_tmux,
    pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed"),
]

INSTALL_TIME = 900.0
"""Seconds `make lab` may take to make its environment (a minute or so with a warm cache)."""


def fresh_copy(target: Path) -> Path:
    """The tree as a fresh clone of it would be: tracked files and new files git would add."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if name and source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


@dataclass(frozen=True)
class MadeEnv:
    """A fresh copy whose environment `make lab-env` made with its output into a pipe: the
    lines it printed, each with the seconds of silence before it, and make's status."""

    clone: Path
    home: Path
    env: dict[str, str]
    gaps: list[tuple[float, str]]
    status: int


@pytest.fixture(scope="module")
def made_env() -> Iterator[MadeEnv]:
    """One install for the module's tests (it is the slowest step, a minute or more), as CI
    and `make lab 2>&1 | tee log` see it: with no terminal."""
    base = shared_folder("gpulab-make-lab-")
    try:
        clone, home = fresh_copy(base / "gpulab"), base / "home"
        home.mkdir()
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("GPULAB_", "VIRTUAL_ENV", "PYTEST", "TMUX"))
        }
        env.update(HOME=str(home), TERM="xterm-256color")
        process = subprocess.Popen(
            ["make", "lab-env"],
            cwd=clone,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        assert process.stdout is not None
        gaps, last = [], time.monotonic()
        with process.stdout:
            for raw in process.stdout:
                now = time.monotonic()
                gaps.append((now - last, raw.decode(errors="replace").rstrip()))
                last = now
        status = process.wait(timeout=INSTALL_TIME)
        gaps.append((time.monotonic() - last, "(the end)"))
        yield MadeEnv(clone, home, env, gaps, status)
    finally:
        shutil.rmtree(base, ignore_errors=True)


SILENCE = 15.0
"""Seconds `make lab-env` may go without a line when its output is no terminal."""


def test_make_lab_env_into_a_pipe_says_it_is_at_work(made_env: MadeEnv) -> None:
    """`make lab 2>&1 | tee log` (and CI) see no progress bar: pip draws it on a terminal
    only. A line comes at least every 10 s instead, and the status is make's own."""
    lines = [line for _, line in made_env.gaps]
    assert made_env.status == 0, "\n".join(lines[-30:])
    longest = max(made_env.gaps)
    assert longest[0] < SILENCE, f"{longest[0]:.1f} s of silence before {longest[1]!r}"
    assert any(line.startswith("Successfully installed") for line in lines), lines[-30:]


def test_make_lab_on_a_fresh_copy_leads_to_a_checked_exercise(made_env: MadeEnv) -> None:
    """`make lab` on the copy, its environment made above (so here it only makes the
    workspace and starts the app): an exercise checked in the app and by `gpulab check`."""
    assert made_env.status == 0, "make lab-env failed: see the test of its output"
    clone, home, env = made_env.clone, made_env.home, made_env.env
    before = tree_digest(clone / "exercises")
    terminal = Terminal(
        "make lab; echo make-lab-exited-$?; sleep 600",
        width=120,
        height=40,
        cwd=str(clone),
        env=env,
    )
    try:
        screen = terminal.wait_for("Linux containers and the GPU", timeout=INSTALL_TIME)
        assert "Error" not in screen and "Traceback" not in screen, screen
        workspace = clone / "workspace"
        assert (workspace / ".gpulab" / "workspace.json").is_file()
        roofline = workspace / "memory-hierarchy" / "roofline.ipynb"
        solve(roofline, "roofline", "memory-hierarchy")

        terminal.keys("C-p")  # the palette: open the exercise, check it
        terminal.wait_for("Search for commands")
        terminal.keys("Open exercise: roofline")
        terminal.wait_for("Open exercise: roofline")
        terminal.keys("Enter")
        terminal.wait_for("Exercise roofline")
        terminal.keys("c")
        terminal.wait_for("✓ passed", timeout=120)
        terminal.wait_for("roofline.ipynb", timeout=30)  # which notebook, drawn beside it
        terminal.keys("q")
        terminal.wait_for("make-lab-exited-0", timeout=30)
    finally:
        terminal.close()

    venv = clone / ".venv" / "bin"
    assert not distributions(venv) & set(TEST_ONLY)  # the learner's environment, not ours
    solve(workspace / "containers" / "namespaces.ipynb", "namespaces", "containers")
    checked = subprocess.run(
        [str(venv / "gpulab"), "check", "namespaces"],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("namespaces: passed")
    listing = subprocess.run(
        [str(venv / "gpulab"), "list"],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    total = len(load_course(ROOT / "lessons").exercises())  # the course's own count: it grows
    assert f"Exercises: 2 of {total} passed" in listing.stdout, listing.stdout
    assert tree_digest(clone / "exercises") == before  # exercises/ as the course ships it
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "workspace/containers/x.ipynb"], cwd=ROOT
    )
    assert ignored.returncode == 0, "the workspace must be ignored by git"
