"""Task `hgemm`: ``hgemm(const __half* A, const __half* B, float* C, int M, int N, int K)``.

C = A @ B on the Tensor Cores (exercise matmul-dtypes): A (M x K) and B (K x N)
are FP16, row-major; C (M x N) is FP32, row-major, the sums accumulated in FP32.
params: ``seed``; ``cases``, a list of ``{"label", "M", "N", "K", "config"}``
(with ``"repeat"`` and ``"busy"`` as `judge.repeat_case` reads them), every
launch on fresh random inputs (uniform in [-1, 1), rounded to FP16) in buffers
with NaN guard zones on both sides (a read past the end of A or B gives NaN),
C filled with NaN (elements never written show as untouched) and guarded
(writes past either end show as an overrun); optional ``timed``, ``{"M",
"N", "K", "config"}``, where the learner's kernel and cuBLAS (`cublasGemmEx`,
FP16 inputs, FP32 result, FP32 accumulation: the same product) are timed launch
by launch, in turn, each launch on fresh inputs after an L2 flush, and every
one of the learner's launches is checked.

Each result is compared with a float64 product of the same FP16 values
(products of FP16 numbers are exact in FP32, so only the summation rounds). An
element is right when |C - A @ B| <= `rtol`(K) * (|A| @ |B|): 8 sqrt(K) FP32
roundings of the sum of the magnitudes of its K products. A Tensor Core
summing in FP32 is far inside it, whatever its order of summation; a kernel
that accumulates in FP16 is off by about 2^-11 of the magnitudes on every
element, and a product left out or counted twice by far more. Each case also
reports ``worst``: the largest |C - A @ B| / (|A| @ |B|), which tells a rounding
error (FP16 sums: about 1e-4) from a wrong element (near 1, or NaN).

The kernel may include ``<mma.h>`` (WMMA) and ``<cuda_pipeline_primitives.h>``
(``__pipeline_memcpy_async``): `RULES`. NVRTC finds ``<mma.h>``'s own
``crt/mma.h`` only in a CUDA toolkit's include folder, which a pip-installed
CuPy lacks; `include_options` extracts the headers NVRTC carries
(``nvrtcInstallBundledHeaders``, CUDA 13.3 and later) or finds a toolkit.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from gpulab.grading.checks.reference.matmul_dtypes import CUDA_R_16F, CUDA_R_32F, gemm_ex
from gpulab.grading.checks.tasks import judge
from gpulab.grading.checks.tasks.common import (
    TaskError,
    compile_kernel,
    cupy,
    launch,
    mismatch,
    numpy,
    plain,
    synchronize,
)
from gpulab.grading.checks.tasks.rules import Rules, check_rules

__all__ = ["RULES", "include_options", "rtol", "run"]

KERNEL = "hgemm"
RULES = Rules(
    "matmul-dtypes",
    (
        (
            r"\b(cublas\w*|cutlass|cute)\b",
            "the Tensor Core kernel is yours: no library calls",
        ),
    ),
    includes=("mma.h", "cuda_pipeline_primitives.h"),
)
TOLERANCE = 8  # in units of sqrt(K) float32 roundings of the magnitude sum
HALF_GUARD = 2 * judge.GUARD  # halves on each side of an input: 16 KiB, views stay aligned
HALF_NAN = 0x7E5A  # an FP16 NaN with a payload: what a read past an input's end gives
_SELF_TEST = (40, 24, 56)  # the trusted cuBLAS call, checked once per timed run


def rtol(k: int) -> float:
    """The relative tolerance (of |A| @ |B|) for a sum of k FP16 products in FP32."""
    return TOLERANCE * math.sqrt(max(k, 64)) * 2.0**-24


# -- the headers -------------------------------------------------------------------------------
def include_options() -> tuple[str, ...]:
    """NVRTC options under which ``#include <mma.h>`` compiles: ``-I`` a folder holding
    ``crt/mma.h``, or nothing where none was found."""
    folder = _bundled_headers() or _toolkit_headers()
    return () if folder is None else (f"-I{folder}",)


@functools.cache
def _bundled_headers() -> str | None:
    """The CUDA headers NVRTC carries (CUDA 13.3 and later), extracted once per NVRTC
    version into a folder of this user's that nobody else may write."""
    try:
        pathfinder = importlib.import_module("cuda.pathfinder")
        found = pathfinder.load_nvidia_dynamic_lib("nvrtc")
        lib = ctypes.CDLL(found.abs_path or "libnvrtc.so")
    except Exception:  # no pathfinder, or no NVRTC it can name: then no bundled headers
        return None
    install = getattr(lib, "nvrtcInstallBundledHeaders", None)
    if install is None:
        return None  # an NVRTC before 13.3
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    folder = Path(tempfile.gettempdir()) / f"gpulab-nvrtc-{major.value}.{minor.value}-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        status = folder.stat()
        if status.st_uid != os.getuid() or status.st_mode & 0o022:
            folder = Path(tempfile.mkdtemp(prefix="gpulab-nvrtc-"))
    except OSError:
        return None
    install.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.POINTER(ctypes.c_char_p)]
    error = ctypes.c_char_p()
    if install(str(folder).encode(), 0, ctypes.byref(error)) != 0:  # 0: skip if installed
        return None
    return str(folder) if (folder / "crt" / "mma.h").is_file() else None


