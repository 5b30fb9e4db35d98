"""nbgrader's test cells for the roofline exercise.

Ported from exercises/memory-hierarchy/test_roofline.py (visible) and
solutions/memory-hierarchy/test_roofline_hidden.py (hidden), one test cell per
check, worth the same points. The checks run in the learner's kernel, as
nbgrader runs them: they call the learner's functions directly.
"""
# ruff: noqa: F821, RUF100  (the notebook's answer cells define the learner's functions)

# %% checker
# ruff: noqa: F811  (in the notebook: the checker imports what it uses, whatever came before)
import math
import random
import secrets

from gpulab.course.catalog import find_course_dir
from gpulab.course.specs import load_specs

CHECK_REL = 1e-6
CHECK_SPECS = load_specs(find_course_dir() / "specs.toml")
CHECK_TBS_PER = {"TB/s": 1.0, "GB/s": 1e-3}
CHECK_PEAK_KEY = {"fp32": "fp32", "fp16": "fp16_tensor"}
CHECK_PRECISION = {"vector_add": "fp32", "saxpy": "fp32", "reduction": "fp32",
                   "matvec": "fp16", "gemm": "fp16"}
CHECK_GPUS = ("h200", "a100-80gb")
CHECK_SEED = secrets.randbits(32)


def check_roofs(gpu):
    """Bandwidth in TB/s, peaks in TFLOPS and ridges in FLOP/B, from specs.toml."""
    values = CHECK_SPECS.gpus[gpu].values
    bandwidth = values["memory_bandwidth"]
    out = {"bandwidth_tbs": float(bandwidth.value or 0) * CHECK_TBS_PER[bandwidth.unit]}
    for precision, key in CHECK_PEAK_KEY.items():
        out[f"{precision}_tflops"] = float(values[key].value or 0)
        out[f"{precision}_ridge"] = out[f"{precision}_tflops"] / out["bandwidth_tbs"]
    return out


def check_counts(name, n):
    """(FLOPs, bytes) of a kernel by the notebook's counting rules."""
    return {
        "vector_add": (n, 12 * n),
        "saxpy": (2 * n, 12 * n),
        "reduction": (n, 4 * n),
        "matvec": (2 * n * n, 2 * n * n + 4 * n),
        "gemm": (2 * n**3, 6 * n * n),
    }[name]


def check_close(got, want):
    return isinstance(got, int | float) and not isinstance(got, bool) and \
        math.isclose(got, want, rel_tol=CHECK_REL, abs_tol=1e-12)


def check_bound(intensity, peak, bandwidth):
    return "memory" if intensity * bandwidth < peak else "compute"


def check_raised_value_error(function, *args):
    """Did the call raise ValueError? And what it did instead, in words."""
    try:
        got = function(*args)
    except Exception as exc:
        return type(exc).__name__ == "ValueError", f"raised {type(exc).__name__}: {exc}"
    return False, f"returned {got!r}"


def check_near_ridge(intensity, peak, bandwidth):
    return abs(intensity * bandwidth - peak) <= 1e-9 * peak


def check_log_uniform(rng, low, high):
    return math.exp(rng.uniform(math.log(low), math.log(high)))


# %% test test_arithmetic_intensity points=1 needs=intensity
for flops, nbytes in [(1, 12), (1, 4), (2 * 8192**3, 6 * 8192**2), (0, 4096)]:
    got = arithmetic_intensity(flops, nbytes)
    assert check_close(got, flops / nbytes), (
        f"arithmetic_intensity({flops}, {nbytes}) returned {got!r}, "
        f"want {flops / nbytes:.6g} FLOP/B")

# %% test test_zero_bytes_is_refused points=1 needs=intensity
ok, did = check_raised_value_error(arithmetic_intensity, 1, 0)
assert ok, f"arithmetic_intensity(1, 0) {did}, but it should raise ValueError"

# %% test test_ridge_points points=1 needs=roofline
for gpu in CHECK_GPUS:
    r = check_roofs(gpu)
    for precision in CHECK_PEAK_KEY:
        peak, bandwidth = r[f"{precision}_tflops"], r["bandwidth_tbs"]
        got = ridge_point(peak, bandwidth)
        assert check_close(got, peak / bandwidth), (
            f"ridge_point({peak}, {bandwidth}) returned {got!r}, want {peak / bandwidth:.4g}")

