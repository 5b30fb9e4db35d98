"""Matrix multiply throughput: cuBLAS through CuPy in FP16, BF16, TF32 and FP32.

`matmul_throughput` times cupy.matmul (cuBLAS) on square matrices, each
precision checked against a float64 reference over a corner of the result.
BF16 goes through cublasGemmEx where this CuPy has no bfloat16 arrays; TF32
and FP32 are told apart by CuPy's cuBLAS compute type. A precision this GPU
or CuPy cannot run is reported as not supported.

The pure helpers at the top (matrix size, bfloat16 rounding) need no GPU;
the probe imports CuPy and NumPy only when it runs.
"""

from __future__ import annotations

import contextlib
import importlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from gpulab.probes.cuda import CudaDevice
from gpulab.probes.micro._common import (
    GiB,
    Outcome,
    WrongResult,
    measure,
    median_ms,
    prop,
    watch_telemetry,
)
from gpulab.probes.micro._compute import tflops
from gpulab.probes.model import ProbeResult, Reading, Table

__all__ = ["bf16_bits", "matmul_size", "matmul_throughput"]


# ---------------------------------------------------------------------------
# Pure helpers: no GPU needed, tested exactly.
# ---------------------------------------------------------------------------


def matmul_size(total_mem: int) -> int:
    """Matrix side for the matmul probe: 8192 with 8 GiB of device memory or more, else 4096."""
    return 8192 if total_mem >= 8 * GiB else 4096


def bf16_bits(float32_bits: Any) -> Any:
    """Round float32 bit patterns to bfloat16 bit patterns (nearest, ties to even).

    Works on a Python int or an unsigned integer array alike (NaN aside):
    keep the top 16 bits after adding half of the dropped part, plus one
    when the kept part is odd.
    """
    return (float32_bits + 0x7FFF + ((float32_bits >> 16) & 1)) >> 16


# ---------------------------------------------------------------------------
# The probe
# ---------------------------------------------------------------------------

_MATMUL_CONVENTION = "2·M·N·K FLOPs per multiply, dense"
_MATMUL_CASES: tuple[tuple[str, str, float], ...] = (
    # (name, label, largest error allowed, relative to the largest reference value)
    ("fp16", "FP16 matmul, FP32 accumulate", 5e-3),
    ("bf16", "BF16 matmul, FP32 accumulate", 2e-2),
    ("tf32", "TF32 matmul (FP32 in and out)", 5e-3),
    ("fp32", "FP32 matmul, no TF32", 1e-4),
)
_CHECK_SIDE = 64


class _NotSupported(Exception):
    """This case cannot run here; the message says why."""


@dataclass
class _Gemm:
    """One way of multiplying: enqueue it, and read inputs and output back as float64."""

    run: Callable[[], object]
    rows: Callable[[int], Any]  # A[:k, :] as float64
    cols: Callable[[int], Any]  # B[:, :k] as float64
    out: Callable[[int], Any]  # C[:k, :k] as float64
    how: str


def matmul_throughput() -> ProbeResult:
    """cuBLAS through CuPy at 8192³ in FP16, BF16, TF32 and FP32, checked against float64."""
    return measure("matmul_throughput", _matmul_throughput)


