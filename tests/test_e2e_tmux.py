"""The installed `gpulab` command in a real terminal: tmux runs it, we type and read.

This is what `make lab` ends with, so the test drives the console script the
package installs, not an in-process app.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpulab.course import load_course

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)"
)

GPULAB = Path(sys.executable).parent / "gpulab"


class Terminal:
    def __init__(self, name: str) -> None:
        self.name = name

    def screen(self) -> str:
        done = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True
        )
        return done.stdout

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def wait_for(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} did not appear; the screen shows:\n{self.screen()}")

    def alive(self) -> bool:
        done = subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True)
        return done.returncode == 0


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    assert GPULAB.exists(), f"{GPULAB} is missing: install the package (make test does)"
    name = f"gpulab-test-{uuid.uuid4().hex[:8]}"
    env = {"GPULAB_STATE_DIR": str(tmp_path / "state"), "TERM": "xterm-256color"}
    command = " ".join(f"{k}={v}" for k, v in env.items()) + f" {GPULAB}"
    socket_env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    subprocess.run(
        # tall enough for the whole course map: every lesson and exercise on one screen
        ["tmux", "new-session", "-d", "-s", name, "-x", "100", "-y", "80", command],
        check=True,
        env=socket_env,
    )
    term = Terminal(name)
    try:
        yield term
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace made by `gpulab init`, in the state folder the terminal's gpulab uses."""
    folder = tmp_path / "workspace"
    env = {**os.environ, "GPULAB_STATE_DIR": str(tmp_path / "state")}
    done = subprocess.run(
        [str(GPULAB), "init", str(folder)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


def test_app_starts_lists_lessons_and_quits(terminal: Terminal) -> None:
    course = load_course()
    screen = terminal.wait_for(course.entries[0].title)
    for entry in course.entries:
        assert entry.title in screen
    terminal.keys("?")
    # "Help" and "Search" are in the map's footer too: wait for what only the help shows
    terminal.wait_for("esc, q or ? closes")
    assert "How to study with gpulab" in terminal.screen()
    terminal.keys("End")  # the keys of every screen, below the manual
    help_screen = terminal.wait_for("Close help")
    assert "Next result" in help_screen and "Jump to the result" in help_screen  # Search's
    terminal.keys("Escape")
    # Wait for help to close: an Escape followed at once by q reads as alt+q.
    terminal.wait_for(course.entries[-1].title)
    time.sleep(0.5)
    terminal.keys("q")
    deadline = time.monotonic() + 15
    while terminal.alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not terminal.alive(), "gpulab did not quit on q"


def test_the_learner_loop_in_a_terminal(workspace: Path, terminal: Terminal) -> None:
    """First run: the hint; n opens the next exercise with its task, watched; l its
    lesson; q quits from the lesson too."""
    course = load_course()
    lessons = [entry.id for entry in course.entries]
    first = min(course.exercises(), key=lambda e: lessons.index(e.lesson))  # teaching order
    terminal.wait_for("New here? ? lists the keys")
    terminal.keys("n")
    screen = terminal.wait_for("the task")
    assert f"Exercise {first.name}" in screen
    assert "saving the notebook runs the checks" in screen
    assert (workspace / first.lesson / first.notebook.name).is_file()
    terminal.wait_for("The visible checks are worth")
    terminal.keys("l")
    screen = terminal.wait_for("Next lesson")
    time.sleep(0.5)
    terminal.keys("q")
    deadline = time.monotonic() + 15
    while terminal.alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not terminal.alive(), "gpulab did not quit on q in a lesson"
