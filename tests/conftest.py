"""Shared fixtures: every test gets its own state folder, never the user's."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def _private_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPULAB_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    monkeypatch.delenv("GPULAB_WORKSPACE", raising=False)  # the user's, never the tests'


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES
