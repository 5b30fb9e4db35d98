"""Checks of the online-softmax exercise (lesson: attention as memory traffic).

Everything runs on the CPU, in NumPy. Each check calls your function through the
setup's `graded_call`, which hands it NumPy arrays and sends back what it returns
exactly, infinities and NaNs included (`gpulab.grading.checks.arrays`), and says whether
it changed an argument in place. Your result is compared with the check's own,
computed plainly in float64 from whole rows and from the whole N × N matrix
(`gpulab.grading.checks.reference.online_softmax`), within a tolerance set by the
precision you compute in. Where it matches a known mistake (no shift by the
maximum, a sum not rescaled, NaN in a fully masked row, a causal mask off by
one...), the message names the mistake.

The memory check calls `online_attention` with `traced=True`: the setup's
`peak_mib` counts, with Python's tracemalloc, every NumPy buffer and Python object
allocated during that one call. The figure does not depend on the machine, the
allocator or what ran before, and it grows with what the call holds at once:
a handful of N × block and N × d arrays for a streaming pass, N × N for anything
that holds the whole matrix of scores. The budget is eight arrays of
N × (d + block) float64s, one byte per query and key (room for a boolean N × N
mask, which a streaming pass needs not), plus 1 MiB; N is chosen large enough that
one N × N matrix of float64 is more than twice the budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from gpulab.grading.checks.arrays import pack, unpack
from gpulab.grading.checks.learner import LearnerError
from gpulab.grading.checks.reference import online_softmax as reference

Array = np.ndarray[Any, np.dtype[Any]]

# (rtol, atol) by the precision the learner computes in: float32 for float16 and float32
# inputs, float64 for float64.
SOFTMAX_TOLERANCE = {"float32": (1e-5, 1e-7), "float64": (1e-9, 1e-12)}
ATTENTION_TOLERANCE = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-12)}
MIB = 2**20
BUDGET_ARRAYS = 8  # the memory budget: this many N x (d + block) float64 arrays, one byte
BUDGET_SLACK = MIB  # per query and key (a boolean mask), and this much


# -- calling through graded_call -----------------------------------------------------------
@dataclass(frozen=True)
class Reply:
    value: Any
    peak_mib: float | None
    changed_input: bool


def call(learner: Any, name: str, *args: Any, traced: bool = False, **kwargs: Any) -> Reply:
    """The learner's `name` on these arguments (NumPy arrays travel exactly)."""
    packed = {key: pack(value) for key, value in kwargs.items()}
    if traced:
        packed["traced"] = True
    try:
        raw = learner.call("graded_call", name, *(pack(a) for a in args), **packed)
    except LearnerError as exc:  # said of your function, not of the setup's
        message = str(exc).replace("calling graded_call()", f"calling {name}()", 1)
        raise LearnerError(message, exc.kind, exc.raised) from None
    assert isinstance(raw, dict) and {"value", "peak_mib", "changed_input"} <= set(raw), (
        "graded_call answered with something else than the setup's reply: run the setup "
        "cell as released, and do not define a function of that name yourself"
    )
    try:
        value = unpack(raw["value"])
    except ValueError as exc:
        raise AssertionError(f"{name} returned something the checks cannot read: {exc}") from None
    peak = raw["peak_mib"]
    return Reply(
        value, float(peak) if isinstance(peak, int | float) else None, raw["changed_input"] is True
    )


def unchanged(reply: Reply, said: str) -> str | None:
    if not reply.changed_input:
        return None
    return (
        f"{said}: your function changed its input in place (x -= m, or an out= that is the "
        "caller's array). The caller's scores must stay as they were: work on a copy"
    )


def work_dtype(*arrays: Array) -> str:
    """The precision an answer computes in: float64 if any input is float64, else float32."""
    return "float64" if any(np.asarray(a).dtype == np.float64 for a in arrays) else "float32"


def as_array(value: Any) -> Array | None:
    """The learner's result as a float64 array, or None where it holds no numbers."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return array


def shown(array: Array, limit: int = 8) -> str:
    """A short text of an array's values."""
    flat = np.asarray(array).ravel()
    text = np.array2string(flat[:limit], precision=4, separator=", ")
    return text[:-1] + ", ...]" if flat.size > limit else text


