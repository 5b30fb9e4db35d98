"""The matmul-dtypes checks' own arithmetic and their own timing of cuBLAS, per precision.

The exercise times ``cupy.matmul`` (cuBLAS) on an n x k by k x n product in
FP32, TF32, FP16 and BF16, and pads shapes to a multiple. The checks time the
same product the same way in their own process, right after the learner's
function returned (`own_matmul_ms`: a warm-up, then ITERS multiplies between
one pair of CUDA events, the median of REPEATS such pairs), so that both
figures meet the same clocks. How each precision is asked for:

- ``fp32``: float32 arrays, CuPy's cuBLAS compute type for float32 set to its
  default (``CUBLAS_COMPUTE_32F``: the CUDA cores, whatever ``CUPY_TF32`` says);
- ``tf32``: float32 arrays with the compute type set to TF32
  (``CUBLAS_COMPUTE_32F_FAST_TF32``: the Tensor Cores), what ``CUPY_TF32=1``
  selects;
- ``fp16``: float16 arrays, float16 result, FP32 accumulation;
- ``bf16``: bfloat16 bit patterns in uint16 arrays, multiplied by
  ``cublasGemmEx`` (``CUDA_R_16BF``, ``CUBLAS_COMPUTE_32F``): CuPy has no
  bfloat16 arrays without the ml_dtypes package, and this needs none.

`gemm_ex` is the one cuBLAS call the Tensor Core kernel task
(`gpulab.grading.checks.tasks.hgemm`) times too, with FP16 inputs and an FP32 result.
The pure helpers (`tflops`, `padded`, `side_for`, `bf16_bits`) need no GPU;
CuPy is imported only when a timing runs.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import statistics
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "DTYPES",
    "ITERS",
    "NAMES",
    "REPEATS",
    "bf16_bits",
    "gemm_ex",
    "not_supported",
    "own_matmul_ms",
    "padded",
    "side",
    "side_for",
    "tflops",
]

DTYPES = ("fp32", "tf32", "fp16", "bf16")
NAMES = {"fp32": "FP32", "tf32": "TF32", "fp16": "FP16", "bf16": "BF16"}
ITERS, REPEATS = 5, 5  # multiplies between one pair of events; pairs (the median is kept)
GiB = 2**30

# cudaDataType and cuBLAS enumerations (library_types.h, cublas_api.h), for a CuPy whose
# modules do not name them.
CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14
CUBLAS_COMPUTE_32F = 68
CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99
COMPUTE_TYPE_DEFAULT, COMPUTE_TYPE_TF32 = 1, 7  # CuPy's own (cupy._core._routines_linalg)


# -- pure helpers: no GPU --------------------------------------------------------------------
def tflops(m: int, n: int, k: int, ms: float) -> float:
    """TFLOPS of an m x k by k x n product that took `ms` milliseconds: 2 m n k FLOPs
    (each multiply-add is two)."""
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def padded(m: int, n: int, k: int, multiple: int) -> tuple[int, int, int]:
    """Each dimension rounded up to a multiple of `multiple`."""

    def up(d: int) -> int:
        return -(-d // multiple) * multiple

    return up(m), up(n), up(k)


def side_for(total_bytes: int) -> int:
    """The side n of the square products the checks time, from the GPU's memory: 8192 with
    16 GiB or more (an n x n FP32 matrix is then 256 MiB, and the hgemm check's float64
    reference of one product about 2 GiB in all), else 4096, else 2048 under 4 GiB."""
    if total_bytes >= 16 * GiB:
        return 8192
    return 4096 if total_bytes >= 4 * GiB else 2048


def bf16_bits(float32_bits: Any) -> Any:
    """Round float32 bit patterns (an int or an unsigned integer array) to bfloat16 bit
    patterns: nearest, ties to even (NaN aside)."""
    return (float32_bits + 0x7FFF + ((float32_bits >> 16) & 1)) >> 16


# -- on the GPU ------------------------------------------------------------------------------
def _cupy() -> Any:
    return importlib.import_module("cupy")


def side() -> int:
    """`side_for` this GPU's memory."""
    _, total = _cupy().cuda.Device().mem_info
    return side_for(int(total))


def not_supported(dtype: str) -> str | None:
    """Why cuBLAS cannot run `dtype` on Tensor Cores here (TF32 and BF16 need compute
    capability 8.0), or None."""
    cp = _cupy()
    major = int(cp.cuda.Device().compute_capability) // 10
    if dtype in ("tf32", "bf16") and major < 8:
        return f"{NAMES[dtype]} needs compute capability 8.0 or later (this GPU: {major}.x)"
    return None


