"""Checks of the occupancy exercise (lesson: GPU architecture).

Each check calls your ``occupancy`` in a separate process. Without a GPU, the
expected answers are worked out by hand from the per-SM limits of an H100, an
A100 and an RTX 4090 (the lesson's examples among them); a failing check says
which of your counts by limit is off, and whether it allows too many blocks
or too few, but not the right number. With a GPU, the answer is CUDA's own:
the check compiles its kernels with CuPy under several register caps and
static shared-memory sizes, reads each kernel's real register count
(``num_regs``) and static shared memory (``shared_size_bytes``), and asks
the driver's ``cuOccupancyMaxActiveBlocksPerMultiprocessor`` how many blocks
fit.
"""

from __future__ import annotations

import functools
import importlib
import math
from typing import Any, NamedTuple

import pytest

ORDER = ("threads", "blocks", "registers", "shared memory")

# The checks' own copy of the limits (compute capability 9.0, 8.0 and 8.9).
H100 = {
    "warp_size": 32, "max_threads_per_sm": 2048, "max_threads_per_block": 1024,
    "max_blocks_per_sm": 32, "registers_per_sm": 65536, "register_partitions": 4,
    "register_allocation_unit": 256, "max_registers_per_thread": 255,
    "shared_memory_per_sm": 233472, "max_shared_memory_per_block": 232448,
    "reserved_shared_memory_per_block": 1024, "shared_memory_allocation_unit": 128,
}
A100 = {**H100, "shared_memory_per_sm": 167936, "max_shared_memory_per_block": 166912}
RTX_4090 = {**H100, "max_threads_per_sm": 1536, "max_blocks_per_sm": 24,
            "shared_memory_per_sm": 102400, "max_shared_memory_per_block": 101376}
GPUS = {"H100": H100, "A100": A100, "RTX 4090": RTX_4090}

KB = 1024
# (GPU, threads per block, registers per thread, shared bytes per block,
#  expected blocks per SM, expected limit, what the case is about). The expected
#  numbers are worked out by hand from the rules (the lesson works some of them);
#  the messages never print them: they say which of your counts is off, and how.
LESSON = [
    ("H100", 128, 96, 0, 5, "registers",
     "96 registers per thread in blocks of 4 warps (the lesson's first example)"),
    ("H100", 32, 96, 0, 20, "registers",
     "one-warp blocks at 96 registers per thread: a warp cannot straddle two register "
     "partitions"),
    ("H100", 256, 72, 40 * KB, 3, "registers",
     "the lesson's worked example: 72 registers per thread and 40 KB of shared memory"),
    ("H100", 256, 64, 40 * KB, 4, "registers", "the worked example cut to 64 registers"),
    ("H100", 768, 32, 0, 2, "threads", "blocks of 24 warps (when limits tie, threads come first)"),
    ("H100", 96, 32, 0, 21, "threads", "blocks of 3 warps"),
    ("H100", 32, 16, 0, 32, "blocks", "one-warp blocks with few registers"),
    ("H100", 256, 32, 113 * KB, 2, "shared memory", "113 KB of shared memory per block"),
    ("H100", 256, 32, 114 * KB, 1, "shared memory", "114 KB of shared memory per block"),
    ("H100", 256, 32, 48 * KB, 4, "shared memory", "48 KB of shared memory per block"),
    ("H100", 1024, 72, 0, 0, "registers", "blocks of 1024 threads at 72 registers per thread"),
]
ROUNDING = [
    ("H100", 256, 33, 0, 6, "registers",
     "33 registers per thread: a warp's registers are handed out in whole allocation units"),
    ("H100", 64, 32, 7000, 28, "shared memory",
     "7000 bytes of shared memory: with the reserve, in whole allocation units"),
    ("H100", 100, 32, 0, 16, "threads", "100 threads per block: a partial warp takes a whole slot"),
]
OTHER_GPUS = [
    ("A100", 256, 32, 48 * KB, 3, "shared memory", "48 KB per block on the A100's 164 KB"),
    ("A100", 256, 32, 100 * KB, 1, "shared memory", "100 KB per block on the A100"),
    ("A100", 128, 96, 0, 5, "registers", "96 registers per thread on the A100"),
    ("RTX 4090", 768, 32, 0, 2, "threads", "blocks of 24 warps on the RTX 4090"),
    ("RTX 4090", 32, 16, 0, 24, "blocks", "one-warp blocks on the RTX 4090"),
    ("RTX 4090", 256, 32, 48 * KB, 2, "shared memory", "48 KB per block on the RTX 4090"),
    ("RTX 4090", 512, 64, 0, 2, "registers", "64 registers per thread on the RTX 4090"),
]
CANNOT_LAUNCH = [
    ("H100", 1025, 32, 0, 0, "threads", "1025 threads in one block"),
    ("H100", 2048, 16, 0, 0, "threads", "2048 threads in one block"),
    ("H100", 128, 256, 0, 0, "registers", "256 registers per thread"),
    ("H100", 128, 32, 232448 + 1, 0, "shared memory",
     "one byte more than max_shared_memory_per_block"),
    ("H100", 128, 32, 232448, 1, "shared memory",
     "exactly max_shared_memory_per_block, which a block may have"),
    ("RTX 4090", 128, 32, 101376 + 1, 0, "shared memory",
     "one byte more than the RTX 4090's max_shared_memory_per_block"),
]

