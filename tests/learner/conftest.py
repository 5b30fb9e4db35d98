"""Session fixtures for the learner's-chair tests: gpulab built once and installed once."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.learner_env import (
    NOBODY,
    Learner,
    base_python,
    build,
    fresh_venv,
    make_home,
    open_to_all,
    shared_folder,
)


@pytest.fixture(scope="session")
def built() -> Iterator[tuple[Path, Path]]:
    """The wheel and sdist of this tree."""
    out = shared_folder("gpulab-dist-")
    try:
        yield build(out)
    finally:
        shutil.rmtree(out, ignore_errors=True)


@pytest.fixture(scope="session")
def wheel_env(built: tuple[Path, Path]) -> Iterator[Path]:
    """A fresh virtual environment with the wheel and its runtime dependencies only."""
    base = shared_folder("gpulab-wheel-env-")
    try:
        yield fresh_venv(base / "venv", str(built[0]))
    finally:
        shutil.rmtree(base, ignore_errors=True)


AS_ROOT = os.geteuid() == 0


def _nobody_skip() -> str | None:
    if not AS_ROOT:
        return (
            "running as another user needs root (CI runs as root); the test user is the "
            "ordinary user here"
        )
    if not open_to_all(Path(base_python())):
        return f"no Python here that an ordinary user may run ({base_python()})"
    return None


USERS = [
    pytest.param(None, id="this-user"),
    pytest.param(
        NOBODY,
        id="nobody",
        marks=pytest.mark.skipif(_nobody_skip() is not None, reason=_nobody_skip() or ""),
    ),
]


@pytest.fixture(params=USERS)
def learner(request: pytest.FixtureRequest, wheel_env: Path) -> Iterator[Learner]:
    """Someone with gpulab from the wheel, a home of their own, as root (in CI) or nobody."""
    uid = request.param
    base = shared_folder("gpulab-learner-")
    try:
        yield Learner(wheel_env, make_home(base, uid), uid)
    finally:
        shutil.rmtree(base, ignore_errors=True)
