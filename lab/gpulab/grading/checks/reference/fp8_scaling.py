"""The fp8-scaling checks' own numbers, computed plainly in float64 in the checks' process.

The exercise (lesson: low-precision formats) asks for FP8 E4M3 quantisation with one
scale per tensor, per row, per 1 × 128 block and an MX-style power-of-two scale per 32
values, and the error (SQNR) of each. NumPy has no float8 dtype, so `round_e4m3` rounds
to E4M3 itself: 4 exponent bits with bias 7, 3 mantissa bits, largest finite 448,
subnormals down to 2^-9, round to nearest with ties to even, and saturation to ±448 (the
OCP FP8 specification's satfinite conversion; E4M3 has no infinity).

The notebook's conventions, which these functions define:

- x is a 2-D float array (rows × columns); blocks run along each row, and a row whose
  length is no multiple of the block ends in a shorter block that gets a scale of its
  own from its own values (as if padded with zeros, which change no maximum);
- a scale is a *dequantisation* factor, as `torch._scaled_mm` takes it: x ≈ q × scale,
  q = round_e4m3(x / scale);
- a linear scale is amax / 448; the MX scale is 2^(floor(log2(amax)) − 8), 8 being
  E4M3's largest exponent (OCP MX v1.0, section 6.3), clamped to E8M0's 2^-127..2^127;
- a row or block whose values are all zero (amax = 0) gets the scale 1.0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "E4M3_MAX",
    "MX_EMAX",
    "RECIPES",
    "block_amax",
    "dequantize",
    "expand",
    "outlier_tensor",
    "quantize",
    "recipe_sqnr",
    "round_e4m3",
    "sqnr_db",
    "time_matmuls",
]

Array = np.ndarray[Any, np.dtype[Any]]

E4M3_MAX = 448.0
MX_EMAX = 8  # E4M3's largest unbiased exponent: 448 = 1.75 × 2^8
MIN_NORMAL_EXP = -6  # 2^-6 = 1/64, the smallest normal; subnormals step by 2^-9
MANTISSA_BITS = 3
# The four recipes: name -> (block length along a row, or None for a whole row; whether
# the scale is one per tensor; whether it is a power of two)
RECIPES: dict[str, tuple[int | None, bool, bool]] = {
    "per_tensor": (None, True, False),
    "per_row": (None, False, False),
    "block128": (128, False, False),
    "mx32": (32, False, True),
}


def round_e4m3(x: Any) -> Array:
    """x rounded to the nearest FP8 E4M3 value (ties to even), saturated to ±448: float64."""
    x = np.asarray(x, dtype=np.float64)
    magnitude = np.minimum(np.abs(x), E4M3_MAX)  # satfinite: 448 is representable
    _, exponent = np.frexp(magnitude)  # magnitude = f × 2^exponent, f in [0.5, 1)
    binade = np.maximum(exponent - 1, MIN_NORMAL_EXP)  # subnormals share 2^-6's step
    step = np.ldexp(1.0, binade - MANTISSA_BITS)
    rounded = np.round(magnitude / step) * step  # np.round: half to even; exact (a power of 2)
    result: Array = np.copysign(rounded, x)
    return result


def block_amax(x: Array, block: int | None) -> Array:
    """The largest magnitude of each block of `block` values along each row (None: the
    whole row): rows × number of blocks, the last block the shorter one."""
    x = np.abs(np.asarray(x, dtype=np.float64))
    width = x.shape[1] if block is None else block
    count = max(1, -(-x.shape[1] // width))
    amax = np.zeros((x.shape[0], count))
    for i in range(count):
        part = x[:, i * width : (i + 1) * width]
        if part.shape[1]:
            amax[:, i] = part.max(axis=1)
    return amax


def scales_from(amax: Array, power_of_two: bool) -> Array:
    """Dequantisation scales from block maxima: amax / 448, or the MX power of two; 1.0
    where amax is 0."""
    amax = np.asarray(amax, dtype=np.float64)
    if power_of_two:
        _, exponent = np.frexp(amax)  # floor(log2(amax)) = exponent - 1, exactly
        shared = np.clip(exponent - 1 - MX_EMAX, -127, 127)
        scale = np.ldexp(1.0, shared)
    else:
        scale = amax / E4M3_MAX
    result: Array = np.where(amax > 0, scale, 1.0)
    return result


def expand(scales: Array, shape: tuple[int, int], block: int | None) -> Array:
    """Scales of shape (1, 1), (rows, 1) or (rows, blocks) spread over an array of `shape`."""
    scales = np.asarray(scales, dtype=np.float64)
    if block is None or scales.shape[1] == 1:
        return np.broadcast_to(scales, shape)
    return np.repeat(scales, block, axis=1)[:, : shape[1]]


def quantize(x: Array, recipe: str) -> tuple[Array, Array]:
    """(q, scales) for one of RECIPES: q holds E4M3 values (float64), x ≈ q × scales
    spread over x; scales have shape (1, 1), (rows, 1) or (rows, blocks)."""
    block, whole, power = RECIPES[recipe]
    x = np.asarray(x, dtype=np.float64)
    amax = block_amax(x, block)
    if whole:
        amax = np.full((1, 1), amax.max() if amax.size else 0.0)
    scales = scales_from(amax, power)
    q = round_e4m3(x / expand(scales, x.shape, block))
    return q, scales


def dequantize(q: Array, scales: Array, block: int | None = None) -> Array:
    """q × scales, the scales spread as `expand` does."""
    q = np.asarray(q, dtype=np.float64)
    result: Array = q * expand(scales, q.shape, block)
    return result


def sqnr_db(reference: Array, approx: Array) -> float:
    """10 log10(Σ reference² / Σ (reference − approx)²) in dB, float64; inf where equal."""
    reference = np.asarray(reference, dtype=np.float64)
    noise = float(np.sum((reference - np.asarray(approx, dtype=np.float64)) ** 2))
    signal = float(np.sum(reference**2))
    if noise == 0.0:
        return float("inf")
    if signal == 0.0:
        return float("-inf")
    return float(10.0 * np.log10(signal / noise))


def recipe_sqnr(x: Array) -> dict[str, float]:
    """Each recipe's SQNR on x, in dB."""
    found = {}
    for recipe, (block, _, _) in RECIPES.items():
        q, scales = quantize(x, recipe)
        found[recipe] = sqnr_db(x, dequantize(q, scales, block))
    return found