HINTS = {
    "threads": "count threads in whole warps (a block of 100 threads takes 4 warp slots), and "
               "divide the SM's warp slots by the block's warps",
    "blocks": "every block takes one of max_blocks_per_sm slots, however small",
    "registers": "round 32 x registers per thread up to a multiple of "
                 "register_allocation_unit, count the warps that fit in ONE partition "
                 "(registers_per_sm / register_partitions), multiply by the partitions, then "
                 "divide by the block's warps",
    "shared memory": "add reserved_shared_memory_per_block to the block's shared memory, round "
                     "up to a multiple of shared_memory_allocation_unit, then divide "
                     "shared_memory_per_sm by it",
}


# -- shape and consistency of an answer --------------------------------------------------------
def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def shape_problem(got: Any, call: str, limits: dict[str, int], threads: int) -> str | None:
    """What is wrong with the form of an answer (keys, types, arithmetic between them)."""
    if not isinstance(got, dict):
        return f"{call} returned {got!r:.100}, not a dict"
    missing = [k for k in ("blocks_per_sm", "warps_per_sm", "occupancy", "limit",
                           "blocks_by_limit") if k not in got]
    if missing:
        return f"{call} has no {', '.join(missing)}: got the keys {sorted(got)}"
    by_limit = got["blocks_by_limit"]
    if not isinstance(by_limit, dict) or sorted(by_limit) != sorted(ORDER) or \
            not all(is_int(v) for v in by_limit.values()):
        return (f"{call}['blocks_by_limit'] is {by_limit!r:.160}: it should map each of "
                f"{', '.join(ORDER)} to a whole number of blocks")
    if not is_int(got["blocks_per_sm"]) or not is_int(got["warps_per_sm"]):
        return (f"{call} gives blocks_per_sm {got['blocks_per_sm']!r} and warps_per_sm "
                f"{got['warps_per_sm']!r}: both should be plain ints")
    if got["blocks_per_sm"] != min(by_limit.values()):
        return (f"{call}: blocks_per_sm is {got['blocks_per_sm']}, but the smallest of your "
                f"counts by limit {by_limit} is {min(by_limit.values())}: the smallest wins")
    warps_per_block = math.ceil(threads / limits["warp_size"])
    if got["warps_per_sm"] != got["blocks_per_sm"] * warps_per_block:
        return (f"{call}: warps_per_sm is {got['warps_per_sm']}, but {got['blocks_per_sm']} "
                f"blocks of {threads} threads are {got['blocks_per_sm'] * warps_per_block} "
                f"warps ({warps_per_block} per block, counting a partial warp as a whole one)")
    max_warps = limits["max_threads_per_sm"] // limits["warp_size"]
    share = got["occupancy"]
    if not isinstance(share, int | float) or isinstance(share, bool) or \
            not math.isclose(share, got["warps_per_sm"] / max_warps, rel_tol=1e-9, abs_tol=1e-12):
        return (f"{call}: occupancy is {share!r}, but {got['warps_per_sm']} of {max_warps} "
                f"warps is {got['warps_per_sm'] / max_warps:.6g} (a fraction, not a percentage)")
    first = next(name for name in ORDER if by_limit[name] == got["blocks_per_sm"])
    if got["limit"] != first:
        return (f"{call}: limit is {got['limit']!r}, but your own counts {by_limit} name "
                f"{first!r} (when limits tie, the first of {', '.join(ORDER)})")
    return None


def wrong_counts(mine: dict[str, int], blocks: int, limit: str) -> list[str]:
    """Which of the learner's counts by limit are surely wrong, and how, knowing only the
    right blocks per SM and the limit that sets it (never printed)."""
    first = ORDER.index(limit)
    out = []
    for i, name in enumerate(ORDER):
        count = mine[name]
        # the limit's own count is `blocks`; one before it in ORDER is more (else it would
        # be named), one after it at least as much
        if name == limit and count > blocks:
            out.append(f"your count for {name} is too generous: fewer blocks fit by "
                       f"{name}. Hint: {HINTS[name]}")
        elif count < blocks or (count == blocks and i < first):
            out.append(f"your count for {name} is too strict: more blocks fit by {name}. "
                       f"Hint: {HINTS[name]}")
    return out


