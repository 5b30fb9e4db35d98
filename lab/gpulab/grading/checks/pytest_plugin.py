"""The pytest side of the checks: the `learner` fixture, points, and the report.

`gpulab.grading.checks.runner` runs pytest in a process of its own with this plugin
(``-p gpulab.grading.checks.pytest_plugin``) and its options (`pytest_addoption`, in
``pytest --help`` under "gpulab"): ``--gpulab-released`` (the released
exercise notebook), ``--gpulab-notebook`` (the one to judge),
``--gpulab-report`` (where to write the JSON report), ``--gpulab-call-timeout``
(seconds per call) and ``--gpulab-parent`` (the process the checks die with).
The report lists each check with its outcome, points and message, and the
figures it measured beside the learner (the `measured` fixture); the runner
reads it, never pytest's output. A check that failed while the machine kept the
learner's code from the CPU (`gpulab.grading.sandbox.jobtime.Starved`) is reported as
``busy``, whatever the check made of the error: it is no verdict.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gpulab.course.paths import CoursePaths
from gpulab.course.progress import Measurement
from gpulab.grading.checks.learner import Learner, LearnerError, released_cells
from gpulab.grading.checks.notebook import NotebookError
from gpulab.grading.checks.protocol import (
    MAX_MEASUREMENTS,
    CheckResult,
    PluginReport,
    encodable,
    encode_report,
)
from gpulab.grading.sandbox.jobtime import starved

__all__ = ["Measured", "learner", "measured", "visible_checks"]

_RESULTS: list[CheckResult] = []
_MEASURED = pytest.StashKey[list[Measurement]]()
_STARVED_AT = pytest.StashKey[int]()  # `jobtime.starved()` as the check began
MAX_PREDICTION_TEXT = 80
"""The longest prediction in words that is kept (longer ones are cut, with an ellipsis)."""


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
        sys.modules[name] = module  # as an import would: dataclasses look it up there
        spec.loader.exec_module(module)
    return module


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gpulab", "gpulab's checks (set by gpulab.grading.checks.runner)")
    group.addoption(
        "--gpulab-released", type=Path, metavar="NOTEBOOK", help="the exercise's released notebook"
    )
    group.addoption(
        "--gpulab-notebook", type=Path, metavar="NOTEBOOK", help="the learner's notebook to judge"
    )
    group.addoption(
        "--gpulab-report",
        type=Path,
        metavar="FILE",
        help="where to write the JSON report of the checks",
    )
    group.addoption(
        "--gpulab-call-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="the time limit of each call of the learner's code (default 30)",
    )
    group.addoption(
        "--gpulab-parent",
        type=int,
        default=None,
        metavar="PID",
        help="end these checks when process PID ends",
    )


def die_with_parent(parent: int | None) -> None:
    """End this checks process when the process that started it ends (a grader killed with
    SIGKILL): its learner workers then end with it, bubblewrap's --die-with-parent."""
    if not parent or not sys.platform.startswith("linux"):
        return
    from gpulab.grading.sandbox.jail import die_with

    if not die_with(parent):  # it ended before that took hold
        os._exit(1)


def pytest_configure(config: pytest.Config) -> None:
    die_with_parent(config.getoption("gpulab_parent"))
    config.addinivalue_line("markers", "points(n): what the check is worth (default 1)")
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Checks marked ``gpu`` skip, saying why, on a machine without a usable NVIDIA GPU."""
    item.stash[_STARVED_AT] = starved()
    if item.get_closest_marker("gpu") is not None:
        from gpulab.grading.checks.gpu import gpu_missing

        reason = gpu_missing()
        if reason:
            pytest.skip(reason)


@pytest.fixture(scope="session")
def learner(pytestconfig: pytest.Config) -> Iterator[Learner]:
    """The learner's answers, in a worker process: ``learner.call("name", *args)``."""
    released = pytestconfig.getoption("gpulab_released")
    notebook = pytestconfig.getoption("gpulab_notebook")
    if released is None or notebook is None:
        raise pytest.UsageError(
            "gpulab's checks need --gpulab-released and --gpulab-notebook "
            "(gpulab check NAME sets them)"
        )
    try:
        cells = released_cells(released, notebook)
    except NotebookError as exc:
        raise LearnerError(str(exc), "invalid") from None
    with Learner(cells, timeout=pytestconfig.getoption("gpulab_call_timeout")) as handle:
        yield handle


