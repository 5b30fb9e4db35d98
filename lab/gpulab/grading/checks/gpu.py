"""Kernel answers on the trusted side: run learner CUDA C in a fresh worker, and GPU facts.

A kernel answer is plain data: CUDA C source text and launch configurations
(numbers). `run_kernel` hands them to ``python -m gpulab.grading.checks.kernel_worker``,
a new process in its own session that runs no learner Python: it compiles the
source with NVRTC, generates the task's secret inputs, launches, compares with
its own reference, times with CUDA events, and answers one line of JSON on a
pipe. Which task it runs is trusted code in `gpulab.grading.checks.tasks`. A kernel
that faults (its CUDA context is lost) or never ends (the process is killed
with its group) costs only that worker.

`gpu_missing()` says why checks marked ``gpu`` cannot run here (None when they
can); `device_facts()` gives the few device properties a check passes to the
learner's launch-configuration function; `sanitize_kernel` runs a kernel under
compute-sanitizer (memcheck, racecheck) and says what it found, or why it
could not run (a skip, never a pass).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpulab.grading.checks.learner import MAX_REPLY_BYTES, LearnerError, read_reply
from gpulab.grading.checks.protocol import Failure, failure_named
from gpulab.grading.sandbox import kept_env, spawn
from gpulab.grading.sandbox.jobtime import Starved

__all__ = [
    "MAX_SOURCE_BYTES",
    "KernelAnswerError",
    "SanitizerVerdict",
    "device_facts",
    "gpu_missing",
    "new_seed",
    "run_kernel",
    "sanitize_kernel",
    "sanitizer_missing",
]

MAX_SOURCE_BYTES = 256 * 1024
_TASK = re.compile(r"[a-z][a-z0-9_]*\Z")


class KernelAnswerError(LearnerError):
    """The learner's kernel did not give an answer: it did not compile, launch or finish.

    `kind` is one of "source" (not CUDA C text), "rule" (it breaks a rule of kernel
    answers, `gpulab.grading.checks.tasks.rules`: refused before compiling), "compile",
    "missing" (no kernel of that name), "config" (an unusable launch configuration),
    "launch" (CUDA refused the launch), "gpu-fault" (the kernel failed on the GPU),
    "timeout", "crashed" or "busy" (`gpulab.grading.checks.protocol`).
    """

    def __init__(self, kind: Failure, message: str) -> None:
        super().__init__(message, kind)


def new_seed() -> int:
    """A secret seed for a task's random inputs, drawn afresh for every run."""
    return secrets.randbits(63)


def run_kernel(
    task: str, source: Any, params: dict[str, Any], *, timeout: float = 120.0
) -> dict[str, Any]:
    """Run trusted task `task` on the learner's CUDA C `source`; the task's findings.

    `params` is plain JSON data (sizes, launch configurations, the seed). Raises
    `KernelAnswerError` when the kernel does not compile, launch or finish.
    """
    if (
        not _TASK.match(task)
        or importlib.util.find_spec(f"gpulab.grading.checks.tasks.{task}") is None
    ):
        raise ValueError(f"no kernel task named {task!r} in gpulab.grading.checks.tasks")
    if not isinstance(source, str):
        raise KernelAnswerError(
            "source", f"the kernel source should be a string of CUDA C, not {type(source).__name__}"
        )
    if len(source.encode()) > MAX_SOURCE_BYTES:
        raise KernelAnswerError(
            "source",
            f"the kernel source is over {MAX_SOURCE_BYTES // 1024} KiB: is it really one kernel?",
        )
    job = json.dumps({"task": task, "source": source, "params": params}, allow_nan=False)
    env = kept_env()
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    reader, writer = os.pipe()
    with tempfile.TemporaryDirectory(prefix="gpulab-kernel-") as folder:
        try:
            worker = spawn(
                [sys.executable, "-m", "gpulab.grading.checks.kernel_worker", str(writer)],
                stderr=subprocess.PIPE,
                pass_fds=(writer,),
                cwd=folder,
                env=env,
                gpu=True,
            )
        finally:
            os.close(writer)
        process = worker.process
        try:
            assert process.stdin is not None
            process.stdin.write(job.encode())
            process.stdin.close()
            line, _ = read_reply(reader, b"", timeout, MAX_REPLY_BYTES, job=process.pid)
        except Starved as exc:
            raise KernelAnswerError(
                "busy",
                f"the grading machine was too busy to run your kernel's checks: {exc}. "
                "This is no verdict on it: the next grading run tries again",
            ) from None
        except TimeoutError:
            raise KernelAnswerError(
                "timeout",
                f"your kernel did not finish within {timeout:g} s and its process "
                "was stopped: is there a loop whose index never reaches its end, or a "
                "__syncthreads() that some threads of a block never reach?",
            ) from None
        except EOFError:
            raise KernelAnswerError("crashed", _crash_text(process)) from None
        except (OverflowError, BrokenPipeError) as exc:
            raise KernelAnswerError("crashed", f"the kernel worker failed: {exc!r}") from None
        finally:
            os.close(reader)
            worker.close()
            if process.stderr is not None:
                process.stderr.close()
    reply = json.loads(line)
    if not reply.get("ok"):
        try:
            kind = failure_named(reply.get("kind"))
        except ValueError as exc:
            raise KernelAnswerError(
                "crashed", f"the kernel worker sent a malformed answer ({exc})"
            ) from None
        raise KernelAnswerError(kind, str(reply.get("message", "")))
    value = reply.get("value")
    if not isinstance(value, dict):
        raise KernelAnswerError("crashed", "the kernel worker sent a malformed answer")
    return value