def check_cases(learner: Any, cases: list[tuple[Any, ...]]) -> None:
    for gpu, threads, registers, shared, blocks, limit, what in cases:
        limits = GPUS[gpu]
        call = f"occupancy({gpu}, {threads}, {registers}, {shared})"
        got = learner.call("occupancy", limits, threads, registers, shared)
        problem = shape_problem(got, call, limits, threads)
        assert problem is None, problem
        mine = got["blocks_by_limit"]
        assert got["blocks_per_sm"] == blocks and got["limit"] == limit, (
            f"{call} ({what}): your counts by limit are {mine}, and "
            + "; ".join(wrong_counts(mine, blocks, limit)))


# -- the checks without a GPU -------------------------------------------------------------
@pytest.mark.points(2)
def test_lesson_examples(learner: Any) -> None:
    """the lesson's H100 examples: registers, threads, blocks and shared memory"""
    check_cases(learner, LESSON)


@pytest.mark.points(2)
def test_rounding(learner: Any) -> None:
    """registers, shared memory and threads are rounded up to their units"""
    check_cases(learner, ROUNDING)


@pytest.mark.points(2)
def test_other_gpus(learner: Any) -> None:
    """the A100's and RTX 4090's limits: read them from `limits`"""
    check_cases(learner, OTHER_GPUS)


@pytest.mark.points(1)
def test_blocks_that_cannot_launch(learner: Any) -> None:
    """too many threads, registers or bytes of shared memory: 0 blocks"""
    check_cases(learner, CANNOT_LAUNCH)


# -- the GPU check: CUDA's occupancy API ---------------------------------------------------------
# Kernels the check compiles itself. `heavy` keeps VALUES floats live in every thread,
# so it needs about that many registers (or spills under -maxrregcount); `staged`
# has TILE floats of static shared memory. Neither is ever launched.
HEAVY = r"""
extern "C" __global__ void heavy(const float* __restrict__ in, float* __restrict__ out,
                                 int n, int rounds)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v[VALUES];
#pragma unroll
    for (int j = 0; j < VALUES; ++j) v[j] = in[(i + j) % n];
    for (int r = 0; r < rounds; ++r) {
#pragma unroll
        for (int j = 0; j < VALUES; ++j) v[j] = fmaf(v[j], v[(j + 1) % VALUES], 0.5f);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < VALUES; ++j) s += v[j];
    out[i] = s;
}
"""
STAGED = r"""
extern "C" __global__ void staged(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float tile[TILE];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int j = threadIdx.x; j < TILE; j += blockDim.x) tile[j] = in[(i + j) % n];
    __syncthreads();
    if (i < n) out[i] = tile[(threadIdx.x * 7) % TILE];
}
"""


class Spec(NamedTuple):
    """A kernel to compile: `heavy` with VALUES live floats, or `staged` with TILE floats."""

    kind: str                 # "heavy" or "staged"
    size: int                 # VALUES or TILE
    cap: int | None = None    # -maxrregcount

    @property
    def label(self) -> str:
        if self.kind == "staged":
            return f"a kernel with {self.size * 4} bytes of static shared memory"
        capped = f" compiled with --maxrregcount={self.cap}" if self.cap else ""
        return f"a kernel keeping {self.size} floats live per thread{capped}"


class Compiled(NamedTuple):
    spec: Spec
    kernel: Any               # cupy.RawKernel
    registers: int
    static_shared: int


VISIBLE_KERNELS = (Spec("heavy", 160), Spec("heavy", 160, 128), Spec("heavy", 160, 96),
                   Spec("heavy", 160, 72), Spec("heavy", 160, 64), Spec("heavy", 160, 32),
                   Spec("heavy", 24), Spec("staged", 1536), Spec("staged", 10240))
VISIBLE_THREADS = (32, 64, 96, 128, 192, 256, 320, 512, 768, 1024)
VISIBLE_DYNAMIC = (0, 1000, 7000, 20_000, 49_152, 100_000, 115_712, 116_736, 200_000)


def cupy() -> Any:
    return importlib.import_module("cupy")