# %% test test_attainable_and_limit points=2 needs=roofline
for gpu in CHECK_GPUS:
    r = check_roofs(gpu)
    for precision in CHECK_PEAK_KEY:
        peak, bandwidth = r[f"{precision}_tflops"], r["bandwidth_tbs"]
        ridge = peak / bandwidth
        for intensity in (1 / 12, 0.25, ridge / 2, ridge * 2, 8192 / 3):
            got = attainable(intensity, peak, bandwidth)
            want = min(peak, intensity * bandwidth)
            assert check_close(got, want), (
                f"attainable({intensity:.4g}, {peak}, {bandwidth:g}) returned {got!r}, "
                f"want {want:.6g}")
            got_limit = limit(intensity, peak, bandwidth)
            want_limit = check_bound(intensity, peak, bandwidth)
            assert got_limit == want_limit, (
                f"limit({intensity:.4g}, {peak}, {bandwidth:g}) returned {got_limit!r}, "
                f"want {want_limit!r}")

# %% test test_gpu_roofs points=2 needs=gpus,roofline
for gpu in CHECK_GPUS:
    got = gpu_roofs(gpu)
    want = check_roofs(gpu)
    assert isinstance(got, dict), f"gpu_roofs({gpu!r}) returned {got!r}, not a dict"
    missing = sorted(set(want) - set(got))
    assert not missing, f"gpu_roofs({gpu!r}) has no {', '.join(missing)}"
    for key, value in want.items():
        assert check_close(got[key], value), (
            f"gpu_roofs({gpu!r})[{key!r}] is {got[key]!r}, want {value:.6g}")

# %% test test_kernel_intensity points=2 needs=kernels,intensity
for name in CHECK_PRECISION:
    for n in (1, 1000, 8192):
        flops, nbytes = check_counts(name, n)
        got = kernel_intensity(name, n)
        assert check_close(got, flops / nbytes), (
            f"kernel_intensity({name!r}, {n}) returned {got!r}, want {flops / nbytes:.6g}")

# %% test test_place_kernel points=2 needs=all
for gpu in CHECK_GPUS:
    r = check_roofs(gpu)
    for name, n in [("vector_add", 2**26), ("saxpy", 2**26), ("reduction", 2**26),
                    ("matvec", 8192), ("gemm", 64), ("gemm", 8192)]:
        precision = CHECK_PRECISION[name]
        peak, bandwidth = r[f"{precision}_tflops"], r["bandwidth_tbs"]
        flops, nbytes = check_counts(name, n)
        intensity = flops / nbytes
        want = {"intensity": intensity, "ridge": peak / bandwidth,
                "attainable_tflops": min(peak, intensity * bandwidth),
                "limit": check_bound(intensity, peak, bandwidth)}
        got = place_kernel(name, n, gpu)
        call = f"place_kernel({name!r}, {n}, {gpu!r})"
        assert isinstance(got, dict), f"{call} returned {got!r}, not a dict"
        missing = sorted(set(want) - set(got))
        assert not missing, f"{call} has no {', '.join(missing)}"
        for key in ("intensity", "ridge", "attainable_tflops"):
            assert check_close(got[key], want[key]), (
                f"{call}[{key!r}] is {got[key]!r}, want {want[key]:.6g}")
        assert got["limit"] == want["limit"], (
            f"{call}['limit'] is {got['limit']!r}, want {want['limit']!r}")

# %% hidden test_random_roofs points=2 needs=roofline
rng = random.Random(CHECK_SEED)
for _ in range(40):
    peak = round(check_log_uniform(rng, 1.0, 5000.0), 3)
    bandwidth = round(check_log_uniform(rng, 0.05, 20.0), 4)
    intensity = check_log_uniform(rng, 1e-3, 1e5)
    got = ridge_point(peak, bandwidth)
    assert check_close(got, peak / bandwidth), f"ridge_point({peak}, {bandwidth}) gave {got!r}"
    got = attainable(intensity, peak, bandwidth)
    assert check_close(got, min(peak, intensity * bandwidth)), (
        f"attainable({intensity!r}, {peak}, {bandwidth}) gave {got!r}")
    if not check_near_ridge(intensity, peak, bandwidth):
        got_limit = limit(intensity, peak, bandwidth)
        assert got_limit == check_bound(intensity, peak, bandwidth), (
            f"limit({intensity!r}, {peak}, {bandwidth}) gave {got_limit!r}")

