"""Figures built from real data: the H200 recording's numbers, whose data it is, and why not.

Every figure is built from gpulab's recorded H200 results (and its baseline
run) as the book builds it, and a few points of each kind are compared with
the JSON they come from, read here independently of the probe model. A figure
whose probe is missing says why instead of drawing; the learner's own results
win when they cover a figure, and a figure never mixes two machines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from msgspec import structs

from gpulab.course import load_course
from gpulab.figures import FIGURES, FigureData, Inputs, build_figure, load_baseline
from gpulab.figures.data import datasheet_gpu
from gpulab.probes.model import ProbeResult, Table
from gpulab.probes.recorded import recorded_results

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "lab" / "gpulab" / "probes" / "recorded" / "h200.json"
BASELINE = ROOT / "lessons" / "reference" / "h200-baseline.json"


@cache
def _json() -> dict[str, Any]:
    data = json.loads(RECORDING.read_text(encoding="utf-8"))
    return {r["probe"]: r for r in data["results"]}


def _reading(probe: str, key: str) -> float:
    return float(next(r["value"] for r in _json()[probe]["readings"] if r["key"] == key))


def _rows(probe: str, column: str) -> list[dict[str, Any]]:
    table = next(t for t in _json()[probe]["tables"] if column in t["columns"])
    return [dict(zip(table["columns"], row, strict=True)) for row in table["rows"]]


@cache
def _inputs() -> Inputs:
    course = load_course()
    return Inputs(
        recorded=recorded_results(),
        specs=course.specs,
        baseline=load_baseline(course.manifest.path.parent),
    )


def _built(figure_id: str, inputs: Inputs | None = None) -> FigureData:
    return build_figure(FIGURES[figure_id], inputs or _inputs())


def _series(data: FigureData, starts: str) -> dict[Any, float]:
    series = next(s for s in data.series if s.label.startswith(starts))
    return dict(zip(series.x, series.y, strict=True))


def test_there_are_at_least_twelve_figures_with_unique_ids() -> None:
    assert len(FIGURES) >= 12
    assert all(f.id == key for key, f in FIGURES.items())
    assert all(f.title and f.caption and f.x.label is not None for f in FIGURES.values())


@pytest.mark.parametrize("figure_id", list(FIGURES))
def test_every_figure_builds_from_the_h200_recording(figure_id: str) -> None:
    data = _built(figure_id)
    assert data.drawable, data.missing
    assert data.series and all(s.y for s in data.series)
    figure = FIGURES[figure_id]
    used = [_json()[p] for p in (*figure.probes, *figure.optional) if p in _json()]
    dates = ", ".join(sorted({r["started"][:10] for r in used}))  # each probe's run
    if figure.datasheets:
        assert data.source == "NVIDIA's datasheets, as specs.toml cites them"
    elif figure.baseline:
        assert data.source == "NVIDIA H200, gpulab's baseline run of 2026-12-02"
    else:
        assert data.source == f"NVIDIA H200, gpulab's recording of {dates}"


def test_latency_against_footprint_is_the_recorded_sweep() -> None:
    data = _built("latency-footprint")
    points = _series(data, "one thread")
    rows = _rows("pointer_chase_latency", "footprint")
    assert points == {float(r["footprint"]): float(r["latency"]) for r in rows}
    plateaus = {line.value for line in data.lines if line.axis == "y"}
    assert plateaus == {
        _reading("pointer_chase_latency", f"{k}_latency_cycles") for k in ("l1", "l2", "hbm")
    }
    (l2,) = [line for line in data.lines if line.axis == "x"]
    assert l2.value == _reading("cuda_properties", "l2CacheSize")


def test_the_warm_cache_pitfall_is_the_baselines_two_chases() -> None:
    latency = json.loads(BASELINE.read_text(encoding="utf-8"))["latency"]
    data = _built("warm-cache-pitfall")
    default, cg = _series(data, "default"), _series(data, "loads with __ldcg")
    assert default[1048576.0] == latency["default_1048576KB_cycles"] == 690.4
    assert cg[1048576.0] == latency["cg_1048576KB_cycles"]
    assert cg[16.0] == latency["cg_16KB_cycles"]
    assert len(default) == len(cg) == sum(1 for k in latency if k.startswith("cg_"))


def test_bandwidth_figures_carry_the_recorded_rates() -> None:
    stride = _series(_built("stride-sweep"), "measured")
    assert stride == {
        float(r["stride"]): r["useful bandwidth"] for r in _rows("stride_sweep", "useful bandwidth")
    }
    occupancy = _series(_built("occupancy-bandwidth"), "copy_float4")
    assert occupancy[64.0] == 3985.5 and occupancy[4.0] == 1134.7
    shapes = _built("copy-launch-shapes")
    assert sorted(shapes.series[0].y) == sorted(
        r["bandwidth"] for r in _rows("hbm_bandwidth", "blocks")
    )
    lines = {line.label.split(":")[0]: line for line in shapes.lines}
    assert lines["cudaMemcpy"].value == _reading("hbm_bandwidth", "memcpy_bandwidth")
    sheet = lines["datasheet"]
    assert sheet.value == 4800 and "specs.toml h200.memory_bandwidth" in sheet.source
    pcie = _built("pcie-copy")
    assert _series(pcie, "host to device") == {
        "pinned host memory": _reading("pcie_bandwidth", "h2d_pinned_bandwidth"),
        "pageable host memory": _reading("pcie_bandwidth", "h2d_pageable_bandwidth"),
    }
    assert pcie.lines[0].value == _reading("pcie_bandwidth", "link_bandwidth")


def test_compute_figures_carry_the_recorded_throughputs_and_datasheet_peaks() -> None:
    dtypes = _built("matmul-dtypes")
    measured, sheet = _series(dtypes, "measured"), _series(dtypes, "datasheet")
    assert measured == {
        r["precision"]: r["throughput"] for r in _rows("matmul_throughput", "throughput")
    }
    assert sheet == {"fp16": 989.4, "bf16": 989.4, "tf32": 494.7, "fp32": 67.0}
    roofline = _built("roofline")
    fp16_roof = _series(roofline, "FP16 Tensor Cores, measured")
    assert max(fp16_roof.values()) == _reading("matmul_throughput", "fp16_tflops")
    bandwidth = _reading("hbm_bandwidth", "copy_kernel_bandwidth") / 1000
    assert fp16_roof[0.01] == pytest.approx(0.01 * bandwidth)
    kernels = {line.label.split(",")[0]: line.value for line in roofline.lines}
    assert kernels["vector add"] == pytest.approx(1 / 12)
    assert kernels["reduction"] == pytest.approx(1 / 4)
    assert kernels["matmul"] == pytest.approx(8192 / 3)
    assert kernels["matrix-vector"] == pytest.approx(2 * 8192**2 / (2 * 8192**2 + 4 * 8192))
    ((at, rate),) = _series(roofline, "cuBLAS fp16").items()
    assert (at, rate) == (pytest.approx(8192 / 3), 659.3)
    peak = _built("fp32-peak")
    assert [s.y[0] for s in peak.series] == [
        _reading("fp32_peak", "fp32_tflops"),
        _reading("fp32_peak", "fp32_peak_at_clock_tflops"),
        67.0,
    ]
    divergence = _series(_built("divergence-cost"), "kernel time")
    assert divergence["two ways: lanes 0-15 A, 16-31 B"] == 1.965
    conflicts = _series(_built("bank-conflicts"), "measured")
    assert conflicts["32"] == _reading("smem_bank_conflicts", "slowdown_stride_32")


def test_device_figures_carry_the_recorded_telemetry() -> None:
    power = _series(_built("power-by-probe"), "highest power")
    assert (
        power["Matrix multiply throughput"] == _json()["matmul_throughput"]["telemetry"]["power_w"]
    )
    assert len(power) == sum(1 for r in _json().values() if r.get("telemetry"))
    clock = _built("sm-clock-by-probe")
    assert _series(clock, "lowest")["Matrix multiply throughput"] == 1425.0
    assert any("SW power cap" in note for note in clock.notes)
    assert clock.lines[0].value == _reading("nvml_inventory", "clocks_max_sm")
    util = _built("util-one-thread")
    assert set(_series(util, "NVML GPU utilisation, one thread").values()) == {100.0}
    assert util.lines[0].value == _reading("util_one_thread", "sm_util_one_thread")


def test_a_figure_whose_probe_is_missing_says_why() -> None:
    bare = Inputs(
        recorded={k: v for k, v in recorded_results().items() if k != "stride_sweep"},
        specs=_inputs().specs,
    )
    data = _built("stride-sweep", bare)
    assert not data.drawable and not data.series
    assert "stride_sweep" in data.missing and "gpulab probe run stride_sweep" in data.missing
    no_baseline = _built("warm-cache-pitfall", replace(_inputs(), baseline=None))
    assert not no_baseline.drawable and "baseline" in no_baseline.missing


def test_a_result_without_the_table_says_which_table() -> None:
    chase = recorded_results()["pointer_chase_latency"]
    bare = structs.replace(chase, tables=())
    data = _built(
        "latency-footprint", replace(_inputs(), recorded={**recorded_results(), chase.probe: bare})
    )
    assert not data.drawable
    assert "pointer_chase_latency" in data.missing and "'footprint'" in data.missing


def _own(result: ProbeResult, device: str) -> ProbeResult:
    return structs.replace(
        result, recorded=None, device=device, started="2026-12-05T10:00:00+00:00"
    )


def test_the_learners_own_results_win_and_say_so() -> None:
    recorded = recorded_results()
    mine = _own(recorded["hbm_bandwidth"], "NVIDIA GeForce RTX 4090")
    data = _built("copy-launch-shapes", replace(_inputs(), own={"hbm_bandwidth": mine}))
    assert data.source == "your GPU (NVIDIA GeForce RTX 4090), measured 2026-12-05"
    sheet = next(line for line in data.lines if line.label.startswith("datasheet"))
    assert sheet.value == 1008 and "rtx-4090.memory_bandwidth" in sheet.source


def test_a_figure_never_mixes_two_machines() -> None:
    recorded = recorded_results()
    mine = _own(recorded["hbm_bandwidth"], "NVIDIA H100 PCIe")  # one of the roofline's three
    data = _built("roofline", replace(_inputs(), own={"hbm_bandwidth": mine}))
    assert data.source.startswith("NVIDIA H200, gpulab's recording")


def test_a_gpu_without_a_datasheet_gets_no_datasheet_lines_and_says_so() -> None:
    mine = _own(recorded_results()["hbm_bandwidth"], "NVIDIA Imaginary X9")
    data = _built("copy-launch-shapes", replace(_inputs(), own={"hbm_bandwidth": mine}))
    assert not any(line.role == "datasheet" for line in data.lines)
    assert any("no datasheet for NVIDIA Imaginary X9" in note for note in data.notes)


def test_datasheet_tables_are_matched_by_model_and_form_factor() -> None:
    specs = _inputs().specs
    found = {
        name: (t.id if (t := datasheet_gpu(specs, name)) else None)
        for name in (
            "NVIDIA H200",
            "NVIDIA H100 PCIe",
            "NVIDIA A100-SXM4-80GB",
            "NVIDIA H20",
            "NVIDIA GeForce RTX 4090",
            "NVIDIA H100 80GB HBM3",
            "Tesla T4",
        )
    }
    assert found == {
        "NVIDIA H200": "h200",
        "NVIDIA H100 PCIe": "h100-pcie",
        "NVIDIA A100-SXM4-80GB": "a100-80gb",
        "NVIDIA H20": "h20",
        "NVIDIA GeForce RTX 4090": "rtx-4090",
        "NVIDIA H100 80GB HBM3": None,  # SXM5 or PCIe: the name does not say
        "Tesla T4": None,
    }


def test_a_partial_table_row_is_skipped_not_invented() -> None:
    sweep = recorded_results()["stride_sweep"]
    table = sweep.tables[0]
    holed = Table(
        table.title,
        table.columns,
        (table.rows[0], (2, None, None, 2), *table.rows[2:]),
        table.units,
    )
    data = _built(
        "stride-sweep",
        replace(
            _inputs(),
            recorded={
                **recorded_results(),
                "stride_sweep": structs.replace(sweep, tables=(holed,)),
            },
        ),
    )
    measured = _series(data, "measured")
    assert 2.0 not in measured and measured[4.0] == 1110.8


def test_the_data_side_imports_no_plotting_library() -> None:
    code = textwrap.dedent("""
        import sys
        from gpulab.course import load_course
        from gpulab.figures import FIGURES, Inputs, build_figure, load_baseline
        from gpulab.probes.recorded import recorded_results
        course = load_course()
        inputs = Inputs(recorded_results(), specs=course.specs,
                        baseline=load_baseline(course.manifest.path.parent))
        assert all(build_figure(f, inputs).drawable for f in FIGURES.values())
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in
                       ("matplotlib", "numpy", "textual", "PIL"))
        assert not heavy, heavy
        print("ok")
    """)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_the_sustained_matmul_trace_is_the_recorded_windows_as_shares() -> None:
    data = _built("sustained-matmul")
    rows = _rows("sustained_matmul", "throughput")
    first = rows[0]["throughput"]
    speed = _series(data, "BF16 matmul throughput")
    assert speed == {r["until"]: round(100 * r["throughput"] / first, 1) for r in rows}
    clock_max = _reading("nvml_inventory", "clocks_max_sm")
    limit = _reading("nvml_inventory", "power_limit")
    clock, power = _series(data, "SM clock"), _series(data, "power")
    assert clock == {r["until"]: round(100 * r["SM clock"] / clock_max, 1) for r in rows}
    assert power == {r["until"]: round(100 * r["power"] / limit, 1) for r in rows}
    # what the lesson says it shows: the clock held down at the power limit, the speed not
    assert min(clock.values()) < 80 < min(speed.values()) and max(power.values()) > 95
    assert any(str(rows[-1]["throughput"]) in note for note in data.notes)


def test_the_decode_ridge_divides_each_datasheet_peak_by_its_bandwidth() -> None:
    data = _built("decode-ridge")
    specs = load_course().specs
    ridges = _series(data, "dense FP16")
    expected = {}
    for table in specs.gpus.values():
        peak, bandwidth = table.values.get("fp16_tensor"), table.values.get("memory_bandwidth")
        if peak is not None and bandwidth is not None:
            assert peak.unit == "TFLOPS" and bandwidth.unit in ("TB/s", "GB/s"), table.id
            tbs = bandwidth.value / (1000 if bandwidth.unit == "GB/s" else 1)
            expected[table.title.split(" (")[0].removeprefix("NVIDIA ")] = round(
                peak.value / tbs, 1
            )
    assert ridges == expected and len(ridges) >= 4
    assert ridges["H100 SXM5"] == 295.3  # the lesson's worked example, 295
    (decode,) = data.lines
    assert decode.value == 1.0 and all(r > 10 * decode.value for r in ridges.values())