def _toolkit_headers() -> str | None:
    """A CUDA toolkit's include folder that holds crt/mma.h, or None."""
    candidates = [
        Path(base) / "include"
        for base in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda")
        if base
    ]
    try:
        pathfinder = importlib.import_module("cuda.pathfinder")
        nvcc = pathfinder.find_nvidia_header_directory("nvcc")
        if nvcc:
            candidates.append(Path(nvcc))
    except Exception:  # an older pathfinder, or none
        pass
    for folder in candidates:
        if (folder / "crt" / "mma.h").is_file():
            return str(folder)
    return None


def _compile(source: str) -> Any:
    """The learner's kernel, compiled with the headers WMMA needs."""
    headers = include_options()
    if not headers and "mma.h" in source:
        raise TaskError(
            "crashed",
            "the checks cannot compile WMMA code on this machine: NVRTC needs <mma.h>'s "
            "crt/mma.h, which only a CUDA toolkit's include folder or an NVRTC of CUDA 13.3 "
            "or later provides (not your kernel's fault: tell whoever runs the checks)",
        )
    return compile_kernel(source, KERNEL, headers)


# -- the task ----------------------------------------------------------------------------------
def run(source: str, params: dict[str, Any]) -> dict[str, Any]:
    check_rules(source, RULES)  # before anything compiles it
    cp = cupy()
    kernel = _compile(source)
    rng = cp.random.default_rng(int(params["seed"]))
    busy = judge.Busy() if any(case.get("busy") for case in params["cases"]) else None
    out: dict[str, Any] = {"cases": []}
    for case in params["cases"]:
        m, n, k = int(case["M"]), int(case["N"]), int(case["K"])
        what = f"{case.get('label', 'a case')} (M = {m}, N = {n}, K = {k})"

        def once(
            config: Any, beside: bool, shape: tuple[int, int, int] = (m, n, k), what: str = what
        ) -> dict[str, Any]:
            work = _prepare(rng, *shape)
            if beside and busy is not None:
                busy.start()
            _launch(kernel, config, work, what)
            synchronize(what)
            return {"config": config, **_check(work)}

        found = judge.repeat_case(case, once, busy)
        out["cases"].append({"label": case.get("label", ""), "M": m, "N": n, "K": k, **found})
    timed = params.get("timed")
    if timed:
        out["timed"] = _timed(kernel, rng, timed)
    return out


def _guarded_half(size: int) -> tuple[Any, Any]:
    """An FP16 buffer of HALF_GUARD + size + HALF_GUARD, NaN in the guards, and its middle."""
    cp = cupy()
    buffer = cp.empty(size + 2 * HALF_GUARD, dtype=cp.float16)
    buffer.view(cp.uint16).fill(HALF_NAN)
    return buffer, buffer[HALF_GUARD : HALF_GUARD + size]


