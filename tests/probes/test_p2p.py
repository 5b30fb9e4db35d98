"""GPU-to-GPU copies: the pure helpers exactly, the "no CuPy" path here, one GPU with
itself through the same measurement code, and with two GPUs the probe end to end (no test
asserts a wall-clock time)."""

from __future__ import annotations

import importlib.util
import json

import jsonschema
import pytest

from gpulab.probes.micro import (
    GiB,
    MiB,
    PairFigures,
    fastest_pair,
    measure_pair,
    p2p_bandwidth,
    p2p_bytes,
    p2p_readings,
    p2p_table,
)
from gpulab.probes.model import ProbeResult, Reading, run_schema, summarise
from gpulab.probes.registry import get_probe, run_probe
from helpers.probes import cuda_device as cuda
from helpers.probes import no_driver_here

HAS_CUPY = importlib.util.find_spec("cupy") is not None
SCHEMA = run_schema()


# ---- pure helpers ---------------------------------------------------------------------------


def test_buffer_size_is_a_quarter_of_free_memory_at_most_a_gib() -> None:
    assert p2p_bytes(140 * GiB) == GiB
    assert p2p_bytes(2 * GiB) == 512 * MiB
    assert p2p_bytes(3 * GiB + 5) == 512 * MiB  # rounded down to a power of two
    assert p2p_bytes(140 * GiB, cap=256 * MiB) == 256 * MiB
    assert p2p_bytes(100) == 16  # never below one float4
    for free in (7 * GiB, 24 * GiB + 3, 80 * GiB):
        size = p2p_bytes(free)
        assert size & (size - 1) == 0 and size % 16 == 0 and size <= free // 4


def pair(
    src: int, dst: int, memcpy: float, *, access: bool = True, clock: float | None = 1980.0
) -> PairFigures:
    return PairFigures(
        src,
        dst,
        GiB,
        access,
        memcpy,
        300.0 if access else None,
        25.0,
        8.5,
        1980.0 if access else None,
        990.0,
        clock,
        "SM clock read by NVML during the run (highest seen)",
    )


FOUR = {
    (0, 1): pair(0, 1, 360.0),
    (1, 0): pair(1, 0, 350.0),
    (0, 2): pair(0, 2, 370.0),
    (2, 0): pair(2, 0, 365.0, access=False),
}


def test_the_fastest_pair_is_the_best_memcpy() -> None:
    assert fastest_pair(FOUR) == (0, 2)
    assert fastest_pair({(1, 0): pair(1, 0, 5.0), (0, 1): pair(0, 1, 5.0)}) == (0, 1)
    with pytest.raises(ValueError, match="no pairs measured"):
        fastest_pair({})


def values(readings: list[Reading]) -> dict[str, Reading]:
    found = {r.key: r for r in readings}
    assert len(found) == len(readings), "reading keys repeat"
    return found


def test_readings_describe_the_fastest_pair_and_its_reverse() -> None:
    got = values(p2p_readings(FOUR))
    assert list(got) == [
        "peer_access",
        "p2p_memcpy_bandwidth",
        "p2p_memcpy_bandwidth_reverse",
        "p2p_kernel_bandwidth",
        "host_staged_bandwidth",
        "p2p_over_host_staged",
        "p2p_memcpy_latency",
        "p2p_read_latency_cycles",
        "p2p_read_latency",
        "local_read_latency_cycles",
        "local_read_latency",
    ]
    assert got["peer_access"].value is False
    assert got["peer_access"].detail == "no peer access: 2→0"
    assert (got["p2p_memcpy_bandwidth"].value, got["p2p_memcpy_bandwidth"].unit) == (370.0, "GB/s")
    assert got["p2p_memcpy_bandwidth"].detail.startswith("GPU 0 → GPU 2, 1 GiB per copy")
    assert got["p2p_memcpy_bandwidth_reverse"].value == 365.0
    assert got["p2p_memcpy_bandwidth_reverse"].detail.startswith("GPU 2 → GPU 0")
    assert got["p2p_kernel_bandwidth"].value == 300.0
    assert got["host_staged_bandwidth"].value == 25.0
    assert got["p2p_over_host_staged"].value == 14.8  # 370 / 25, 4 significant digits
    assert (got["p2p_memcpy_latency"].value, got["p2p_memcpy_latency"].unit) == (8.5, "µs")
    assert got["p2p_read_latency_cycles"].value == 1980.0
    assert (got["p2p_read_latency"].value, got["p2p_read_latency"].unit) == (1000.0, "ns")
    assert got["local_read_latency"].value == 500.0  # 990 cycles at 1980 MHz
    for key in (
        "p2p_memcpy_bandwidth",
        "p2p_memcpy_bandwidth_reverse",
        "p2p_kernel_bandwidth",
        "host_staged_bandwidth",
    ):
        assert got[key].convention == "bytes copied / time: one direction, each byte counted once"
    assert summarise(list(got.values())) == "ok"


