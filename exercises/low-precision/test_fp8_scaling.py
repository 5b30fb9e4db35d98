"""Checks of the fp8-scaling exercise (lesson: low-precision formats).

Parts 1 to 3 run on the CPU, in NumPy. Each check calls your function through the
setup's `graded_call`, which hands it NumPy arrays and sends back what it returns
exactly, and compares with the check's own figures, computed in float64
(`gpulab.grading.checks.reference.fp8_scaling`): E4M3 values exactly, except where
x / scale lies within a millionth of a tie between two E4M3 values (float32 and
float64 arithmetic may round such a value either way); linear scales to a relative
1e-6; MX scales exactly; SQNR to 0.01 dB. Where a result matches a known mistake
(truncation, no clamp to 448, a whole-tensor scale per row, a zero amax, an MX scale
that is no power of two), the message names it.

Part 4 needs PyTorch with CUDA and a GPU of compute capability 8.9 or newer: its checks
are marked ``gpu`` and skip, saying why, anywhere else. The checks time the same
matmuls in the same run and compare.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from gpulab.grading.checks.arrays import pack, unpack
from gpulab.grading.checks.learner import LearnerError
from gpulab.grading.checks.reference import fp8_scaling as reference

Array = np.ndarray[Any, np.dtype[Any]]

TIE = 1e-6  # x / scale this close (relative) to a tie may round either way
SCALE_RTOL = 1e-6
SQNR_ATOL = 0.01  # dB
FUNCTIONS = {
    "per_tensor": ("quantize_per_tensor", None),
    "per_row": ("quantize_per_row", None),
    "block128": ("quantize_blocks", 128),
    "mx32": ("quantize_mx", 32),
}

# -- the named mistakes ----------------------------------------------------------------------
TRUNCATED = (
    "rounded toward zero (truncated): E4M3 rounds to the nearest value, ties to even. "
    "np.floor or astype(int) of the steps drops up to a whole step; np.round does not"
)
UNCLAMPED = (
    "values above 448 in magnitude: E4M3's largest value is 448 (480 would be its NaN). "
    "Saturate: clamp magnitudes to 448 before or after rounding"
)
TIES = (
    "a value halfway between two E4M3 values went up: ties go to the even one (last "
    "mantissa bit 0), which np.round does and np.floor(v + 0.5) does not"
)
WHOLE_TENSOR = (
    "every row got the same scale, the whole tensor's amax / 448: a per-row scale comes "
    "from that row's own largest magnitude"
)
ZERO_AMAX = (
    "a row or block of zeros has amax 0, and a scale of 0 / 448 = 0 makes x / scale NaN. "
    "The notebook's convention: give such a row or block the scale 1.0"
)
NOT_POWER = (
    "MX scales must be powers of two, 2^(floor(log2(amax)) − 8) (E8M0 holds nothing else): "
    "amax / 448 is the linear recipe's scale"
)
MX_EXPONENT = (
    "the MX exponent is floor(log2(amax)) − 8, with 8 E4M3's largest exponent (448 = "
    "1.75 × 2^8), so the block's maximum lands in [256, 512); np.frexp gives "
    "floor(log2(amax)) exactly"
)
INVERTED = (
    "the scales are 448 / amax, the factor that quantises: the notebook's scales "
    "dequantise, x ≈ q × scale, as torch._scaled_mm takes them (amax / 448)"
)


def call(learner: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """The learner's `name` on these arguments (NumPy arrays travel exactly)."""
    packed = {key: pack(value) for key, value in kwargs.items()}
    try:
        raw = learner.call("graded_call", name, *(pack(a) for a in args), **packed)
    except LearnerError as exc:
        message = str(exc).replace("calling graded_call()", f"calling {name}()", 1)
        raise LearnerError(message, exc.kind, exc.raised) from None
    assert isinstance(raw, dict) and "value" in raw, (
        "graded_call answered with something else than the setup's reply: run the setup "
        "cell as released, and do not define a function of that name yourself"
    )
    try:
        return unpack(raw["value"])
    except ValueError as exc:
        raise AssertionError(f"{name} returned something the checks cannot read: {exc}") from None


