"""Checks of the roofline exercise (lesson: the GPU memory hierarchy).

Each check calls your functions in a separate process and compares the result
with its own arithmetic: the datasheet values are read here, from gpulab's
specs.toml, with gpulab's loader; the FLOP and byte counts are the ones the
notebook states. Numbers must agree to one part in a million.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from gpulab.course.catalog import find_course_dir
from gpulab.course.specs import load_specs
from gpulab.grading.learner import LearnerError

REL = 1e-6
SPECS = load_specs(find_course_dir() / "specs.toml")
TBS_PER = {"TB/s": 1.0, "GB/s": 1e-3}
PEAK_KEY = {"fp32": "fp32", "fp16": "fp16_tensor"}
PRECISION = {"vector_add": "fp32", "saxpy": "fp32", "reduction": "fp32",
             "matvec": "fp16", "gemm": "fp16"}
GPUS = ("h200", "a100-80gb")


# -- the check's own roofline ------------------------------------------------------
def roofs(gpu: str) -> dict[str, float]:
    """Bandwidth in TB/s, peaks in TFLOPS and ridges in FLOP/B, from specs.toml."""
    values = SPECS.gpus[gpu].values
    bandwidth = values["memory_bandwidth"]
    out = {"bandwidth_tbs": float(bandwidth.value or 0) * TBS_PER[bandwidth.unit]}
    for precision, key in PEAK_KEY.items():
        out[f"{precision}_tflops"] = float(values[key].value or 0)
        out[f"{precision}_ridge"] = out[f"{precision}_tflops"] / out["bandwidth_tbs"]
    return out


def counts(name: str, n: int) -> tuple[float, float]:
    """(FLOPs, bytes) of a kernel by the notebook's counting rules."""
    return {
        "vector_add": (n, 12 * n),                 # one add; read a, b, write c (FP32)
        "saxpy": (2 * n, 12 * n),                  # one FMA; read x, y, write y (FP32)
        "reduction": (n, 4 * n),                   # n adds; read x (FP32)
        "matvec": (2 * n * n, 2 * n * n + 4 * n),  # n^2 FMAs; read W, x, write y (FP16)
        "gemm": (2 * n**3, 6 * n * n),             # n^3 FMAs; read A, B, write C (FP16)
    }[name]


def close(got: Any, want: float) -> bool:
    return isinstance(got, int | float) and not isinstance(got, bool) and \
        math.isclose(got, want, rel_tol=REL, abs_tol=1e-12)


def bound(intensity: float, peak: float, bandwidth: float) -> str:
    return "memory" if intensity * bandwidth < peak else "compute"


def raised_value_error(learner: Any, function: str, *args: Any) -> tuple[bool, str]:
    """Did the call raise ValueError? And what it did instead, in words."""
    try:
        got = learner.call(function, *args)
    except LearnerError as exc:
        first = str(exc).splitlines()[0]  # "while calling f(): ValueError: message"
        what = first.split(": ", 1)[-1].rstrip(": ")
        return bool(re.search(r":\s*ValueError\b", first)), f"raised {what}"
    return False, f"returned {got!r}"


# -- the checks ----------------------------------------------------------------------
@pytest.mark.points(1)
def test_arithmetic_intensity(learner: Any) -> None:
    """arithmetic_intensity divides FLOPs by bytes"""
    for flops, nbytes, what in [(1, 12, "one FP32 vector-add element"),
                                (1, 4, "one FP32 element summed"),
                                (2 * 8192**3, 6 * 8192**2, "an 8192^3 FP16 GEMM"),
                                (0, 4096, "a copy: no FLOPs at all")]:
        got = learner.call("arithmetic_intensity", flops, nbytes)
        want = flops / nbytes
        assert close(got, want), (
            f"arithmetic_intensity({flops}, {nbytes}) ({what}) returned {got!r}, but "
            f"{flops} FLOPs / {nbytes} bytes = {want:.6g} FLOP/B")


@pytest.mark.points(1)
def test_zero_bytes_is_refused(learner: Any) -> None:
    """arithmetic_intensity raises ValueError when no bytes move"""
    ok, what = raised_value_error(learner, "arithmetic_intensity", 1, 0)
    assert ok, (
        f"arithmetic_intensity(1, 0) {what}, but it should raise ValueError: a kernel that "
        "moves no bytes has no arithmetic intensity; test bytes_moved <= 0 before dividing "
        "(a ZeroDivisionError or a returned None does not say what was wrong)")


@pytest.mark.points(1)
def test_ridge_points(learner: Any) -> None:
    """ridge_point of the H200 and the A100 80 GB, FP32 and FP16"""
    for gpu in GPUS:
        r = roofs(gpu)
        for precision in PEAK_KEY:
            peak, bandwidth = r[f"{precision}_tflops"], r["bandwidth_tbs"]
            got = learner.call("ridge_point", peak, bandwidth)
            assert close(got, peak / bandwidth), (
                f"ridge_point({peak}, {bandwidth}) ({gpu}, {precision}) returned {got!r}, but "
                f"the roofs meet where intensity x {bandwidth} TB/s = {peak} TFLOPS, at "
                f"{peak} / {bandwidth} = {peak / bandwidth:.4g} FLOP/B")


