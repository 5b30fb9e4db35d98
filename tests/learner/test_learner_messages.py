"""What an installed gpulab says to a learner who takes a wrong turn: the wheel, as a learner
has it, with a home of its own.

The course of an installed gpulab lies in site-packages, where a learner never
goes: its messages name what to do, never a path inside the package.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from helpers.learner_env import Learner, solve
from helpers.terminal import Terminal, needs_tmux


@pytest.fixture
def learner(wheel_env: Path, tmp_path: Path) -> Learner:
    home = tmp_path / "home"
    home.mkdir()
    return Learner(wheel_env, home)


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (("show", "nosuch"), "gpulab: no lesson 'nosuch'\n    hint: known lessons: "),
        (("specs", "nosuch"), "gpulab: no GPU or topic named 'nosuch'\n    hint: known: "),
    ],
    ids=["show", "specs"],
)
def test_an_unknown_name_is_said_without_a_path_inside_the_package(
    learner: Learner, command: tuple[str, ...], said: str
) -> None:
    done = learner.run(*command)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(said), done.stderr
    assert "site-packages" not in done.stderr and "_course" not in done.stderr
    assert ".toml" not in done.stderr


def test_the_book_says_where_it_goes_and_refuses_an_empty_out(learner: Learner) -> None:
    """From a wheel, the default book goes under the current folder, as the help says; an
    empty --out is refused, not taken for the default."""
    shown = " ".join(learner.run("book", "--help").stdout.split())
    assert "with gpulab installed from a wheel, book/_build/html in the current folder" in shown
    here = learner.home / "here"
    here.mkdir()
    empty = learner.run("book", "--out", "", cwd=here)
    assert empty.returncode == 2, empty.stdout + empty.stderr
    assert "argument --out: an empty name is no folder" in empty.stderr
    assert not any(here.iterdir())
    built = learner.run("book", cwd=here, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    front = here / "book" / "_build" / "html" / "index.html"
    assert front.is_file() and built.stdout.rstrip().endswith(str(front))


@needs_tmux
def test_s_in_the_app_says_an_installed_course_ships_no_solutions(learner: Learner) -> None:
    """The wheel ships no solutions: `s` on a passed exercise says so, in words, with no
    path into site-packages."""
    assert learner.run("init").returncode == 0
    solve(
        learner.home / "gpulab-exercises" / "memory-hierarchy" / "roofline.ipynb",
        "roofline",
        "memory-hierarchy",
    )
    checked = learner.run("check", "roofline")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    env = learner.env(TERM="xterm-256color")
    with Terminal("gpulab", width=120, height=32, cwd=str(learner.home), env=env) as terminal:
        terminal.wait_for("Linux containers and the GPU", timeout=60)
        terminal.keys("C-p")
        terminal.wait_for("Search for commands")
        terminal.keys("Open exercise: roofline")
        terminal.wait_for("Open exercise: roofline")
        terminal.keys("Enter")
        terminal.wait_for("Exercise roofline")
        terminal.wait_for("status      passed (")
        terminal.keys("s")
        screen = terminal.wait_for("ask your instructor, or work from the course")
        assert "An installed course ships no solutions" in screen.replace("\n", " ")
        assert "site-packages" not in screen and "_course" not in screen
        time.sleep(0.5)
        terminal.keys("q")
        assert terminal.wait_gone(), "gpulab did not quit on q"
