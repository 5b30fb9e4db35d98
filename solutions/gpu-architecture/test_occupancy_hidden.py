"""Hidden checks of the occupancy exercise: inputs the notebook does not show.

Every check draws its inputs from a seed made for each run (gpulab.grading.checks.draws)
and written nowhere the learner sees. Without a GPU: random per-SM limits
(invented architectures with other warp, block, register and shared-memory
budgets, two or four register partitions, with and without reserved shared
memory) and random blocks, compared in full (every count by limit, the limit
named) with this file's own calculator, a transcription of the rules of
CUDA's ``cuda_occupancy.h``; every register count on blocks of random sizes
whose warps do not split evenly over the partitions; shared memory in random
steps. With a GPU: kernels with random register caps and static shared
memory, block sizes of any number of threads, and random dynamic shared
memory, against CUDA's occupancy API. Messages say which count is off and
which way, never the right number.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

import pytest

from gpulab.grading.checks.draws import SEED
from gpulab.grading.checks.pytest_plugin import visible_checks


def _visible() -> ModuleType:
    """The visible checks' module (one copy of the helpers for both files)."""
    return visible_checks(__file__)


_V = _visible()
ORDER, H100, HINTS = _V.ORDER, _V.H100, _V.HINTS
Spec, shape_problem = _V.Spec, _V.shape_problem
compare_with_cuda, device_limits, verdict = _V.compare_with_cuda, _V.device_limits, _V.verdict


