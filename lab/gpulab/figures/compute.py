"""Figures of compute: the roofline, matmul throughput by dtype, the FP32 peak,
and what warp divergence costs."""

from __future__ import annotations

from collections.abc import Callable

from gpulab.figures.common import number, percent, power_ticks
from gpulab.figures.data import Data, Figure
from gpulab.figures.model import Axis, Line, Missing, Plot, Role, Series

__all__ = ["COMPUTE_FIGURES", "KERNELS", "intensity"]

MATMUL = "matmul_throughput"
_LOW, _HIGH = 0.01, 10_000.0  # the roofline's intensity axis, FLOP/B (the exercise's)
_MATVEC_N = 8192

Counts = Callable[[int], tuple[int, int]]

KERNELS: tuple[tuple[str, str, Counts], ...] = (
    # name, precision, FLOPs and bytes moved for size n, as the `roofline` exercise counts them:
    # each input read once, each output written once; an FMA is two FLOPs.
    ("vector add", "FP32", lambda n: (n, 3 * 4 * n)),
    ("reduction", "FP32", lambda n: (n, 4 * n)),
    ("matrix-vector", "FP16", lambda n: (2 * n * n, 2 * n * n + 2 * n + 2 * n)),
    ("matmul", "FP16", lambda n: (2 * n**3, 3 * 2 * n * n)),
)
"""The course's kernels placed on the roofline, with their FLOP and byte counts."""

_DATASHEET_PEAK = {
    "fp16": "fp16_tensor",
    "bf16": "fp16_tensor",
    "tf32": "tf32_tensor",
    "fp32": "fp32",
    "fp8": "fp8_tensor",
}


def intensity(name: str, n: int) -> float:
    """FLOPs per byte of the kernel `name` of KERNELS at size n."""
    count = next(c for k, _, c in KERNELS if k == name)
    flops, moved = count(n)
    return flops / moved


def _roof(label: str, bandwidth_tbs: float, peak_tflops: float, role: Role) -> Series:
    ridge = peak_tflops / bandwidth_tbs
    x = (_LOW, ridge, _HIGH) if _LOW < ridge < _HIGH else (_LOW, _HIGH)
    y = tuple(min(peak_tflops, i * bandwidth_tbs) for i in x)
    return Series(label, x, y, "curve", role)


def _roofline(d: Data) -> Plot:
    bandwidth = d.number("hbm_bandwidth", "copy_kernel_bandwidth") / 1000  # TB/s
    fp32 = d.number("fp32_peak", "fp32_tflops")
    fp16 = d.number(MATMUL, "fp16_tflops")
    series = [
        _roof(
            f"FP16 Tensor Cores, measured roofs: {fp16:g} TFLOPS, {bandwidth:.3g} TB/s",
            bandwidth,
            fp16,
            "measured",
        ),
        _roof(
            f"FP32 CUDA cores, measured roofs: {fp32:g} TFLOPS, {bandwidth:.3g} TB/s",
            bandwidth,
            fp32,
            "measured",
        ),
    ]
    sheet_bw = d.datasheet_value("memory_bandwidth", "TB/s")
    for key, what in (("fp16_tensor", "FP16 Tensor Cores"), ("fp32", "FP32 CUDA cores")):
        peak = d.datasheet_value(key, "TFLOPS")
        if sheet_bw is not None and peak is not None:
            series.append(
                _roof(
                    f"{what}, datasheet: {peak:g} TFLOPS, {sheet_bw:g} TB/s",
                    sheet_bw,
                    peak,
                    "datasheet",
                )
            )
    rows = d.table(MATMUL, "precision", "size", "throughput")
    for row in rows:
        size, rate = number(row["size"]), number(row["throughput"])
        width = {"fp16": 2, "bf16": 2, "fp32": 4}.get(str(row["precision"]))
        if size is None or rate is None or width is None or row["precision"] == "bf16":
            continue
        at = 2 * size**3 / (3 * width * size * size)
        series.append(
            Series(
                f"cuBLAS {row['precision']} matmul, n = {size:g}, measured",
                (at,),
                (rate,),
                "points",
            )
        )
    lines = []
    for name, precision, _ in KERNELS:
        n = _MATVEC_N
        at = intensity(name, n)
        sized = f", n = {n}" if name in ("matrix-vector", "matmul") else ""
        shown = f"{at:,.0f}" if at >= 100 else f"{at:.2g}"
        lines.append(
            Line(
                at,
                f"{name}, {precision}{sized}: {shown} FLOP/B",
                axis="x",
                role="computed",
                source="the roofline exercise's counts",
            )
        )
    return Plot(tuple(series), tuple(lines))


