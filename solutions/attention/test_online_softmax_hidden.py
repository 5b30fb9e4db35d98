"""Hidden checks of the online-softmax exercise: inputs the notebook does not show.

Every input is drawn afresh on each run from the run's seed
(`gpulab.grading.checks.draws`; GPULAB_CHECK_SEED=<n> replays a run), and every message
about drawn inputs names the seed. `softmax_two_pass` meets arrays of one to three
dimensions along any axis, in float16, float32 and float64, with scores up to 1e30
(float32's largest, in float32), random −∞ masks, rows of −∞ only and rows with +∞
entries, and long float16 rows whose sums lose digits in float16.
`online_softmax_stats` meets rows cut into blocks of random lengths, many rows at
once, maxima that rise at every block, huge scores, blocks of −∞ and rows of −∞
only. `online_attention` meets N from 1 to 40 and d from 1 to 9, blocks of one key,
of N or more and blocks that do not divide N, the causal mask, keys whose scores
rise block after block or overflow `exp`, and, for the memory budget, N from 1900
to 2400 with blocks of 24 to 56 keys that do not divide it. `attention_bytes` meets fresh sizes
and value widths; its reference count lives here, not in the visible checks.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from gpulab.grading.checks.draws import SEEN, rng, telling
from gpulab.grading.checks.pytest_plugin import visible_checks

Array = np.ndarray[Any, np.dtype[Any]]


def _visible() -> ModuleType:
    """The visible checks' module (one copy of the helpers for both files)."""
    return visible_checks(__file__)


_V = _visible()
call, judge_softmax, judge_stats = _V.call, _V.judge_softmax, _V.judge_stats
judge_attention, judge_memory, judge_bytes = _V.judge_attention, _V.judge_memory, _V.judge_bytes
memory_budget, number, HALF = _V.memory_budget, _V.number, _V.HALF

# The largest score scale drawn for each dtype (float16 holds up to 65504).
SCALES = {
    "float16": (1.0, 8.0, 300.0, 6e4),
    "float32": (1.0, 50.0, 1e4, 1e30, 3e38),
    "float64": (1.0, 1e3, 1e30, 1e300),
}


def numbers(draw: random.Random) -> np.random.Generator:
    """A NumPy generator seeded from the check's draws."""
    return np.random.default_rng(draw.getrandbits(64))


def scores(draw: random.Random, shape: tuple[int, ...], dtype: str, scale: float) -> Array:
    """Standard normal scores times `scale`, within what `dtype` holds."""
    top = float(np.finfo(dtype).max)
    values = np.clip(numbers(draw).standard_normal(shape) * scale, -top, top)
    return values.astype(dtype)


def along(x: Array, axis: int) -> Array:
    """A view of x with `axis` last: its rows are x's rows along axis."""
    return np.moveaxis(x, axis, -1)


def hostile(draw: random.Random, x: Array, axis: int, *, masked_row: bool) -> Array:
    """x with −∞ sprinkled in, a row of −∞ only (`masked_row`, where there is more than one
    row) and, sometimes, +∞ entries in another row."""
    x = x.copy()
    rows = along(x, axis)
    gen = numbers(draw)
    if draw.random() < 0.6:
        rows[gen.random(rows.shape) < 0.3] = -np.inf
    index = [draw.randrange(n) for n in rows.shape[:-1]]
    if masked_row:
        rows[tuple(index)] = -np.inf
    if draw.random() < 0.3 and rows.shape[-1] > 1:
        other = tuple(draw.randrange(n) for n in rows.shape[:-1])
        if other != tuple(index) or not rows.shape[:-1]:
            for column in draw.sample(range(rows.shape[-1]), draw.randint(1, 2)):
                rows[(*other, column)] = np.inf
    return x