def worst(got: Array, want: Array) -> str:
    """Where got and want differ most, in words."""
    with np.errstate(invalid="ignore"):
        gap = np.where(np.isnan(got) != np.isnan(want), np.inf, np.abs(got - want))
    gap = np.nan_to_num(gap, nan=0.0, posinf=np.inf)
    index = np.unravel_index(int(np.argmax(gap)), gap.shape) if gap.size else ()
    where = f" at index {tuple(int(i) for i in index)}" if gap.ndim else ""
    return f"{float(got[index])!r} where the check computes {float(want[index])!r}{where}"


def agrees(got: Array, want: Array, tolerance: tuple[float, float]) -> bool:
    rtol, atol = tolerance
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=rtol, atol=atol))


# -- the named mistakes ----------------------------------------------------------------------
OVERFLOW = (
    "exp overflowed: exp(x) is infinity above about 88.7 in float32 and 709.8 in float64, "
    "and ∞ / ∞ is NaN. Subtract each row's maximum before exp: softmax(x) = softmax(x − m), "
    "and every exponent is then at most 0"
)
MASKED = (
    "is fully masked (every score −∞): its maximum is −∞, and x − m is −∞ − (−∞) = NaN. "
    "The notebook's convention: such a row's softmax is all zeros (its maximum −∞, its sum "
    "0). Shift it by 0 instead of −∞, and divide nothing by its sum of 0"
)
RESCALE = (
    "not rescaled: when a block raises a row's running maximum from m to m_new, what was "
    "accumulated so far is still scaled to the old m. Multiply ℓ, and the unnormalised "
    "output, by exp(m − m_new) before adding the new block's terms"
)
DIAGONAL = (
    "your causal mask hides the diagonal: query i may attend to keys 0 to i, itself "
    "included, so keep key j where j ≤ i, not j < i"
)
KEEPDIMS = (
    "the maximum or the sum was reduced without keepdims=True, so it broadcasts along the "
    "wrong axis: x - x.max(axis=-1) on a square matrix subtracts row i's maximum from "
    "column i. Keep the reduced axis"
)
HALF = (
    "the exponentials or their sum stayed in float16: compute in float32 "
    "(x.astype(np.result_type(x.dtype, np.float32))), as kernels keep FP32 sums"
)


def flat_reduced(x: Array, axis: int) -> Array | None:
    """The keepdims mistake: each row's max and sum reduced away, then broadcast against x
    along its last axis (None where the shapes do not broadcast: the mistake raises)."""
    x = np.asarray(x, dtype=np.float64)
    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            terms = np.exp(x - np.max(x, axis=axis))
            result: Array = terms / np.sum(terms, axis=axis)
    except ValueError:
        return None
    return result


def masked_rows(x: Array, axis: int) -> Array:
    """True for each row (along axis) whose scores are all −∞."""
    return np.all(np.isneginf(np.asarray(x, dtype=np.float64)), axis=axis)


def judge_softmax(reply: Reply, x: Array, axis: int, said: str) -> str | None:
    """None if softmax_two_pass(x, axis) gave the softmax; else what is wrong, in words."""
    got = as_array(reply.value)
    if got is None or not isinstance(reply.value, np.ndarray):
        return f"{said} returned {type(reply.value).__name__}: return a NumPy array"
    x = np.asarray(x)
    want = reference.softmax(x, axis)
    if got.shape != x.shape:
        return (
            f"{said} returned an array of shape {got.shape} for x of shape {x.shape}: the "
            "softmax has the shape of x (normalise along the axis, do not reduce it away)"
        )
    if agrees(got, want, SOFTMAX_TOLERANCE[work_dtype(x)]):
        return unchanged(reply, said)
    # rows (along axis) that hold NaN or an infinity, where every row of the softmax is finite
    bad = np.any(~np.isfinite(np.moveaxis(got, axis, -1)), axis=-1)
    masked = masked_rows(x, axis)
    infinite = np.any(np.isposinf(np.moveaxis(np.asarray(x), axis, -1)), axis=-1)
    if np.any(bad & masked):
        return f"{said}: NaN in a row that {MASKED}"
    if np.any(bad & ~masked & ~infinite):
        return f"{said} gave {shown(got)}: {OVERFLOW}"
    if np.any(bad & infinite):
        return (
            f"{said}: NaN in a row with +∞ scores. The notebook's convention: the +∞ entries "
            "of a row share its weight equally and every other entry gets 0 ([inf, 0, inf] "
            "gives [0.5, 0, 0.5]); x − m is ∞ − ∞ = NaN there"
        )
    if x.ndim >= 2:
        wrong_axis = [
            other
            for other in range(x.ndim)
            if other != axis % x.ndim and agrees(got, reference.softmax(x, other), (1e-5, 1e-7))
        ]
        if wrong_axis:
            return (
                f"{said}: that is the softmax along axis {wrong_axis[0]}, not along axis "
                f"{axis}: reduce along the axis you are given"
            )
        flat = flat_reduced(x, axis)
        if flat is not None and agrees(got, flat, (1e-5, 1e-7)):
            return f"{said}: {KEEPDIMS}"
    if x.dtype == np.float16 and agrees(got, want, (3e-3, 1e-4)):
        return f"{said} is off by more than float32 arithmetic allows: {HALF}"
    return (
        f"{said} gave {worst(got, want)}: each row, along axis {axis}, must be "
        "exp(x − m) / Σ exp(x − m), with m the row's maximum"
    )