def near_tie(y: Array) -> Array:
    """True where |y| lies within TIE (relative) of a midpoint between two E4M3 values."""
    magnitude = np.minimum(np.abs(np.asarray(y, dtype=np.float64)), reference.E4M3_MAX)
    _, exponent = np.frexp(magnitude)
    step = np.ldexp(1.0, np.maximum(exponent - 1, -6) - 3)
    steps = magnitude / step
    distance = np.abs(steps - np.floor(steps) - 0.5) * step
    result: Array = distance <= TIE * np.maximum(magnitude, 2.0**-9)
    return result


def exact_tie(y: Array) -> Array:
    """True where |y| is exactly halfway between two E4M3 values."""
    magnitude = np.minimum(np.abs(np.asarray(y, dtype=np.float64)), reference.E4M3_MAX)
    _, exponent = np.frexp(magnitude)
    steps = magnitude / np.ldexp(1.0, np.maximum(exponent - 1, -6) - 3)
    result: Array = steps - np.floor(steps) == 0.5
    return result


def judge_e4m3(got: Any, y: Array, said: str, *, ties: bool = True) -> str | None:
    """None if `got` is y rounded to E4M3; else why not. `ties`: where y lies within TIE of
    a tie, either neighbour will do (y was computed in the learner's arithmetic)."""
    if not isinstance(got, np.ndarray):
        return f"{said} returned {type(got).__name__}: return a NumPy array (float32)"
    if got.shape != np.shape(y):
        return f"{said} returned shape {got.shape}, want {np.shape(y)}"
    if got.dtype != np.float32:
        return f"{said} returned {got.dtype.name}: return float32 (every E4M3 value is one)"
    values = got.astype(np.float64)
    if not np.all(np.isfinite(values)):
        return f"{said}: NaN or infinity in the result. {ZERO_AMAX}"
    if np.any(np.abs(values) > reference.E4M3_MAX):
        return f"{said}: {UNCLAMPED}"
    y = np.asarray(y, dtype=np.float64)
    want = reference.round_e4m3(y)
    wrong = values != want
    if ties:
        wrong &= ~near_tie(y)
    if not np.any(wrong):
        return None
    i = int(np.flatnonzero(wrong.ravel())[0])
    first = (
        f"{said}: {float(values.ravel()[i])!r} where {float(y.ravel()[i])!r} rounds to "
        f"{float(want.ravel()[i])!r} ({int(wrong.sum())} of {wrong.size} values differ)"
    )
    if np.all(np.abs(values[wrong]) < np.abs(want[wrong])):
        return f"{first}. {TRUNCATED}"
    if np.all(exact_tie(y[wrong]) & (np.abs(values[wrong]) > np.abs(want[wrong]))):
        return f"{first}. {TIES}"
    return first


def judge_scales(got: Any, want: Array, x: Array, recipe: str, said: str) -> str | None:
    """None if the scales are the reference's (linear: to SCALE_RTOL, MX: exactly)."""
    if not isinstance(got, np.ndarray):
        return f"{said}: the scales are {type(got).__name__}: return a NumPy array"
    if recipe == "per_tensor" and got.size == 1:
        got = got.reshape(1, 1)
    if got.shape != want.shape:
        return (
            f"{said}: scales of shape {got.shape}, want {want.shape} (rows × ⌈columns / "
            "block⌉: the last, shorter block of a row gets a scale of its own)"
        )
    scales = got.astype(np.float64)
    if not np.all(np.isfinite(scales) & (scales > 0)):
        return f"{said}: a scale that is 0, negative or not finite. {ZERO_AMAX}"
    power = recipe == "mx32"
    if power and not np.all(np.frexp(scales)[0] == 0.5):
        return f"{said}: {NOT_POWER}"
    if np.allclose(scales, want, rtol=0.0 if power else SCALE_RTOL, atol=0.0):
        return None
    if power:
        ratio = np.log2(scales / want)
        return f"{said}: scales 2^{int(np.max(np.abs(ratio))):d} times the want. {MX_EXPONENT}"
    if np.allclose(scales * want, 1.0, rtol=1e-5):
        return f"{said}: {INVERTED}"
    if recipe != "per_tensor" and np.allclose(scales, scales.flat[0]) and want.shape[0] > 1:
        whole = np.abs(x).max() / reference.E4M3_MAX
        if math.isclose(float(scales.flat[0]), whole, rel_tol=1e-5):
            return f"{said}: {WHOLE_TENSOR}"
    worst = int(np.argmax(np.abs(scales / want - 1)))
    return (
        f"{said}: scale {scales.ravel()[worst]!r} where the check computes "
        f"{want.ravel()[worst]!r} (index {worst} of the scales, flattened)"
    )


