"""The reference solutions' kernels against their library baselines, in one run on one GPU.

Each reference kernel is taken from its solution notebook (through the same
worker the checks use) and run by its trusted task in the kernel worker,
which times it against the baseline on the same arrays in the same run:

- vector-add: the grid-stride add / cupy.add (no target: context);
- coalescing: the float4 copy / cudaMemcpy device-to-device (target >= 0.90);
- reduction: the shared-memory sum / cupy.sum (target >= 0.85);
- tiled-matmul: the register-blocked SGEMM / cuBLAS FP32 through cupy.matmul
  (target >= 0.5);
- matmul-dtypes: the WMMA Tensor Core kernel / cuBLAS FP16 (cublasGemmEx, FP16
  in, FP32 out) on n x n x n, n from the GPU's memory (8192 from 16 GiB;
  target >= 0.3: WMMA compiles to mma.sync, which cannot use Hopper's wgmma).

A missed target is reported, not fatal: the script exits 1 only when a kernel
could not run.

    python bench/exercises.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpulab.course import load_course
from gpulab.grading.build import solution_path
from gpulab.grading.checks.cells import answer_cells, setup_cells
from gpulab.grading.checks.gpu import device_facts, gpu_missing, new_seed, run_kernel
from gpulab.grading.checks.learner import Learner, LearnerError
from gpulab.grading.checks.notebook import read_notebook


@dataclass(frozen=True)
class Bench:
    exercise: str
    task: str
    source: str  # the answer function giving the source
    timed: Callable[[Learner, int], dict[str, Any]]
    what: str
    unit: str  # "GB/s" or "TFLOPS"
    target: float | None


def _sized(n: int, config: str = "launch_config") -> Callable[[Learner, int], dict[str, Any]]:
    def timed(learner: Learner, sm_count: int) -> dict[str, Any]:
        return {"n": n, "config": learner.call(config, n, sm_count)}

    return timed


def _matmul(size: int) -> Callable[[Learner, int], dict[str, Any]]:
    def timed(learner: Learner, sm_count: int) -> dict[str, Any]:
        return {
            "M": size,
            "N": size,
            "K": size,
            "config": learner.call("launch_config", size, size, size),
        }

    return timed


def _hgemm(learner: Learner, sm_count: int) -> dict[str, Any]:
    from gpulab.grading.checks.reference.matmul_dtypes import side

    n = side()
    return {"M": n, "N": n, "K": n, "config": learner.call("hgemm_config", n, n, n)}


BENCHES = (
    Bench(
        "vector-add",
        "vector_add",
        "vector_add_source",
        _sized(2**28),
        "vector add (2^28) / cupy.add",
        "GB/s",
        None,
    ),
    Bench(
        "coalescing",
        "copy_floats",
        "copy_floats_source",
        _sized(2**30, "copy_launch_config"),
        "coalesced copy (4 GiB) / cudaMemcpy D2D",
        "GB/s",
        0.90,
    ),
    Bench(
        "reduction",
        "reduce_sum",
        "reduce_sum_source",
        _sized(2**28),
        "reduction (2^28) / cupy.sum",
        "GB/s",
        0.85,
    ),
    Bench(
        "tiled-matmul",
        "sgemm",
        "sgemm_source",
        _matmul(4096),
        "tiled SGEMM (4096^3) / cuBLAS FP32",
        "TFLOPS",
        0.5,
    ),
    Bench(
        "matmul-dtypes",
        "hgemm",
        "hgemm_source",
        _hgemm,
        "matmul-dtypes reference kernel / cuBLAS FP16",
        "TFLOPS",
        0.3,
    ),
)


def measure(bench: Bench, sm_count: int) -> dict[str, Any]:
    entry = next(e for e in load_course().exercises() if e.name == bench.exercise)
    path = solution_path(entry)
    cells = read_notebook(path)
    with Learner([*setup_cells(cells), *answer_cells(cells, path).values()]) as learner:
        source = learner.call(bench.source)
        timed = bench.timed(learner, sm_count)
    found = run_kernel(
        bench.task, source, {"seed": new_seed(), "cases": [], "timed": timed}, timeout=600
    )
    return dict(found["timed"])


def main() -> int:
    missing = gpu_missing()
    if missing:
        print(f"bench/exercises.py: {missing}")
        return 1
    facts = device_facts()
    rows = [("what", "measured", "baseline", "ratio", "target", "verdict")]
    failed = 0
    for bench in BENCHES:
        try:
            timed = measure(bench, facts["sm_count"])
        except LearnerError as exc:  # a KernelAnswerError too
            print(f"{bench.exercise}: the reference did not run: {exc}")
            failed += 1
            continue
        if bench.unit == "TFLOPS":  # the sgemm task reports {"yours", "cublas"}
            mine, theirs = timed["tflops"]["yours"], timed["tflops"]["cublas"]
        else:
            mine, theirs = timed["gbs"], timed["reference_gbs"]
        target = "" if bench.target is None else f">= {bench.target}"
        verdict = (
            "" if bench.target is None else ("PASS" if timed["ratio"] >= bench.target else "MISS")
        )
        right = timed.get("wrong", 0) == 0
        rows.append(
            (
                bench.what,
                f"{mine:.0f} {bench.unit}",
                f"{theirs:.0f} {bench.unit}",
                f"{timed['ratio']:.3f}",
                target,
                verdict if right else "WRONG RESULT",
            )
        )
        failed += not right
    print(
        f"gpulab reference solutions on {facts['name']} ({facts['sm_count']} SMs), "
        "all measured in this run"
    )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    print("(bandwidth counts bytes read + written; ratio = baseline time / kernel time)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
