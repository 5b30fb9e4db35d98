"""Diagrams of the GPU itself: an SM with its four partitions, and the memory ladder.

Both are drawn for gpulab's H200: the sizes CUDA reported there
(`cuda_properties` in the recording), the latencies its probes measured
(`pointer_chase_latency`, `smem_latency`), and the per-SM unit counts and
datasheet values from specs.toml. A count per partition is the SM's count
divided by its four partitions, which the captions say.
"""

from __future__ import annotations

from gpulab.figures.common import binary_size
from gpulab.figures.data import datasheet_gpu
from gpulab.figures.diagram_data import Diagram, Facts
from gpulab.figures.diagram_model import Box, Drawing, Link
from gpulab.figures.model import Missing

__all__ = ["GPU_DIAGRAMS"]

PROPS = "cuda_properties"
CHASE = "pointer_chase_latency"
_CC = "9.0"
"""The compute capability whose per-SM figures specs.toml keys by ``_cc90``."""


def _gpu_table(f: Facts) -> str:
    """The id of specs.toml's table for the recorded GPU (h200), or `Missing`."""
    name = f.text(PROPS, "name")
    table = datasheet_gpu(f.inputs.specs, name)
    if table is None:
        raise Missing(f"specs.toml has no datasheet for {name}")
    return table.id


