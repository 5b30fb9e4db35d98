"""Arithmetic microbenchmarks: warp divergence, the FP32 FMA peak, matrix multiply.

`warp_divergence` times branches that split a warp against the same work
on one path; `fp32_peak` runs independent FMA chains on every lane against
the peak at the SM clock seen; `matmul_throughput` times cuBLAS through CuPy
in FP16, BF16, TF32 and FP32, each checked against a float64 reference.

The pure helpers at the top (TFLOPS, matrix size, FP32 lanes per SM, bfloat16
rounding) need no GPU; the probes import CuPy and NumPy only when they run.
How every microbenchmark checks, times and reports its work is described in
`gpulab.probes.micro_common`.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from gpulab.probes.cuda import CudaDevice
from gpulab.probes.micro_common import (
    GiB,
    _check_equal,
    _full_grid,
    _median_ms,
    _Outcome,
    _prop,
    _run,
    _watch,
    _WrongResult,
    ratio,
)
from gpulab.probes.model import ProbeResult, Reading, Table

__all__ = [
    "bf16_bits",
    "fp32_lanes_per_sm",
    "fp32_peak",
    "matmul_size",
    "matmul_throughput",
    "tflops",
    "warp_divergence",
]


# ---------------------------------------------------------------------------
# Pure helpers: no GPU needed, tested exactly.
# ---------------------------------------------------------------------------


def tflops(flops: float, ms: float) -> float:
    """Floating-point operations per millisecond as TFLOPS (10^12 per second)."""
    return flops / (ms * 1e-3) / 1e12


def matmul_size(total_mem: int) -> int:
    """Matrix side for the matmul probe: 8192 with 8 GiB of device memory or more, else 4096."""
    return 8192 if total_mem >= 8 * GiB else 4096


# FP32 lanes per SM by compute capability (CUDA C Programming Guide, arithmetic throughput).
_FP32_LANES = {(7, 0): 64, (7, 2): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128,
               (8, 9): 128, (9, 0): 128, (10, 0): 128, (10, 3): 128, (12, 0): 128,
               (12, 1): 128}


def fp32_lanes_per_sm(major: int, minor: int) -> int | None:
    """FP32 FMA lanes per SM for a compute capability, None where gpulab does not know it."""
    return _FP32_LANES.get((major, minor))


def bf16_bits(float32_bits: Any) -> Any:
    """Round float32 bit patterns to bfloat16 bit patterns (nearest, ties to even).

    Works on a Python int or an unsigned integer array alike (NaN aside):
    keep the top 16 bits after adding half of the dropped part, plus one
    when the kept part is odd.
    """
    return (float32_bits + 0x7FFF + ((float32_bits >> 16) & 1)) >> 16


# ---------------------------------------------------------------------------
# Arithmetic: divergence, FP32 peak, matmul
# ---------------------------------------------------------------------------

# (pattern, mask of lanes on path B, uniform FMAs per divergent FMA before the branch)
_DIVERGENCE: tuple[tuple[str, int, int], ...] = (
    ("no divergence, all lanes on path A", 0x00000000, 0),
    ("no divergence, all lanes on path B", 0xFFFFFFFF, 0),
    ("two ways: lanes 0-15 A, 16-31 B", 0xFFFF0000, 0),
    ("one lane out: lane 0 on B", 0x00000001, 0),
    ("uniform, with a 9x uniform prefix", 0x00000000, 9),
    ("two ways for a tenth of the work", 0xFFFF0000, 9),
)


def warp_divergence() -> ProbeResult:
    """The cost of branches that split a warp: half/half, one lane out, a tenth of the work."""
    return _run("warp_divergence", "Warp divergence", _warp_divergence)


def _warp_divergence(device: CudaDevice) -> _Outcome:
    from gpulab.kernels import launch

    cp = device.cupy
    threads = 256
    blocks = _full_grid(device, threads)
    iters = 1 << 16
    lanes = cp.arange(blocks * threads, dtype=cp.uint32) % 32
    outs: dict[tuple[int, int], Any] = {}
    ms: dict[str, float] = {}
    with _watch(device) as watch:
        for name, mask, prefix in _DIVERGENCE:
            out = cp.empty(blocks * threads, dtype=cp.float32)
            run = functools.partial(launch.divergent_paths, out, mask=mask, iters=iters,
                                    uniform_iters=prefix * iters, blocks=blocks, threads=threads)
            ms[name] = _median_ms(launch.time_ms(run, iters=3, repeats=5))
            outs[(mask, prefix)] = out
    # Every lane must end where a run with all lanes on its path ends.
    reference_b9 = cp.empty(blocks * threads, dtype=cp.float32)
    launch.divergent_paths(reference_b9, mask=0xFFFFFFFF, iters=iters, uniform_iters=9 * iters,
                           blocks=blocks, threads=threads)
    on_path = {0: outs[(0xFFFFFFFF, 0)], 9: reference_b9}
    for (mask, prefix), out in outs.items():
        on_b = ((mask >> lanes) & 1).astype(bool)
        want = cp.where(on_b, on_path[prefix], outs[(0, prefix)])
        _check_equal(cp, out, want, f"divergence kernel, mask {mask:#010x}, prefix {prefix}")
    names = [name for name, _, _ in _DIVERGENCE]
    uniform, all_b, two_way, one_lane, uniform_long, tenth = (ms[n] for n in names)
    rows = tuple((name, bin(mask).count("1"), round(ms[name], 3),
                  ratio(ms[name], uniform_long if prefix else uniform))
                 for name, mask, prefix in _DIVERGENCE)
    convention = "kernel time divided by the same kernel with every lane on path A"
    readings = [
        Reading("slowdown_two_way", "16/16 split", ratio(two_way, uniform), "x", convention,
                detail=f"path B alone takes {ratio(all_b, uniform)}x path A"),
        Reading("slowdown_one_lane", "one lane out", ratio(one_lane, uniform), "x", convention),
        Reading("slowdown_tenth_two_way", "16/16 split in a tenth of the work",
                ratio(tenth, uniform_long), "x", convention,
                detail="every lane first runs 9 units of path A together, then 1 unit split"),
    ]
    table = Table(f"Divergent paths, {iters:,} dependent FMAs per path per lane",
                  ("pattern", "lanes on path B", "time", "slowdown"), rows,
                  ("", "of 32", "ms", "x"))
    return _Outcome(f"a 16/16 split costs {two_way / uniform:.2f}x, one lane out "
                    f"{one_lane / uniform:.2f}x", readings, [table], watch.telemetry)


def fp32_peak() -> ProbeResult:
    """Independent FP32 FMA chains on every lane, against the peak at the clock seen."""
    return _run("fp32_peak", "FP32 FMA peak", _fp32_peak)


def _fp32_peak(device: CudaDevice) -> _Outcome:
    from gpulab.kernels import launch

    cp = device.cupy
    threads = 256
    blocks = _full_grid(device, threads)
    out = cp.empty(blocks * threads, dtype=cp.float32)
    chains = 8

    def timed(iters: int, repeats: int) -> float:
        run = functools.partial(launch.fma_chains, out, iters=iters, blocks=blocks,
                                threads=threads)
        ms = _median_ms(launch.time_ms(run, iters=2, repeats=repeats))
        if not bool(cp.all(out == 28 + 4 * iters)):
            raise _WrongResult(f"FMA kernel: expected every thread to end at {28 + 4 * iters}")
        return ms

    with _watch(device) as watch:
        probe_iters = 1 << 12
        first = timed(probe_iters, 1)
        iters = int(min(1 << 21, max(probe_iters, probe_iters * 50 / max(first, 1e-3))))
        iters -= iters % 16
        ms = timed(iters, 5)
    flops = 2.0 * chains * iters * blocks * threads
    measured = tflops(flops, ms)
    readings = [Reading("fp32_tflops", "FP32 FMA throughput", round(measured, 2), "TFLOPS",
                        "FMA = 2 FLOPs", detail=f"{blocks} blocks x {threads} threads, "
                        f"{chains} independent chains of {iters:,} FMAs each; median of 5")]
    clock = watch.telemetry.sm_clock_mhz
    major, minor = _prop(device, "major"), _prop(device, "minor")
    lanes = fp32_lanes_per_sm(major, minor)
    if clock:
        readings.append(Reading("sm_clock_mhz", "SM clock during the run", clock[1], "MHz",
                                detail=f"NVML, {clock[0]:.0f}-{clock[1]:.0f} MHz seen"))
    else:
        readings.append(Reading.not_supported("sm_clock_mhz", "SM clock during the run",
                                              "NVML gave no sample"))
    if clock and lanes:
        peak = _prop(device, "multiProcessorCount") * lanes * 2 * clock[1] * 1e6 / 1e12
        readings.append(Reading("fp32_peak_at_clock_tflops", "peak at the clock seen",
                                round(peak, 2), "TFLOPS", "SMs x FP32 lanes x 2 x SM clock",
                                detail=f"{lanes} FP32 lanes per SM (compute capability "
                                       f"{major}.{minor})"))
        readings.append(Reading("fraction_of_peak", "measured / peak at the clock seen",
                                ratio(measured, peak), "x"))
    return _Outcome(f"{measured:.1f} TFLOPS FP32 (FMA = 2 FLOPs)", readings, [],
                    watch.telemetry)


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
    rows: Callable[[int], Any]      # A[:k, :] as float64
    cols: Callable[[int], Any]      # B[:, :k] as float64
    out: Callable[[int], Any]       # C[:k, :k] as float64
    how: str


def matmul_throughput() -> ProbeResult:
    """cuBLAS through CuPy at 8192³ in FP16, BF16, TF32 and FP32, checked against float64."""
    return _run("matmul_throughput", "Matrix multiply throughput", _matmul_throughput)


def _matmul_throughput(device: CudaDevice) -> _Outcome:
    cp = device.cupy
    n = matmul_size(_prop(device, "totalGlobalMem"))
    rng = cp.random.RandomState(20261202)
    a32 = rng.uniform(-1.0, 1.0, size=(n, n), dtype=cp.float32)
    b32 = rng.uniform(-1.0, 1.0, size=(n, n), dtype=cp.float32)
    makers = {"fp16": _gemm_fp16, "bf16": _gemm_bf16, "tf32": _gemm_tf32, "fp32": _gemm_fp32}
    found: dict[str, tuple[float, float, str]] = {}      # name -> (ms, error, how)
    skipped: dict[str, str] = {}
    with _watch(device) as watch:
        for name, _, tolerance in _MATMUL_CASES:
            try:
                with makers[name](device, a32, b32) as gemm:
                    ms = _time_adaptive(gemm.run)
                    error = _relative_error(cp, gemm)
            except _NotSupported as exc:
                skipped[name] = str(exc)
                continue
            if not error <= tolerance:
                raise _WrongResult(f"{name}: largest error {error:.2e} of the largest value, "
                                   f"more than {tolerance:.0e} ({gemm.how})")
            found[name] = (ms, error, gemm.how)
    flops = 2.0 * n ** 3
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
            detail += (f"; TF32 engaged: {fp32_ms / ms:.1f}x the FP32 speed, error "
                       f"{error / max(fp32_error, 1e-12):.0f}x FP32's")
        readings.append(Reading(key, label, round(tflops(flops, ms), 1), "TFLOPS",
                                _MATMUL_CONVENTION, detail=detail))
    rows = tuple((name, n, round(found[name][0], 3), round(tflops(flops, found[name][0]), 1),
                  float(f"{found[name][1]:.2e}")) for name, _, _ in _MATMUL_CASES
                 if name in found)
    table = Table(f"cuBLAS matmul, {n} x {n} x {n}",
                  ("precision", "size", "time per multiply", "throughput", "largest error"),
                  rows, ("", "M = N = K", "ms", "TFLOPS", "of max |C|"))
    summary = ", ".join(f"{name} {tflops(flops, found[name][0]):.0f}" for name in found)
    return _Outcome(f"{summary} TFLOPS ({_MATMUL_CONVENTION})", readings, [table],
                    watch.telemetry)


def _time_adaptive(run: Callable[[], object], target_ms: float = 40.0) -> float:
    """Median milliseconds per call, with enough calls per event pair to fill `target_ms`."""
    from gpulab.kernels import launch

    first = _median_ms(launch.time_ms(run, iters=1, repeats=1, warmup=2))
    iters = max(1, min(50, round(target_ms / max(first, 1e-3))))
    return _median_ms(launch.time_ms(run, iters=iters, repeats=5, warmup=0))


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

    return _Gemm(run=lambda: cupy.matmul(a, b, out=out),
                 rows=lambda k: a[:k].astype("float64"), cols=lambda k: b[:, :k].astype("float64"),
                 out=lambda k: out[:k, :k].astype("float64"), how=how)


@contextlib.contextmanager
def _gemm_fp16(device: CudaDevice, a32: Any, b32: Any) -> Iterator[_Gemm]:
    cp = device.cupy
    a, b = a32.astype(cp.float16), b32.astype(cp.float16)
    yield _plain(a, b, cp.empty_like(a), "cupy.matmul on float16 arrays (cuBLAS GemmEx, "
                                         "FP32 accumulate)")


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
    if _prop(device, "major") < 8:
        raise _NotSupported("BF16 Tensor Core matmul needs compute capability 8.0 or later")
    try:
        cublas = importlib.import_module("cupy_backends.cuda.libs.cublas")
    except ImportError as exc:
        raise _NotSupported(f"CuPy has no bfloat16 arrays and its cuBLAS module is missing: "
                            f"{exc}") from exc
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
        cublas.gemmEx(handle, 0, 0, n, n, n, one.ctypes.data, b.data.ptr, bf16, n,
                      a.data.ptr, bf16, n, zero.ctypes.data, c.data.ptr, bf16, n, compute, algo)

    def widen(bits: Any) -> Any:
        return (bits.astype(cp.uint32) << 16).view(cp.float32).astype(cp.float64)

    return _Gemm(run=run, rows=lambda k: widen(a[:k]), cols=lambda k: widen(b[:, :k]),
                 out=lambda k: widen(c[:k, :k]),
                 how="cuBLAS cublasGemmEx on bfloat16 data (CUDA_R_16BF, CUBLAS_COMPUTE_32F): "
                     "this CuPy has no bfloat16 arrays")


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
        yield (f"cupy.matmul on float32 with CuPy's compute type COMPUTE_TYPE_{wanted} "
               "(set through cupy._core._routines_linalg.set_compute_type, "
               + ("what CUPY_TF32=1 selects: cuBLAS CUBLAS_COMPUTE_32F_FAST_TF32)"
                  if wanted == "TF32" else "so TF32 stays off whatever CUPY_TF32 says)"))
    finally:
        linalg.set_compute_type(numpy.float32, previous)


@contextlib.contextmanager
def _gemm_tf32(device: CudaDevice, a32: Any, b32: Any) -> Iterator[_Gemm]:
    if _prop(device, "major") < 8:
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
