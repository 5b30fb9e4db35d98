"""The installed `gpulab` command in a real terminal: tmux runs it, we type and read.

This is what `make lab` ends with, so the test drives the console script the
package installs, not an in-process app. It runs on the fixture course with
the small "squares" exercise (the shipped course has a test of its own,
tests/learner/test_learner_make_lab.py), with a HOME and a state folder of its
own, on a tmux server of its own (`helpers.terminal`).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpulab.course import load_course
from helpers.terminal import Terminal, needs_tmux
from helpers.tui import build_exercise_course

pytestmark = needs_tmux

GPULAB = Path(sys.executable).parent / "gpulab"


@pytest.fixture
def env(tmp_path: Path, home: Path) -> dict[str, str]:
    """What gpulab runs with: its own HOME and state folder, the fixture course."""
    return {
        "PATH": f"{GPULAB.parent}:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "GPULAB_STATE_DIR": str(tmp_path / "state"),
        "GPULAB_COURSE_DIR": str(build_exercise_course(tmp_path / "course")),
    }


@pytest.fixture
def terminal(env: dict[str, str]) -> Iterator[Terminal]:
    assert GPULAB.exists(), f"{GPULAB} is missing: install the package (make test does)"
    # tall enough for the whole course map: every lesson and exercise on one screen
    with Terminal(str(GPULAB), width=100, height=80, env=env) as term:
        yield term


@pytest.fixture
def workspace(tmp_path: Path, env: dict[str, str]) -> Path:
    """A workspace made by `gpulab init`, in the state folder the terminal's gpulab uses."""
    folder = tmp_path / "workspace"
    done = subprocess.run(
        [str(GPULAB), "init", str(folder)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


def test_app_starts_lists_lessons_and_quits(env: dict[str, str], terminal: Terminal) -> None:
    course = load_course(Path(env["GPULAB_COURSE_DIR"]))
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
    assert terminal.wait_gone(), "gpulab did not quit on q"


def test_the_learner_loop_in_a_terminal(workspace: Path, terminal: Terminal) -> None:
    """First run: the hint; n opens the next exercise with its task, watched; l its
    lesson; q quits from the lesson too."""
    terminal.wait_for("New here? ? lists the keys")
    terminal.keys("n")
    screen = terminal.wait_for("the task")
    assert "Exercise squares" in screen
    assert "saving the notebook runs the checks" in screen
    assert (workspace / "basics" / "squares.ipynb").is_file()
    terminal.wait_for("The visible checks are worth")
    terminal.keys("l")
    terminal.wait_for("Next lesson")
    time.sleep(0.5)
    terminal.keys("q")
    assert terminal.wait_gone(), "gpulab did not quit on q in a lesson"


def test_a_terminal_runs_with_its_own_environment_beside_another_tmux_server(
    tmp_path: Path,
) -> None:
    """A tmux server already running (the user's, say) must not lend its environment to
    a test's command: each Terminal starts a server of its own."""
    seen = tmp_path / "seen"
    base = {"PATH": "/usr/bin:/bin", "TERM": "xterm-256color"}
    with (
        Terminal("sleep 60", env={**base, "HOME": "/the-users-home"}),
        Terminal(f"env > {seen}; sleep 60", env={**base, "HOME": str(tmp_path)}) as ours,
    ):
        deadline = time.monotonic() + 15
        while not seen.is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.2)
        assert ours.alive()
    assert f"HOME={tmp_path}\n" in seen.read_text()


def test_jupyterlabs_address_reaches_tmux_and_is_printed_on_quitting(
    env: dict[str, str], workspace: Path
) -> None:
    """tmux drops the clipboard sequence the app writes (OSC 52), and the app's box wraps
    the address: `y` puts it into tmux's paste buffer, and quitting prints it on a line of
    its own, where tmux's or the terminal's selection takes it whole."""
    command = f"{GPULAB}; echo gpulab-ended-$?; sleep 60"
    try:
        with Terminal(command, width=120, height=40, env=env) as terminal:
            terminal.wait_for("New here? ? lists the keys")
            terminal.keys("n")
            terminal.wait_for("The visible checks are worth")
            terminal.keys("o")
            terminal.wait_for("y copies it", timeout=150)
            terminal.keys("y")
            terminal.wait_for("in tmux's paste buffer")
            url = terminal.tmux("show-buffer").stdout
            assert url.startswith("http://127.0.0.1:"), url
            assert "/lab/tree/basics/squares.ipynb?token=" in url
            time.sleep(0.5)
            terminal.keys("q")
            terminal.wait_for("gpulab-ended-0", timeout=30)
            joined = terminal.tmux("capture-pane", "-p", "-J", "-t", terminal.name).stdout
            assert url in joined.splitlines(), joined
            assert "stop it with: gpulab open --stop" in joined
    finally:
        subprocess.run([str(GPULAB), "open", "--stop"], env=env, capture_output=True, timeout=60)