def judge_recipe(learner: Any, x: Array, recipe: str, what: str) -> str | None:
    """None if the learner's quantize function for `recipe` agrees with the reference on x."""
    name, block = FUNCTIONS[recipe]
    said = f"{name}(x) on {what}"
    got = call(learner, name, x)
    if not isinstance(got, list | tuple) or len(got) != 2:
        return f"{said} returned {type(got).__name__}: return (q, scales)"
    q, scales = got
    _, want_scales = reference.quantize(x, recipe)
    why = judge_scales(scales, want_scales, x, recipe, said)
    if why:
        return why
    spread = reference.expand(
        np.asarray(scales, dtype=np.float64).reshape(want_scales.shape), x.shape, block
    )
    return judge_e4m3(q, np.asarray(x, dtype=np.float64) / spread, f"{said}, its q")


def tensor_with_zeros(seed: int, rows: int, cols: int) -> Array:
    """Normal values over several magnitudes, a row of zeros and a block of zeros."""
    gen = np.random.default_rng(seed)
    x = gen.standard_normal((rows, cols)) * 10.0 ** gen.uniform(-2, 2, size=(rows, 1))
    x[1] = 0.0
    x[2, :32] = 0.0
    x[3, 128:256] = 0.0
    result: Array = x.astype(np.float32)
    return result


# -- part 1: to_e4m3 ------------------------------------------------------------------------
# worked by hand: value -> E4M3
KNOWN = {
    448.0: 448.0,
    2.0**-9: 2.0**-9,  # the smallest subnormal, 0.001953125
    1.0625: 1.0,  # halfway between 1 (mantissa 000) and 1.125: ties to even
    1.1875: 1.25,  # halfway between 1.125 (001) and 1.25 (010)
    17.0: 16.0,  # steps of 2 between 16 and 32: a tie, to 16
    240.0: 240.0,
    464.0: 448.0,  # saturated
    1000.0: 448.0,
    -1000.0: -448.0,
    2.0**-10: 0.0,  # half the smallest subnormal: a tie, to 0
    3 * 2.0**-10: 2.0**-8,
    0.3: 0.3125,
    0.0: 0.0,
    1e-5: 0.0,
    -0.013: -0.013671875,  # a subnormal: 7 × 2^-9
}


@pytest.mark.points(2)
def test_e4m3_known_values(learner: Any) -> None:
    """to_e4m3 on values worked by hand: 448, 2^-9, ties to even, saturation at 448"""
    x = np.array(list(KNOWN), dtype=np.float32)
    why = judge_e4m3(call(learner, "to_e4m3", x), x, "to_e4m3(x)", ties=False)
    assert why is None, why


@pytest.mark.points(1)
def test_e4m3_every_binade(learner: Any) -> None:
    """to_e4m3 on 2000 values from 2^-12 to 2^10, both signs, a 3 x 5 array too"""
    gen = np.random.default_rng(11)
    x = (gen.choice([-1.0, 1.0], 2000) * 2.0 ** gen.uniform(-12, 10, 2000)).astype(np.float32)
    said = "to_e4m3(x) on values over every binade"
    why = judge_e4m3(call(learner, "to_e4m3", x), x, said, ties=False)
    square = x[:15].reshape(3, 5)
    got = call(learner, "to_e4m3", square)
    why = why or judge_e4m3(got, square, "to_e4m3(x) on a 3 x 5 array", ties=False)
    assert why is None, why


# -- part 2: the recipes ---------------------------------------------------------------------
@pytest.mark.points(1)
def test_per_tensor(learner: Any) -> None:
    """quantize_per_tensor: one scale amax / 448, shape (1, 1)"""
    x = tensor_with_zeros(1, 6, 300)
    why = judge_recipe(learner, x, "per_tensor", "a 6 x 300 tensor")
    assert why is None, why