def judge_stats(reply: Reply, blocks: list[Array], said: str) -> str | None:
    """None if online_softmax_stats(blocks) gave the two-pass (m, l); else what is wrong."""
    value = reply.value
    if not isinstance(value, tuple | list) or len(value) != 2:
        return f"{said} returned {type(value).__name__}: return a pair (m, l)"
    m, total = as_array(value[0]), as_array(value[1])
    if m is None or total is None:
        return f"{said} returned a pair that holds no numbers: return (m, l)"
    row = np.concatenate([np.asarray(b, dtype=np.float64) for b in blocks], axis=-1)
    want_m, want_l = reference.stats(row)
    if m.shape != want_m.shape or total.shape != want_l.shape:
        return (
            f"{said} returned m of shape {m.shape} and l of shape {total.shape}: for blocks of "
            f"shape (..., block length) both have the blocks' leading shape {want_m.shape}"
        )
    tolerance = SOFTMAX_TOLERANCE[work_dtype(*blocks)]
    masked = np.isneginf(want_m)
    if np.any(np.isnan(m[masked])) or np.any(np.isnan(total[masked])):
        return f"{said}: NaN for a row that {MASKED} (return m = -inf and l = 0 for it)"
    if not agrees(m, want_m, tolerance):
        last = np.max(np.asarray(blocks[-1], dtype=np.float64), axis=-1)
        if agrees(m, last, tolerance):
            return (
                f"{said} returned the last block's maximum as m: m is the running maximum, "
                "over every block seen so far"
            )
        return f"{said}: m is {worst(m, want_m)}: m is the largest score of the row"
    if agrees(total, want_l, tolerance):
        return unchanged(reply, said)
    if np.any(~np.isfinite(total)):
        return f"{said}: l is {shown(total)}: {OVERFLOW}"
    if agrees(total, unrescaled_sum(blocks), tolerance):
        return f"{said}: l is too large, {RESCALE}"
    last = reference.stats(np.asarray(blocks[-1], dtype=np.float64))[1]
    if agrees(total, last, tolerance):
        return f"{said}: l holds only the last block: carry the sum of the earlier blocks along"
    return (
        f"{said}: l is {worst(total, want_l)}, the two-pass Σ exp(x − m) over all the blocks "
        "with m the row's maximum"
    )


def unrescaled_sum(blocks: list[Array]) -> Array:
    """The running sum of the mistake: each block's terms against the maximum of its time,
    the earlier ones never rescaled."""
    m: Array | None = None
    total: Array | float = 0.0
    for block in blocks:
        block = np.asarray(block, dtype=np.float64)
        top = np.max(block, axis=-1)
        m = top if m is None else np.maximum(m, top)
        shift = np.where(np.isfinite(m), m, 0.0)
        total = total + np.sum(np.exp(block - shift[..., None]), axis=-1)
    return np.asarray(total)


