"""Task `transpose`: ``transpose(const float* in, float* out, int rows, int cols)``.

``in`` is rows x cols, row-major; ``out`` must become its transpose, cols x
rows. params: ``seed``; ``cases``, a list of ``{"label", "rows", "cols",
"config"}``, each run on fresh random inputs with ``out`` filled with NaN
(elements never written show as untouched) and NaN guard zones on both sides
of it (writes past either end show as an overrun); optional ``timed``,
``{"rows", "cols", "config"}``, where the learner's kernel, this module's own
unpadded (``[32][32]``, a 32-way bank conflict) and padded (``[32][33]``)
transposes, and a device-to-device copy of the same bytes are timed in turn,
round after round, in the same run. Returns per case the mismatch against
``in.T`` (exact: a transpose only moves bits), and for ``timed`` each one's
milliseconds and GB/s (8 bytes per element: one read, one write).
"""

from __future__ import annotations

import statistics
from typing import Any

from gpulab.grading.tasks.common import (
    compile_kernel,
    cupy,
    launch,
    mismatch,
    numpy,
    synchronize,
    time_ms,
)

KERNEL = "transpose"
GUARD = 4096          # NaN floats on each side of `out`, to catch writes past its ends
ROUNDS = 5            # timing rounds; each times every contender once
ITERS = 20            # launches between one pair of CUDA events

# The trusted transposes the learner's kernel is timed against: the same code
# with and without the padding column, for blocks of 32 x 8 threads.
TRUSTED = r"""
#define TILE 32
#define BLOCK_ROWS 8

template <int PAD>
__device__ __forceinline__ void transpose_tile(const float* __restrict__ in,
                                               float* __restrict__ out, int rows, int cols)
{
    __shared__ float tile[TILE][TILE + PAD];
    const int x = blockIdx.x * TILE + threadIdx.x;
    for (int j = threadIdx.y; j < TILE; j += BLOCK_ROWS) {
        const int y = blockIdx.y * TILE + j;
        if (y < rows && x < cols)
            tile[j][threadIdx.x] = in[(size_t)y * cols + x];
    }
    __syncthreads();
    const int ox = blockIdx.y * TILE + threadIdx.x;
    for (int j = threadIdx.y; j < TILE; j += BLOCK_ROWS) {
        const int oy = blockIdx.x * TILE + j;
        if (oy < cols && ox < rows)
            out[(size_t)oy * rows + ox] = tile[threadIdx.x][j];
    }
}

extern "C" __global__ void transpose_unpadded(const float* in, float* out, int rows, int cols)
{
    transpose_tile<0>(in, out, rows, cols);
}

extern "C" __global__ void transpose_padded(const float* in, float* out, int rows, int cols)
{
    transpose_tile<1>(in, out, rows, cols);
}
"""


def trusted_config(rows: int, cols: int) -> dict[str, Any]:
    """The launch configuration of the trusted transposes: one 32 x 8 block per 32 x 32 tile."""
    return {"grid": [(cols + 31) // 32, (rows + 31) // 32], "block": [32, 8]}


def _guarded(cp: Any, size: int) -> tuple[Any, Any]:
    """A NaN-filled buffer with GUARD spare floats on each side, and the view between them."""
    buffer = cp.full(size + 2 * GUARD, cp.nan, dtype=cp.float32)
    return buffer, buffer[GUARD:GUARD + size]


def _overrun(cp: Any, buffer: Any) -> int:
    """How many guard floats around the output were written."""
    guards = cp.concatenate([buffer[:GUARD], buffer[-GUARD:]])
    return int(cp.count_nonzero(~cp.isnan(guards)))


def run(source: str, params: dict[str, Any]) -> dict[str, Any]:
    cp = cupy()
    np = numpy()

    kernel = compile_kernel(source, KERNEL)
    rng = cp.random.default_rng(int(params["seed"]))
    out: dict[str, Any] = {"cases": []}
    for case in params["cases"]:
        rows, cols = int(case["rows"]), int(case["cols"])
        what = f"{case.get('label', 'a case')} ({rows} x {cols})"
        src = rng.random((rows, cols), dtype=cp.float32)
        buffer, dst = _guarded(cp, rows * cols)
        launch(kernel, case["config"], (src, dst, np.int32(rows), np.int32(cols)), what)
        synchronize(what)
        out["cases"].append({"label": case.get("label", ""), "rows": rows, "cols": cols,
                             "config": case["config"], "overrun": _overrun(cp, buffer),
                             **mismatch(dst.reshape(cols, rows), src.T)})
    timed = params.get("timed")
    if timed:
        out["timed"] = _timed(cp, np, kernel, rng, timed)
    return out


def _timed(cp: Any, np: Any, kernel: Any, rng: Any, timed: dict[str, Any]) -> dict[str, Any]:
    rows, cols = int(timed["rows"]), int(timed["cols"])
    what = f"the timed run ({rows} x {cols})"
    src = rng.random((rows, cols), dtype=cp.float32)
    dst = cp.full(rows * cols, cp.nan, dtype=cp.float32)
    args = (src, dst, np.int32(rows), np.int32(cols))
    launch(kernel, timed["config"], args, what)
    synchronize(what)
    wrong = mismatch(dst.reshape(cols, rows), src.T)["wrong"]

    trusted = cp.RawModule(code=TRUSTED, options=("--std=c++17",))
    ours = trusted_config(rows, cols)
    nbytes = src.nbytes

    def copy() -> None:
        cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes,
                                    cp.cuda.runtime.memcpyDeviceToDevice,
                                    cp.cuda.get_current_stream().ptr)

    def trusted_run(name: str) -> Any:
        function = trusted.get_function(name)
        return lambda: launch(function, ours, args, name)

    contenders = {"yours": lambda: launch(kernel, timed["config"], args, what),
                  "unpadded": trusted_run("transpose_unpadded"),
                  "padded": trusted_run("transpose_padded"),
                  "copy": copy}
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(ROUNDS):       # interleaved, so a clock change hits every contender alike
        for name, enqueue in contenders.items():
            samples[name].append(time_ms(enqueue, iters=ITERS, repeats=1))
    synchronize(what)
    ms = {name: float(statistics.median(values)) for name, values in samples.items()}
    moved = 8 * rows * cols / 1e9          # GB: every element read once and written once
    return {"rows": rows, "cols": cols, "config": timed["config"], "wrong": wrong,
            "ms": ms, "gbs": {name: moved / (value * 1e-3) for name, value in ms.items()},
            "vs_padded": ms["padded"] / ms["yours"],
            "vs_unpadded": ms["unpadded"] / ms["yours"],
            "vs_copy": ms["copy"] / ms["yours"]}
