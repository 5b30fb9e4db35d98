"""What an installed gpulab says to a learner who takes a wrong turn: the wheel, as a learner
has it, with a home of its own.

The course of an installed gpulab lies in site-packages, where a learner never
goes: its messages name what to do, never a path inside the package.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.learner_env import Learner


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