def unrescaled_attention(
    q: Array, k: Array, v: Array, block: int, causal: bool, rescale_l: bool, rescale_o: bool
) -> Array:
    """Attention by blocks where ℓ, or the output, or both are never rescaled: the mistake."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    n = len(q)
    m = np.full(n, -np.inf)
    total, out = np.zeros(n), np.zeros((n, v.shape[1]))
    for start in range(0, len(k), block):
        s = q @ k[start : start + block].T / np.sqrt(q.shape[1])
        if causal:
            s = np.where(reference.causal_mask(n, len(k))[:, start : start + block], s, -np.inf)
        m_new = np.maximum(m, np.max(s, axis=1))
        shift = np.where(np.isfinite(m_new), m_new, 0.0)
        scale = np.exp(m - shift)
        p = np.exp(s - shift[:, None])
        total = (total * scale if rescale_l else total) + np.sum(p, axis=1)
        out = (out * scale[:, None] if rescale_o else out) + p @ v[start : start + block]
        m = m_new
    with np.errstate(invalid="ignore", divide="ignore"):
        return out / total[:, None]


def mask_variants(q: Array, k: Array, v: Array, causal: bool) -> list[tuple[Array, str]]:
    """Whole-matrix attention with the mask mistakes, each with its words."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    n = len(q)
    s = q @ k.T / np.sqrt(q.shape[1])

    def masked(keep: Array) -> Array:
        return reference.softmax(np.where(keep, s, -np.inf)) @ v

    if not causal:
        return [(masked(reference.causal_mask(n, len(k))), "causal=False, yet you masked keys")]
    return [
        (masked(reference.causal_mask(n, len(k), shift=-1)), DIAGONAL),
        (
            masked(~reference.causal_mask(n, len(k), shift=-1)),
            "your causal mask is the wrong triangle: query i sees keys 0 to i (j ≤ i), those "
            "at and before it, never the keys after it",
        ),
        (
            reference.softmax(s) @ v,
            "causal=True, yet no score was masked: set key j's score "
            "to −∞ for query i wherever j > i",
        ),
    ]


def judge_attention(
    reply: Reply, q: Array, k: Array, v: Array, block: int, causal: bool, said: str
) -> str | None:
    """None if online_attention gave softmax(q kᵀ/√d) v; else what is wrong, in words."""
    got = as_array(reply.value)
    if got is None or not isinstance(reply.value, np.ndarray):
        return f"{said} returned {type(reply.value).__name__}: return a NumPy array"
    want = reference.attention(q, k, v, causal=causal)
    if got.shape != want.shape:
        return (
            f"{said} returned shape {got.shape}: the output has one row per query and one "
            f"column per value dimension, {want.shape}"
        )
    if reply.value.dtype == np.float16:
        return f"{said} returned float16, want float32: {HALF}"
    tolerance = ATTENTION_TOLERANCE[work_dtype(q, k, v)]
    if agrees(got, want, tolerance):
        return unchanged(reply, said)
    for variant, words in mask_variants(q, k, v, causal):
        with np.errstate(invalid="ignore"):
            if agrees(np.nan_to_num(got), np.nan_to_num(variant), tolerance):
                return f"{said}: {words}"
    bad_rows = np.flatnonzero(np.any(~np.isfinite(got), axis=1))
    if bad_rows.size:
        if causal and bad_rows[0] == 0 and np.all(np.isfinite(got[1:])):
            return f"{said}: row 0 is NaN, {DIAGONAL}"
        return (
            f"{said}: rows {shown(bad_rows, 5)} hold NaN or infinity where the check's "
            f"attention is finite. Either exp overflowed ({OVERFLOW}), or a row whose running "
            "maximum was still −∞ gave exp(−∞ − (−∞)) = NaN: shift such rows by 0"
        )
    n_keys = len(k)
    if block < n_keys:
        for rescale_l, rescale_o in ((False, False), (True, False), (False, True)):
            variant = unrescaled_attention(q, k, v, block, causal, rescale_l, rescale_o)
            if agrees(got, variant, tolerance):
                which = {
                    (False, False): "ℓ and the output were",
                    (True, False): "the output was",
                    (False, True): "ℓ was",
                }[(rescale_l, rescale_o)]
                return f"{said}: {which} {RESCALE}"
    q64 = np.asarray(q, dtype=np.float64)
    for factor, words in (
        (math.sqrt(q64.shape[1]), "the scores were not divided by √d"),
        (1 / math.sqrt(q64.shape[1]), "the scores were divided by d, not √d"),
    ):
        variant = reference.attention(q64 * factor, k, v, causal=causal)
        if q64.shape[1] > 1 and agrees(got, variant, tolerance):
            return f"{said}: {words} (S = q kᵀ / √d, d = q.shape[1])"
    return (
        f"{said} gave {worst(got, want)}: the output must be softmax(q kᵀ/√d) v, every row "
        "divided by its ℓ once, after the last block"
    )