@contextlib.contextmanager
def _float32_compute(tf32: bool) -> Iterator[None]:
    """CuPy's cuBLAS compute type for float32 set to TF32 or to plain FP32, then restored."""
    numpy = importlib.import_module("numpy")
    linalg = importlib.import_module("cupy._core._routines_linalg")
    before = linalg.get_compute_type(numpy.float32)
    wanted = getattr(linalg, "COMPUTE_TYPE_TF32" if tf32 else "COMPUTE_TYPE_DEFAULT", None)
    linalg.set_compute_type(
        numpy.float32,
        wanted if wanted is not None else (COMPUTE_TYPE_TF32 if tf32 else COMPUTE_TYPE_DEFAULT),
    )
    try:
        yield
    finally:
        linalg.set_compute_type(numpy.float32, before)


def gemm_ex(a: Any, b: Any, c: Any, m: int, n: int, k: int, in_type: int, out_type: int) -> None:
    """Enqueue C = A @ B (all row-major; A m x k, B k x n, C m x n) with cublasGemmEx on the
    current stream, FP32 accumulation (CUBLAS_COMPUTE_32F), Tensor Core algorithms allowed.

    cuBLAS is column-major: a row-major C is a column-major C^T = B^T A^T, so B goes first.
    """
    cp = _cupy()
    numpy = importlib.import_module("numpy")
    cublas = importlib.import_module("cupy_backends.cuda.libs.cublas")
    handle = cp.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cp.cuda.get_current_stream().ptr)
    one = numpy.array(1.0, dtype=numpy.float32)
    zero = numpy.array(0.0, dtype=numpy.float32)
    cublas.gemmEx(
        handle,
        0,  # CUBLAS_OP_N
        0,
        n,
        m,
        k,
        one.ctypes.data,
        b.data.ptr,
        in_type,
        n,
        a.data.ptr,
        in_type,
        k,
        zero.ctypes.data,
        c.data.ptr,
        out_type,
        n,
        int(getattr(cublas, "CUBLAS_COMPUTE_32F", CUBLAS_COMPUTE_32F)),
        int(getattr(cublas, "CUBLAS_GEMM_DEFAULT_TENSOR_OP", CUBLAS_GEMM_DEFAULT_TENSOR_OP)),
    )


def _product(
    dtype: str, n: int, k: int
) -> tuple[Callable[[], object], contextlib.AbstractContextManager[None]]:
    """A function that enqueues one n x k by k x n product in `dtype`, and the context it
    must run in (the float32 compute type)."""
    cp = _cupy()
    rng = cp.random.default_rng()
    a32 = rng.random((n, k), dtype=cp.float32) * 2 - 1
    b32 = rng.random((k, n), dtype=cp.float32) * 2 - 1
    if dtype in ("fp32", "tf32"):
        out = cp.empty((n, n), dtype=cp.float32)
        return (lambda: cp.matmul(a32, b32, out=out)), _float32_compute(dtype == "tf32")
    if dtype == "fp16":
        a16, b16 = a32.astype(cp.float16), b32.astype(cp.float16)
        out16 = cp.empty((n, n), dtype=cp.float16)
        return (lambda: cp.matmul(a16, b16, out=out16)), contextlib.nullcontext()
    if dtype == "bf16":
        abf = bf16_bits(a32.view(cp.uint32)).astype(cp.uint16)
        bbf = bf16_bits(b32.view(cp.uint32)).astype(cp.uint16)
        outbf = cp.empty((n, n), dtype=cp.uint16)
        bf16 = int(getattr(cp.cuda.runtime, "CUDA_R_16BF", CUDA_R_16BF))
        return (lambda: gemm_ex(abf, bbf, outbf, n, n, k, bf16, bf16)), contextlib.nullcontext()
    raise ValueError(f"not a precision of the exercise: {dtype!r} (one of {', '.join(DTYPES)})")


def own_matmul_ms(dtype: str, n: int, k: int | None = None) -> float:
    """Median milliseconds of one n x k by k x n cuBLAS product in `dtype`, timed as the
    exercise asks: one multiply to warm up, then REPEATS times ITERS multiplies between two
    CUDA events."""
    cp = _cupy()
    run, context = _product(dtype, n, n if k is None else k)
    with context:
        run()  # warm-up: cuBLAS's handle and its choice of kernel stay out of the timing
        cp.cuda.get_current_stream().synchronize()
        per_multiply = []
        for _ in range(REPEATS):
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(ITERS):
                run()
            end.record()
            end.synchronize()
            per_multiply.append(float(cp.cuda.get_elapsed_time(start, end)) / ITERS)
    median = float(statistics.median(per_multiply))
    if not math.isfinite(median) or median <= 0:
        raise RuntimeError(f"the checks' own {dtype} timing gave {median} ms")
    return median
