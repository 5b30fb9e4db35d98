"""Thin CuPy launchers for the probe kernels, and CUDA-event timing.

Each launcher states its launch configuration in its arguments (grid, block,
dynamic shared memory) and passes scalars with their exact C types, so what
runs is what the `.cu` file says. Launchers that return a result synchronise;
the others only enqueue, so that `time_ms` can put many launches between one
pair of CUDA events.

NumPy and CuPy are imported inside the functions: importing this module is
free on a machine without a GPU, and its pure helpers (`cycle_successors`)
work there too.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from gpulab.kernels import function

__all__ = [
    "LINE_BYTES",
    "chase",
    "copy",
    "copy_pointers",
    "copy_tiles",
    "cycle_successors",
    "cycle_table",
    "divergent_paths",
    "fma_chains",
    "line_of",
    "read_strided",
    "smem_bank_access",
    "smem_chase",
    "spin_one_thread",
    "time_ms",
]

LINE_BYTES = 128  # spacing of the pointer chase: one L1/L2 cache line
_POINTER = 8  # the chase stores 64-bit device addresses


def time_ms(run: Callable[[], object], *, iters: int, repeats: int, warmup: int = 1) -> list[float]:
    """Milliseconds per call of `run`, one value per repeat, timed with CUDA events.

    `warmup` calls run first, untimed (compilation, clocks ramping up, caches);
    then each repeat records an event, makes `iters` calls, records another,
    and waits for it. `run` must only enqueue work on the current stream.
    """
    cupy = importlib.import_module("cupy")

    for _ in range(warmup):
        run()
    stream = cupy.cuda.get_current_stream()
    stream.synchronize()
    per_call: list[float] = []
    for _ in range(repeats):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        for _ in range(iters):
            run()
        end.record(stream)
        end.synchronize()
        per_call.append(float(cupy.cuda.get_elapsed_time(start, end)) / iters)
    return per_call


def copy(
    variant: str, src: Any, dst: Any, *, blocks: int, threads: int, shared_mem: int = 0
) -> None:
    """Enqueue one float4 copy of `src` into `dst` with a kernel of copy.cu.

    Both arrays must be contiguous, of the same size, a multiple of 16 bytes.
    """
    numpy = importlib.import_module("numpy")

    function("copy", variant)(
        (blocks,), (threads,), (src, dst, numpy.uint64(src.nbytes // 16)), shared_mem=shared_mem
    )


def copy_tiles(src: Any, dst: Any, *, threads: int) -> int:
    """Enqueue the tiled copy of copy.cu (one float4 per thread); returns the grid it used.

    The grid has a thread for every float4: ceil(n / threads) blocks.
    """
    numpy = importlib.import_module("numpy")

    n = int(src.nbytes) // 16
    blocks = max(1, -(-n // threads))
    function("copy", "copy_float4_tiles")((blocks,), (threads,), (src, dst, numpy.uint64(n)))
    return blocks


def read_strided(src: Any, stride: int, partial: Any, *, blocks: int, threads: int) -> None:
    """Enqueue one strided read of every `stride`-th word of `src` (uint32).

    `partial` (uint32, one per thread of the grid) receives each thread's sum.
    """
    numpy = importlib.import_module("numpy")

    function("stride", "read_strided")(
        (blocks,),
        (threads,),
        (src, numpy.uint64(src.size // stride), numpy.uint64(stride), partial),
    )


def cycle_successors(order: Sequence[int]) -> list[int]:
    """The successor table of the cycle that visits `order` in turn and returns.

    `order` is a permutation of 0..n-1; the result `nxt` has
    `nxt[order[i]] == order[i + 1]` and `nxt[order[-1]] == order[0]`, so
    following it from `order[0]` visits every element once per lap. This is
    the plain-Python statement of what `cycle_table` builds on the GPU.
    """
    n = len(order)
    nxt = [0] * n
    for i, value in enumerate(order):
        nxt[value] = order[(i + 1) % n]
    return nxt


def cycle_table(table: Any, lines: int, *, seed: int) -> Any:
    """Fill `table` with a random cycle of pointers through `lines` lines; return the order.

    Line k is the 128 bytes at the table's address + k * 128; its first 8
    bytes hold the device address of the next line of a random permutation
    (the device form of `cycle_successors`), so the chase follows it with
    ``p = *p`` and no index arithmetic. The rest of each line is left as it
    is. `table` is a contiguous CuPy array of any dtype (viewed as 64-bit
    words). Returns the permutation (a CuPy array of uint32), so a chase of s
    steps from its first line must end at line `order[s % lines]`.
    """
    cupy = importlib.import_module("cupy")
    numpy = importlib.import_module("numpy")

    words = table.view(cupy.uint64)
    per_line = LINE_BYTES // _POINTER
    if lines * per_line > words.size:
        raise ValueError(
            f"{lines} lines need {lines * LINE_BYTES} bytes; the table has {table.nbytes}"
        )
    order = cupy.random.RandomState(seed).permutation(lines).astype(cupy.uint32)
    successor = cupy.roll(order, -1).astype(cupy.uint64)
    base = numpy.uint64(table.data.ptr)
    words[order.astype(cupy.int64) * per_line] = base + successor * numpy.uint64(LINE_BYTES)
    return order


def line_of(address: int, base: int) -> int:
    """The line of a chase table at `base` that the device address `address` points into."""
    return (address - base) // LINE_BYTES


def chase(table: Any, start_line: int, *, warm_steps: int, steps: int) -> tuple[int, int]:
    """Run the one-thread pointer chase; return (line reached, cycles for `steps` loads).

    `table` (filled by `cycle_table`) is a CuPy array, or the device address of
    one (an int) for a table in another GPU's memory with peer access enabled,
    where CuPy would refuse an array of another device; the results live on the
    current device.
    """
    cupy = importlib.import_module("cupy")
    numpy = importlib.import_module("numpy")

    base = table if isinstance(table, int) else int(table.data.ptr)
    out_address = cupy.zeros(1, dtype=cupy.uint64)
    out_cycles = cupy.zeros(1, dtype=cupy.int64)
    function("chase", "pointer_chase")(
        (1,),
        (1,),
        (
            numpy.uint64(base + start_line * LINE_BYTES),
            numpy.uint64(warm_steps),
            numpy.uint64(steps),
            out_address,
            out_cycles,
        ),
    )
    return line_of(int(out_address.get()[0]), base), int(out_cycles.get()[0])


def copy_pointers(src: int, dst: int, nbytes: int, *, blocks: int, threads: int) -> None:
    """Enqueue copy.cu's copy_float4 between two device addresses, on the current device.

    For memory of another GPU (peer access enabled), where CuPy would refuse
    an array of another device. `nbytes` must be a multiple of 16.
    """
    numpy = importlib.import_module("numpy")

    function("copy", "copy_float4")(
        (blocks,), (threads,), (numpy.uint64(src), numpy.uint64(dst), numpy.uint64(nbytes // 16))
    )


def smem_chase(table: Any, steps: int) -> tuple[int, int]:
    """Chase `table` (uint32, at most 4096 words) in shared memory from word 0.

    Returns (word reached, cycles for `steps` loads).
    """
    cupy = importlib.import_module("cupy")
    numpy = importlib.import_module("numpy")

    out_index = cupy.zeros(1, dtype=cupy.uint32)
    out_cycles = cupy.zeros(1, dtype=cupy.int64)
    function("smem", "smem_chase")(
        (1,), (128,), (table, numpy.uint32(table.size), numpy.uint64(steps), out_index, out_cycles)
    )
    return int(out_index.get()[0]), int(out_cycles.get()[0])


def smem_bank_access(
    table: Any, out: Any, *, stride: int, broadcast: bool, iters: int, blocks: int, threads: int
) -> None:
    """Enqueue the bank-conflict kernel: lane l loads word l * stride (or 0) `iters` times."""
    numpy = importlib.import_module("numpy")

    function("smem", "smem_bank_access")(
        (blocks,),
        (threads,),
        (
            table,
            numpy.uint32(stride),
            numpy.uint32(1 if broadcast else 0),
            numpy.uint32(iters),
            out,
        ),
    )


def divergent_paths(
    out: Any, *, mask: int, iters: int, uniform_iters: int = 0, blocks: int, threads: int
) -> None:
    """Enqueue the divergence kernel.

    All lanes run `uniform_iters` FMAs of path A, then lanes whose bit of
    `mask` is set run `iters` of path B and the others `iters` of path A.
    """
    numpy = importlib.import_module("numpy")

    function("divergence", "divergent_paths")(
        (blocks,),
        (threads,),
        (
            out,
            numpy.uint32(mask),
            numpy.float32(0.999),
            numpy.float32(0.001),
            numpy.uint32(uniform_iters),
            numpy.uint32(iters),
        ),
    )


def fma_chains(out: Any, *, iters: int, blocks: int, threads: int) -> None:
    """Enqueue the FMA kernel (8 chains per thread, `iters` FMAs each, mul 1, add 0.5)."""
    numpy = importlib.import_module("numpy")

    function("fma", "fma_chains")(
        (blocks,), (threads,), (out, numpy.float32(1.0), numpy.float32(0.5), numpy.uint32(iters))
    )


def spin_one_thread(out: Any, *, ns: int) -> None:
    """Enqueue the one-thread spin (<<<1, 1>>>) for `ns` nanoseconds of GPU time.

    `out` is a uint64 array of 2: the kernel writes the nanoseconds it ran
    and the turns of its loop.
    """
    numpy = importlib.import_module("numpy")

    function("spin", "spin_one_thread")((1,), (1,), (numpy.uint64(ns), out))
