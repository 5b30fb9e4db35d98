"""The warp-divergence checks' own model and timings: paths per warp, and a trusted kernel.

Pure, no GPU: `pattern_mask` writes out the notebook's named branch patterns
(which threads take path B), `paths_per_warp` counts the distinct paths each
warp of 32 threads runs, and `predicted_slowdown` is the model "a warp issues
every path any of its lanes takes": the time a mask costs, relative to every
lane on path A.

On a GPU: ``warp_divergence.cu`` beside this module holds the trusted
``two_paths`` kernel, with the signature the learner's kernel must have. Every
timing uses `full_grid`, one wave of THREADS-thread blocks that fills every SM
to its thread limit, so it sizes itself to the GPU it runs on. `own_times`
times the trusted kernel on several masks with CUDA events, after a warm-up,
round by round (a change of clock then hits every mask alike), and first
checks that each lane ended where a run with every lane on its path ends.
`gpulab.grading.checks.tasks.two_paths` runs the learner's kernel against the same
trusted one in the kernel worker. CuPy and NumPy are imported when a GPU
function runs.
"""

from __future__ import annotations

import functools
import importlib
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

__all__ = [
    "ITERS",
    "MEASURED",
    "PATTERNS",
    "TENTH_PREFIX",
    "THREADS",
    "WARP",
    "A",
    "B",
    "Steps",
    "device_mask",
    "full_grid",
    "launch",
    "own_times",
    "path_outputs",
    "paths_per_warp",
    "pattern_mask",
    "predicted_slowdown",
    "trusted_kernel",
    "trusted_source",
]

WARP = 32
THREADS = 256  # threads per block, in every launch of either kernel
ITERS = 1 << 16  # steps per path per lane in a timed launch
TENTH_PREFIX = 9  # steps of path A together per divergent step: a tenth of the work diverges
A, B = 0.75, 0.05  # the paths' constants in timed launches (fixed points 0.2 and 0.79)
PATTERNS = ("uniform", "all_b", "lane_parity", "one_lane", "by_warp")

MEASURED: dict[str, tuple[str, str, int]] = {
    # key (as in the learner's predictions()): (label, pattern, prefix)
    "lane_parity": ("odd lanes on path B: 16/16 in every warp", "lane_parity", 0),
    "one_lane": ("lane 0 alone on path B", "one_lane", 0),
    "by_warp": ("odd warps on path B: no warp split", "by_warp", 0),
    "tenth": ("odd lanes on path B for a tenth of the work", "lane_parity", TENTH_PREFIX),
}
"""What the learner's ratios are compared on: each pattern's time over "uniform" at its prefix."""


@dataclass(frozen=True)
class Steps:
    """What every thread computes: the paths' constants (path A is x = fmaf(x, a, b), path B
    x = fmaf(x, b, a)), the steps of path A all lanes take together, then the steps of its own
    path."""

    a: float
    b: float
    uniform_iters: int
    iters: int


MaskSpec = str | Sequence[int]
"""A pattern's name, or a mask (0: path A, 1: path B) repeated to fill the grid."""


# -- the model: no GPU ------------------------------------------------------------------------
def pattern_mask(name: str, n: int) -> list[int]:
    """Which of threads 0..n-1 take path B (1) under a named pattern.

    Lane = i % 32 and warp = i // 32: "uniform" none, "all_b" all,
    "lane_parity" the odd lanes, "one_lane" lane 0 of every warp, "by_warp"
    every lane of the odd warps.
    """
    if name not in PATTERNS:
        raise ValueError(f"no pattern named {name!r}: the patterns are {', '.join(PATTERNS)}")

    def takes_b(i: int) -> bool:
        lane, warp = i % WARP, i // WARP
        return {
            "uniform": False,
            "all_b": True,
            "lane_parity": lane % 2 == 1,
            "one_lane": lane == 0,
            "by_warp": warp % 2 == 1,
        }[name]

    return [int(takes_b(i)) for i in range(n)]


def _warps(mask: Sequence[int]) -> list[set[int]]:
    return [set(mask[start : start + WARP]) for start in range(0, len(mask), WARP)]


def paths_per_warp(mask: Sequence[int]) -> list[int]:
    """The distinct paths each warp runs: one number per 32 threads (the last warp may be
    partial), counting distinct values, so that a many-way branch counts too."""
    return [len(paths) for paths in _warps(mask)]


def predicted_slowdown(
    mask: Sequence[int], cost_a: float, cost_b: float, uniform: float = 0.0
) -> float:
    """The model's time for `mask` over its time with every lane on path A.

    A warp costs `uniform` (work all its lanes do together) plus the cost of
    every path any of its lanes takes, once each however many lanes take it;
    a partial last warp costs as much as a full one.
    """
    if not mask:
        raise ValueError("an empty mask has no warps")
    cost = {0: cost_a, 1: cost_b}
    warps = _warps(mask)
    spent = sum(uniform + sum(cost[path] for path in paths) for paths in warps)
    return spent / (len(warps) * (uniform + cost_a))