@functools.cache
def device_limits() -> dict[str, int]:
    """The limits of the GPU the checks run on, from CUDA's device properties."""
    cp = cupy()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    return {
        "warp_size": int(props["warpSize"]),
        "max_threads_per_sm": int(props["maxThreadsPerMultiProcessor"]),
        "max_threads_per_block": int(props["maxThreadsPerBlock"]),
        "max_blocks_per_sm": int(props["maxBlocksPerMultiProcessor"]),
        "registers_per_sm": int(props["regsPerMultiprocessor"]),
        "register_partitions": 4,
        "register_allocation_unit": 256,
        "max_registers_per_thread": 255,
        "shared_memory_per_sm": int(props["sharedMemPerMultiprocessor"]),
        "max_shared_memory_per_block": int(props["sharedMemPerBlockOptin"]),
        "reserved_shared_memory_per_block": int(props["reservedSharedMemPerBlock"]),
        "shared_memory_allocation_unit": 128 if int(props["major"]) >= 8 else 256,
    }


@functools.cache
def compile_spec(spec: Spec) -> Compiled:
    """Compile one of the checks' kernels and read what it really uses."""
    cp = cupy()
    if spec.kind == "heavy":
        source, name = HEAVY.replace("VALUES", str(spec.size)), "heavy"
    else:
        source, name = STAGED.replace("TILE", str(spec.size)), "staged"
    options = ("--std=c++17",) + ((f"--maxrregcount={spec.cap}",) if spec.cap else ())
    kernel = cp.RawModule(code=source, options=options).get_function(name)
    static = int(kernel.shared_size_bytes)
    # Opt in to the most dynamic shared memory a block may have, so that CUDA
    # answers for large sizes too (without it, anything over 48 KB gives 0).
    kernel.max_dynamic_shared_size_bytes = \
        device_limits()["max_shared_memory_per_block"] - static
    return Compiled(spec, kernel, int(kernel.num_regs), static)


def cuda_blocks(compiled: Compiled, threads: int, dynamic: int) -> int | None:
    """CUDA's occupancy API: resident blocks per SM, or None where it refuses to answer."""
    cp = cupy()
    try:
        return int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            compiled.kernel.kernel.ptr, threads, dynamic))
    except cp.cuda.driver.CUDADriverError:
        return None


def compare_with_cuda(learner: Any, specs: Any, cases: Any) -> tuple[int, list[str]]:
    """(cases compared, messages for those where the learner and CUDA disagree).

    `cases` yields (threads, dynamic shared bytes) for each compiled kernel.
    """
    limits = device_limits()
    compared, wrong = 0, []
    for spec in specs:
        compiled = compile_spec(spec)
        for threads, dynamic in cases(compiled):
            want = cuda_blocks(compiled, threads, dynamic)
            if want is None:
                continue
            shared = compiled.static_shared + dynamic
            call = f"occupancy(limits, {threads}, {compiled.registers}, {shared})"
            got = learner.call("occupancy", limits, threads, compiled.registers, shared)
            problem = shape_problem(got, call, limits, threads)
            assert problem is None, problem
            compared += 1
            if got["blocks_per_sm"] != want:
                wrong.append(describe(compiled, threads, dynamic, want, got))
    return compared, wrong


def describe(compiled: Compiled, threads: int, dynamic: int, want: int,
             got: dict[str, Any]) -> str:
    """Teaching message for one disagreement with CUDA (CUDA's number is not in it)."""
    what = (f"{compiled.spec.label} ({compiled.registers} registers per thread, "
            f"{compiled.static_shared} bytes of static shared memory), blocks of {threads} "
            f"threads and {dynamic} bytes of dynamic shared memory")
    mine = got["blocks_by_limit"]
    if got["blocks_per_sm"] > want:
        why = (f"CUDA fits fewer blocks per SM than your {got['blocks_per_sm']}, so a count "
               f"is too generous. If it is {got['limit']}: {HINTS[got['limit']]}")
    else:
        low = [name for name in ORDER if mine[name] < want]
        why = (f"CUDA fits more blocks per SM than your {got['blocks_per_sm']}: your count "
               f"for {', '.join(low)} is too strict: {HINTS[low[0]]}")
    return f"{what}: your counts by limit are {mine}; {why}"


def verdict(compared: int, wrong: list[str]) -> None:
    assert compared, "CUDA's occupancy API answered none of the cases: the check cannot judge"
    assert not wrong, (
        f"{len(wrong)} of {compared} cases disagree with CUDA, for example:\n  - " +
        "\n  - ".join(wrong[:3]) + f"\n(limits of this GPU: {device_limits()})")


@pytest.mark.gpu
@pytest.mark.points(4)
def test_matches_cuda_occupancy_api(learner: Any) -> None:
    """your function against CUDA's occupancy API on this GPU"""
    compared, wrong = compare_with_cuda(
        learner, VISIBLE_KERNELS,
        lambda _compiled: [(t, d) for t in VISIBLE_THREADS for d in VISIBLE_DYNAMIC])
    verdict(compared, wrong)