@pytest.mark.points(2)
def test_softmax_on_fresh_scores(learner: Any) -> None:
    """softmax_two_pass on drawn arrays, axes, dtypes, huge scores and masks"""
    draw = rng("test_softmax_on_fresh_scores")
    problems = []
    for case in range(8):
        ndim = draw.randint(1, 3)
        shape = tuple(draw.randint(1 if ndim > 1 else 2, 7) for _ in range(ndim))
        axis = draw.randrange(-ndim, ndim)
        dtype = draw.choice(list(SCALES))
        scale = SCALES[dtype][-1 if case == 1 else draw.randrange(len(SCALES[dtype]))]
        x = scores(draw, shape, dtype, scale)
        if case == 1:  # no mask, and every row's largest score overflows a plain exp
            x = np.abs(x)
        else:
            x = hostile(draw, x, axis, masked_row=case == 0 or draw.random() < 0.5)
        what = f"drawn {dtype} scores of shape {shape}, scale {scale:g}"
        with telling(f"on {what}"):
            reply = call(learner, "softmax_two_pass", x, axis=axis)
        why = judge_softmax(reply, x, axis, f"softmax_two_pass(x, axis={axis}) on {what}")
        if why:
            problems.append(f"{why} {SEEN}")
    assert not problems, "\n".join(problems)


@pytest.mark.points(1)
def test_softmax_sums_float16_in_float32(learner: Any) -> None:
    """softmax_two_pass on long float16 rows: float32 out, as exact as float32 sums make it"""
    draw = rng("test_softmax_sums_float16_in_float32")
    shape = (draw.randint(1, 3), draw.randint(2000, 6000))
    x = scores(draw, shape, "float16", draw.uniform(0.5, 3.0))
    said = f"softmax_two_pass(x) on drawn float16 rows of {shape[1]} scores"
    with telling("on drawn float16 rows"):
        reply = call(learner, "softmax_two_pass", x)
    got = reply.value
    assert not isinstance(got, np.ndarray) or got.dtype == np.float32, (
        f"{said} returned {got.dtype.name}, want float32: {HALF} {SEEN}"
    )
    why = judge_softmax(reply, x, -1, said)
    assert why is None, f"{why} {SEEN}"


def cut(draw: random.Random, row: Array) -> list[Array]:
    """`row` cut along its last axis into consecutive blocks of random lengths."""
    sizes, left = [], row.shape[-1]
    while left:
        sizes.append(min(left, draw.randint(1, 7)))
        left -= sizes[-1]
    edges = np.cumsum(sizes)[:-1]
    return [np.ascontiguousarray(b) for b in np.split(row, edges, axis=-1)]


@pytest.mark.points(2)
def test_stats_on_fresh_rows(learner: Any) -> None:
    """online_softmax_stats on drawn rows cut into blocks of random lengths"""
    draw = rng("test_stats_on_fresh_rows")
    problems = []
    for case in range(8):
        lead = () if draw.random() < 0.4 else (draw.randint(1, 5),)
        length = draw.randint(1, 40)
        dtype = "float32" if draw.random() < 0.25 else "float64"
        scale = draw.choice((1.0, 30.0, 1e3, 1e30))
        row = scores(draw, (*lead, length), dtype, scale)
        if case % 2 == 0:
            row = np.sort(row, axis=-1)  # the maximum rises block after block
        if draw.random() < 0.5:
            row[numbers(draw).random(row.shape) < 0.3] = -np.inf
        if case == 1 or draw.random() < 0.2:
            row[(*(draw.randrange(n) for n in lead), slice(None))] = -np.inf
        blocks = cut(draw, row)
        what = f"drawn {dtype} rows of shape {row.shape}, scale {scale:g}, in {len(blocks)} blocks"
        with telling(f"on {what}"):
            reply = call(learner, "online_softmax_stats", blocks)
        why = judge_stats(reply, blocks, f"online_softmax_stats(blocks) on {what}")
        if why:
            problems.append(f"{why} {SEEN}")
    assert not problems, "\n".join(problems)


def drawn_qkv(
    draw: random.Random, n: int, d: int, dtype: str, *, loud: bool
) -> tuple[Array, Array, Array]:
    """q, k, v of N x d; `loud`: scores large enough to overflow exp (float64 only), and keys
    that score higher and higher."""
    gen = numbers(draw)
    q, k, v = (gen.standard_normal((n, d)) for _ in range(3))
    if draw.random() < 0.5:
        k = k * np.linspace(0.2, 3.0, n)[:, None]  # later keys score higher: the max rises
        q = np.abs(q)
        k = np.abs(k)
    if loud and dtype == "float64":
        q = q * draw.uniform(50.0, 400.0)
    elif dtype != "float64":
        q = q * draw.uniform(0.5, 3.0)
    return q.astype(dtype), k.astype(dtype), v.astype(dtype)


