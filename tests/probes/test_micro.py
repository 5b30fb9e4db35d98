"""The microbenchmarks: their pure helpers exactly, their kernels as package data, the
real "no CuPy" path on this machine, and on a GPU every probe end to end with plausible
readings (no test asserts a wall-clock time)."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import random
import re
import struct
from collections.abc import Callable
from importlib.resources import files

import pytest

from gpulab import kernels
from gpulab.kernels import KernelError, launch
from gpulab.probes import micro
from gpulab.probes.micro import (
    bank_conflict_ways,
    bank_count,
    bf16_bits,
    chase_footprints,
    chase_plan,
    fp32_lanes_per_sm,
    gb_per_s,
    matmul_size,
    occupancy_blocks,
    occupancy_smem,
    pcie_bytes,
    pcie_link_gb_per_s,
    plateaus,
    ratio,
    scaled_bytes,
    sector_overfetch,
    tflops,
)
from gpulab.probes.model import ProbeResult
from gpulab.probes.registry import PROBES, run_probe
from helpers.probes import cuda_device as cuda
from helpers.probes import no_driver_here

HAS_CUPY = importlib.util.find_spec("cupy") is not None
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
H200_MEMORY = 143_771 * MiB  # what CUDA and NVML report on the lent H200
H200_L2 = 60 * MiB
MICRO = [p.name for p in PROBES if p.target.startswith("micro:")]
# p2p_bandwidth needs two GPUs; tests/probes/test_p2p.py runs it on one and on two
ONE_GPU_MICRO = [name for name in MICRO if name != "p2p_bandwidth"]


# ---- pure helpers ---------------------------------------------------------------------------


def test_unit_arithmetic() -> None:
    assert gb_per_s(8e9, 2.0) == pytest.approx(4000.0)
    assert tflops(2 * 8192**3, 1.0) == pytest.approx(1099.511627776)
    assert ratio(3, 4) == 0.75
    assert ratio(1, 3) == 0.3333
    assert ratio(4262, 4262) == 1.0
    assert math.isnan(ratio(1, 0))


def test_scaled_bytes() -> None:
    assert scaled_bytes(H200_MEMORY, H200_L2, share=16, cap=4 * GiB) == 4 * GiB
    assert scaled_bytes(H200_MEMORY, H200_L2, share=16, cap=2 * GiB) == 2 * GiB
    assert scaled_bytes(8 * GiB, 4 * MiB, share=16, cap=4 * GiB) == 512 * MiB
    # raised to 8 x L2 where a sixteenth of memory is too close to the cache
    assert scaled_bytes(4 * GiB, 50 * MiB, share=16, cap=4 * GiB) == 512 * MiB
    # ... but never beyond a quarter of memory
    assert scaled_bytes(1 * GiB, 40 * MiB, share=16, cap=4 * GiB) == 64 * MiB
    # always a power of two
    for total in (3 * GiB + 5, 24 * GiB, 80 * GiB, H200_MEMORY):
        size = scaled_bytes(total, 50 * MiB, share=16, cap=4 * GiB)
        assert size & (size - 1) == 0


def test_sector_overfetch_and_bank_ways() -> None:
    assert [sector_overfetch(s) for s in (1, 2, 4, 8, 16, 32)] == [1, 2, 4, 8, 8, 8]
    assert [bank_conflict_ways(s) for s in (1, 2, 4, 8, 16, 32, 64, 33, 6)] == [
        1,
        2,
        4,
        8,
        16,
        32,
        32,
        1,
        2,
    ]


def test_bank_count_from_a_sweep() -> None:
    ideal = {1: 1.0, 2: 2.0, 4: 4.0, 8: 8.0, 16: 16.0, 32: 32.0, 64: 32.0}
    assert bank_count(ideal) == 32
    noisy = {1: 1.0, 2: 1.9, 4: 3.8, 8: 7.7, 16: 15.2, 32: 30.1, 64: 31.0}
    assert bank_count(noisy) == 32
    assert bank_count({1: 1.0, 2: 2.0, 4: 4.0}) is None  # never levels off
    assert bank_count({33: 1.0, 1: 1.0}) is None  # one power of two only


def test_pcie_link_rates_per_direction() -> None:
    assert pcie_link_gb_per_s(5, 16) == 63.02
    assert pcie_link_gb_per_s(4, 16) == 31.51
    assert pcie_link_gb_per_s(3, 16) == 15.75
    assert pcie_link_gb_per_s(2, 8) == 4.0
    assert pcie_link_gb_per_s(1, 1) == 0.25
    assert pcie_link_gb_per_s(9, 16) is None
    assert pcie_link_gb_per_s(5, 0) is None
    assert pcie_bytes(128 * GiB, H200_MEMORY) == GiB
    assert pcie_bytes(8 * GiB, H200_MEMORY) == 256 * MiB
    assert pcie_bytes(128 * GiB, 4 * GiB) == 256 * MiB


def test_chase_footprints() -> None:
    sizes = chase_footprints(H200_MEMORY)
    assert sizes[0] == 16 * KiB and sizes[-1] == GiB and len(sizes) == 17
    assert all(b == 2 * a for a, b in itertools.pairwise(sizes))
    assert chase_footprints(2 * GiB)[-1] == 256 * MiB


def test_chase_plan_touches_every_line_and_flushes_beyond_the_l2() -> None:
    assert chase_plan(16 * KiB, H200_L2) == (128, 65_536, False)
    assert chase_plan(32 * MiB, H200_L2) == (262_144, 262_144, False)
    assert chase_plan(60 * MiB, H200_L2) == (491_520, 491_520, False)
    assert chase_plan(64 * MiB, H200_L2) == (0, 524_288, True)
    assert chase_plan(GiB, H200_L2) == (0, 8_388_608, True)
    # the baseline's pitfall: the timed chase must cover every line of the footprint
    for footprint in chase_footprints(H200_MEMORY):
        warm, steps, flush = chase_plan(footprint, H200_L2)
        assert steps >= footprint // 128
        assert flush == (footprint > H200_L2)
        assert warm in (0, footprint // 128)


def test_plateaus_take_the_median_of_each_range() -> None:
    points = [
        (16 * KiB, 38.0),
        (32 * KiB, 39.0),
        (64 * KiB, 41.0),
        (256 * KiB, 120.0),
        (1 * MiB, 300.0),
        (4 * MiB, 320.0),
        (8 * MiB, 330.0),
        (16 * MiB, 350.0),
        (64 * MiB, 600.0),
        (256 * MiB, 640.0),
        (512 * MiB, 660.0),
        (GiB, 700.0),
    ]
    assert plateaus(points) == {"l1": 39.0, "l2": 325.0, "hbm": 660.0}
    assert plateaus(points[:5]) == {"l1": 39.0, "l2": 300.0, "hbm": None}
    assert plateaus([]) == {"l1": None, "l2": None, "hbm": None}


H100_PROPS = {
    "maxBlocksPerMultiProcessor": 32,
    "maxThreadsPerMultiProcessor": 2048,
    "sharedMemPerMultiprocessor": 233_472,
    "sharedMemPerBlockOptin": 232_448,
    "reservedSharedMemPerBlock": 1024,
}


def test_occupancy_smem_caps_blocks_per_sm_exactly() -> None:
    p = H100_PROPS
    assert (
        occupancy_smem(16, p["sharedMemPerMultiprocessor"], 1024, p["sharedMemPerBlockOptin"])
        == 13_568
    )
    assert (
        occupancy_smem(1, p["sharedMemPerMultiprocessor"], 1024, p["sharedMemPerBlockOptin"])
        == 232_448
    )
    for k in (16, 8, 4, 2, 1):
        dynamic = occupancy_smem(
            k, p["sharedMemPerMultiprocessor"], 1024, p["sharedMemPerBlockOptin"]
        )
        assert occupancy_blocks(128, dynamic, p) == k
    assert occupancy_blocks(128, 0, p) == 16
    assert occupancy_blocks(32, 0, p) == 32


def test_matmul_size_and_fp32_lanes() -> None:
    assert matmul_size(H200_MEMORY) == 8192
    assert matmul_size(6 * GiB) == 4096
    assert fp32_lanes_per_sm(9, 0) == 128
    assert fp32_lanes_per_sm(8, 0) == 64
    assert fp32_lanes_per_sm(8, 9) == 128
    assert fp32_lanes_per_sm(1, 0) is None


def f32_bits(value: float) -> int:
    bits: int = struct.unpack("<I", struct.pack("<f", value))[0]
    return bits


def test_bf16_rounding_to_nearest_even() -> None:
    assert bf16_bits(f32_bits(1.0)) == 0x3F80
    assert bf16_bits(f32_bits(-2.0)) == 0xC000
    assert bf16_bits(f32_bits(math.pi)) == 0x4049  # 0x40490FDB rounds down
    assert bf16_bits(0x3F807FFF) == 0x3F80  # below half: down
    assert bf16_bits(0x3F808001) == 0x3F81  # above half: up
    assert bf16_bits(0x3F808000) == 0x3F80  # tie, even stays
    assert bf16_bits(0x3F818000) == 0x3F82  # tie, odd goes up to even


def walk(nxt: list[int], start: int, steps: int) -> list[int]:
    seen, at = [], start
    for _ in range(steps):
        seen.append(at)
        at = nxt[at]
    return seen


@pytest.mark.parametrize("n", [1, 2, 31, 33, 1000])
def test_cycle_successors_make_one_cycle_through_everything(n: int) -> None:
    order = list(range(n))
    random.Random(n).shuffle(order)
    nxt = launch.cycle_successors(order)
    assert walk(nxt, order[0], n) == order
    assert walk(nxt, order[0], n + 1)[-1] == order[0]  # back at the start after a lap


def test_cycle_successors_exact() -> None:
    assert launch.cycle_successors([2, 0, 3, 1]) == [3, 2, 0, 1]


def test_line_of_reads_the_line_an_address_points_into() -> None:
    base = 0x7F00_0000_0000
    assert launch.line_of(base, base) == 0
    assert launch.line_of(base + 5 * launch.LINE_BYTES, base) == 5
    assert launch.line_of(base + 5 * launch.LINE_BYTES + 8, base) == 5
    assert launch.line_of(base + (1 << 30) - 8, base) == (1 << 30) // launch.LINE_BYTES - 1


def _loop_bodies(text: str) -> list[str]:
    """The statements of every for loop of a kernel written as chase.cu writes them."""
    bodies = []
    for head in re.finditer(r"for \(.*?\) \{", text):
        end = text.index("}", head.end())
        bodies.append(" ".join(text[head.end() : end].split()))
    return bodies


def test_the_chase_kernel_is_a_pure_pointer_chase() -> None:
    """Both loops of pointer_chase are p = *p and nothing else: an index chase, j = next[j],
    put a multiply-add between every two loads and read 39.6 cycles at L1 where a pure chase
    reads 34 (issue 27)."""
    text = kernels.source("chase")
    code = "\n".join(line.split("//")[0] for line in text.splitlines())
    assert _loop_bodies(code) == ["p = static_cast<void**>(*p);"] * 2
    assert "[" not in code.split("pointer_chase(", 1)[1].split("out_address[0]")[0]


# ---- kernels as package data ----------------------------------------------------------------

EXPECTED_KERNELS = {
    "copy": ("copy_float4", "copy_float4_tiles"),
    "stride": ("read_strided",),
    "chase": ("pointer_chase",),
    "smem": ("smem_chase", "smem_bank_access"),
    "divergence": ("divergent_paths",),
    "fma": ("fma_chains",),
    "spin": ("spin_one_thread",),
}


def test_every_topic_is_a_cu_file_in_the_package() -> None:
    assert set(kernels.TOPICS) == set(EXPECTED_KERNELS)
    for topic in kernels.TOPICS:
        assert files("gpulab.kernels").joinpath(f"{topic}.cu").is_file()


@pytest.mark.parametrize("topic", sorted(EXPECTED_KERNELS))
def test_kernel_sources_define_the_expected_entry_points(topic: str) -> None:
    text = kernels.source(topic)
    for name in EXPECTED_KERNELS[topic]:
        assert f'extern "C" __global__ void {name}(' in text
    assert kernels.kernel_names(topic) == EXPECTED_KERNELS[topic]
    assert text.count("{") == text.count("}")


def test_unknown_topics_and_kernels_are_clear_errors() -> None:
    with pytest.raises(KernelError, match="topics are copy, stride"):
        kernels.source("nope")
    with pytest.raises(KernelError, match="defines copy_float4, copy_float4_tiles"):
        kernels.function("copy", "copy_float8")


# ---- without CuPy ---------------------------------------------------------------------------


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed here; this checks the machine without it")
@pytest.mark.parametrize("name", MICRO)
def test_without_a_driver_every_micro_probe_says_so(name: str) -> None:
    why = no_driver_here()
    result = run_probe(name)
    assert (result.status, result.message) == ("no_gpu", why)
    assert "CuPy" not in result.message
    assert result.readings == () and result.telemetry is None
    data = json.loads(json.dumps(result.to_dict()))
    assert ProbeResult.from_dict(data).to_dict() == data


def test_registry_targets_exist_in_micro() -> None:
    assert len(MICRO) == 13
    for name in MICRO:
        info = next(p for p in PROBES if p.name == name)
        _, _, function = info.target.partition(":")
        assert info.function() is getattr(micro, function)


def test_every_recorded_micro_reading_has_a_unit() -> None:
    """What the GPU test below demands of a fresh run, held of gpulab's H200 recording."""
    from gpulab.probes.recorded import recorded_results

    recorded = recorded_results()
    assert set(ONE_GPU_MICRO) <= set(recorded)
    for name in ONE_GPU_MICRO:
        assert all(r.unit for r in recorded[name].readings), (
            name,
            [r.key for r in recorded[name].readings if not r.unit],
        )


