"""The online-softmax checks' own numbers, computed plainly in float64 in the checks' process.

The exercise (lesson: attention as memory traffic) asks for a two-pass softmax,
the online softmax's running maximum and sum, and attention computed one block
of keys at a time. The checks compare what the learner's code gives with what
these give for the same inputs: `softmax` and `stats` work on whole rows,
`attention` builds the whole N × N matrix of scores, the obvious way a streaming
answer must agree with. `three_step_peak` traces how much memory that obvious
way holds at its peak, the figure the learner's streaming answer is shown
beside.

The conventions are the notebook's: a row whose scores are all −∞ (fully
masked) has softmax zeros, maximum −∞ and sum 0; a row with +∞ scores gives
each of them an equal share and every other score zero (the limit of the
softmax as those scores grow together).
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "attention",
    "causal_mask",
    "softmax",
    "split",
    "stats",
    "three_step_peak",
    "traced_peak",
]

Array = np.ndarray[Any, np.dtype[Any]]


def softmax(x: Array, axis: int = -1) -> Array:
    """The softmax of `x` along `axis`, in float64, with the notebook's conventions."""
    x = np.asarray(x, dtype=np.float64)
    top = np.max(x, axis=axis, keepdims=True)
    infinite = np.isposinf(x)
    shares = np.any(infinite, axis=axis, keepdims=True)
    shift = np.where(np.isfinite(top), top, 0.0)  # a masked row: x - 0 is -inf, exp 0
    with np.errstate(over="ignore", invalid="ignore"):
        terms = np.where(shares, infinite.astype(np.float64), np.exp(x - shift))
    total = np.sum(terms, axis=axis, keepdims=True)
    result: Array = np.divide(terms, total, out=np.zeros_like(terms), where=total > 0)
    return result


def stats(row: Array) -> tuple[Array, Array]:
    """The two-pass maximum m and sum l = Σ exp(x − m) over the last axis of `row` (float64):
    (−∞, 0) for a fully masked row."""
    row = np.asarray(row, dtype=np.float64)
    m = np.max(row, axis=-1)
    shift = np.where(np.isfinite(m), m, 0.0)[..., None]
    with np.errstate(invalid="ignore"):
        total = np.sum(np.exp(row - shift), axis=-1)
    return m, total


def attention(q: Array, k: Array, v: Array, *, causal: bool = False) -> Array:
    """softmax(q kᵀ / √d) v in float64, the whole N × N matrix at once; with `causal`, key j
    is seen by query i only where j ≤ i."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    scores = q @ k.T / np.sqrt(q.shape[-1])
    if causal:
        scores = np.where(causal_mask(len(q), len(k)), scores, -np.inf)
    return softmax(scores) @ v


def causal_mask(queries: int, keys: int, *, shift: int = 0) -> Array:
    """True where query i may see key j: j ≤ i + shift (0: the causal mask)."""
    return np.arange(keys)[None, :] <= np.arange(queries)[:, None] + shift


def traced_peak(function: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, int]:
    """(what `function` returned, the most bytes it held at once, as tracemalloc counts
    them: every NumPy buffer and Python object allocated during the call)."""
    was_tracing = tracemalloc.is_tracing()
    if was_tracing:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
    else:
        tracemalloc.start()
        base = 0
    try:
        result = function(*args, **kwargs)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return result, peak


def three_step_peak(q: Array, k: Array, v: Array, *, causal: bool = False) -> int:
    """Peak bytes of the lesson's standard attention (S, then P, then O) on these inputs."""
    return traced_peak(attention, q, k, v, causal=causal)[1]


def split(row: Array, sizes: Sequence[int]) -> list[Array]:
    """`row` cut along its last axis into consecutive blocks of these sizes."""
    edges = np.cumsum(sizes)[:-1]
    return list(np.split(np.asarray(row), edges, axis=-1))