@pytest.mark.points(3)
def test_attention_on_fresh_inputs(learner: Any) -> None:
    """online_attention on drawn sizes, blocks (1, N or more, not dividing N), dtypes, the
    causal mask and scores that overflow exp"""
    draw = rng("test_attention_on_fresh_inputs")
    problems = []
    for case in range(8):
        n, d = draw.randint(2, 40), draw.randint(1, 9)
        block = draw.randint(1, n + 3)
        if case == 0:
            n, d, block = 1, 1, 1
        elif case == 1:
            block = 1
        elif case == 2:
            block = draw.randint(n, n + 5)
        elif case == 3:
            n = draw.randint(5, 40)
            block = draw.choice([b for b in range(2, n) if n % b] or [n - 1 or 1])
        causal = case % 2 == 0  # half the cases, N = 1 among them
        dtype = draw.choice(("float64", "float64", "float32", "float16"))
        q, k, v = drawn_qkv(draw, n, d, dtype, loud=draw.random() < 0.5)
        what = f"drawn {dtype} q, k, v of N = {n}, d = {d}"
        with telling(f"on {what}, block = {block}, causal = {causal}"):
            reply = call(learner, "online_attention", q, k, v, block=block, causal=causal)
        said = f"online_attention(q, k, v, block={block}, causal={causal}) on {what}"
        why = judge_attention(reply, q, k, v, block, causal, said)
        if why:
            problems.append(f"{why} {SEEN}")
    assert not problems, "\n".join(problems)


@pytest.mark.points(2)
def test_attention_memory_on_a_fresh_size(learner: Any) -> None:
    """online_attention on a drawn N of about 2000 and a block that does not divide it holds
    far less than one N × N matrix"""
    draw = rng("test_attention_memory_on_a_fresh_size")
    n, d = draw.randint(1900, 2400), draw.randint(4, 16)
    block = draw.choice([b for b in range(24, 57) if n % b])
    causal = draw.random() < 0.5
    # the draws keep one N x N matrix of float64 over twice the budget
    assert n * n * 8 > 2 * memory_budget(n, d, block), (n, d, block)
    q, k, v = drawn_qkv(draw, n, d, "float64", loud=False)
    said = f"online_attention(q, k, v, block={block}, causal={causal}) on drawn N = {n}, d = {d}"
    with telling(f"on N = {n}, d = {d}, block = {block}"):
        reply = call(learner, "online_attention", q, k, v, block=block, causal=causal, traced=True)
    why = judge_attention(reply, q, k, v, block, causal, said) or judge_memory(
        reply.peak_mib, n, d, block, said
    )
    assert why is None, f"{why} {SEEN}"


def lesson_bytes(n: int, d: int, dtype_bytes: int, naive: bool) -> int:
    """The lesson's count: Q, K, V read once and O written once; three kernels add S written
    and read, and P written and read."""
    return 4 * n * d * dtype_bytes + (4 * n * n * dtype_bytes if naive else 0)


@pytest.mark.points(2)
def test_attention_bytes_on_fresh_sizes(learner: Any) -> None:
    """attention_bytes on drawn sizes, head sizes and value widths"""
    draw = rng("test_attention_bytes_on_fresh_sizes")
    problems = []
    for case in range(8):
        n = round(2 ** draw.uniform(0, 17))
        d = draw.randint(1, 256)
        width = draw.choice((1, 2, 4, 8))
        naive = case % 2 == 0
        said = f"attention_bytes({n}, {d}, {width}, naive={naive})"
        with telling(f"in {said}"):
            got = number(call(learner, "attention_bytes", n, d, width, naive).value)
        why = judge_bytes(got, lesson_bytes(n, d, width, naive), n, d, width, naive, said)
        if why:
            problems.append(f"{why} {SEEN}")
    assert not problems, "\n".join(problems)
