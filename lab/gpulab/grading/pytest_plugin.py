"""The pytest side of the checks: the `learner` fixture, points, and the report.

`gpulab.grading.runner` runs pytest in a process of its own with this plugin
(``-p gpulab.grading.pytest_plugin``) and these variables set:
GPULAB_RELEASED (the released exercise notebook), GPULAB_NOTEBOOK (the one to
judge), GPULAB_REPORT (where to write the JSON report) and
GPULAB_CALL_TIMEOUT (seconds per call). The report lists each check with its
outcome, points and message; the runner reads it, never pytest's output.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gpulab.course.paths import CoursePaths
from gpulab.grading.learner import Learner, LearnerError, released_cells
from gpulab.grading.notebook import NotebookError

__all__ = ["learner", "visible_checks"]

_RESULTS: list[dict[str, Any]] = []


def visible_checks(hidden_file: str) -> ModuleType:
    """The visible checks' module for a hidden check file, so both share one copy of helpers.

    ``solutions/<lesson>/test_<name>_hidden.py`` maps to
    ``exercises/<lesson>/test_<name>.py``; the module pytest already imported is
    reused, else it is loaded from that path.
    """
    hidden = Path(hidden_file).resolve()
    name = hidden.stem.removesuffix("_hidden")
    module = sys.modules.get(name)
    if module is None:
        path = CoursePaths.of_hidden_checks(hidden).exercises / hidden.parent.name / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load the visible checks {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module        # as an import would: dataclasses look it up there
        spec.loader.exec_module(module)
    return module


def die_with_parent() -> None:
    """End this checks process when the process that started it ends (a grader killed with
    SIGKILL): its learner workers then end with it, bubblewrap's --die-with-parent."""
    parent = os.environ.get("GPULAB_PARENT")
    if not parent or not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)         # PR_SET_PDEATHSIG
    if os.getppid() != int(parent):                      # it ended before that took hold
        os._exit(1)


def pytest_configure(config: pytest.Config) -> None:
    die_with_parent()
    config.addinivalue_line("markers", "points(n): what the check is worth (default 1)")
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Checks marked ``gpu`` skip, saying why, on a machine without a usable NVIDIA GPU."""
    if item.get_closest_marker("gpu") is not None:
        from gpulab.grading.gpu import gpu_missing

        reason = gpu_missing()
        if reason:
            pytest.skip(reason)


@pytest.fixture(scope="session")
def learner() -> Iterator[Learner]:
    """The learner's answers, in a worker process: ``learner.call("name", *args)``."""
    try:
        cells = released_cells(Path(os.environ["GPULAB_RELEASED"]),
                               Path(os.environ["GPULAB_NOTEBOOK"]))
    except NotebookError as exc:
        raise LearnerError(str(exc), "invalid") from None
    with Learner(cells, timeout=float(os.environ.get("GPULAB_CALL_TIMEOUT", "30"))) as handle:
        yield handle


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" or (report.when == "setup" and not report.passed):
        marker = item.get_closest_marker("points")
        points = float(marker.args[0]) if marker and marker.args else 1.0
        message, kind = "", None      # kind: gpulab.grading.protocol.Failure
        if call.excinfo is not None:
            exc = call.excinfo.value
            if isinstance(exc, LearnerError):
                message, kind = str(exc), exc.kind
            elif isinstance(exc, AssertionError):
                message = str(exc).split("\nassert ")[0].strip() or "the check failed"
            elif report.skipped:
                message = str(getattr(exc, "msg", exc))
            else:
                message = f"the check itself failed: {type(exc).__name__}: {exc}"
        outcome = report.outcome if report.when == "call" else (
            "skipped" if report.skipped else "failed")
        doc = (item.obj.__doc__ or "").strip().splitlines()[0] if isinstance(
            item, pytest.Function) and item.obj.__doc__ else ""
        needs_gpu = report.skipped and item.get_closest_marker("gpu") is not None
        _RESULTS.append({"check": item.name, "title": doc, "outcome": outcome,
                         "points": points, "message": message,
                         "hidden": "_hidden" in item.path.name, "needs_gpu": needs_gpu,
                         "kind": kind})
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get("GPULAB_REPORT")
    if target:
        # "collected" lets the runner tell a finished run from one that stopped part way
        Path(target).write_text(json.dumps({"collected": session.testscollected,
                                            "checks": _RESULTS}, indent=1), encoding="utf-8")