class Measured:
    """Records, for the check that asked for it, a figure the learner measured beside the one
    the check measured itself, with the learner's prediction of it.

    ``measured("pinned_h2d", label="pinned host to device, 256 MiB", unit="GB/s",
    yours=got, trusted=want, tolerance=0.25)``. It only records: the check judges. The
    prediction is what the notebook's ``predictions()`` returns for `key` (asked once a
    session; no such function, a stub, or anything but a dict gives none). A value that is
    no finite number (the learner's `yours` may be anything) is kept as None.
    """

    def __init__(self, learner: Learner, kept: list[Measurement]) -> None:
        self._learner = learner
        self._kept = kept

    def __call__(
        self,
        key: str,
        *,
        label: str,
        unit: str,
        yours: Any,
        trusted: Any,
        tolerance: float | None = None,
    ) -> None:
        if len(self._kept) >= MAX_MEASUREMENTS:
            raise ValueError(f"a check records at most {MAX_MEASUREMENTS} measurements")
        self._kept.append(
            Measurement(
                key,
                label,
                unit,
                _number(yours),
                _number(trusted),
                tolerance,
                _predictions(self._learner).get(key),
            )
        )


_ASKED: dict[int, dict[str, float | str]] = {}


def _predictions(learner: Learner) -> dict[str, float | str]:
    """The learner's predictions, asked once per learner worker: numbers and short texts by
    key, everything else left out."""
    if id(learner) not in _ASKED:
        try:
            said = learner.call("predictions")
        except LearnerError:
            said = None
        kept: dict[str, float | str] = {}
        if isinstance(said, dict):
            for key, value in list(said.items())[: MAX_MEASUREMENTS * 4]:
                if not isinstance(key, str):
                    continue
                if isinstance(value, str):
                    text = encodable(" ".join(value.split()))
                    if len(text) > MAX_PREDICTION_TEXT:
                        text = text[: MAX_PREDICTION_TEXT - 1] + "…"
                    kept[key] = text
                elif (number := _number(value)) is not None:
                    kept[key] = number
        _ASKED[id(learner)] = kept
    return _ASKED[id(learner)]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


@pytest.fixture
def measured(request: pytest.FixtureRequest, learner: Learner) -> Measured:
    """Records figures the check measured beside the learner's (see `Measured`)."""
    kept: list[Measurement] = []
    request.node.stash[_MEASURED] = kept
    return Measured(learner, kept)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" or (report.when == "setup" and not report.passed):
        marker = item.get_closest_marker("points")
        points = float(marker.args[0]) if marker and marker.args else 1.0
        message, kind = "", None  # kind: gpulab.grading.checks.protocol.Failure
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
        outcome = (
            report.outcome if report.when == "call" else ("skipped" if report.skipped else "failed")
        )
        if outcome == "failed" and starved() > item.stash.get(_STARVED_AT, starved()):
            kind = "busy"  # the machine kept the learner's code from the CPU: no verdict
        doc = (
            (item.obj.__doc__ or "").strip().splitlines()[0]
            if isinstance(item, pytest.Function) and item.obj.__doc__
            else ""
        )
        needs_gpu = report.skipped and item.get_closest_marker("gpu") is not None
        _RESULTS.append(
            CheckResult(
                encodable(item.name),
                encodable(doc),
                outcome,
                points,
                encodable(message),
                "_hidden" in item.path.name,
                needs_gpu,
                kind,
                item.stash.get(_MEASURED, []).copy(),
            )
        )
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = session.config.getoption("gpulab_report")
    if target:
        # "collected" lets the runner tell a finished run from one that stopped part way
        Path(target).write_bytes(encode_report(PluginReport(session.testscollected, _RESULTS)))