# ---- on the GPU -----------------------------------------------------------------------------


_RESULTS: dict[str, ProbeResult] = {}


@pytest.fixture
def probe() -> Callable[[str], ProbeResult]:
    """Run a probe once per test session (they take seconds) and hand out its result."""
    cuda()

    def get(name: str) -> ProbeResult:
        if name not in _RESULTS:
            _RESULTS[name] = run_probe(name)
        return _RESULTS[name]

    return get


def value(result: ProbeResult, key: str) -> float:
    reading = result.reading(key)
    assert reading is not None, f"{result.probe} has no reading {key}"
    assert reading.status == "ok", f"{key}: {reading.detail}"
    assert isinstance(reading.value, int | float)
    return float(reading.value)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ONE_GPU_MICRO)
def test_every_micro_probe_runs_ok_with_telemetry(
    probe: Callable[[str], ProbeResult], name: str
) -> None:
    result = probe(name)
    assert result.status == "ok", result.message
    assert result.device
    assert result.telemetry is not None and result.telemetry.samples > 0
    for reading in result.readings:
        assert reading.unit, reading.key
    data = json.loads(json.dumps(result.to_dict()))
    assert ProbeResult.from_dict(data).to_dict() == data


@pytest.mark.gpu
def test_one_thread_reads_as_a_busy_gpu(probe: Callable[[str], ProbeResult]) -> None:
    result = probe("util_one_thread")
    busy, idle = value(result, "gpu_util_one_thread"), value(result, "gpu_util_idle")
    assert busy >= 95, result.message  # time with a kernel running, not chip busy
    assert idle < busy
    sm_util = result.reading("sm_util_one_thread")
    assert sm_util is not None
    if sm_util.status == "ok":  # GPM (Hopper and newer): one SM of many
        sms = value(run_probe("cuda_properties"), "multiProcessorCount")
        assert 0 < value(result, "sm_util_one_thread") < 3 * 100 / sms
        assert value(result, "sm_occupancy_one_thread") < 1
    rows = [row for t in result.tables for row in t.rows]
    assert sum(1 for row in rows if row[0] == "one thread spinning") >= 8


