"""compute-sanitizer on a learner's kernel: memcheck for bad accesses, racecheck for races.

A check asks for it with ``params["sanitize"] = {"tools": [...], "cases":
[...]}``. The task (in the kernel worker) then runs, for each tool, a second
worker under ``compute-sanitizer --tool TOOL`` that launches the learner's
kernel once per small case with ``params["plain"]``: inputs made on the host,
each array a separate allocation of its exact size (CuPy's memory pool off,
so memcheck sees the ends of every array), and no CuPy kernel of its own, so
that everything the tool reports is the learner's. The kernel is compiled
with line information, so reports name lines of the learner's source.

What comes back is plain data per tool: whether it ran, its error count and
its first report. `verdict` turns that into a skip (the tool is missing or
could not run here: never a pass) or a problem in the learner's terms.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gpulab.grading.checks.protocol import Failure, failure_named
from gpulab.grading.checks.tasks.common import TaskError, cupy, launch, numpy, synchronize

__all__ = [
    "NOT_AVAILABLE",
    "TOOLS",
    "find_sanitizer",
    "parse",
    "plain_launches",
    "under_sanitizer",
    "verdict",
]

NOT_AVAILABLE = "not run: compute-sanitizer is not available here"
TOOLS = ("memcheck", "racecheck")
TOOL_TIMEOUT = 60.0  # seconds per tool: small cases, but the tool starts slowly
_PASSED_ON: tuple[Failure, ...] = ("compile", "missing", "config", "launch", "rule")  # its own
_MEMCHECK_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+) errors?")
_RACECHECK_SUMMARY = re.compile(
    r"RACECHECK SUMMARY:\s*(\d+) hazards? displayed\s*\((\d+) errors?,\s*(\d+) warnings?\)"
)
_REPORT_START = re.compile(
    r"Invalid|Race reported|out of bounds|Misaligned|Barrier|"
    r"Program hit|Hazard|Error:"
)
_CONTINUED = re.compile(r"^(at |and |by thread|Address|in |Write |Read )")
_SKIPPED_LINES = re.compile(
    r"SUMMARY|COMPUTE-SANITIZER|Saved host backtrace|Host Frame|"
    r"Process ID|Target application"
)


def find_sanitizer() -> str | None:
    """The compute-sanitizer program: on PATH, else in the CUDA toolkit's folder; or None."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for base in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if not base:
            continue
        for candidate in (
            Path(base) / "bin" / "compute-sanitizer",
            Path(base) / "compute-sanitizer" / "compute-sanitizer",
        ):
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def under_sanitizer(task: str, source: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run the kernel of `task` under each tool asked for; the findings as plain data."""
    spec = params["sanitize"]
    program = find_sanitizer()
    if program is None:
        return {"sanitizer": {"ran": False, "reason": NOT_AVAILABLE, "tools": []}}
    tools = []
    for tool in spec.get("tools", TOOLS):
        if tool not in TOOLS:
            raise ValueError(f"not a sanitizer tool this task runs: {tool!r}")
        found = _run_tool(
            program,
            tool,
            task,
            source,
            spec["cases"],
            int(params["seed"]),
            float(spec.get("timeout", TOOL_TIMEOUT)),
        )
        answer = found.pop("answer")
        if answer and not answer.get("ok") and answer.get("kind") in _PASSED_ON:
            raise TaskError(failure_named(answer["kind"]), str(answer.get("message", "")))
        tools.append(found)
        if not found["ran"]:
            break  # the next tool would not run either
    return {"sanitizer": {"ran": True, "tools": tools}}


def _run_tool(
    program: str, tool: str, task: str, source: str, cases: list[Any], seed: int, timeout: float
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="gpulab-sanitizer-") as folder:
        log, reply = Path(folder) / "report.txt", Path(folder) / "reply.json"
        argv = [
            program,
            "--tool",
            tool,
            "--report-api-errors",
            "no",
            "--log-file",
            str(log),
            sys.executable,
            "-m",
            "gpulab.grading.checks.kernel_worker",
            str(reply),
        ]
        job = json.dumps(
            {
                "task": task,
                "source": source,
                "params": {"seed": seed, "plain": True, "cases": cases},
            }
        )
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=folder,
            # a process group, not a session: the sandbox refuses setsid (its seccomp filter)
            process_group=0,
        )
        try:
            _, err = process.communicate(job.encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return {
                "tool": tool,
                "ran": False,
                "answer": None,
                "reason": f"not run: compute-sanitizer's {tool} did not finish within "
                f"{timeout:g} s here",
            }
        text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
        try:
            data = json.loads(reply.read_text(encoding="utf-8")) if reply.is_file() else None
        except ValueError:
            data = None
    answer: dict[str, Any] | None = data if isinstance(data, dict) else None
    found = parse(tool, text)
    # It judged the kernel only if it printed its summary and the kernel ran to the end, or
    # failed the way an access the tool stopped fails (a fault); anything else (a device the
    # tool does not support, an option it does not know) says nothing about the kernel.
    reached = answer is not None and (bool(answer.get("ok")) or answer.get("kind") == "gpu-fault")
    ran = found["errors"] is not None and reached
    result: dict[str, Any] = {"tool": tool, **found, "ran": ran, "answer": answer}
    if not ran:
        why = (
            (answer or {}).get("message")
            or _last_line(text)
            or _last_line(err.decode(errors="replace"))
            or f"exit status {process.returncode}"
        )
        result["reason"] = (
            f"not run: compute-sanitizer's {tool} could not run the kernel here ({why[:300]})"
        )
    return result


def _last_line(text: str) -> str:
    lines = [line.strip("= \t") for line in text.strip().splitlines()]
    lines = [line for line in lines if line]
    return lines[-1] if lines else ""


def parse(tool: str, text: str) -> dict[str, Any]:
    """A tool's report in numbers: ``errors`` (None when it printed no summary), ``warnings``
    (racecheck), and ``first``, its first report in a few cleaned lines."""
    errors: int | None = None
    warnings = 0
    if tool == "racecheck":
        summaries = _RACECHECK_SUMMARY.findall(text)
        if summaries:
            errors, warnings = int(summaries[-1][1]), int(summaries[-1][2])
    else:
        counts = _MEMCHECK_SUMMARY.findall(text)
        if counts:
            errors = int(counts[-1])
    return {"errors": errors, "warnings": warnings, "first": _first_report(text)}


def _first_report(text: str) -> str:
    """The tool's first report (a header line and up to four lines that go on with it)."""
    kept: list[str] = []
    for raw in text.splitlines():
        line = re.sub(r"^=+\s?", "", raw).strip()
        if not kept:
            if line and not _SKIPPED_LINES.search(line) and _REPORT_START.search(line):
                kept.append(line)
            continue
        if not line or _SKIPPED_LINES.search(line) or not _CONTINUED.match(line) or len(kept) == 5:
            break
        kept.append(line)
    cleaned = " ".join(kept)
    cleaned = re.sub(r"\S*\.cu:(\d+)", r"line \1", cleaned)
    cleaned = re.sub(r"\+0x[0-9a-fA-F]+", "", cleaned)
    return re.sub(r"\s+", " ", cleaned).strip()[:400]


def verdict(report: dict[str, Any]) -> tuple[str | None, str | None]:
    """(why the check cannot judge, what the tools found): a skip's reason, or a problem.

    A tool that found errors is a problem even when another could not run; a
    tool missing or unable to run is a skip with its reason, never a pass.
    """
    if not report.get("ran"):
        return str(report.get("reason") or NOT_AVAILABLE), None
    problems = [_finding(tool) for tool in report["tools"] if tool["ran"] and tool["errors"]]
    if problems:
        return None, " ".join(problems)
    skipped = [str(tool["reason"]) for tool in report["tools"] if not tool["ran"]]
    if skipped or not report["tools"]:
        return (skipped[0] if skipped else NOT_AVAILABLE), None
    return None, None


def _finding(tool: dict[str, Any]) -> str:
    count = int(tool["errors"])
    first = f" The first: {tool['first']}." if tool.get("first") else ""
    if tool["tool"] == "racecheck":
        return (
            f"compute-sanitizer's racecheck found {count} shared-memory race"
            f"{'s' if count != 1 else ''} in your kernel.{first} A thread read shared "
            "memory that another thread of its block writes, or overwrote what another "
            "still reads, with no __syncthreads() between the two: the result then "
            "depends on which warp runs first. Which barrier is missing?"
        )
    return (
        f"compute-sanitizer's memcheck found {count} invalid memory access"
        f"{'es' if count != 1 else ''} in your kernel.{first} An index reaches past the "
        "end of an array (or before its start): check every index against its bound "
        "before the access, loads as well as stores."
    )


def plain_launches(
    kernel: Any,
    cases: Sequence[dict[str, Any]],
    seed: int,
    args_of: Callable[[Any, Any, dict[str, Any]], tuple[Any, ...]],
) -> dict[str, Any]:
    """Inside compute-sanitizer: launch `kernel` once per case, on inputs made on the host.

    `args_of(numpy, rng, case)` gives the kernel's arguments as NumPy arrays
    (copied to separate device allocations of their exact size) and NumPy
    scalars. Nothing is compared here: the sanitizer is the judge.
    """
    cp, np = cupy(), numpy()
    cp.cuda.set_allocator(None)  # every array its own cudaMalloc: memcheck sees its ends
    rng = np.random.default_rng(seed)
    for number, case in enumerate(cases, start=1):
        what = f"{case.get('label', 'case')} ({number} of {len(cases)}, under compute-sanitizer)"
        args = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args_of(np, rng, case)]
        launch(kernel, case["config"], args, what)
        synchronize(what)
    return {"launched": len(cases)}
