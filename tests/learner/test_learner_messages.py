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