@pytest.mark.gpu
def test_hbm_copy_is_compared_with_memcpy(probe: Callable[[str], ProbeResult]) -> None:
    result = probe("hbm_bandwidth")
    memcpy, kernel = value(result, "memcpy_bandwidth"), value(result, "copy_kernel_bandwidth")
    assert memcpy > 0 and kernel > 0
    assert 0.5 < value(result, "ratio") < 1.2
    assert value(result, "gridstride_copy_bandwidth") <= kernel
    kernels = {row[0] for t in result.tables for row in t.rows}
    assert kernels == {"copy_float4", "copy_float4_tiles"}
    memcpy_reading = result.reading("memcpy_bandwidth")
    assert memcpy_reading is not None
    assert memcpy_reading.convention == "bytes read + bytes written"


@pytest.mark.gpu
def test_strided_reads_lose_useful_bandwidth(probe: Callable[[str], ProbeResult]) -> None:
    result = probe("stride_sweep")
    s1, s2, s8, s32 = (value(result, f"stride_{s}_bandwidth") for s in (1, 2, 8, 32))
    assert s1 > s2 > s8 > 0 and s8 >= 0.8 * s32 > 0
    assert 0 < value(result, "stride_32_fraction") < value(result, "stride_2_fraction") < 1


@pytest.mark.gpu
def test_pinned_copies_beat_pageable(probe: Callable[[str], ProbeResult]) -> None:
    result = probe("pcie_bandwidth")
    assert value(result, "h2d_pinned_bandwidth") > value(result, "h2d_pageable_bandwidth") > 0
    assert value(result, "d2h_pinned_bandwidth") > 0 and value(result, "d2h_pageable_bandwidth") > 0