def reference(limits: dict[str, int], threads: int, registers: int,
              shared: int) -> dict[str, Any]:
    """The check's own calculator (cudaOccMaxActiveBlocksPerMultiprocessor's rules)."""
    warp = limits["warp_size"]
    max_warps = limits["max_threads_per_sm"] // warp
    warps = -(-threads // warp)
    by_blocks = limits["max_blocks_per_sm"]
    by_threads = 0 if threads > limits["max_threads_per_block"] else max_warps // warps
    if registers > limits["max_registers_per_thread"]:
        by_registers = 0
    elif registers == 0:
        by_registers = by_blocks
    else:
        unit = limits["register_allocation_unit"]
        per_warp = -(-registers * warp // unit) * unit
        per_partition = limits["registers_per_sm"] // limits["register_partitions"]
        by_registers = per_partition // per_warp * limits["register_partitions"] // warps
    if shared > limits["max_shared_memory_per_block"]:
        by_shared = 0
    else:
        unit = limits["shared_memory_allocation_unit"]
        per_block = -(-(shared + limits["reserved_shared_memory_per_block"]) // unit) * unit
        by_shared = limits["shared_memory_per_sm"] // per_block if per_block else by_blocks
    by_limit = {"threads": by_threads, "blocks": by_blocks, "registers": by_registers,
                "shared memory": by_shared}
    blocks = min(by_limit.values())
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps,
            "occupancy": blocks * warps / max_warps,
            "limit": next(name for name in ORDER if by_limit[name] == blocks),
            "blocks_by_limit": by_limit}


def random_limits(rng: random.Random) -> dict[str, int]:
    """An invented but plausible SM."""
    per_sm = rng.choice((32, 64, 100, 164, 228, 256)) * 1024
    reserved = rng.choice((0, 1024, 1024))
    return {
        "warp_size": 32,
        "max_threads_per_sm": rng.choice((1024, 1536, 2048)),
        "max_threads_per_block": 1024,
        "max_blocks_per_sm": rng.choice((16, 24, 32)),
        "registers_per_sm": rng.choice((32768, 65536)),
        "register_partitions": rng.choice((2, 4)),
        "register_allocation_unit": rng.choice((128, 256)),
        "max_registers_per_thread": 255,
        "shared_memory_per_sm": per_sm,
        "max_shared_memory_per_block": per_sm - max(reserved, 1024),
        "reserved_shared_memory_per_block": reserved,
        "shared_memory_allocation_unit": rng.choice((128, 256)),
    }


def full_compare(got: dict[str, Any], want: dict[str, Any], call: str) -> None:
    for name in ORDER:
        mine, right = got["blocks_by_limit"][name], want["blocks_by_limit"][name]
        assert mine == right, (
            f"{call}: your count for {name} is {mine} blocks, which is too "
            f"{'generous' if mine > right else 'strict'}: {HINTS[name]}")
    assert got["blocks_per_sm"] == want["blocks_per_sm"] and got["limit"] == want["limit"], (
        f"{call}: your counts by limit are right, but you give {got['blocks_per_sm']} blocks "
        f"limited by {got['limit']!r}: the smallest count wins, and on a tie the first of "
        f"{', '.join(ORDER)}")


def uneven_block(rng: random.Random, limits: dict[str, int], most_warps: int) -> int:
    """Threads of a block of at most `most_warps` warps that do not split evenly over the
    register partitions (where a whole-register-file count goes wrong), a partial warp
    included."""
    warps = rng.choice([w for w in range(1, most_warps + 1) if w % limits["register_partitions"]])
    return warps * limits["warp_size"] - rng.randint(0, limits["warp_size"] - 1)


def now_and_then(rng: random.Random, usual: int, too_much: int) -> int:
    """`usual`, or one time in ten `too_much` (a block that cannot launch)."""
    return too_much if rng.random() < 0.1 else usual


@pytest.mark.points(3)
def test_random_limits(learner: Any) -> None:
    """random SMs and random blocks, some that cannot launch, every count by limit"""
    rng = random.Random(SEED)
    for _ in range(150):
        limits = random_limits(rng)
        top = limits["max_shared_memory_per_block"]
        threads = now_and_then(rng, rng.randint(1, 1024), rng.randint(1025, 2048))
        registers = now_and_then(rng, rng.randint(0, 255), rng.randint(256, 512))
        shared = now_and_then(rng, rng.choice((0, rng.randint(0, top))),
                              rng.randint(top + 1, 2 * top))
        call = f"occupancy({limits}, {threads}, {registers}, {shared})"
        got = learner.call("occupancy", limits, threads, registers, shared)
        problem = shape_problem(got, call, limits, threads)
        assert problem is None, problem
        full_compare(got, reference(limits, threads, registers, shared), call)


@pytest.mark.points(1)
def test_every_register_count(learner: Any) -> None:
    """every register count from 0 to 255, H100 and a random SM, blocks of random sizes"""
    rng = random.Random(SEED + 1)
    for limits, name in ((H100, "H100"), (random_limits(rng), "a random SM")):
        for threads in (uneven_block(rng, limits, 3), uneven_block(rng, limits, 32)):
            for registers in range(256):
                call = f"occupancy({name}: {limits}, {threads}, {registers}, 0)"
                got = learner.call("occupancy", limits, threads, registers, 0)
                problem = shape_problem(got, call, limits, threads)
                assert problem is None, problem
                full_compare(got, reference(limits, threads, registers, 0), call)


@pytest.mark.points(1)
def test_shared_memory_steps(learner: Any) -> None:
    """shared memory in random steps of about 100 bytes up to the per-block maximum, H100"""
    rng = random.Random(SEED + 2)
    threads, registers = rng.randint(1, 256), rng.randint(1, 32)
    top = H100["max_shared_memory_per_block"]
    for shared in [*range(rng.randint(0, 99), top + 1, rng.randint(90, 110)), top]:
        call = f"occupancy(H100, {threads}, {registers}, {shared})"
        got = learner.call("occupancy", H100, threads, registers, shared)
        problem = shape_problem(got, call, H100, threads)
        assert problem is None, problem
        full_compare(got, reference(H100, threads, registers, shared), call)


@pytest.mark.gpu
@pytest.mark.points(3)
def test_random_kernels_against_cuda(learner: Any) -> None:
    """random register caps, static and dynamic shared memory, any block size, against CUDA"""
    rng = random.Random(SEED + 4)
    specs = [Spec("heavy", rng.randint(8, 200), rng.choice((None, rng.randint(24, 255))))
             for _ in range(3)] + [Spec("staged", rng.randint(1, 12288)) for _ in range(2)]
    optin = device_limits()["max_shared_memory_per_block"]

    def cases(compiled: Any) -> list[tuple[int, int]]:
        room = optin - compiled.static_shared
        picked = []
        for _ in range(60):
            threads = rng.choice((rng.randint(1, 1024), 32 * rng.randint(1, 32)))
            dynamic = rng.choice((0, rng.randint(0, room), rng.randint(0, 8192)))
            picked.append((threads, dynamic))
        return picked

    compared, wrong = compare_with_cuda(learner, specs, cases)
    verdict(compared, wrong)


@pytest.mark.gpu
@pytest.mark.points(1)
def test_every_block_size_against_cuda(learner: Any) -> None:
    """every block size from 1 to 1024 threads against CUDA (one random kernel)"""
    rng = random.Random(SEED + 3)
    spec = Spec("heavy", rng.randint(24, 64), rng.choice((None, *range(32, 129, 8))))
    dynamic = rng.choice((0, rng.randint(1, 16384)))
    compared, wrong = compare_with_cuda(
        learner, [spec], lambda _c: [(t, dynamic) for t in range(1, 1025)])
    verdict(compared, wrong)