def _matmul_dtypes(d: Data) -> Plot:
    rows = d.table(MATMUL, "precision", "throughput")
    names, rates = [], []
    for row in rows:
        rate = number(row["throughput"])
        if rate is not None:
            names.append(str(row["precision"]))
            rates.append(rate)
    if not rates:
        raise Missing("the matmul table has no throughputs")
    peaks = [(n, d.datasheet_value(_DATASHEET_PEAK.get(n, ""), "TFLOPS")) for n in names]
    notes = tuple(percent(r / p) if p else "" for r, (_, p) in zip(rates, peaks, strict=True))
    series = [
        Series(
            "measured, cuBLAS (labels: share of the datasheet peak)",
            tuple(names),
            tuple(rates),
            "bars",
            notes=notes,
        )
    ]
    sheet = [(n, p) for n, p in peaks if p is not None]
    if sheet:
        series.append(
            Series(
                "datasheet, dense",
                tuple(n for n, _ in sheet),
                tuple(p for _, p in sheet),
                "bars",
                "datasheet",
            )
        )
    return Plot(tuple(series))


def _fp32_peak(d: Data) -> Plot:
    measured = d.number("fp32_peak", "fp32_tflops")
    series = [Series("measured, FMA = 2 FLOPs", ("measured",), (measured,), "bars")]
    clock = d.optional_number("fp32_peak", "sm_clock_mhz")
    at_clock = d.optional_number("fp32_peak", "fp32_peak_at_clock_tflops")
    if at_clock is not None:
        when = f" ({clock:g} MHz)" if clock is not None else ""
        series.append(
            Series(
                f"peak at the clock seen{when}: SMs × FP32 lanes × 2 × clock",
                ("at the clock seen",),
                (at_clock,),
                "bars",
                "computed",
            )
        )
    sheet = d.datasheet_value("fp32", "TFLOPS")
    if sheet is not None:
        series.append(Series("datasheet", ("datasheet",), (sheet,), "bars", "datasheet"))
    return Plot(tuple(series))


def _divergence(d: Data) -> Plot:
    rows = d.table("warp_divergence", "pattern", "slowdown")
    names, slow = [], []
    for row in rows:
        value = number(row["slowdown"])
        if value is not None:
            names.append(str(row["pattern"]))
            slow.append(value)
    if not names:
        raise Missing("the divergence table has no slowdowns")
    return Plot(
        (
            Series(
                "kernel time / time with every lane on path A", tuple(names), tuple(slow), "bars"
            ),
        ),
        (
            Line(
                2.0,
                "two equal paths, one after the other: 2×",
                role="computed",
                source="the sum of both paths",
            ),
        ),
    )


COMPUTE_FIGURES = (
    Figure(
        "roofline",
        "The roofline, measured, with the course's kernels on it",
        "Attainable TFLOPS = min(peak, intensity × bandwidth), with the roofs measured (copy "
        "kernel bandwidth, the FP32 FMA peak, cuBLAS FP16) and from the datasheet. Vertical "
        "lines place the course's kernels by their intensity, counted as in the roofline "
        "exercise: vector add n / 12n, reduction n / 4n, matrix-vector 2n² / (2n² + 4n), "
        "matmul 2n³ / 6n² = n/3 (FP16; FP32 moves twice the bytes). The points are cuBLAS "
        "matmuls of the same run.",
        Axis("arithmetic intensity", "FLOP/B", log=True, ticks=power_ticks(10, -2, 4)),
        Axis("attainable", "TFLOPS", log=True, ticks=power_ticks(10, -3, 4)),
        _roofline,
        probes=("hbm_bandwidth", "fp32_peak", MATMUL),
    ),
    Figure(
        "matmul-dtypes",
        "Matmul throughput by precision against the dense datasheet peaks",
        "A large cuBLAS matmul (M = N = K) in each precision, counting 2·M·N·K FLOPs, next to "
        "the datasheet's dense Tensor Core peak (FP16 and BF16 share one; FP32 without TF32 "
        "runs on the CUDA cores). Labels give the share of the datasheet figure.",
        Axis("precision"),
        Axis("throughput", "TFLOPS"),
        _matmul_dtypes,
        probes=(MATMUL,),
    ),
    Figure(
        "fp32-peak",
        "FP32 FMA throughput against the peak",
        "Independent FMA chains on every FP32 lane, an FMA counting as two FLOPs, next to "
        "the peak at the SM clock seen during the run (SMs × FP32 lanes × 2 × clock) and the "
        "datasheet's peak, which assumes the boost clock.",
        Axis(""),
        Axis("throughput", "TFLOPS"),
        _fp32_peak,
        probes=("fp32_peak",),
    ),
    Figure(
        "divergence-cost",
        "What warp divergence costs",
        "Kernel time by branch pattern, against the same kernel with every lane on one path. "
        "A warp runs both sides of a divergent branch one after the other, whether 16 lanes "
        "disagree or one; divergence in a tenth of the work costs about a tenth.",
        Axis("pattern"),
        Axis("slowdown", "×"),
        _divergence,
        probes=("warp_divergence",),
        horizontal=True,
    ),
)