@pytest.mark.gpu
def test_latency_plateaus_rise_l1_l2_hbm(probe: Callable[[str], ProbeResult]) -> None:
    result = probe("pointer_chase_latency")
    l1, l2, hbm = (value(result, f"{level}_latency_cycles") for level in ("l1", "l2", "hbm"))
    assert 0 < l1 < l2 < hbm
    assert value(result, "hbm_latency_ns") > 0
    table = result.tables[0]
    lines, timed = table.columns.index("lines"), table.columns.index("timed loads")
    assert all(int(str(row[timed])) >= int(str(row[lines])) for row in table.rows)


@pytest.mark.gpu
def test_shared_memory_latency_is_below_l2(probe: Callable[[str], ProbeResult]) -> None:
    smem = value(probe("smem_latency"), "smem_latency_cycles")
    assert 0 < smem < value(probe("pointer_chase_latency"), "l2_latency_cycles")


@pytest.mark.gpu
def test_bank_conflicts_serialise_and_padding_fixes_them(
    probe: Callable[[str], ProbeResult],
) -> None:
    result = probe("smem_bank_conflicts")
    two, thirty_two = value(result, "slowdown_stride_2"), value(result, "slowdown_stride_32")
    assert 1.3 < two < thirty_two
    assert value(result, "slowdown_stride_33_padded") < 1.3
    assert value(result, "slowdown_broadcast") < 1.3
    assert value(result, "bank_count") == 32