@dataclass(frozen=True)
class SanitizerVerdict:
    """What compute-sanitizer said of a kernel: why it could not judge it (`skipped`, a
    reason to skip the check with, never a pass), or what it found (`problem`, None when
    the kernel is clean)."""

    skipped: str | None = None
    problem: str | None = None


def sanitizer_missing() -> str | None:
    """Why compute-sanitizer cannot run here (no GPU, or no compute-sanitizer), or None."""
    from gpulab.grading.checks.tasks.sanitize import NOT_AVAILABLE, find_sanitizer

    return gpu_missing() or (None if find_sanitizer() else NOT_AVAILABLE)


def sanitize_kernel(
    task: str,
    source: Any,
    cases: list[dict[str, Any]],
    tools: Sequence[str] = ("memcheck", "racecheck"),
    *,
    timeout: float = 170.0,
) -> SanitizerVerdict:
    """Run the learner's kernel of `task` on small `cases` under each compute-sanitizer tool.

    The rules of kernel answers, compile errors and refused launches raise
    `KernelAnswerError` as in `run_kernel`.
    """
    from gpulab.grading.checks.tasks.sanitize import verdict

    missing = sanitizer_missing()
    if missing:
        return SanitizerVerdict(skipped=missing)
    found = run_kernel(
        task,
        source,
        {"seed": new_seed(), "cases": [], "sanitize": {"tools": list(tools), "cases": cases}},
        timeout=timeout,
    )
    skipped, problem = verdict(found.get("sanitizer") or {})
    return SanitizerVerdict(skipped, problem)


def _crash_text(process: subprocess.Popen[bytes]) -> str:
    tail = b""
    if process.stderr is not None:
        try:
            process.wait(timeout=5)
            tail = process.stderr.read()[-2000:]
        except (subprocess.TimeoutExpired, OSError, ValueError):
            pass
    last = tail.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
    return f"the kernel worker ended without an answer ({last[0]})"


def gpu_missing() -> str | None:
    """Why CUDA checks cannot run on this machine, or None when they can."""
    return _gpu_missing()


@functools.cache
def _gpu_missing() -> str | None:
    # The first thing missing, as the CUDA probes say it: the driver (NVML needs no CuPy),
    # then CuPy, then a device.
    from gpulab.probes.cuda import cannot_run

    why = cannot_run("cuda")
    return None if why is None else f"needs an NVIDIA GPU ({why.message})"


@functools.cache
def device_facts() -> dict[str, Any]:
    """The current device's name, SM count and launch limits, as plain data."""
    cupy = importlib.import_module("cupy")
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"]
    return {
        "name": name.decode(errors="replace") if isinstance(name, bytes) else str(name),
        "sm_count": int(props["multiProcessorCount"]),
        "compute_capability": f"{props['major']}.{props['minor']}",
        "max_threads_per_block": int(props["maxThreadsPerBlock"]),
        "max_threads_per_sm": int(props["maxThreadsPerMultiProcessor"]),
        "shared_mem_per_block": int(props["sharedMemPerBlock"]),
        "shared_mem_per_block_optin": int(props["sharedMemPerBlockOptin"]),
        "warp_size": int(props["warpSize"]),
    }