def _matmul_throughput(device: CudaDevice) -> Outcome:
    cp = device.cupy
    n = matmul_size(prop(device, "totalGlobalMem"))
    rng = cp.random.RandomState(20261202)
    a32 = rng.uniform(-1.0, 1.0, size=(n, n), dtype=cp.float32)
    b32 = rng.uniform(-1.0, 1.0, size=(n, n), dtype=cp.float32)
    makers = {"fp16": _gemm_fp16, "bf16": _gemm_bf16, "tf32": _gemm_tf32, "fp32": _gemm_fp32}
    found: dict[str, tuple[float, float, str]] = {}  # name -> (ms, error, how)
    skipped: dict[str, str] = {}
    with watch_telemetry(device) as watch:
        for name, _, tolerance in _MATMUL_CASES:
            try:
                with makers[name](device, a32, b32) as gemm:
                    ms = _time_adaptive(gemm.run)
                    error = _relative_error(cp, gemm)
            except _NotSupported as exc:
                skipped[name] = str(exc)
                continue
            if not error <= tolerance:
                raise WrongResult(
                    f"{name}: largest error {error:.2e} of the largest value, "
                    f"more than {tolerance:.0e} ({gemm.how})"
                )
            found[name] = (ms, error, gemm.how)
    flops = 2.0 * n**3
    readings: list[Reading] = []
    for name, label, _ in _MATMUL_CASES:
        key = f"{name}_tflops"
        if name in skipped:
            readings.append(Reading.not_supported(key, label, skipped[name]))
            continue
        ms, error, how = found[name]
        detail = f"{n}³, random inputs in [-1, 1); {how}; largest error {error:.1e} of max |C|"
        if name == "tf32" and "fp32" in found:
            fp32_ms, fp32_error, _ = found["fp32"]
            detail += (
                f"; TF32 engaged: {fp32_ms / ms:.1f}x the FP32 speed, error "
                f"{error / max(fp32_error, 1e-12):.0f}x FP32's"
            )
        readings.append(
            Reading(
                key, label, round(tflops(flops, ms), 1), "TFLOPS", _MATMUL_CONVENTION, detail=detail
            )
        )
    rows = tuple(
        (
            name,
            n,
            round(found[name][0], 3),
            round(tflops(flops, found[name][0]), 1),
            float(f"{found[name][1]:.2e}"),
        )
        for name, _, _ in _MATMUL_CASES
        if name in found
    )
    table = Table(
        f"cuBLAS matmul, {n} x {n} x {n}",
        ("precision", "size", "time per multiply", "throughput", "largest error"),
        rows,
        ("", "M = N = K", "ms", "TFLOPS", "of max |C|"),
    )
    summary = ", ".join(f"{name} {tflops(flops, found[name][0]):.0f}" for name in found)
    return Outcome(f"{summary} TFLOPS ({_MATMUL_CONVENTION})", readings, [table], watch.telemetry)


def _time_adaptive(run: Callable[[], object], target_ms: float = 40.0) -> float:
    """Median milliseconds per call, with enough calls per event pair to fill `target_ms`."""
    from gpulab.kernels import launch

    first = median_ms(launch.time_ms(run, iters=1, repeats=1, warmup=2))
    iters = max(1, min(50, round(target_ms / max(first, 1e-3))))
    return median_ms(launch.time_ms(run, iters=iters, repeats=5, warmup=0))


def _relative_error(cp: Any, gemm: _Gemm) -> float:
    """Largest |C - A·B| over a corner of C, against float64, relative to the largest |A·B|."""
    k = _CHECK_SIDE
    reference = gemm.rows(k) @ gemm.cols(k)
    got = gemm.out(k)
    if not bool(cp.all(cp.isfinite(got))):
        return math.inf
    return float(cp.max(cp.abs(got - reference)) / cp.max(cp.abs(reference)))


def _plain(a: Any, b: Any, out: Any, how: str) -> _Gemm:
    """cupy.matmul of two CuPy arrays into `out`."""
    cupy = importlib.import_module("cupy")

    return _Gemm(
        run=lambda: cupy.matmul(a, b, out=out),
        rows=lambda k: a[:k].astype("float64"),
        cols=lambda k: b[:, :k].astype("float64"),
        out=lambda k: out[:k, :k].astype("float64"),
        how=how,
    )


@contextlib.contextmanager
def _gemm_fp16(device: CudaDevice, a32: Any, b32: Any) -> Iterator[_Gemm]:
    cp = device.cupy
    a, b = a32.astype(cp.float16), b32.astype(cp.float16)
    yield _plain(
        a, b, cp.empty_like(a), "cupy.matmul on float16 arrays (cuBLAS GemmEx, FP32 accumulate)"
    )


@contextlib.contextmanager
def _gemm_bf16(device: CudaDevice, a32: Any, b32: Any) -> Iterator[_Gemm]:
    """cupy.matmul on bfloat16 arrays where CuPy has them, else cuBLAS GemmEx directly."""
    cp = device.cupy
    native: _Gemm | None = None
    try:
        ml_dtypes = importlib.import_module("ml_dtypes")

        a, b = a32.astype(ml_dtypes.bfloat16), b32.astype(ml_dtypes.bfloat16)
        out = cp.matmul(a, b)
        native = _plain(a, b, out, "cupy.matmul on bfloat16 arrays (ml_dtypes)")
    except Exception:  # no ml_dtypes, or a CuPy without bfloat16: call cuBLAS ourselves
        native = None
    if native is not None:
        yield native
        return
    yield _gemm_ex_bf16(device, a32, b32)