def test_without_peer_access_the_kernel_and_peer_load_are_not_supported() -> None:
    got = values(p2p_readings({(2, 0): pair(2, 0, 20.0, access=False)}))
    for key in ("p2p_kernel_bandwidth", "p2p_read_latency", "p2p_read_latency_cycles"):
        assert got[key].status == "not_supported", key
        assert "no peer access" in got[key].detail
    assert got["p2p_memcpy_bandwidth_reverse"].status == "not_supported"
    assert got["local_read_latency"].value == 500.0
    assert summarise(list(got.values())) == "partial"


def test_without_a_clock_latency_stays_in_cycles() -> None:
    got = values(p2p_readings({(0, 1): pair(0, 1, 50.0, clock=None)}))
    assert got["p2p_read_latency_cycles"].value == 1980.0
    assert got["p2p_read_latency"].status == "not_supported"


def test_the_table_has_every_ordered_pair() -> None:
    table = p2p_table(FOUR)
    assert len(table.columns) == len(table.units) == 12
    assert [(row[0], row[1]) for row in table.rows] == [(0, 1), (0, 2), (1, 0), (2, 0)]
    assert table.rows[1] == (
        0,
        2,
        True,
        370.0,
        300.0,
        25.0,
        14.8,
        8.5,
        1980.0,
        1000.0,
        990.0,
        500.0,
    )
    assert table.rows[3][2:5] == (False, 365.0, None)
    result = ProbeResult(
        "p2p_bandwidth", "GPU-to-GPU copies", "partial", "m", tuple(p2p_readings(FOUR)), (table,)
    )
    jsonschema.Draft202012Validator(SCHEMA).validate(
        {"gpulab": "t", "schema": 1, "results": [json.loads(json.dumps(result.to_dict()))]}
    )


def test_the_probe_is_registered() -> None:
    info = get_probe("p2p_bandwidth")
    assert (info.title, info.needs) == ("GPU-to-GPU copies", "cuda")
    assert info.function() is p2p_bandwidth


# ---- without CuPy ---------------------------------------------------------------------------


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed here; this checks the machine without it")
def test_without_a_driver_the_probe_says_so() -> None:
    why = no_driver_here()
    result = run_probe("p2p_bandwidth")
    assert result.status == "no_gpu" and result.message == why
    assert result.readings == () and result.tables == ()


# ---- on the GPU -----------------------------------------------------------------------------


def gpu_count() -> int:
    return int(cuda().cuda.runtime.getDeviceCount())


@pytest.mark.gpu
def test_a_gpu_with_itself_runs_every_measurement() -> None:
    cupy = cuda()
    figures = measure_pair(cupy, 0, 0, 64 * MiB)  # raises if any copy or chase is wrong
    assert (figures.src, figures.dst, figures.nbytes, figures.peer_access) == (0, 0, 64 * MiB, True)
    for name in (
        "memcpy_gbs",
        "kernel_gbs",
        "staged_gbs",
        "memcpy_latency_us",
        "peer_read_cycles",
        "local_read_cycles",
    ):
        value = getattr(figures, name)
        assert value is not None and value > 0, name
    # a device-to-device copy outruns the trip through host memory
    assert figures.memcpy_gbs > figures.staged_gbs
    if figures.clock_mhz:
        assert (figures.ns(figures.local_read_cycles) or 0) > 0
    # every load of the lap missed the flushed L2: the recorded H200 chase puts HBM near 670
    # cycles, and even a far L2 hit costs under 500
    assert figures.local_read_cycles > 500 and (figures.peer_read_cycles or 0) > 500


@pytest.mark.gpu
def test_one_gpu_is_not_enough_for_the_probe() -> None:
    count = gpu_count()
    if count > 1:
        pytest.skip(f"this machine has {count} GPUs; the one-GPU answer needs one")
    result = run_probe("p2p_bandwidth")
    assert result.status == "unavailable"
    assert result.message == "needs two GPUs: CUDA sees 1"
    assert result.readings == ()


@pytest.mark.gpu
def test_peer_copies_beat_host_staging_on_two_gpus() -> None:
    count = gpu_count()
    if count < 2:
        pytest.skip(f"needs two GPUs: CUDA sees {count}")
    result = run_probe("p2p_bandwidth")
    assert result.status in ("ok", "partial"), result.message
    (table,) = result.tables
    assert {(row[0], row[1]) for row in table.rows} == {
        (s, d) for s in range(count) for d in range(count) if s != d
    }
    at = {
        name: table.columns.index(name)
        for name in ("peer access", "cudaMemcpyPeer", "host-staged", "SM copy kernel")
    }
    for row in table.rows:
        memcpy, staged = float(str(row[at["cudaMemcpyPeer"]])), float(str(row[at["host-staged"]]))
        assert memcpy > 0 and staged > 0, row
        if row[at["peer access"]]:
            assert memcpy > staged, row
            assert float(str(row[at["SM copy kernel"]])) > 0, row
    assert result.telemetry is not None and result.telemetry.samples > 0
    data = json.loads(json.dumps(result.to_dict()))
    assert ProbeResult.from_dict(data).to_dict() == data