@pytest.mark.points(2)
def test_per_row(learner: Any) -> None:
    """quantize_per_row: one scale per row from its own amax; a row of zeros gets 1.0"""
    x = tensor_with_zeros(2, 6, 300)
    why = judge_recipe(learner, x, "per_row", "a 6 x 300 tensor with a row of zeros")
    assert why is None, why


@pytest.mark.points(2)
def test_blocks(learner: Any) -> None:
    """quantize_blocks: 1 x 128 blocks, the last one shorter, zero blocks scaled by 1.0"""
    x = tensor_with_zeros(3, 5, 300)  # blocks of 128, 128 and 44
    why = judge_recipe(learner, x, "block128", "a 5 x 300 tensor (blocks 128, 128, 44)")
    thin = tensor_with_zeros(4, 4, 100)[:, :100]  # one short block per row
    why = why or judge_recipe(learner, thin, "block128", "a 4 x 100 tensor (one block of 100)")
    assert why is None, why


@pytest.mark.points(2)
def test_mx(learner: Any) -> None:
    """quantize_mx: a power-of-two scale 2^(floor(log2 amax) - 8) per 32 values"""
    x = tensor_with_zeros(5, 5, 300)  # 9 blocks of 32, then one of 12
    x[0, :32] = np.linspace(-4.0, 4.0, 32)  # amax exactly a power of two
    x[4, 32:64] = 120.0  # lands at 480: saturated to 448
    why = judge_recipe(learner, x, "mx32", "a 5 x 300 tensor (blocks of 32, the last of 12)")
    assert why is None, why


@pytest.mark.points(1)
def test_dequantize(learner: Any) -> None:
    """dequantize: q x scales, block scales spread over their columns, float32"""
    problems = []
    x = tensor_with_zeros(6, 4, 300)
    for recipe, (_, block) in FUNCTIONS.items():
        q, scales = reference.quantize(x, recipe)
        want = reference.dequantize(q, scales, block)
        said = f"dequantize(q, scales, block={block}) for {recipe} scales {scales.shape}"
        got = call(learner, "dequantize", q.astype(np.float32), scales, block=block)
        if not isinstance(got, np.ndarray) or got.shape != want.shape:
            problems.append(f"{said}: want a float32 array of shape {want.shape}")
        elif not np.allclose(got, want, rtol=1e-6, atol=0.0):
            problems.append(f"{said}: largest difference {np.max(np.abs(got - want)):.3g}")
    assert not problems, "\n".join(problems)


# -- part 3: the error -----------------------------------------------------------------------
OUTLIER = (256, 1024, 7, 0)  # rows, columns, the outlier channel, the seed


@pytest.mark.points(1)
def test_sqnr_db(learner: Any) -> None:
    """sqnr_db: 10 log10(Σ x² / Σ (x − x̂)²) in dB, inf where equal"""
    x = np.array([[3.0, -4.0], [0.0, 1.0]])
    problems = []
    for approx, want in (
        (x + np.array([[0.1, 0.0], [0.0, 0.0]]), 10 * math.log10(26 / 0.01)),
        (x, math.inf),
        (2 * x, 0.0),
    ):
        got = call(learner, "sqnr_db", x, approx)
        if not isinstance(got, int | float) or not (
            got == want or (math.isfinite(want) and abs(got - want) <= SQNR_ATOL)
        ):
            problems.append(f"sqnr_db(x, approx) returned {got!r:.40}, want {want:.4f}")
    assert not problems, "\n".join(problems)


def judge_sqnr(got: Any, want: dict[str, float], said: str) -> str | None:
    if not isinstance(got, dict) or set(got) != set(want):
        return f"{said} returned {got!r:.80}: want a dict with the keys {sorted(want)}"
    for key, value in want.items():
        mine = got[key]
        if not isinstance(mine, int | float) or not abs(mine - value) <= SQNR_ATOL:
            return (
                f"{said}[{key!r}] is {mine!r:.20}, the check computes {value:.2f} dB: "
                "quantise with that recipe, dequantize, and compare with x"
            )
    return None