def memory_budget(n: int, d: int, block: int) -> int:
    """Bytes online_attention may hold at once on N x d float64 inputs: eight arrays of
    N x (d + block) float64s, N x N bytes (a boolean mask), and 1 MiB."""
    return BUDGET_ARRAYS * n * (d + min(block, n)) * 8 + n * n + BUDGET_SLACK


def judge_memory(peak_mib: float | None, n: int, d: int, block: int, said: str) -> str | None:
    """None if the traced peak is within the budget; else what it means, in words."""
    if peak_mib is None:
        return f"{said}: the setup's graded_call measured no peak; run the setup as released"
    budget = memory_budget(n, d, block)
    if peak_mib * MIB <= budget:
        return None
    return (
        f"{said} held {peak_mib:.1f} MiB at its peak (tracemalloc's count of everything it "
        f"allocated), over the budget of {budget / MIB:.1f} MiB: eight arrays of "
        "N × (d + block) float64s, a byte per query and key, and 1 MiB. One N × N matrix of "
        f"float64 here is {n * n * 8 / MIB:.0f} MiB: the call held numbers of size N × N (the "
        "scores, the probabilities, a mask of numbers, or a list of all the blocks' scores). "
        "Compute q @ k[start:start + block].T for one block of keys at a time, and keep "
        "only m, ℓ and the output between blocks"
    )


# What a byte count that is wrong in a known way means.
def byte_mistakes(n: int, d: int, b: int, naive: bool) -> dict[int, str]:
    """Counts that known mistakes give, with words naming each (none is the right count)."""
    small, large = 4 * n * d * b, 4 * n * n * b
    right = small + large if naive else small
    mistakes = {
        right * 8: "that is bits: count bytes (dtype_bytes bytes a value)",
        right // b: "that counts values: multiply by dtype_bytes, the bytes of one value",
        (small + large if not naive else small): (
            "that is the other version's count: naive=True is the three kernels with S and P "
            "in HBM, naive=False the fused one"
        ),
    }
    if naive:
        mistakes |= {
            large: (
                "Q, K, V and O are missing: the first kernel reads Q and K, the last reads V and "
                "writes O"
            ),
            small + large * 3 // 4: (
                "one N × N matrix was counted three times, not four: S is written and read, "
                "and so is P"
            ),
            small + large // 2: (  # last: where two mistakes give one count, this one is named
                "S and P were counted once each: each N × N matrix is written by one step and "
                "read back by the next (S by the softmax, P by the product with V), so each "
                "crosses the bus twice"
            ),
        }
    else:
        mistakes |= {
            3 * n * d * b: "O is written too: Q, K and V are read once and O written once",
            small + n * n * b: "a fused kernel keeps S on the chip: nothing N × N reaches HBM",
        }
    mistakes.pop(right, None)
    return mistakes


def number(value: Any) -> Any:
    """A NumPy scalar as the Python number it holds; anything else as it is."""
    return value.item() if isinstance(value, np.generic) else value


def judge_bytes(got: Any, want: int, n: int, d: int, b: int, naive: bool, said: str) -> str | None:
    """None if attention_bytes gave `want`; else what the count looks like."""
    if isinstance(got, bool) or not isinstance(got, int | float) or not math.isfinite(got):
        return f"{said} returned {got!r:.60}: return a whole number of bytes"
    if got == want:
        return None
    if got * MIB == want or abs(got * MIB - want) < MIB / 2:
        return f"{said} returned {got!r}: that is MiB; return bytes"
    named = byte_mistakes(n, d, b, naive).get(int(got)) if float(got).is_integer() else None
    if named:
        return f"{said} returned {got!r}: {named}"
    return (
        f"{said} returned {got!r}, which is not the lesson's count: for every step, add the "
        "bytes of each matrix it reads and of each it writes (n × d or n × n values of "
        "dtype_bytes bytes each)"
    )


# -- part 1: softmax_two_pass ------------------------------------------------------------------
def softmax_problems(learner: Any, cases: list[tuple[Array, int, str]]) -> list[str]:
    problems = []
    for x, axis, what in cases:
        said = f"softmax_two_pass(x, axis={axis}) on {what}"
        why = judge_softmax(call(learner, "softmax_two_pass", x, axis=axis), x, axis, said)
        if why:
            problems.append(why)
    return problems


