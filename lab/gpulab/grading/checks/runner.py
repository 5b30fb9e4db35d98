"""Run an exercise's checks against a notebook and report per check, with points.

The checks run in a pytest process of their own, in an empty folder, with
gpulab's plugin and no other configuration; the learner's code runs in yet
another process (see `gpulab.grading.checks.learner`). The runner reads only the
plugin's JSON report: nothing the learner prints is parsed. The exercise's time
limit counts the checks' own time, not the machine's (`gpulab.grading.sandbox.jobtime`):
a run the machine kept from the CPU is no verdict (status "error"), never a
timeout.

The checks process keeps what Python compiles (the check files, rewritten by
pytest, and the modules they import) in a folder of the user's own,
``<state folder>/pycache`` (`bytecode_env`), so that the next run of the same
checks starts without compiling them again. The folder must be the user's and
closed to everyone else (it holds code the checks process will run); when it is
not, nothing is kept.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from gpulab.course.manifest import ExerciseEntry
from gpulab.course.paths import CoursePaths
from gpulab.course.progress import Measurement
from gpulab.grading.checks.notebook import NotebookError, read_notebook
from gpulab.grading.checks.protocol import CheckResult, decode_report
from gpulab.grading.sandbox.jobtime import POLL_S, JobClock, Starved

__all__ = [
    "CheckReport",
    "bytecode_env",
    "check_files",
    "folder_prefix",
    "remove_stale_folders",
    "run_checks",
]


@dataclass(frozen=True)
class CheckReport:
    """All checks of one exercise on one notebook."""

    exercise: str
    notebook: Path
    # "timeout": the checks used up the exercise's time limit (the learner's code, an
    # endless loop say); "error": the checks could not give a verdict for another reason
    # (the machine too busy to give them their time among them)
    status: Literal["passed", "failed", "invalid", "timeout", "error", "skipped"]
    message: str = ""
    results: tuple[CheckResult, ...] = field(default_factory=tuple)

    @property
    def earned(self) -> float:
        return sum(r.earned for r in self.results)

    @property
    def possible(self) -> float:
        return sum(r.points for r in self.results if r.outcome != "skipped")

    def measurements(self, *, hidden: bool = True) -> list[Measurement]:
        """The figures the checks measured beside the learner's, check by check (`hidden`:
        the hidden checks' too; feedback shows the visible ones only)."""
        return [m for r in self.results if hidden or not r.hidden for m in r.measurements]


def folder_prefix(kind: str) -> str:
    """The name a temporary folder of this process starts with: ``gpulab-<kind>-<pid>-``, so a
    later run can tell the folders of processes that were killed (`remove_stale_folders`)."""
    return f"gpulab-{kind}-{os.getpid()}-"


def remove_stale_folders(base: Path | None = None) -> list[Path]:
    """Remove the checks' and workers' temporary folders left by processes that no longer
    run (a grader killed with SIGKILL takes its checks processes with it, but not their
    folders); the ones removed."""
    import shutil

    base = base or Path(tempfile.gettempdir())
    removed = []
    for folder in base.glob("gpulab-*-*-*"):
        kind, _, rest = folder.name.removeprefix("gpulab-").partition("-")
        pid = rest.partition("-")[0]
        if kind not in ("check", "learner") or not pid.isdigit() or not folder.is_dir():
            continue
        if Path(f"/proc/{pid}").exists():
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def check_files(exercise: ExerciseEntry, *, hidden: bool = False) -> list[Path]:
    """The visible check file beside the exercise, and the hidden one if asked for."""
    paths = CoursePaths.of_notebook(exercise.notebook)
    files = [paths.visible_checks(exercise.lesson, exercise.name)]
    if hidden:
        files.append(paths.hidden_checks(exercise.lesson, exercise.name))
    return files


def _read_report(path: Path) -> tuple[tuple[CheckResult, ...], int]:
    """The plugin's report (`gpulab.grading.checks.protocol.PluginReport`), and how many checks
    pytest collected."""
    report = decode_report(path.read_bytes())
    return tuple(report.checks), report.collected


def bytecode_env() -> dict[str, str]:
    """The checks process's bytecode setting: compiled code kept in ``<state folder>/pycache``
    (made private if missing), or none kept when that folder is not this user's alone."""
    from gpulab.state import state_dir

    folder = state_dir() / "pycache"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        found = folder.lstat()
    except OSError:
        return {"PYTHONDONTWRITEBYTECODE": "1"}
    private = (
        stat.S_ISDIR(found.st_mode)  # not a link to somewhere else
        and found.st_uid == os.geteuid()
        and not found.st_mode & 0o077
    )
    return {"PYTHONPYCACHEPREFIX": str(folder)} if private else {"PYTHONDONTWRITEBYTECODE": "1"}