def outlier_tensor(rows: int, cols: int, channel: int, seed: int, factor: float = 100.0) -> Array:
    """Standard normal values, float32, with column `channel` multiplied by `factor`."""
    x = np.random.default_rng(seed).standard_normal((rows, cols))
    x[:, channel] *= factor
    result: Array = x.astype(np.float32)
    return result


def time_matmuls(
    m: int, n: int, k: int, *, warmup: int = 5, launches: int = 50
) -> dict[str, float]:
    """On the GPU (PyTorch, compute capability 8.9+): the median milliseconds of one launch
    of a BF16 x @ w.T and of torch._scaled_mm with per-tensor and per-row scales, each
    launch between its own pair of CUDA events, after `warmup` untimed launches.

    Unverified on hardware when written (no GPU was at hand): run `gpulab dev check
    fp8-scaling --gpu` on an FP8 GPU before relying on it."""
    import torch  # type: ignore[import-not-found]

    e4m3 = torch.float8_e4m3fn
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    xq, wq = x.to(e4m3), w.to(e4m3)  # |randn| stays far below 448
    one = torch.ones((), device="cuda")
    rows, cols = torch.ones(m, 1, device="cuda"), torch.ones(1, n, device="cuda")
    runs: dict[str, Callable[[], object]] = {
        "bf16_ms": lambda: x @ w.t(),
        "fp8_tensor_ms": lambda: torch._scaled_mm(
            xq, wq.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16
        ),
        "fp8_row_ms": lambda: torch._scaled_mm(
            xq, wq.t(), scale_a=rows, scale_b=cols, out_dtype=torch.bfloat16
        ),
    }
    times: dict[str, float] = {}
    for key, run in runs.items():
        for _ in range(warmup):
            run()
        torch.cuda.synchronize()
        found = []
        for _ in range(launches):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            end.synchronize()
            found.append(start.elapsed_time(end))
        times[key] = float(np.median(found))
    return times
