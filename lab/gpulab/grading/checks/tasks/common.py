"""Helpers for the kernel tasks, run inside the kernel worker (never by learner Python).

They turn every way a learner's kernel can fail into a `TaskError` with a kind
and a message in the learner's terms: NVRTC's log with line numbers of the
learner's source, a refused launch with the configuration that was refused, a
fault with what it usually means. CuPy is imported when a helper needs it.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Sequence
from typing import Any

from gpulab.grading.checks.protocol import Failure

__all__ = [
    "TaskError",
    "classify",
    "compile_kernel",
    "cupy",
    "launch",
    "launch_shape",
    "mismatch",
    "numpy",
    "plain",
    "synchronize",
]

_NAME = re.compile(r"[A-Za-z_]\w*\Z")
_LOG_PATH = re.compile(r"[^\s:()]*\.cu\((\d+)\)")
_FAULT_HINT = (
    "an index past the end of an array (check i < n before every access), or a "
    "shared-memory index past the tile"
)


class TaskError(Exception):
    """Why a learner's kernel gave no answer (`kind`: `gpulab.grading.checks.protocol.Failure`)."""

    def __init__(self, kind: Failure, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def cupy() -> Any:
    return importlib.import_module("cupy")


def numpy() -> Any:
    """NumPy, for the exact C types of scalar kernel arguments (np.int32, np.uint64)."""
    return importlib.import_module("numpy")


def classify(exc: BaseException) -> tuple[Failure, str]:
    """(kind, message) for an exception a task did not expect: a GPU fault or a crash."""
    text = f"{type(exc).__name__}: {exc}"
    if "cudaError" in text or "CUDA_ERROR" in text:
        return "gpu-fault", f"the kernel failed on the GPU ({exc}): usually {_FAULT_HINT}"
    return "crashed", f"the kernel worker failed: {text}"


def compile_kernel(source: str, name: str, options: Sequence[str] = ()) -> Any:
    """The learner's kernel `name`, compiled by NVRTC from `source` (a cupy.RawKernel)."""
    cp = cupy()
    if not _NAME.match(name):
        raise ValueError(f"not a kernel name: {name!r}")
    if f"{name}" not in source:
        raise TaskError(
            "missing",
            f"your source does not mention a kernel named {name}: "
            f'define it as extern "C" __global__ void {name}(...)',
        )
    try:
        module = cp.RawModule(code=source, options=("--std=c++17", *options))
        return module.get_function(name)
    except cp.cuda.compiler.CompileException as exc:
        log = _LOG_PATH.sub(lambda m: f"line {m.group(1)}", str(exc)).strip()
        lines = [line for line in log.splitlines() if line.strip()][:12]
        raise TaskError(
            "compile", "your kernel did not compile:\n" + "\n".join(f"    {line}" for line in lines)
        ) from None
    except cp.cuda.driver.CUDADriverError as exc:
        if "NOT_FOUND" in str(exc):
            raise TaskError(
                "missing",
                f"your source compiled but has no kernel named {name}: "
                f'declare it as extern "C" __global__ void {name}(...) (without '
                'extern "C" its name is mangled)',
            ) from None
        raise


def launch_shape(config: Any, what: str) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(grid, block, dynamic shared bytes) from a learner's launch configuration.

    Accepted: ``{"blocks": B, "threads": T}`` or ``{"grid": [x, y, z], "block":
    [x, y, z]}`` (one to three numbers each), with an optional ``"shared_mem"``.
    """
    if not isinstance(config, dict):
        raise TaskError(
            "config",
            f"{what}: the launch configuration should be a dict like "
            f'{{"blocks": 4, "threads": 256}}, not {config!r:.80}',
        )

    def dims(value: Any, key: str) -> tuple[int, ...]:
        items = value if isinstance(value, list | tuple) else [value]
        if not 1 <= len(items) <= 3 or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in items
        ):
            raise TaskError(
                "config",
                f"{what}: {key} should be a whole number or a list of "
                f"one to three, not {value!r:.80}",
            )
        if any(v < 1 for v in items):
            raise TaskError(
                "config",
                f"{what}: {key} = {value!r}: every dimension must be at "
                "least 1 (an empty grid launches nothing)",
            )
        return tuple(items)

    if "grid" in config or "block" in config:
        grid, block = dims(config.get("grid"), "grid"), dims(config.get("block"), "block")
    else:
        grid, block = dims(config.get("blocks"), "blocks"), dims(config.get("threads"), "threads")
    shared = config.get("shared_mem", 0)
    if not isinstance(shared, int) or isinstance(shared, bool) or shared < 0:
        raise TaskError(
            "config", f"{what}: shared_mem should be a number of bytes, not {shared!r:.80}"
        )
    if grid[0] >= 2**31 or any(v > 65535 for v in grid[1:]):
        raise TaskError(
            "config",
            f"{what}: the grid {grid} is larger than CUDA allows "
            "(2^31 - 1 blocks in x, 65535 in y and z)",
        )
    return grid, block, shared


def launch(kernel: Any, config: Any, args: Sequence[Any], what: str) -> None:
    """Enqueue one launch of the learner's kernel; a refused launch is a TaskError."""
    cp = cupy()
    grid, block, shared = launch_shape(config, what)
    if shared > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = shared
    try:
        kernel(grid, block, tuple(args), shared_mem=shared)
    except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError) as exc:
        threads = math.prod(block)
        hint = (
            f"a block has {threads} threads, more than the 1024 allowed"
            if threads > 1024
            else f"grid {grid}, block {block}, {shared} bytes of dynamic shared memory"
        )
        raise TaskError("launch", f"{what}: CUDA refused the launch ({exc}): {hint}") from None


def synchronize(what: str) -> None:
    """Wait for the GPU; a kernel fault becomes a TaskError of kind "gpu-fault"."""
    cp = cupy()
    try:
        cp.cuda.get_current_stream().synchronize()
    except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError) as exc:
        raise TaskError(
            "gpu-fault",
            f"{what}: your kernel failed on the GPU ({exc}): usually "
            f"{_FAULT_HINT}. The GPU context is lost after such a fault, so "
            "nothing after it could run",
        ) from None


def plain(value: float) -> float | str:
    """A float as JSON allows it: NaN and infinities become text."""
    return value if math.isfinite(value) else str(value)


def mismatch(
    got: Any, want: Any, *, rtol: float = 0.0, atol: float = 0.0, scale: Any = None
) -> dict[str, Any]:
    """Where two device arrays differ: counts and the first difference, as plain data.

    Elements differ when |got - want| > atol + rtol * scale (scale defaults to |want|);
    NaN in `got` (the untouched marker) always differs and is also counted apart.
    """
    cp = cupy()
    got64, want64 = got.astype(cp.float64).ravel(), want.astype(cp.float64).ravel()
    size = cp.abs(want64) if scale is None else scale.astype(cp.float64).ravel()
    bad = ~(cp.abs(got64 - want64) <= atol + rtol * size)
    wrong = int(cp.count_nonzero(bad))
    first = None
    if wrong:
        index = int(cp.argmax(bad))
        first = {
            "index": index,
            "got": plain(float(got64[index])),
            "want": plain(float(want64[index])),
        }
    return {
        "size": int(got64.size),
        "wrong": wrong,
        "untouched": int(cp.count_nonzero(cp.isnan(got64))),
        "first_wrong": first,
    }