@pytest.mark.gpu
def test_divergence_costs_both_paths(probe: Callable[[str], ProbeResult]) -> None:
    result = probe("warp_divergence")
    assert value(result, "slowdown_two_way") > 1.5
    assert value(result, "slowdown_one_lane") > 1.5
    assert 1.0 < value(result, "slowdown_tenth_two_way") < 1.4


@pytest.mark.gpu
def test_fewer_resident_warps_copy_slower(probe: Callable[[str], ProbeResult]) -> None:
    result = probe("occupancy_bandwidth")
    assert value(result, "bandwidth_full_occupancy") > value(result, "bandwidth_quarter_occupancy")


@pytest.mark.gpu
def test_fp32_peak_is_near_the_peak_at_the_clock_seen(probe: Callable[[str], ProbeResult]) -> None:
    result = probe("fp32_peak")
    assert value(result, "fp32_tflops") > 0
    assert 0.5 < value(result, "fraction_of_peak") < 1.05


@pytest.mark.gpu
def test_tensor_core_matmul_beats_fp32(probe: Callable[[str], ProbeResult]) -> None:
    result = probe("matmul_throughput")
    fp32 = value(result, "fp32_tflops")
    assert value(result, "fp16_tflops") > fp32
    assert value(result, "bf16_tflops") > fp32
    assert value(result, "tf32_tflops") > fp32


