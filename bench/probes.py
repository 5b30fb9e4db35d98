"""The probes against their ceilings and against published figures, in one run on one GPU.

Each line is a ratio measured in this run (never against numbers from another
day), with its target and PASS or MISS:

- the hbm_bandwidth probe's SM copy kernel / cudaMemcpy device-to-device (>= 0.97);
- the pcie_bandwidth probe's pinned host-to-device copy / 63 GB/s, PCIe Gen5 x16 per
  direction (>= 0.85);
- the matmul_throughput probe's BF16 matmul / PyTorch's BF16 matmul of the same size,
  timed the same way (>= 0.98; skipped with a message where PyTorch is missing);
- the pointer_chase_latency and smem_latency plateaus, in SM cycles, next to the
  published ranges in FACTS.md (target: inside the range widened by 10 %);
- the pointer_chase_latency probe's L1 plateau / a pure chase measured here, at the
  same footprints (within 5 %): bench/pure_chase.cu, the smallest ``p = *p`` loop
  timed with clock64, modelled on gpu-benches' gpu-latency.

A missed target is reported, not fatal: the script exits 0 unless the probes
themselves could not run. With ``--strict`` (run on the H200 whenever a probe
changes) a missed target, or a probe that did not run, is a failure: exit 1.

    python bench/probes.py [--strict]
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from gpulab.probes.micro import matmul_size
from gpulab.probes.model import ProbeResult
from gpulab.probes.registry import run_probe

PCIE_GEN5_X16 = 63.0  # GB/s per direction, FACTS.md
# Published latencies in SM cycles (FACTS.md: gpu-benches, mt4g): (low, high)
PUBLISHED = {
    "smem_latency_cycles": ("shared memory", 30.0, 30.0, "~30"),
    "l1_latency_cycles": ("L1 hit", 34.0, 40.0, "34-40"),
    "l2_latency_cycles": ("L2 hit", 219.0, 475.0, "219-281 near, ~475 far"),
    "hbm_latency_cycles": ("HBM", 650.0, 860.0, "650-860"),
}
SLACK = 0.10
# The probe's L1 plateau is the median of these footprints (CHASE_RANGES["l1"])
L1_FOOTPRINTS = (16 << 10, 32 << 10, 64 << 10)
PURE_CHASE_STEPS = 1 << 16  # loads timed per footprint, as the probe times there
LINE = 128  # bytes between the chain's entries: one cache line each, as in the probe


@dataclass
class Line:
    what: str
    measured: str
    against: str
    ratio: str
    target: str
    verdict: str


def reading(result: ProbeResult, key: str) -> float | None:
    found = result.reading(key)
    if found is None or found.status != "ok" or not isinstance(found.value, int | float):
        return None
    return float(found.value)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def torch_bf16_tflops(n: int) -> float | str:
    """PyTorch's BF16 matmul at n³, CUDA events, median of 5 (or why it cannot run)."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "PyTorch sees no CUDA device"
    gen = torch.Generator(device="cuda").manual_seed(20261202)
    a = torch.rand((n, n), device="cuda", dtype=torch.float32, generator=gen) * 2 - 1
    b = torch.rand((n, n), device="cuda", dtype=torch.float32, generator=gen) * 2 - 1
    a, b = a.to(torch.bfloat16), b.to(torch.bfloat16)
    c = torch.empty_like(a)

    def timed(iters: int) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            torch.matmul(a, b, out=c)
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / iters

    timed(2)  # warm-up: cuBLAS picks its kernel
    iters = max(1, min(50, round(40.0 / max(timed(1), 1e-3))))
    ms = statistics.median(timed(iters) for _ in range(5))
    return 2.0 * n**3 / (ms * 1e-3) / 1e12