def _per(f: Facts, ref: str, parts: int) -> int:
    """A specs.toml count per SM, shared out over `parts` partitions."""
    total = f.spec_number(ref)
    if total % parts:
        raise Missing(f"specs.toml's {ref} ({total:g}) does not divide by {parts} partitions")
    return int(total // parts)


def _count(value: float) -> str:
    return f"{value:,.0f}"


def _sm(f: Facts) -> Drawing:
    cc = f.text(PROPS, "computeCapability")
    if cc != _CC:
        raise Missing(
            f"the recorded GPU has compute capability {cc}; this diagram knows "
            f"the SM of compute capability {_CC} (Hopper)"
        )
    sms = f.number(PROPS, "multiProcessorCount")
    parts = int(f.spec_number("sm-units.warp_schedulers_per_sm"))
    warps = f.number(PROPS, "maxWarpsPerMultiProcessor")
    registers = f.spec_number("cc-limits.registers_per_partition")
    fp32 = f.spec_number("sm-units.fp32_lanes_per_partition_cc90")
    int32 = _per(f, "sm-units.int32_lanes", parts)
    fp64 = _per(f, "sm-units.fp64_lanes_cc90", parts)
    sfus = _per(f, "sm-units.sfus_per_sm", parts)
    tensor = _per(f, "sm-units.tensor_cores_per_sm", parts)
    sram = f.spec("sm-units.l1_shared_cc90").shown
    shared = binary_size(f.number(PROPS, "sharedMemPerMultiprocessor"))
    register_file = binary_size(f.number(PROPS, "registerFilePerMultiprocessor"))
    l2 = binary_size(f.number(PROPS, "l2CacheSize"))
    gpu = _gpu_table(f)
    sheet_l2 = f.spec(f"{gpu}.l2_cache").shown
    memory = f.spec(f"{gpu}.memory")
    bandwidth = f.spec(f"{gpu}.memory_bandwidth").shown
    kind = memory.note if memory.note and len(memory.note) < 12 else "HBM"

    def partition(index: int) -> Box:
        return Box(
            f"Partition {index}",
            children=(
                Box(
                    "Warp scheduler",
                    ("1 instruction per clock", f"up to {warps / parts:g} warps"),
                    role="compute",
                ),
                Box(
                    "Register file",
                    (f"{_count(registers)} × 32-bit", binary_size(registers * 4)),
                    role="memory",
                ),
                Box("Lanes", (f"{fp32:g} FP32", f"{int32} INT32", f"{fp64} FP64"), role="compute"),
                Box(f"{sfus} SFUs", role="compute"),
                Box(f"{tensor} Tensor Core", role="compute"),
            ),
        )

    sm = Box(
        f"One SM of {sms:g}",
        (f"{parts} partitions, {register_file} of registers",),
        key="sm",
        children=(
            Box("", layout="row", children=tuple(partition(i) for i in range(parts))),
            Box(
                "",
                layout="row",
                children=(
                    Box(
                        "L1 data cache and shared memory",
                        (f"{sram} of SRAM, up to {shared} as shared memory",),
                        role="memory",
                        span=3,
                    ),
                    Box("TMA", ("tile copies",), role="compute"),
                ),
            ),
        ),
    )
    root = Box(
        f"{f.text(PROPS, 'name')}: {sms:g} SMs",
        children=(
            sm,
            Box(
                f"L2 cache, shared by all {sms:g} SMs",
                (f"{l2} as CUDA reports it; {sheet_l2} on the datasheet",),
                role="memory",
                key="l2",
            ),
            Box(kind, (f"{memory.shown}, {bandwidth} on the datasheet",), role="memory", key="hbm"),
        ),
    )
    return Drawing(root, (Link("sm", "l2", both=True), Link("l2", "hbm", both=True)))


def _ladder(f: Facts) -> Drawing:
    gpu = _gpu_table(f)
    sms = f.number(PROPS, "multiProcessorCount")

    def latency(probe: str, key: str) -> str:
        cycles, ns = f.number(probe, f"{key}_cycles"), f.number(probe, f"{key}_ns")
        return f"{cycles:g} cycles, {ns:.1f} ns per load"

    memory = f.spec(f"{gpu}.memory")
    kind = memory.note if memory.note and len(memory.note) < 12 else "HBM"
    copy = f.number("hbm_bandwidth", "memcpy_bandwidth")
    registers = f.number(PROPS, "regsPerMultiprocessor")
    rungs = (
        Box(
            "Registers: one thread's",
            (
                f"{binary_size(f.number(PROPS, 'registerFilePerMultiprocessor'))} per SM "
                f"({_count(registers)} × 32-bit)",
                "read as operands, no load",
            ),
            role="memory",
            width=0.42,
        ),
        Box(
            "Shared memory: one block's",
            (
                f"up to {binary_size(f.number(PROPS, 'sharedMemPerMultiprocessor'))} per SM",
                latency("smem_latency", "smem_latency"),
            ),
            role="memory",
            width=0.56,
        ),
        Box(
            "L1: one SM's",
            (
                f"the rest of {f.spec('sm-units.l1_shared_cc90').shown} of SRAM",
                latency(CHASE, "l1_latency"),
            ),
            role="memory",
            width=0.7,
        ),
        Box(
            f"L2: all {sms:g} SMs'",
            (
                f"{binary_size(f.number(PROPS, 'l2CacheSize'))} as CUDA reports it, "
                f"{f.spec(f'{gpu}.l2_cache').shown} on the datasheet",
                latency(CHASE, "l2_latency"),
            ),
            role="memory",
            width=0.85,
        ),
        Box(
            f"{kind}: the whole GPU's",
            (
                f"{memory.shown} and {f.spec(f'{gpu}.memory_bandwidth').shown} on the datasheet; "
                f"cudaMemcpy {copy:,.0f} GB/s, read + written",
                latency(CHASE, "hbm_latency"),
            ),
            role="memory",
        ),
    )
    return Drawing(
        Box("", children=rungs),
        notes=(
            "Latencies are one thread's dependent loads: shared memory from the smem_latency "
            "probe, L1, L2 and HBM from the pointer chase's plateaus",
        ),
    )


GPU_DIAGRAMS = (
    Diagram(
        "sm-layout",
        "Inside an H200 SM",
        "The chip is many SMs around one L2 and the HBM. Each SM is four partitions, each "
        "with its own warp scheduler, a quarter of the register file and its own lanes, "
        "special function units and Tensor Core; L1 and shared memory are one block of SRAM "
        "that all four share. Counts per partition are the SM's counts divided by four.",
        _sm,
    ),
    Diagram(
        "memory-ladder",
        "The memory ladder of an H200",
        "From registers to HBM each level is shared more widely, holds more and takes "
        "longer to answer one load. Sizes are what CUDA reports on gpulab's H200 and the "
        "datasheet's; latencies are its probes' measurements, in SM cycles and in "
        "nanoseconds at the clock of the run.",
        _ladder,
    ),
)