@pytest.mark.points(2)
def test_outlier_ranking(learner: Any, measured: Any) -> None:
    """recipe_sqnr on the outlier tensor: each recipe's SQNR, so its ranking, beside your
    predictions"""
    rows, cols, channel, seed = OUTLIER
    x = reference.outlier_tensor(rows, cols, channel, seed)
    want = reference.recipe_sqnr(x)
    got = call(learner, "recipe_sqnr", x)
    for key, value in want.items():
        measured(
            f"{key}_db",
            label=f"SQNR, {key}, outlier tensor {rows} x {cols}",
            unit="dB",
            yours=got.get(key) if isinstance(got, dict) else None,
            trusted=value,
        )
    why = judge_sqnr(got, want, "recipe_sqnr(outlier_tensor(256, 1024, 7, seed=0))")
    assert why is None, why


# -- part 4: on a GPU with FP8 ---------------------------------------------------------------
SIZES = {"large": (8192, 0.25), "small": (256, 0.5)}  # m = n = k, tolerance on the ratio
MATMUL_RTOL = 2e-2


@pytest.fixture(scope="module")
def torch_fp8() -> Any:
    """PyTorch with CUDA on a GPU of compute capability 8.9 or newer, or a skip."""
    try:
        import torch  # type: ignore[import-not-found]
    except ImportError:
        pytest.skip("needs PyTorch, with CUDA, in the checks' environment")
    if not torch.cuda.is_available():
        pytest.skip("needs PyTorch with CUDA and a GPU it can use")
    if torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("needs a GPU of compute capability 8.9 or newer for FP8 (Ada, Hopper)")
    return torch


@pytest.mark.gpu
@pytest.mark.points(2)
def test_scaled_matmul(learner: Any, torch_fp8: Any) -> None:
    """scaled_matmul per tensor and per row: within 2e-2 of the dequantised product"""
    gen = np.random.default_rng(21)
    x = reference.outlier_tensor(64, 256, 5, 21)
    w = gen.standard_normal((128, 256)).astype(np.float32)
    problems = []
    for rowwise, recipe in ((False, "per_tensor"), (True, "per_row")):
        qx, sx = reference.quantize(x, recipe)
        qw, sw = reference.quantize(w, recipe)
        want = reference.dequantize(qx, sx) @ reference.dequantize(qw, sw).T
        got = call(learner, "scaled_matmul", x, w, rowwise=rowwise)
        said = f"scaled_matmul(x, w, rowwise={rowwise}) on 64 x 256 by 128 x 256"
        if not isinstance(got, np.ndarray) or got.shape != want.shape:
            problems.append(f"{said}: want a float32 array of shape {want.shape}")
            continue
        error = float(np.linalg.norm(got - want) / np.linalg.norm(want))
        if not error <= MATMUL_RTOL:
            problems.append(
                f"{said}: relative error {error:.3g} against the product of the dequantised "
                f"operands (at most {MATMUL_RTOL} wanted): are the scales dequantisation "
                "factors (amax / 448), clamped before the cast, and (M, 1), (1, N) per row?"
            )
    assert not problems, "\n".join(problems)


@pytest.mark.gpu
@pytest.mark.points(2)
def test_timings(learner: Any, torch_fp8: Any, measured: Any) -> None:
    """time_matmuls at 8192³ and 256³ within 25 % and 50 % of the checks' own, same run"""
    problems = []
    for size_name, (size, tolerance) in SIZES.items():
        got = learner.call("time_matmuls", size, size, size)
        want = reference.time_matmuls(size, size, size)
        for key, theirs in want.items():
            mine = got.get(key) if isinstance(got, dict) else None
            measured(
                f"{key}_{size_name}",
                label=f"{key[:-3]}, {size}³, median per launch",
                unit="ms",
                yours=mine,
                trusted=theirs,
                tolerance=tolerance,
            )
            if not isinstance(mine, int | float) or isinstance(mine, bool) or not mine > 0:
                problems.append(f"time_matmuls({size}, ...)[{key!r}] is {mine!r:.40}: want ms")
            elif abs(mine / theirs - 1) > tolerance:
                problems.append(
                    f"time_matmuls({size}, ...)[{key!r}] is {mine:.4f} ms, the checks' own "
                    f"{theirs:.4f} ms in this run (within {tolerance:.0%} wanted): warm up, "
                    "time each launch between two CUDA events, keep the median, and leave "
                    "quantising out of the timing"
                )
    assert not problems, "\n".join(problems)
