"""Task `transpose`: ``transpose(const float* in, float* out, int rows, int cols)``.

``in`` is rows x cols, row-major; ``out`` must become its transpose, cols x
rows. params: ``seed``; ``cases``, a list of ``{"label", "rows", "cols",
"config"}`` (with ``"repeat"`` and ``"busy"`` as `judge.repeat_case` reads
them), every launch on fresh random inputs with ``out`` filled with NaN
(elements never written show as untouched) and guard zones on both sides of
``out`` and of ``in`` (writes past either end of ``out`` show as an overrun);
optional ``timed``, ``{"rows", "cols", "config"}``, where the learner's
kernel, this module's own unpadded (``[32][32]``, a 32-way bank conflict) and
padded (``[32][33]``) transposes, and a device-to-device copy of the same
bytes are timed launch by launch, in turn, each on fresh inputs after an L2
flush, and every one of the learner's launches is checked; or ``sanitize``
(the kernel under compute-sanitizer). Returns per case the mismatch against
``in.T`` as it was before the launch (exact: a transpose only moves bits),
``overrun`` and ``overrun_before``, and for ``timed`` each one's median
milliseconds and GB/s (8 bytes per element: one read, one write), with the
first wrong launch's findings (or the last) and how many were wrong.
"""

from __future__ import annotations

from typing import Any

from gpulab.grading.checks.tasks import judge
from gpulab.grading.checks.tasks.common import (
    cupy,
    launch,
    mismatch,
    numpy,
)
from gpulab.grading.checks.tasks.rules import Rules
from gpulab.grading.checks.tasks.task import Task, run_task

__all__ = ["RULES", "TRUSTED", "run", "trusted_config"]

KERNEL = "transpose"
RULES = Rules("bank-conflicts")

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


def run(source: str, params: dict[str, Any]) -> dict[str, Any]:
    return run_task(source, params, TASK)


def _prepare(rng: Any, rows: int, cols: int) -> dict[str, Any]:
    cp = cupy()
    _, flat = judge.guarded(rows * cols, guard=judge.IN_GUARD)
    flat[...] = rng.random(rows * cols, dtype=cp.float32)
    src = flat.reshape(rows, cols)
    # A store that takes `out`'s rows to be `cols` long (rows and cols swapped)
    # reaches up to cols * (cols - rows) floats past its end: the tail guard
    # covers that, so the mistake reads as an overrun on every GPU instead of a
    # fault on one and a silent write into another buffer on the next.
    reach = max(0, cols * (cols - rows))
    out_buffer, out = judge.guarded(rows * cols, tail=judge.GUARD + reach)
    return {
        "shape": (rows, cols),
        "src": src,
        "want": cp.ascontiguousarray(src.T),
        "out": out,
        "out_buffer": out_buffer,
    }


def _launch(kernel: Any, config: Any, work: dict[str, Any], what: str) -> None:
    np = numpy()
    rows, cols = work["shape"]
    launch(kernel, config, (work["src"], work["out"], np.int32(rows), np.int32(cols)), what)


def _check(work: dict[str, Any]) -> dict[str, Any]:
    rows, cols = work["shape"]
    found = {
        **mismatch(work["out"].reshape(cols, rows), work["want"]),
        **judge.overrun(work["out_buffer"], work["out"]),
    }
    found["ok"] = not found["wrong"] and not found["overrun"]
    return found


def _timed(kernel: Any, rng: Any, timed: dict[str, Any]) -> dict[str, Any]:
    cp = cupy()
    rows, cols = int(timed["rows"]), int(timed["cols"])
    what = f"the timed run ({rows} x {cols})"
    config = timed["config"]
    trusted = cp.RawModule(code=TRUSTED, options=("--std=c++17",))
    ours = trusted_config(rows, cols)
    nbytes = 4 * rows * cols

    def copy(work: dict[str, Any]) -> None:
        cp.cuda.runtime.memcpyAsync(
            work["out"].data.ptr,
            work["src"].data.ptr,
            nbytes,
            cp.cuda.runtime.memcpyDeviceToDevice,
            cp.cuda.get_current_stream().ptr,
        )

    def reference(name: str) -> judge.Contender:
        function = trusted.get_function(name)
        return judge.Contender(
            lambda: _prepare(rng, rows, cols), lambda work: _launch(function, ours, work, name)
        )

    timing = judge.time_each(
        {
            "yours": judge.Contender(
                lambda: _prepare(rng, rows, cols),
                lambda work: _launch(kernel, config, work, what),
                _check,
            ),
            "unpadded": reference("transpose_unpadded"),
            "padded": reference("transpose_padded"),
            "copy": judge.Contender(lambda: _prepare(rng, rows, cols), copy),
        },
        what,
    )
    ms = timing["ms"]
    moved = 8 * rows * cols / 1e9  # GB: every element read once and written once
    return {
        "rows": rows,
        "cols": cols,
        "config": config,
        "ms": ms,
        "gbs": {name: moved / (value * 1e-3) for name, value in ms.items()},
        "vs_padded": ms["padded"] / ms["yours"],
        "vs_unpadded": ms["unpadded"] / ms["yours"],
        "vs_copy": ms["copy"] / ms["yours"],
        **judge.summary(timing["checks"]["yours"]),
    }


def _plain_args(np: Any, rng: Any, case: dict[str, Any]) -> tuple[Any, ...]:
    rows, cols = int(case["rows"]), int(case["cols"])
    return (
        rng.random((rows, cols), dtype=np.float32),
        np.full(rows * cols, np.nan, dtype=np.float32),
        np.int32(rows),
        np.int32(cols),
    )


TASK = Task(
    name="transpose",
    kernel=KERNEL,
    rules=RULES,
    plain_args=_plain_args,
    size=lambda case: {"rows": int(case["rows"]), "cols": int(case["cols"])},
    what=lambda case, size: f"{case.get('label', 'a case')} ({size['rows']} x {size['cols']})",
    draws=lambda seed: cupy().random.default_rng(seed),
    prepare=lambda rng, size: _prepare(rng, size["rows"], size["cols"]),
    launch=_launch,
    check=_check,
    timed=_timed,
)
