"""Figures drawn from datasheets alone: what the GPUs the course cites promise, side by side.

No machine measures these: a datasheet figure (`Figure.datasheets`) reads every
GPU table of specs.toml, draws arithmetic on their values that its caption
states, and says "NVIDIA's datasheets" as its source. Each bar's line of
numbers names the specs.toml values it came from.
"""

from __future__ import annotations

from gpulab.course.units import convert
from gpulab.figures.common import power_ticks
from gpulab.figures.data import Data, Figure
from gpulab.figures.model import Axis, Line, Missing, Plot, Series

__all__ = ["DATASHEET_FIGURES", "ridge_points"]


def ridge_points(d: Data) -> list[tuple[str, float, float, float]]:
    """(GPU, dense FP16 TFLOPS, HBM TB/s, their ratio in FLOPs per byte) for every GPU
    table of specs.toml that gives both, in the file's order."""
    if d.specs is None:
        raise Missing("specs.toml could not be read")
    found = []
    for table in d.specs.gpus.values():
        peak, bandwidth = table.values.get("fp16_tensor"), table.values.get("memory_bandwidth")
        if peak is None or bandwidth is None or peak.value is None or bandwidth.value is None:
            continue
        tflops = convert(peak.value, peak.unit, "TFLOPS")
        tbs = convert(bandwidth.value, bandwidth.unit, "TB/s")
        if tflops and tbs:
            name = table.title.split(" (")[0].removeprefix("NVIDIA ")
            found.append((name, tflops, tbs, tflops / tbs))
    if not found:
        raise Missing("no GPU in specs.toml gives both fp16_tensor and memory_bandwidth")
    return found


def _ridge(d: Data) -> Plot:
    found = ridge_points(d)
    names = tuple(name for name, _, _, _ in found)
    ridges = tuple(round(ratio, 1) for _, _, _, ratio in found)
    notes = tuple(f"{r:.0f} = {t:g} TFLOPS / {b:g} TB/s" for _, t, b, r in found)
    decode = Line(
        1.0,
        "decode, one sequence, 16-bit weights: 1 FLOP per byte",
        role="computed",
        source="each 2-byte weight is read once per generated token and feeds one "
        "multiply-add, 2 FLOPs",
    )
    return Plot(
        (
            Series(
                "dense FP16 Tensor Core peak / HBM bandwidth",
                names,
                ridges,
                "bars",
                "datasheet",
                notes,
            ),
        ),
        (decode,),
        (
            "A decode batch of B sequences does about B FLOPs per weight byte: it reaches "
            "a GPU's ridge only when B is as large as the bar.",
        ),
    )


DATASHEET_FIGURES = (
    Figure(
        "decode-ridge",
        "How many FLOPs a GPU needs per byte before compute limits it",
        "Each GPU's dense FP16 Tensor Core peak divided by its HBM bandwidth, from the "
        "datasheets specs.toml cites: the arithmetic intensity (the ridge point) below which "
        "a kernel waits on memory. Generating one token for one sequence reads every weight "
        "once for one multiply-add, about 1 FLOP per byte: tens to hundreds of times below "
        "every ridge, which is why decode is memory-bound and why serving batches requests.",
        Axis("GPU"),
        Axis("ridge point", "FLOP/B", log=True, ticks=power_ticks(10, 0, 4)),
        _ridge,
        datasheets=True,
        horizontal=True,
    ),
)