@pytest.mark.points(1)
def test_softmax_rows(learner: Any) -> None:
    """softmax_two_pass: each row of small scores sums to one, as exp(x − m) / Σ exp(x − m)"""
    cases = [
        (np.array([3.0, 1.0, 5.0, 2.0]), -1, "the lesson's four scores"),
        (np.array([[0.0, 0.0], [1.0, -1.0], [0.5, 2.0]]), -1, "a 3 x 2 matrix"),
        (np.linspace(-3.0, 4.0, 15).reshape(3, 5), -1, "a 3 x 5 matrix"),
    ]
    problems = softmax_problems(learner, cases)
    assert not problems, "\n".join(problems)


@pytest.mark.points(2)
def test_softmax_large_scores(learner: Any) -> None:
    """softmax_two_pass on scores of 1000, 1e30 and float32's largest: no overflow"""
    big = float(np.finfo(np.float32).max)
    cases = [
        (np.array([1000.0, 1000.0], dtype=np.float32), -1, "[1000, 1000] in float32"),
        (
            np.array([[1e30, -1e30, 1e30, 0.0], [710.0, 700.0, 0.0, -5.0]]),
            -1,
            "rows of ±1e30 and of 710 in float64",
        ),
        (np.array([[big, big / 2, -big, 88.0]], dtype=np.float32), -1, "float32's largest values"),
        (np.array([[100.0, 90.0, 80.0]], dtype=np.float16), -1, "[100, 90, 80] in float16"),
    ]
    problems = softmax_problems(learner, cases)
    assert not problems, "\n".join(problems)


@pytest.mark.points(2)
def test_softmax_masked_rows(learner: Any) -> None:
    """softmax_two_pass: −∞ scores get 0, and a row of −∞ only is all zeros, never NaN"""
    inf = np.inf
    scores = np.array(
        [
            [0.5, -inf, 2.0, -inf],
            [-inf, -inf, -inf, -inf],  # fully masked
            [-inf, 7.0, -inf, -inf],
            [-inf, -inf, -inf, -inf],  # fully masked
        ]
    )
    cases = [
        (scores, -1, "rows with −∞ scores, two of them −∞ only"),
        (scores.T.copy(), 0, "the same scores along axis 0"),
        (np.full(5, -inf, dtype=np.float32), -1, "a float32 row of −∞ only"),
    ]
    problems = softmax_problems(learner, cases)
    assert not problems, "\n".join(problems)


@pytest.mark.points(1)
def test_softmax_infinite_scores(learner: Any) -> None:
    """softmax_two_pass: +∞ entries share their row's weight equally, the others get 0"""
    inf = np.inf
    cases = [
        (np.array([inf, 0.0, inf]), -1, "[inf, 0, inf]"),
        (np.array([[inf, -inf, 1e30, 2.0], [1.0, 2.0, 3.0, inf]]), -1, "rows with ±∞ and 1e30"),
    ]
    problems = softmax_problems(learner, cases)
    assert not problems, "\n".join(problems)


@pytest.mark.points(1)
def test_softmax_axis_and_shape(learner: Any) -> None:
    """softmax_two_pass along every axis of a square matrix and of a 3-D array"""
    square = np.arange(16.0).reshape(4, 4) % 5 - np.eye(4) * 3
    cube = np.sin(np.arange(24.0)).reshape(2, 3, 4) * 4
    cases = [
        (square, -1, "a 4 x 4 matrix"),
        (square, 0, "a 4 x 4 matrix"),
        (square, 1, "a 4 x 4 matrix"),
        (cube, 1, "a 2 x 3 x 4 array"),
        (cube, 0, "a 2 x 3 x 4 array"),
        (cube, -1, "a 2 x 3 x 4 array"),
    ]
    problems = softmax_problems(learner, cases)
    assert not problems, "\n".join(problems)


@pytest.mark.points(1)
def test_softmax_dtypes(learner: Any) -> None:
    """softmax_two_pass: float32 for float16 and float32 input, float64 for float64"""
    base = np.array([[0.0, 1.0, 2.0, 3.0], [-1.0, 4.0, 4.0, 0.5]])
    problems = []
    for dtype, want in (("float16", "float32"), ("float32", "float32"), ("float64", "float64")):
        x = base.astype(dtype)
        said = f"softmax_two_pass(x) on {dtype} input"
        reply = call(learner, "softmax_two_pass", x)
        got = reply.value
        if isinstance(got, np.ndarray) and got.dtype.name != want:
            tail = f": {HALF}" if got.dtype == np.float16 else ""
            problems.append(f"{said} returned {got.dtype.name}, want {want}{tail}")
            continue
        why = judge_softmax(reply, x, -1, said)
        if why:
            problems.append(why)
    assert not problems, "\n".join(problems)