def pure_chase_cycles(footprint: int, seed: int) -> float:
    """Cycles per load of bench/pure_chase.cu over a random cycle through `footprint` bytes.

    The chain is built here with NumPy, not with the probe's code: one entry
    per 128-byte line, each holding the device address of the next entry of
    one random cycle through all of them. One untimed lap of 65,536 loads in
    the same launch, then 65,536 timed ones; the address reached is checked.
    """
    import cupy
    import numpy

    lines = footprint // LINE
    order = numpy.random.default_rng(seed).permutation(lines).astype(numpy.uint64)
    table = cupy.zeros(footprint // 8, dtype=cupy.uint64)
    base = int(table.data.ptr)
    host = numpy.zeros(footprint // 8, dtype=numpy.uint64)
    host[order * (LINE // 8)] = numpy.uint64(base) + numpy.roll(order, -1) * numpy.uint64(LINE)
    table.set(host)
    source = Path(__file__).with_name("pure_chase.cu").read_text(encoding="utf-8")
    kernel = cupy.RawKernel(source, "pure_chase")
    reached = cupy.zeros(1, dtype=cupy.uint64)
    cycles = cupy.zeros(1, dtype=cupy.int64)
    steps = PURE_CHASE_STEPS
    start = numpy.uint64(base + int(order[0]) * LINE)
    kernel((1,), (1,), (start, numpy.int64(steps), numpy.int64(steps), reached, cycles))
    want = base + int(order[(2 * steps) % lines]) * LINE
    got = int(reached.get()[0])
    if got != want:
        raise RuntimeError(f"the pure chase ended at {got:#x}, the cycle says {want:#x}")
    return int(cycles.get()[0]) / steps


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 on a missed target or a probe that did not run",
    )
    strict = parser.parse_args(argv).strict
    results = {
        name: run_probe(name)
        for name in (
            "hbm_bandwidth",
            "pcie_bandwidth",
            "matmul_throughput",
            "pointer_chase_latency",
            "smem_latency",
        )
    }
    broken = [r for r in results.values() if r.status not in ("ok", "partial")]
    for result in broken:
        print(f"{result.probe}: {result.status}: {result.message}")
    if len(broken) == len(results):
        return 1
    device = next((r.device for r in results.values() if r.device), "this machine")
    lines: list[Line] = []

    hbm = results["hbm_bandwidth"]
    copy, memcpy = reading(hbm, "copy_kernel_bandwidth"), reading(hbm, "memcpy_bandwidth")
    if copy and memcpy:
        lines.append(
            Line(
                "SM copy kernel / cudaMemcpy D2D",
                f"{copy:.0f} GB/s",
                f"{memcpy:.0f} GB/s",
                f"{copy / memcpy:.3f}",
                ">= 0.97",
                verdict(copy / memcpy >= 0.97),
            )
        )

    h2d = reading(results["pcie_bandwidth"], "h2d_pinned_bandwidth")
    if h2d:
        lines.append(
            Line(
                "pinned host-to-device / PCIe Gen5 x16",
                f"{h2d:.1f} GB/s",
                f"{PCIE_GEN5_X16:.0f} GB/s",
                f"{h2d / PCIE_GEN5_X16:.3f}",
                ">= 0.85",
                verdict(h2d / PCIE_GEN5_X16 >= 0.85),
            )
        )

    bf16 = reading(results["matmul_throughput"], "bf16_tflops")
    if bf16:
        import cupy

        device_id = cupy.cuda.Device().id
        n = matmul_size(int(cupy.cuda.runtime.getDeviceProperties(device_id)["totalGlobalMem"]))
        torch_tflops = torch_bf16_tflops(n)
        if isinstance(torch_tflops, str):
            print(f"matmul vs PyTorch skipped: {torch_tflops}")
        else:
            lines.append(
                Line(
                    f"matmul probe BF16 / torch BF16 ({n}³)",
                    f"{bf16:.0f} TFLOPS",
                    f"{torch_tflops:.0f} TFLOPS",
                    f"{bf16 / torch_tflops:.3f}",
                    ">= 0.98",
                    verdict(bf16 / torch_tflops >= 0.98),
                )
            )

    for key, (label, low, high, shown) in PUBLISHED.items():
        probe = "smem_latency" if key.startswith("smem") else "pointer_chase_latency"
        value = reading(results[probe], key)
        if value is None:
            continue
        ok = low * (1 - SLACK) <= value <= high * (1 + SLACK)
        middle = (low + high) / 2
        lines.append(
            Line(
                f"{label} latency",
                f"{value:.0f} cycles",
                f"{shown} cycles",
                f"{value / middle:.2f}",
                "in range ±10 %",
                verdict(ok),
            )
        )

    probe_l1 = reading(results["pointer_chase_latency"], "l1_latency_cycles")
    if probe_l1:
        pure = statistics.median(
            pure_chase_cycles(size, seed=i) for i, size in enumerate(L1_FOOTPRINTS)
        )
        lines.append(
            Line(
                "L1 plateau: probe / pure chase",
                f"{probe_l1:.1f} cycles",
                f"{pure:.1f} cycles",
                f"{probe_l1 / pure:.3f}",
                "within 5 %",
                verdict(abs(probe_l1 / pure - 1) <= 0.05),
            )
        )

    print(f"gpulab probe benchmarks on {device}, all measured in this run")
    header = Line("what", "measured", "against", "ratio", "target", "verdict")
    rows = [header, *lines]
    widths = [
        max(len(getattr(row, field)) for row in rows)
        for field in ("what", "measured", "against", "ratio", "target", "verdict")
    ]
    for row in rows:
        cells = (row.what, row.measured, row.against, row.ratio, row.target, row.verdict)
        print("  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)))
    print("(latency ratio: measured / middle of the published range)")
    missed = [line.what for line in lines if line.verdict == "MISS"]
    if strict and (missed or broken):
        print(
            f"--strict: {len(missed)} missed target(s), {len(broken)} probe(s) did not run: "
            + ", ".join([*missed, *(r.probe for r in broken)])
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
