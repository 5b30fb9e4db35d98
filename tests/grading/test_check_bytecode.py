"""The checks process keeps its compiled code in the user's private ``pycache`` folder.

A second run of the same checks then starts without compiling them again;
a folder that is not the user's alone (open to others, a link) is never used,
since the checks process would run what it holds.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpulab.course import load_course
from gpulab.environment import STATE_DIR
from gpulab.grading.build import solution_path
from gpulab.grading.checks.runner import bytecode_env, run_checks

EXERCISE = "env-report"


def _compiled_checks(folder: Path) -> list[Path]:
    return sorted(folder.rglob("test_env_report*.pyc"))


def _checked() -> None:
    entry = load_course().exercise(EXERCISE)
    report = run_checks(entry, solution_path(entry))
    assert report.status == "passed", (report.status, report.message)


def test_the_checks_keep_their_compiled_code_for_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STATE_DIR.name, str(tmp_path))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # the grader's own choice: not for this
    _checked()
    cache = tmp_path / "pycache"
    assert cache.stat().st_mode & 0o777 == 0o700
    kept = _compiled_checks(cache)
    assert kept, f"no compiled checks in {cache}"
    stamps = {path: path.stat().st_mtime_ns for path in kept}
    _checked()
    assert {path: path.stat().st_mtime_ns for path in _compiled_checks(cache)} == stamps


@pytest.mark.parametrize("how", ["open to others", "a link"])
def test_a_cache_folder_not_the_users_alone_is_never_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    monkeypatch.setenv(STATE_DIR.name, str(tmp_path / "state"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "state").mkdir()
    cache = tmp_path / "state" / "pycache"
    if how == "a link":
        cache.symlink_to(elsewhere)
    else:
        cache.mkdir()
        os.chmod(cache, 0o777)
    assert bytecode_env() == {"PYTHONDONTWRITEBYTECODE": "1"}
    _checked()
    assert not _compiled_checks(elsewhere) and not _compiled_checks(cache.resolve())