# -- part 2: online_softmax_stats --------------------------------------------------------------
def stats_problems(learner: Any, cases: list[tuple[list[Array], str]]) -> list[str]:
    problems = []
    for blocks, what in cases:
        said = f"online_softmax_stats(blocks) on {what}"
        why = judge_stats(call(learner, "online_softmax_stats", blocks), blocks, said)
        if why:
            problems.append(why)
    return problems


@pytest.mark.points(1)
def test_stats_lesson_example(learner: Any) -> None:
    """online_softmax_stats on the lesson's 3, 1, 5, 2: m = 5, ℓ = 1.2034"""
    row = np.array([3.0, 1.0, 5.0, 2.0])
    cases = [
        ([row[i : i + 1] for i in range(4)], "the lesson's four scores, one block each"),
        ([row[:2], row[2:]], "the lesson's four scores in two blocks"),
        ([row], "the lesson's four scores in one block"),
    ]
    problems = stats_problems(learner, cases)
    assert not problems, "\n".join(problems)


@pytest.mark.points(2)
def test_stats_against_two_pass(learner: Any) -> None:
    """online_softmax_stats: a maximum that rises block after block, many rows, large and
    masked scores, against the two-pass maximum and sum"""
    rising = np.linspace(-2.0, 9.0, 12)
    rows = np.array([np.linspace(-2.0, 9.0, 10), np.linspace(9.0, -2.0, 10), np.zeros(10)])
    masked = np.array([[-np.inf] * 6, [-np.inf, 0.0, -np.inf, 3.0, -np.inf, -np.inf]])
    cases = [
        ([rising[:3], rising[3:7], rising[7:8], rising[8:]], "a rising row, blocks of 3, 4, 1, 4"),
        ([rows[:, :4], rows[:, 4:7], rows[:, 7:]], "three rows at once, in blocks of 4, 3, 3"),
        ([np.array([1000.0, 999.0]), np.array([1200.0, 5.0])], "scores of 1000 and more"),
        ([masked[:, :2], masked[:, 2:5], masked[:, 5:]], "two rows, one of them −∞ only"),
    ]
    problems = stats_problems(learner, cases)
    assert not problems, "\n".join(problems)