def _gemm_ex_bf16(device: CudaDevice, a32: Any, b32: Any) -> _Gemm:
    numpy = importlib.import_module("numpy")

    cp = device.cupy
    if prop(device, "major") < 8:
        raise _NotSupported("BF16 Tensor Core matmul needs compute capability 8.0 or later")
    try:
        cublas = importlib.import_module("cupy_backends.cuda.libs.cublas")
    except ImportError as exc:
        raise _NotSupported(
            f"CuPy has no bfloat16 arrays and its cuBLAS module is missing: {exc}"
        ) from exc
    n = a32.shape[0]
    a = bf16_bits(a32.view(cp.uint32)).astype(cp.uint16)
    b = bf16_bits(b32.view(cp.uint32)).astype(cp.uint16)
    c = cp.empty_like(a)
    one, zero = numpy.array(1.0, dtype=numpy.float32), numpy.array(0.0, dtype=numpy.float32)
    bf16 = int(getattr(cp.cuda.runtime, "CUDA_R_16BF", 14))
    compute = int(getattr(cublas, "CUBLAS_COMPUTE_32F", 68))
    algo = int(getattr(cublas, "CUBLAS_GEMM_DEFAULT_TENSOR_OP", 99))

    def run() -> None:
        handle = cp.cuda.device.get_cublas_handle()
        # Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: pass B first.
        cublas.gemmEx(
            handle,
            0,
            0,
            n,
            n,
            n,
            one.ctypes.data,
            b.data.ptr,
            bf16,
            n,
            a.data.ptr,
            bf16,
            n,
            zero.ctypes.data,
            c.data.ptr,
            bf16,
            n,
            compute,
            algo,
        )

    def widen(bits: Any) -> Any:
        return (bits.astype(cp.uint32) << 16).view(cp.float32).astype(cp.float64)

    return _Gemm(
        run=run,
        rows=lambda k: widen(a[:k]),
        cols=lambda k: widen(b[:, :k]),
        out=lambda k: widen(c[:k, :k]),
        how="cuBLAS cublasGemmEx on bfloat16 data (CUDA_R_16BF, CUBLAS_COMPUTE_32F): "
        "this CuPy has no bfloat16 arrays",
    )


@contextlib.contextmanager
def _compute_type(device: CudaDevice, wanted: str) -> Iterator[str]:
    """Set CuPy's cuBLAS compute type for float32 for the duration; yield how it was done."""
    numpy = importlib.import_module("numpy")

    try:
        linalg = importlib.import_module("cupy._core._routines_linalg")

        previous = linalg.get_compute_type(numpy.float32)
        value = int(getattr(linalg, f"COMPUTE_TYPE_{wanted}", {"TF32": 7, "DEFAULT": 1}[wanted]))
        linalg.set_compute_type(numpy.float32, value)
    except Exception as exc:  # a CuPy without this switch
        raise _NotSupported(f"CuPy's compute-type switch is not available ({exc})") from exc
    try:
        yield (
            f"cupy.matmul on float32 with CuPy's compute type COMPUTE_TYPE_{wanted} "
            "(set through cupy._core._routines_linalg.set_compute_type, "
            + (
                "what CUPY_TF32=1 selects: cuBLAS CUBLAS_COMPUTE_32F_FAST_TF32)"
                if wanted == "TF32"
                else "so TF32 stays off whatever CUPY_TF32 says)"
            )
        )
    finally:
        linalg.set_compute_type(numpy.float32, previous)


@contextlib.contextmanager
def _gemm_tf32(device: CudaDevice, a32: Any, b32: Any) -> Iterator[_Gemm]:
    if prop(device, "major") < 8:
        raise _NotSupported("TF32 needs compute capability 8.0 or later")
    with _compute_type(device, "TF32") as how:
        yield _plain(a32, b32, device.cupy.empty_like(a32), how)


@contextlib.contextmanager
def _gemm_fp32(device: CudaDevice, a32: Any, b32: Any) -> Iterator[_Gemm]:
    out = device.cupy.empty_like(a32)
    with contextlib.ExitStack() as stack:
        try:
            how = stack.enter_context(_compute_type(device, "DEFAULT"))
        except _NotSupported:
            how = "cupy.matmul on float32 (CuPy's default compute type)"
        yield _plain(a32, b32, out, how)
