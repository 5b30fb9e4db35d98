"""Hidden checks of the roofline exercise: inputs the notebook does not show.

Every GPU of specs.toml (some list their bandwidth in GB/s), roofs and
intensities drawn at random here, sizes from 1 up, and every kind of invalid
input, which must raise ValueError. Expected values are this file's own
arithmetic on specs.toml, as in the visible checks.
"""

from __future__ import annotations

import math
import random
import secrets
from types import ModuleType
from typing import Any

import pytest

from gpulab.grading.pytest_plugin import visible_checks


def _visible() -> ModuleType:
    """The visible checks' module (one copy of the helpers for both files)."""
    return visible_checks(__file__)


_V = _visible()
REL, SPECS, PRECISION = _V.REL, _V.SPECS, _V.PRECISION
roofs, counts, close, bound = _V.roofs, _V.counts, _V.close, _V.bound
raised_value_error = _V.raised_value_error
SEED = secrets.randbits(32)


def near_ridge(intensity: float, peak: float, bandwidth: float) -> bool:
    """Too close to the ridge for "memory" or "compute" to be decided by rounding alone."""
    return abs(intensity * bandwidth - peak) <= 1e-9 * peak


def log_uniform(rng: random.Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


@pytest.mark.points(2)
def test_random_roofs(learner: Any) -> None:
    """ridge_point, attainable and limit on random roofs and intensities"""
    rng = random.Random(SEED)
    for _ in range(40):
        peak = round(log_uniform(rng, 1.0, 5000.0), 3)
        bandwidth = round(log_uniform(rng, 0.05, 20.0), 4)
        intensity = log_uniform(rng, 1e-3, 1e5)
        where = f"intensity {intensity!r}, peak {peak} TFLOPS, bandwidth {bandwidth} TB/s"
        got = learner.call("ridge_point", peak, bandwidth)
        assert close(got, peak / bandwidth), (
            f"ridge_point({peak}, {bandwidth}) returned {got!r}, want {peak / bandwidth:.6g} "
            "FLOP/B (peak / bandwidth)")
        got = learner.call("attainable", intensity, peak, bandwidth)
        want = min(peak, intensity * bandwidth)
        assert close(got, want), (
            f"attainable with {where} returned {got!r}, want the lower roof, {want:.6g} TFLOPS")
        if near_ridge(intensity, peak, bandwidth):
            continue
        got_limit = learner.call("limit", intensity, peak, bandwidth)
        want_limit = bound(intensity, peak, bandwidth)
        assert got_limit == want_limit, (
            f"limit with {where} returned {got_limit!r}; the ridge is at "
            f"{peak / bandwidth:.6g} FLOP/B, so the answer is {want_limit!r}")


@pytest.mark.points(1)
def test_zero_flops(learner: Any) -> None:
    """a kernel with no FLOPs: intensity 0, attainable 0, memory-bound"""
    got = learner.call("arithmetic_intensity", 0, 1 << 30)
    assert close(got, 0.0), f"arithmetic_intensity(0, 2**30) returned {got!r}: a copy has 0 FLOP/B"
    got = learner.call("attainable", 0, 989.4, 4.8)
    assert close(got, 0.0), f"attainable(0, 989.4, 4.8) returned {got!r}: 0 FLOP/B reaches 0 TFLOPS"
    got = learner.call("limit", 0, 989.4, 4.8)
    assert got == "memory", (
        f"limit(0, 989.4, 4.8) returned {got!r}: an intensity of 0 is left of every ridge, "
        "so 'memory'")


@pytest.mark.points(2)
def test_invalid_inputs_raise_value_error(learner: Any) -> None:
    """every invalid input raises ValueError"""
    calls: list[tuple[str, tuple[Any, ...], str]] = [
        ("arithmetic_intensity", (100, 0), "no bytes moved"),
        ("arithmetic_intensity", (100, -8), "negative bytes"),
        ("arithmetic_intensity", (-1, 8), "negative FLOPs"),
        ("ridge_point", (0, 4.8), "a peak of 0 TFLOPS"),
        ("ridge_point", (989.4, 0), "a bandwidth of 0 TB/s"),
        ("ridge_point", (989.4, -4.8), "a negative bandwidth"),
        ("attainable", (1.0, -67, 4.8), "a negative peak"),
        ("attainable", (1.0, 67, 0), "a bandwidth of 0 TB/s"),
        ("attainable", (-0.5, 67, 4.8), "a negative intensity"),
        ("limit", (-0.5, 67, 4.8), "a negative intensity"),
        ("limit", (1.0, 0, 4.8), "a peak of 0 TFLOPS"),
        ("gpu_roofs", ("b300",), "a GPU specs.toml does not list"),
        ("kernel_intensity", ("conv2d", 64), "a kernel the exercise does not define"),
        ("kernel_intensity", ("gemm", 0), "n = 0"),
        ("kernel_intensity", ("vector_add", -5), "a negative n"),
        ("place_kernel", ("softmax", 1024, "h200"), "a kernel the exercise does not define"),
        ("place_kernel", ("gemm", 1024, "v100"), "a GPU specs.toml does not list"),
    ]
    for function, args, what in calls:
        ok, did = raised_value_error(learner, function, *args)
        shown = ", ".join(repr(a) for a in args)
        assert ok, f"{function}({shown}) {did}, but with {what} it should raise ValueError"


@pytest.mark.points(2)
def test_every_gpu_in_specs(learner: Any) -> None:
    """gpu_roofs for every GPU of specs.toml, whatever its bandwidth unit"""
    for gpu in SPECS.gpus:
        got = learner.call("gpu_roofs", gpu)
        want = roofs(gpu)
        assert isinstance(got, dict), f"gpu_roofs({gpu!r}) returned {got!r}, not a dict"
        unit = SPECS.gpus[gpu].values["memory_bandwidth"].unit
        for key, value in want.items():
            assert key in got, f"gpu_roofs({gpu!r}) has no {key!r}: got {sorted(got)}"
            assert close(got[key], value), (
                f"gpu_roofs({gpu!r})[{key!r}] is {got[key]!r}, want {value:.6g} (specs.toml "
                f"lists {gpu}'s bandwidth in {unit})")


@pytest.mark.points(1)
def test_kernels_at_other_sizes(learner: Any) -> None:
    """kernel_intensity at sizes the notebook does not use"""
    rng = random.Random(SEED + 1)
    sizes = [2, 3, 7, 31, 33, rng.randint(100, 5000), rng.randint(10**5, 10**7)]
    for name in PRECISION:
        for n in sizes:
            if name == "gemm" and n > 10**5:
                n = rng.randint(10**4, 10**5)
            flops, nbytes = counts(name, n)
            got = learner.call("kernel_intensity", name, n)
            assert close(got, flops / nbytes), (
                f"kernel_intensity({name!r}, {n}) returned {got!r}, want {flops:g} FLOPs / "
                f"{nbytes:g} bytes = {flops / nbytes:.6g} FLOP/B")


@pytest.mark.points(2)
def test_place_on_every_gpu(learner: Any) -> None:
    """place_kernel for every kernel on every GPU, GEMMs on both sides of each ridge"""
    rng = random.Random(SEED + 2)
    for gpu in SPECS.gpus:
        r = roofs(gpu)
        crossover = 3 * r["fp16_ridge"]  # a GEMM of side n has intensity n / 3
        cases = [(name, rng.randint(1, 10**6)) for name in ("vector_add", "saxpy", "reduction")]
        cases += [("matvec", rng.randint(1, 20000)), ("gemm", rng.randint(1, 64)),
                  ("gemm", math.floor(crossover)), ("gemm", math.ceil(crossover) + 1),
                  ("gemm", rng.randint(4096, 32768))]
        for name, n in cases:
            precision = PRECISION[name]
            peak, bandwidth = r[f"{precision}_tflops"], r["bandwidth_tbs"]
            flops, nbytes = counts(name, n)
            intensity = flops / nbytes
            call = f"place_kernel({name!r}, {n}, {gpu!r})"
            got = learner.call("place_kernel", name, n, gpu)
            assert isinstance(got, dict), f"{call} returned {got!r}, not a dict"
            want = {"intensity": intensity, "ridge": peak / bandwidth,
                    "attainable_tflops": min(peak, intensity * bandwidth)}
            for key, value in want.items():
                assert key in got, f"{call} has no {key!r}: got {sorted(got)}"
                why = "as kernel_intensity gives it" if key == "intensity" else \
                    f"{name} is {precision}: {peak} TFLOPS, {bandwidth:g} TB/s"
                assert close(got[key], value), (
                    f"{call}[{key!r}] is {got[key]!r}, want {value:.6g} ({why})")
            want_limit = bound(intensity, peak, bandwidth)
            if not near_ridge(intensity, peak, bandwidth):
                assert got.get("limit") == want_limit, (
                    f"{call}['limit'] is {got.get('limit')!r}, but {intensity:.6g} FLOP/B "
                    f"against a ridge of {peak / bandwidth:.6g} is {want_limit}-bound")