# %% hidden test_zero_flops points=1 needs=intensity,roofline
got = arithmetic_intensity(0, 1 << 30)
assert check_close(got, 0.0), f"arithmetic_intensity(0, 2**30) returned {got!r}"
got = attainable(0, 989.4, 4.8)
assert check_close(got, 0.0), f"attainable(0, 989.4, 4.8) returned {got!r}"
got = limit(0, 989.4, 4.8)
assert got == "memory", f"limit(0, 989.4, 4.8) returned {got!r}"

# %% hidden test_invalid_inputs_raise_value_error points=2 needs=all
for function, args in [
    (arithmetic_intensity, (100, 0)), (arithmetic_intensity, (100, -8)),
    (arithmetic_intensity, (-1, 8)), (ridge_point, (0, 4.8)), (ridge_point, (989.4, 0)),
    (ridge_point, (989.4, -4.8)), (attainable, (1.0, -67, 4.8)), (attainable, (1.0, 67, 0)),
    (attainable, (-0.5, 67, 4.8)), (limit, (-0.5, 67, 4.8)), (limit, (1.0, 0, 4.8)),
    (gpu_roofs, ("b300",)), (kernel_intensity, ("conv2d", 64)), (kernel_intensity, ("gemm", 0)),
    (kernel_intensity, ("vector_add", -5)), (place_kernel, ("softmax", 1024, "h200")),
    (place_kernel, ("gemm", 1024, "v100")),
]:
    ok, did = check_raised_value_error(function, *args)
    assert ok, f"{function.__name__}{args!r} {did}, but it should raise ValueError"

# %% hidden test_every_gpu_in_specs points=2 needs=gpus,roofline
for gpu in CHECK_SPECS.gpus:
    got = gpu_roofs(gpu)
    assert isinstance(got, dict), f"gpu_roofs({gpu!r}) returned {got!r}, not a dict"
    for key, value in check_roofs(gpu).items():
        assert key in got, f"gpu_roofs({gpu!r}) has no {key!r}"
        assert check_close(got[key], value), f"gpu_roofs({gpu!r})[{key!r}] is {got[key]!r}"

# %% hidden test_kernels_at_other_sizes points=1 needs=kernels,intensity
rng = random.Random(CHECK_SEED + 1)
sizes = [2, 3, 7, 31, 33, rng.randint(100, 5000), rng.randint(10**5, 10**7)]
for name in CHECK_PRECISION:
    for n in sizes:
        if name == "gemm" and n > 10**5:
            n = rng.randint(10**4, 10**5)
        flops, nbytes = check_counts(name, n)
        got = kernel_intensity(name, n)
        assert check_close(got, flops / nbytes), f"kernel_intensity({name!r}, {n}) gave {got!r}"

# %% hidden test_place_on_every_gpu points=2 needs=all
rng = random.Random(CHECK_SEED + 2)
for gpu in CHECK_SPECS.gpus:
    r = check_roofs(gpu)
    crossover = 3 * r["fp16_ridge"]
    cases = [(name, rng.randint(1, 10**6)) for name in ("vector_add", "saxpy", "reduction")]
    cases += [("matvec", rng.randint(1, 20000)), ("gemm", rng.randint(1, 64)),
              ("gemm", math.floor(crossover)), ("gemm", math.ceil(crossover) + 1),
              ("gemm", rng.randint(4096, 32768))]
    for name, n in cases:
        precision = CHECK_PRECISION[name]
        peak, bandwidth = r[f"{precision}_tflops"], r["bandwidth_tbs"]
        flops, nbytes = check_counts(name, n)
        intensity = flops / nbytes
        call = f"place_kernel({name!r}, {n}, {gpu!r})"
        got = place_kernel(name, n, gpu)
        assert isinstance(got, dict), f"{call} returned {got!r}, not a dict"
        want = {"intensity": intensity, "ridge": peak / bandwidth,
                "attainable_tflops": min(peak, intensity * bandwidth)}
        for key, value in want.items():
            assert key in got, f"{call} has no {key!r}"
            assert check_close(got[key], value), f"{call}[{key!r}] is {got[key]!r}"
        if not check_near_ridge(intensity, peak, bandwidth):
            assert got.get("limit") == check_bound(intensity, peak, bandwidth), (
                f"{call}['limit'] is {got.get('limit')!r}")
