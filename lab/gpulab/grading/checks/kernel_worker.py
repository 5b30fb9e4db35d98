"""The kernel worker: compiles and runs one learner kernel for one trusted task.

Started by `gpulab.grading.checks.gpu.run_kernel` as ``python -m
gpulab.grading.checks.kernel_worker FD`` in a fresh process. It reads one JSON job
from stdin, ``{"task": ..., "source": ..., "params": {...}}``, runs
``gpulab.grading.checks.tasks.<task>.run(source, params)`` and writes one line of
JSON to file descriptor FD: ``{"ok": true, "value": {...}}`` or ``{"ok":
false, "kind": ..., "message": ...}``. It imports and runs no learner Python;
the only learner code here is the CUDA C the task compiles. A task that runs
the kernel again under compute-sanitizer starts another worker, with a file
path in place of FD (`gpulab.grading.checks.tasks.sanitize`).
"""

from __future__ import annotations

import importlib
import json
import os
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = args[0]
    out = (
        os.fdopen(int(target), "w", encoding="utf-8")
        if target.isdigit()
        else open(target, "w", encoding="utf-8")  # noqa: SIM115 (closed by the exit)
    )
    from gpulab.grading.checks.tasks.common import TaskError, classify

    try:
        job = json.loads(sys.stdin.read())
        task = importlib.import_module(f"gpulab.grading.checks.tasks.{job['task']}")
        reply = {"ok": True, "value": task.run(job["source"], job["params"])}
    except TaskError as exc:
        reply = {"ok": False, "kind": exc.kind, "message": str(exc)}
    except Exception as exc:  # whatever the GPU did, the trusted side gets an answer
        kind, message = classify(exc)
        reply = {"ok": False, "kind": kind, "message": message}
    out.write(json.dumps(reply, allow_nan=False) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