# -- part 2: online_attention ------------------------------------------------------------------
def qkv(seed: int, n: int, d: int, dtype: str = "float64") -> tuple[Array, Array, Array]:
    """Three N x d arrays of standard normal values from a fixed seed."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((n, d)).astype(dtype) for _ in range(3))  # type: ignore[return-value]


def attention_problems(
    learner: Any, cases: list[tuple[Array, Array, Array, int, bool, str]]
) -> list[str]:
    problems = []
    for q, k, v, block, causal, what in cases:
        said = f"online_attention(q, k, v, block={block}, causal={causal}) on {what}"
        reply = call(learner, "online_attention", q, k, v, block=block, causal=causal)
        why = judge_attention(reply, q, k, v, block, causal, said)
        if why:
            problems.append(why)
    return problems


@pytest.mark.points(2)
def test_attention_small(learner: Any) -> None:
    """online_attention against the whole-matrix attention: N = 5 and 12, blocks that do and
    do not divide N"""
    q, k, v = qkv(1, 5, 3)
    q2, k2, v2 = qkv(2, 12, 4)
    cases = [
        (q, k, v, 2, False, "N = 5, d = 3"),
        (q2, k2, v2, 4, False, "N = 12, d = 4"),
        (q2, k2, v2, 5, False, "N = 12, d = 4"),
    ]
    problems = attention_problems(learner, cases)
    assert not problems, "\n".join(problems)


@pytest.mark.points(2)
def test_attention_rescales(learner: Any) -> None:
    """online_attention when later keys score higher (the maximum rises at every block) and
    when a score is large enough to overflow exp"""
    q, k, v = qkv(3, 9, 4)
    q[:] = np.abs(q) + 0.5
    k = np.abs(k) * np.linspace(0.2, 3.0, 9)[:, None]  # each key scores higher than the last
    q2, k2, v2 = qkv(4, 8, 2)
    k2[5] *= 600  # scores of about a thousand for that key: a plain exp is infinity
    cases = [
        (q, k, v, 2, False, "N = 9, each key scoring higher than the one before"),
        (q, k, v, 3, True, "the same, causal"),
        (q2, k2, v2, 3, False, "N = 8, one key scoring about a thousand"),
    ]
    problems = attention_problems(learner, cases)
    assert not problems, "\n".join(problems)


@pytest.mark.points(2)
def test_attention_causal(learner: Any) -> None:
    """online_attention with causal=True: query i sees keys 0 to i, itself included"""
    q, k, v = qkv(5, 7, 3)
    q2, k2, v2 = qkv(6, 10, 2)
    cases = [
        (q, k, v, 3, True, "N = 7, d = 3"),
        (q2, k2, v2, 4, True, "N = 10, d = 2"),
        (q2, k2, v2, 1, True, "N = 10, d = 2"),
    ]
    problems = attention_problems(learner, cases)
    assert not problems, "\n".join(problems)


@pytest.mark.points(1)
def test_attention_edge_sizes(learner: Any) -> None:
    """online_attention with blocks of one key, one block of all keys or more, N = 1, d = 1"""
    q, k, v = qkv(7, 6, 2)
    one_q, one_k, one_v = qkv(8, 1, 3)
    thin = qkv(9, 5, 1)
    cases = [
        (q, k, v, 1, False, "N = 6, blocks of one key"),
        (q, k, v, 6, False, "N = 6, one block"),
        (q, k, v, 50, True, "N = 6, a block longer than N"),
        (one_q, one_k, one_v, 4, True, "N = 1"),
        (*thin, 2, False, "d = 1"),
    ]
    problems = attention_problems(learner, cases)
    assert not problems, "\n".join(problems)


MEMORY_CASE = (2048, 16, 64)  # N, d, block


@pytest.mark.points(2)
def test_attention_memory(learner: Any, measured: Any) -> None:
    """online_attention, causal, on N = 2048, d = 16, block = 64 holds far less than one
    N × N matrix"""
    n, d, block = MEMORY_CASE
    q, k, v = qkv(10, n, d)
    said = f"online_attention(q, k, v, block={block}, causal=True) on N = {n}, d = {d}, float64"
    reply = call(learner, "online_attention", q, k, v, block=block, causal=True, traced=True)
    measured(
        "peak_mib",
        label=f"peak memory, causal, N = {n}, d = {d}, block = {block}: your "
        "online_attention, the check's three-step attention",
        unit="MiB",
        yours=reply.peak_mib,
        trusted=reference.three_step_peak(q, k, v, causal=True) / MIB,
    )
    why = judge_attention(reply, q, k, v, block, True, said) or judge_memory(
        reply.peak_mib, n, d, block, said
    )
    assert why is None, why


# -- part 3: attention_bytes -------------------------------------------------------------------
# The lesson's head, worked there by hand ("Per step: bytes, FLOPs and intensity" and "One
# kernel would move only Q, K, V and O"): 132 MiB in three kernels, 4 MiB in one.
LESSON_HEAD = (4096, 128, 2)
LESSON_BYTES = {True: 138_412_032, False: 4_194_304}


@pytest.mark.points(2)
def test_attention_bytes(learner: Any, measured: Any) -> None:
    """attention_bytes for the lesson's head (N = 4096, d = 128, FP16), in three kernels and
    in one"""
    n, d, b = LESSON_HEAD
    problems = []
    for naive, key, what in (
        (True, "naive_mib", "standard attention (S and P in HBM)"),
        (False, "streaming_mib", "one fused kernel"),
    ):
        said = f"attention_bytes({n}, {d}, {b}, naive={naive})"
        got = number(call(learner, "attention_bytes", n, d, b, naive).value)
        measured(
            key,
            label=f"{what}, one head, N = {n}, d = {d}, FP16",
            unit="MiB",
            yours=got / MIB if isinstance(got, int | float) and not isinstance(got, bool) else None,
            trusted=LESSON_BYTES[naive] / MIB,
            tolerance=0.0,
        )
        why = judge_bytes(got, LESSON_BYTES[naive], n, d, b, naive, said)
        if why:
            problems.append(why)
    assert not problems, "\n".join(problems)