@pytest.mark.points(2)
def test_attainable_and_limit(learner: Any) -> None:
    """attainable and limit on both sides of each ridge"""
    for gpu in GPUS:
        r = roofs(gpu)
        for precision in PEAK_KEY:
            peak, bandwidth = r[f"{precision}_tflops"], r["bandwidth_tbs"]
            ridge = peak / bandwidth
            for intensity in (1 / 12, 0.25, ridge / 2, ridge * 2, 8192 / 3):
                where = f"at {intensity:.4g} FLOP/B on {gpu}'s {precision} roofs " \
                        f"({peak} TFLOPS, {bandwidth:g} TB/s, ridge {ridge:.4g})"
                got = learner.call("attainable", intensity, peak, bandwidth)
                want = min(peak, intensity * bandwidth)
                assert close(got, want), (
                    f"attainable {where} returned {got!r}, but the lower roof is "
                    f"min({peak}, {intensity:.4g} x {bandwidth:g}) = {want:.6g} TFLOPS")
                got_limit = learner.call("limit", intensity, peak, bandwidth)
                want_limit = bound(intensity, peak, bandwidth)
                side = "left" if want_limit == "memory" else "right"
                assert got_limit == want_limit, (
                    f"limit {where} returned {got_limit!r}, but the intensity is {side} of the "
                    f"ridge, so the answer is {want_limit!r}")


@pytest.mark.points(2)
def test_gpu_roofs(learner: Any) -> None:
    """gpu_roofs reads the H200 and the A100 80 GB from specs.toml"""
    for gpu in GPUS:
        got = learner.call("gpu_roofs", gpu)
        want = roofs(gpu)
        assert isinstance(got, dict), f"gpu_roofs({gpu!r}) returned {got!r}, not a dict"
        missing = sorted(set(want) - set(got))
        assert not missing, f"gpu_roofs({gpu!r}) has no {', '.join(missing)}: got {sorted(got)}"
        unit = SPECS.gpus[gpu].values["memory_bandwidth"].unit
        for key, value in want.items():
            hint = ""
            if key in ("bandwidth_tbs", "fp32_ridge", "fp16_ridge") and unit != "TB/s":
                hint = f": specs.toml gives {gpu}'s bandwidth in {unit}, so convert it to TB/s"
            assert close(got[key], value), (
                f"gpu_roofs({gpu!r})[{key!r}] is {got[key]!r}, but specs.toml's datasheet "
                f"values give {value:.6g}{hint}")


@pytest.mark.points(2)
def test_kernel_intensity(learner: Any) -> None:
    """kernel_intensity counts the FLOPs and bytes of each kernel"""
    for name in PRECISION:
        for n in (1, 1000, 8192):
            flops, nbytes = counts(name, n)
            got = learner.call("kernel_intensity", name, n)
            assert close(got, flops / nbytes), (
                f"kernel_intensity({name!r}, {n}) returned {got!r}, but {name} at n = {n} does "
                f"{flops:g} FLOPs and must move {nbytes:g} bytes: {flops / nbytes:.6g} FLOP/B "
                "(recount with the notebook's rules: FMA = 2 FLOPs, every array read or "
                "written once, FP32 = 4 bytes, FP16 = 2)")


@pytest.mark.points(2)
def test_place_kernel(learner: Any) -> None:
    """place_kernel puts each kernel on the H200's and the A100's roofline"""
    cases = [("vector_add", 2**26), ("saxpy", 2**26), ("reduction", 2**26),
             ("matvec", 8192), ("gemm", 64), ("gemm", 8192)]
    for gpu in GPUS:
        r = roofs(gpu)
        for name, n in cases:
            precision = PRECISION[name]
            peak, bandwidth = r[f"{precision}_tflops"], r["bandwidth_tbs"]
            flops, nbytes = counts(name, n)
            intensity = flops / nbytes
            want = {"intensity": intensity, "ridge": peak / bandwidth,
                    "attainable_tflops": min(peak, intensity * bandwidth),
                    "limit": bound(intensity, peak, bandwidth)}
            got = learner.call("place_kernel", name, n, gpu)
            call = f"place_kernel({name!r}, {n}, {gpu!r})"
            assert isinstance(got, dict), f"{call} returned {got!r}, not a dict"
            missing = sorted(set(want) - set(got))
            assert not missing, f"{call} has no {', '.join(missing)}: got {sorted(got)}"
            for key in ("intensity", "ridge", "attainable_tflops"):
                why = (f"kernel_intensity({name!r}, {n}) should give it" if key == "intensity"
                       else f"{name} is an {precision} kernel, so it meets {gpu}'s {precision} "
                       f"peak of {peak} TFLOPS and {bandwidth:g} TB/s")
                assert close(got[key], want[key]), (
                    f"{call}[{key!r}] is {got[key]!r}, but it should be {want[key]:.6g}: {why}")
            assert got["limit"] == want["limit"], (
                f"{call}['limit'] is {got['limit']!r}, but at {intensity:.4g} FLOP/B against a "
                f"ridge of {peak / bandwidth:.4g} the kernel is {want['limit']}-bound")