# -- the trusted kernel: on a GPU ----------------------------------------------------------------
def _cupy() -> Any:
    return importlib.import_module("cupy")


def _numpy() -> Any:
    return importlib.import_module("numpy")


def trusted_source() -> str:
    """The CUDA C of the trusted ``two_paths`` kernel."""
    return files(__package__).joinpath("warp_divergence.cu").read_text(encoding="utf-8")


@functools.cache
def trusted_kernel() -> Any:
    """The trusted ``two_paths``, compiled by NVRTC once per process (a cupy.RawKernel)."""
    module = _cupy().RawModule(code=trusted_source(), options=("--std=c++17",))
    return module.get_function("two_paths")


def full_grid() -> tuple[int, int]:
    """(blocks, threads in all) of one wave: THREADS-thread blocks filling every SM of the
    current GPU to its thread limit."""
    cp = _cupy()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    blocks = int(props["multiProcessorCount"]) * (
        int(props["maxThreadsPerMultiProcessor"]) // THREADS
    )
    return blocks, blocks * THREADS


def device_mask(spec: MaskSpec, n: int) -> Any:
    """The mask for n threads as a CuPy uint8 array: a pattern's name, or a mask repeated
    (and cut) to n threads."""
    cp, np = _cupy(), _numpy()
    if isinstance(spec, str):
        if spec not in PATTERNS:
            raise ValueError(f"no pattern named {spec!r}")
        i = np.arange(n, dtype=np.int64)
        lane, warp = i % WARP, i // WARP
        takes_b = {
            "uniform": np.zeros(n, dtype=bool),
            "all_b": np.ones(n, dtype=bool),
            "lane_parity": lane % 2 == 1,
            "one_lane": lane == 0,
            "by_warp": warp % 2 == 1,
        }[spec]
        return cp.asarray(takes_b.astype(np.uint8))
    return cp.asarray(np.resize(np.asarray(spec, dtype=np.uint8), n))


def launch(kernel: Any, out: Any, take_b: Any, steps: Steps) -> None:
    """Enqueue one launch of a ``two_paths`` kernel over len(out) threads, in just enough
    blocks of THREADS."""
    np = _numpy()
    n = int(out.size)
    kernel(
        ((n + THREADS - 1) // THREADS,),
        (THREADS,),
        (
            out,
            take_b,
            np.uint32(n),
            np.float32(steps.a),
            np.float32(steps.b),
            np.uint32(steps.uniform_iters),
            np.uint32(steps.iters),
        ),
    )


def path_outputs(n: int, steps: Steps) -> tuple[Any, Any]:
    """Where each of n threads ends with every lane on path A, and with every lane on path B
    (CuPy arrays, from the trusted kernel)."""
    cp = _cupy()
    ends = []
    for path in (0, 1):
        out = cp.full(n, cp.nan, dtype=cp.float32)
        take_b = cp.full(n, path, dtype=cp.uint8)
        launch(trusted_kernel(), out, take_b, steps)
        ends.append(out)
    cp.cuda.get_current_stream().synchronize()
    return ends[0], ends[1]


def own_times(
    masks: Mapping[str, tuple[MaskSpec, int]],
    *,
    iters: int = ITERS,
    rounds: int = 5,
    per_event: int = 3,
) -> dict[str, Any]:
    """Median milliseconds per launch of the trusted kernel on the full grid, per mask.

    `masks` maps a name to (mask, prefix): `prefix` x `iters` steps of path A
    together, then `iters` on each lane's own path. Each mask is launched once
    as a warm-up and its output checked lane by lane (RuntimeError if the
    trusted kernel is wrong); then, `rounds` times, every mask in turn gets
    `per_event` launches between one pair of CUDA events. Returns ``ms`` (name
    -> median), ``n`` and ``blocks``.
    """
    cp = _cupy()
    blocks, n = full_grid()
    kernel = trusted_kernel()
    prepared: dict[str, tuple[Any, Any, Steps]] = {}
    for name, (spec, prefix) in masks.items():
        steps = Steps(A, B, prefix * iters, iters)
        take_b, out = device_mask(spec, n), cp.empty(n, dtype=cp.float32)
        launch(kernel, out, take_b, steps)
        on_a, on_b = path_outputs(n, steps)
        if not bool(cp.all(out == cp.where(take_b.astype(bool), on_b, on_a))):
            raise RuntimeError(f"the trusted two_paths kernel went wrong on the mask {name!r}")
        prepared[name] = (take_b, out, steps)
    samples: dict[str, list[float]] = {name: [] for name in masks}
    for _ in range(rounds):
        for name, (take_b, out, steps) in prepared.items():
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(per_event):
                launch(kernel, out, take_b, steps)
            end.record()
            end.synchronize()
            samples[name].append(float(cp.cuda.get_elapsed_time(start, end)) / per_event)
    return {
        "ms": {name: float(statistics.median(values)) for name, values in samples.items()},
        "n": n,
        "blocks": blocks,
    }