def _prepare(rng: Any, m: int, n: int, k: int, *, judged: bool = True) -> dict[str, Any]:
    """Fresh FP16 A and B in guarded buffers, a NaN-filled guarded C, and (if `judged`) the
    float64 product and the scale of its rounding, from the inputs as they were before."""
    cp = cupy()
    work: dict[str, Any] = {"shape": (m, n, k)}
    for name, rows, cols in (("A", m, k), ("B", k, n)):
        _, flat = _guarded_half(rows * cols)
        flat[...] = (rng.random(rows * cols, dtype=cp.float32) * 2 - 1).astype(cp.float16)
        work[name] = flat.reshape(rows, cols)
    if judged:
        a64, b64 = work["A"].astype(cp.float64), work["B"].astype(cp.float64)
        work["want"] = a64 @ b64
        work["scale"] = cp.abs(a64) @ cp.abs(b64)
        del a64, b64
    work["C_buffer"], flat = judge.guarded(m * n)
    work["C"] = flat.reshape(m, n)
    return work


def _launch(kernel: Any, config: Any, work: dict[str, Any], what: str) -> None:
    np = numpy()
    m, n, k = work["shape"]
    launch(
        kernel,
        config,
        (work["A"], work["B"], work["C"], np.int32(m), np.int32(n), np.int32(k)),
        what,
    )


def _worst(got: Any, want: Any, scale: Any) -> float | str:
    """The largest |got - want| / scale over the elements (NaN if any is not finite)."""
    cp = cupy()
    error = cp.abs(got.astype(cp.float64) - want) / cp.maximum(scale, 1e-300)
    if not bool(cp.all(cp.isfinite(error))):
        return plain(math.nan)
    return float(cp.max(error)) if error.size else 0.0


def _check(work: dict[str, Any]) -> dict[str, Any]:
    found = {
        **mismatch(work["C"], work["want"], rtol=rtol(work["shape"][2]), scale=work["scale"]),
        **judge.overrun(work["C_buffer"], work["C"]),
        "worst": _worst(work["C"], work["want"], work["scale"]),
    }
    found["ok"] = not found["wrong"] and not found["overrun"]
    return found


def _cublas(work: dict[str, Any]) -> None:
    """cublasGemmEx on the same product: FP16 A and B, FP32 C, FP32 accumulation."""
    cp = cupy()
    m, n, k = work["shape"]
    gemm_ex(
        work["A"],
        work["B"],
        work["C"],
        m,
        n,
        k,
        int(getattr(cp.cuda.runtime, "CUDA_R_16F", CUDA_R_16F)),
        int(getattr(cp.cuda.runtime, "CUDA_R_32F", CUDA_R_32F)),
    )


def _self_test(rng: Any) -> None:
    """The trusted cuBLAS call, on a small product, against float64: a mistake of ours in it
    must not pass for a speed."""
    work = _prepare(rng, *_SELF_TEST)
    _cublas(work)
    synchronize("the checks' own cuBLAS call")
    found = _check(work)
    if not found["ok"]:
        raise RuntimeError(f"the checks' own cuBLAS product is wrong: {found}")


def _timed(kernel: Any, rng: Any, timed: dict[str, Any]) -> dict[str, Any]:
    m, n, k = int(timed["M"]), int(timed["N"]), int(timed["K"])
    what = f"the timed run (M = {m}, N = {n}, K = {k})"
    config = timed["config"]
    _self_test(rng)
    timing = judge.time_each(
        {
            "yours": judge.Contender(
                lambda: _prepare(rng, m, n, k),
                lambda work: _launch(kernel, config, work, what),
                _check,
            ),
            "cublas": judge.Contender(lambda: _prepare(rng, m, n, k, judged=False), _cublas),
        },
        what,
        rounds=9,
    )
    ms = timing["ms"]
    flops = 2.0 * m * n * k
    return {
        "M": m,
        "N": n,
        "K": k,
        "config": config,
        "ms": ms,
        "tflops": {name: flops / (value * 1e-3) / 1e12 for name, value in ms.items()},
        "ratio": ms["cublas"] / ms["yours"],
        "reference": "cuBLAS cublasGemmEx (FP16 in, FP32 out, FP32 accumulation)",
        **judge.summary(timing["checks"]["yours"]),
    }