def _run_within(
    command: list[str], folder: str, env: dict[str, str], limit: float
) -> tuple[int, str]:
    """Run the checks process; its exit status and output. Its time is the checks' own
    (`gpulab.grading.sandbox.jobtime`): TimeoutError when they used `limit` seconds of it, `Starved`
    when the machine kept them from the CPU too long; either way the process is killed (the
    learner's worker with it: it dies with its parent)."""
    process = subprocess.Popen(
        command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    clock = JobClock(process.pid, limit, fresh=True)
    with process:
        while True:
            try:
                output, _ = process.communicate(timeout=POLL_S)
                return process.returncode, output
            except subprocess.TimeoutExpired:
                pass
            try:
                clock.check()
            except BaseException:
                process.kill()
                process.wait()
                raise


def run_checks(
    exercise: ExerciseEntry,
    notebook: Path | None = None,
    *,
    hidden: bool = False,
    call_timeout: float = 30.0,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
) -> CheckReport:
    """Judge `notebook` (default: the learner's copy of the exercise) by its checks.

    `env` adds to the checks process's environment (a grading run's sandbox
    policy, the GPU it may use).
    """
    notebook = notebook or exercise.notebook
    try:
        read_notebook(notebook)
        read_notebook(exercise.notebook)
    except NotebookError as exc:
        return CheckReport(exercise.name, notebook, "invalid", str(exc))
    files = check_files(exercise, hidden=hidden)
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        return CheckReport(
            exercise.name, notebook, "error", f"the checks are missing: {', '.join(missing)}"
        )
    with tempfile.TemporaryDirectory(prefix=folder_prefix("check")) as folder:
        report_path = Path(folder) / "report.json"
        (Path(folder) / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        env = {**os.environ, **(env or {})}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.pop("PYTHONPYCACHEPREFIX", None)
        env.update(
            bytecode_env(),
            # only gpulab's plugin: the checks need no other, and loading every
            # plugin installed beside pytest costs most of a second per run
            PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        )
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "gpulab.grading.checks.pytest_plugin",
            "-p",
            "no:cacheprovider",
            "-c",
            str(Path(folder) / "pytest.ini"),
            "--rootdir",
            folder,
            "-o",
            "console_output_style=classic",
            "--tb=no",
            f"--gpulab-released={exercise.notebook.resolve()}",
            f"--gpulab-notebook={notebook.resolve()}",
            f"--gpulab-report={report_path}",
            f"--gpulab-call-timeout={call_timeout}",
            f"--gpulab-parent={os.getpid()}",  # the checks die with this process
            *(str(f.resolve()) for f in files),
        ]
        limit = timeout or float(exercise.time_limit)  # the whole run, course.toml's limit
        try:
            returncode, output = _run_within(command, folder, env, limit)
        except TimeoutError:
            return CheckReport(
                exercise.name,
                notebook,
                "timeout",
                f"the checks took longer than {limit:g} s and were stopped",
            )
        except Starved as exc:  # no verdict: "error", which a grading run tries again
            return CheckReport(
                exercise.name,
                notebook,
                "error",
                f"the grading machine was too busy to give the checks their time ({exc}); "
                "the next run grades it again",
            )
        if not report_path.is_file():
            tail = output.strip().splitlines()[-5:]
            return CheckReport(
                exercise.name, notebook, "error", "the checks did not run: " + " / ".join(tail)
            )
        try:
            results, collected = _read_report(report_path)
        except (ValueError, OSError) as exc:
            return CheckReport(
                exercise.name, notebook, "error", f"the checks' report is not usable: {exc}"
            )
        # 0: all passed, 1: some failed. Anything else (interrupted, an internal error, a
        # signal) or fewer results than checks collected means a run that stopped part
        # way: its report is no verdict, and a grading run tries it again.
        if returncode not in (0, 1) or len(results) != collected:
            return CheckReport(
                exercise.name,
                notebook,
                "error",
                f"the checks stopped part way (pytest exit status "
                f"{returncode}, {len(results)} of {collected} checks)",
            )
    if not results:
        return CheckReport(exercise.name, notebook, "error", "no checks were collected")
    gpu_skips = [r for r in results if r.needs_gpu]
    status: Literal["passed", "failed", "skipped"]
    if any(r.outcome == "failed" for r in results):
        status, message = "failed", ""
    elif all(r.outcome == "skipped" for r in results):
        status, message = "skipped", results[0].message
    elif gpu_skips:  # a pass of the CPU checks alone is no pass of a GPU exercise
        status = "skipped"
        message = f"{len(gpu_skips)} of {len(results)} checks did not run: {gpu_skips[0].message}"
    else:
        status, message = "passed", ""
    return CheckReport(exercise.name, notebook, status, message, results)