# ---- kernels on edge-case sizes, against NumPy-style references on the GPU -----------------


@pytest.mark.gpu
@pytest.mark.parametrize("count", [1, 31, 33, 1000, 65_537])
def test_copy_kernels_copy_every_element(count: int) -> None:
    cupy = cuda()
    src = cupy.arange(count * 4, dtype=cupy.uint32) * 7 + 3
    dst = cupy.zeros_like(src)
    launch.copy("copy_float4", src, dst, blocks=3, threads=64)  # a grid far smaller than n
    assert bool(cupy.array_equal(dst, src))
    for threads in (64, 128, 1024):
        dst = cupy.zeros(count * 4 + 8, dtype=cupy.uint32)  # 2 float4 of guard after
        assert launch.copy_tiles(src, dst[: count * 4], threads=threads) == -(-count // threads)
        assert bool(cupy.array_equal(dst[: count * 4], src))
        assert not bool(dst[count * 4 :].any()), "the tiled copy wrote past the end"


@pytest.mark.gpu
@pytest.mark.parametrize("stride", [1, 2, 3, 32])
@pytest.mark.parametrize("count", [1, 31, 33, 100_003])
def test_strided_read_sums_exactly(stride: int, count: int) -> None:
    cupy = cuda()
    # large words, so the 32-bit sums wrap: they must still agree exactly
    src = ((cupy.arange(count, dtype=cupy.uint64) * 2_654_435_761) % 2**32).astype(cupy.uint32)
    partial = cupy.empty(5 * 64, dtype=cupy.uint32)
    launch.read_strided(src, stride, partial, blocks=5, threads=64)
    want = int(cupy.sum(src[: (count // stride) * stride : stride], dtype=cupy.uint64)) % 2**32
    assert int(cupy.sum(partial, dtype=cupy.uint64)) % 2**32 == want


@pytest.mark.gpu
@pytest.mark.parametrize("lines", [1, 2, 31, 33, 1000])
def test_device_cycle_table_matches_the_python_spec(lines: int) -> None:
    cupy = cuda()
    table = cupy.zeros(lines * 16, dtype=cupy.uint64)
    order = launch.cycle_table(table, lines, seed=lines)
    spec = launch.cycle_successors([int(v) for v in order.get()])
    base = int(table.data.ptr)
    assert [launch.line_of(int(v), base) for v in table[::16].get()] == spec
    assert all(int(v) % launch.LINE_BYTES == base % launch.LINE_BYTES for v in table[::16].get())
    reached, cycles = launch.chase(table, int(order[0]), warm_steps=lines, steps=3 * lines + 1)
    assert reached == int(order[(4 * lines + 1) % lines]) and cycles > 0
    # a table of another dtype (the P2P chase passes uint32 words and an address)
    words = cupy.zeros(lines * 32, dtype=cupy.uint32)
    order = launch.cycle_table(words, lines, seed=lines + 1)
    reached, _ = launch.chase(int(words.data.ptr), int(order[0]), warm_steps=0, steps=lines + 2)
    assert reached == int(order[2 % lines])
