"""Hidden checks of the roofline exercise, and the reference arithmetic of all its checks.

The visible checks hold no answers, only seals of them; the arithmetic that
makes them lives here (`roofs`, `counts`, `bound` and the common mistakes),
and `sealed_tables` writes the seals the visible file keeps (run this file to
print them after a change to the cases or to specs.toml).

Every check here draws its inputs from a seed made for each run
(gpulab.grading.checks.draws) and written nowhere the learner sees: every GPU of specs.toml in
a random order (some list their bandwidth in GB/s), random roofs and
intensities (some exactly at the ridge), random sizes from 2 up, and invalid
inputs of random values, which must raise ValueError (told by the
exception's type, never its message) while the valid inputs beside them must
not. Messages name the quantity that is wrong, and the mistake where it is a
known one, never the right value.
"""

from __future__ import annotations

import math
import random
import textwrap
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

import pytest

from gpulab.grading.checks.draws import SEED
from gpulab.grading.checks.pytest_plugin import visible_checks


def _visible() -> ModuleType:
    """The visible checks' module (one copy of the helpers for both files)."""
    return visible_checks(__file__)


_V = _visible()
SPECS, PRECISION, MISTAKES = _V.SPECS, _V.PRECISION, _V.MISTAKES
raised_value_error, accepted, is_number, but = \
    _V.raised_value_error, _V.accepted, _V.is_number, _V.but
count_problem, counts_shape = _V.count_problem, _V.counts_shape
REL = 1e-6
TBS_PER = {"TB/s": 1.0, "GB/s": 1e-3}
PEAK_KEY = {"fp32": "fp32", "fp16": "fp16_tensor"}
Variants = list[tuple[str, Any]]          # (mistake, the wrong answer it gives)


# -- the reference ---------------------------------------------------------------------------
def roofs(gpu: str, *, per_tbs: dict[str, float] = TBS_PER) -> dict[str, float]:
    """Bandwidth in TB/s, peaks in TFLOPS and ridges in FLOP/B, from specs.toml."""
    values = SPECS.gpus[gpu].values
    bandwidth = values["memory_bandwidth"]
    out = {"bandwidth_tbs": float(bandwidth.value or 0) * per_tbs[bandwidth.unit]}
    for precision, key in PEAK_KEY.items():
        out[f"{precision}_tflops"] = float(values[key].value or 0)
        out[f"{precision}_ridge"] = out[f"{precision}_tflops"] / out["bandwidth_tbs"]
    return out


def counts(name: str, n: int) -> tuple[int, int]:
    """(FLOPs, bytes) of a kernel by the notebook's counting rules."""
    return {
        "vector_add": (n, 12 * n),                 # one add; read a, b, write c (FP32)
        "saxpy": (2 * n, 12 * n),                  # one FMA; read x, y, write y (FP32)
        "reduction": (n, 4 * n),                   # n adds; read x (FP32)
        "matvec": (2 * n * n, 2 * n * n + 4 * n),  # n^2 FMAs; read W, x, write y (FP16)
        "gemm": (2 * n**3, 6 * n * n),             # n^3 FMAs; read A, B, write C (FP16)
    }[name]


def bound(intensity: float, peak: float, bandwidth: float) -> str:
    return "memory" if intensity * bandwidth < peak else "compute"


def count_mistakes(name: str, n: int) -> dict[str, Variants]:
    """The common wrong counts of a kernel, for FLOPs and for bytes."""
    flops, nbytes = counts(name, n)
    wrong: dict[str, Variants] = {"flops": [], "bytes": []}
    if name in ("saxpy", "matvec", "gemm"):
        wrong["flops"].append(("fma", flops // 2))
    if name == "reduction":
        wrong["flops"].append(("n-1", n - 1))
    if name == "saxpy":
        wrong["bytes"].append(("saxpy-y", 8 * n))
    if name == "matvec":
        wrong["bytes"].append(("matvec-w", 2 * n * n))
    if name in ("matvec", "gemm"):
        wrong["bytes"].append(("fp16-bytes", 2 * nbytes))
    return wrong


def roof_mistakes(gpu: str) -> dict[str, Variants]:
    """gpu_roofs' values with the bandwidth's unit ignored, where that changes them."""
    if SPECS.gpus[gpu].values["memory_bandwidth"].unit == "TB/s":
        return {}
    raw = roofs(gpu, per_tbs={"GB/s": 1.0})
    return {key: [("units", value)] for key, value in raw.items() if "tflops" not in key}


def place(name: str, n: int, gpu: str, table: dict[str, float] | None = None,
          precision: str | None = None) -> dict[str, Any]:
    """place_kernel's answer, from `table` (default: the GPU's roofs) and `precision`."""
    r = table or roofs(gpu)
    precision = precision or PRECISION[name]
    peak, bandwidth = r[f"{precision}_tflops"], r["bandwidth_tbs"]
    flops, nbytes = counts(name, n)
    intensity = flops / nbytes
    return {"intensity": intensity, "ridge": peak / bandwidth,
            "attainable_tflops": min(peak, intensity * bandwidth),
            "limit": bound(intensity, peak, bandwidth)}


def place_mistakes(name: str, n: int, gpu: str) -> dict[str, Variants]:
    """Ridge and attainable TFLOPS against the other precision's roofs, or with GB/s as TB/s."""
    other = "fp16" if PRECISION[name] == "fp32" else "fp32"
    wrong: dict[str, Variants] = {"ridge": [], "attainable_tflops": []}
    tables = [("precision", roofs(gpu), other)]
    if roof_mistakes(gpu):
        tables.append(("units", roofs(gpu, per_tbs={"GB/s": 1.0}), PRECISION[name]))
    for tag, table, precision in tables:
        answer = place(name, n, gpu, table, precision)
        for key in wrong:
            wrong[key].append((tag, answer[key]))
    return wrong


def reference_answers() -> Iterator[tuple[str, Any, Variants]]:
    """Every sealed case of the visible checks, in their order: (case, answer, mistakes)."""
    for f, b in _V.INTENSITY_CASES:
        yield f"arithmetic_intensity({f}, {b})", f / b, []
    for p, b in _V.ROOFS:
        yield f"ridge_point({p}, {b})", p / b, [("ridge-inverted", b / p)]
    cases = [(i, p, b) for p, b in _V.ROOFS for i in _V.INTENSITIES]
    for i, p, b in cases + [(i, p, b) for p, b, i in _V.AT_THE_RIDGE]:
        at_ridge = i * b == p
        yield f"attainable({i!r}, {p}, {b})", min(p, i * b), [("lower-roof", max(p, i * b))]
        yield (f"limit({i!r}, {p}, {b})", bound(i, p, b),
               [("at-ridge", "memory")] if at_ridge else [])
    for gpu in _V.DATASHEET:
        right, wrong = roofs(gpu), roof_mistakes(gpu)
        for key in _V.ROOF_KEYS:
            yield f"gpu_roofs({gpu!r})[{key!r}]", right[key], wrong.get(key, [])
    for name in PRECISION:
        for n in _V.SIZES:
            answer, wrong = counts(name, n), count_mistakes(name, n)
            for quantity, value in zip(("flops", "bytes"), answer, strict=True):
                yield f"kernel_counts({name!r}, {n})[{quantity}]", value, wrong[quantity]
    for gpu in _V.DATASHEET:
        for name, n in _V.PLACES:
            placed, misplaced = place(name, n, gpu), place_mistakes(name, n, gpu)
            for key in _V.PLACE_KEYS:
                yield (f"place_kernel({name!r}, {n}, {gpu!r})[{key!r}]", placed[key],
                       misplaced.get(key, []))


def sealed_tables() -> tuple[str, str]:
    """The visible file's `_SEALS` and `_KNOWN`, as the text between their quotes."""
    keys = dict(_V.case_keys())
    seals, known = [], []
    for case, answer, mistakes in reference_answers():
        count = keys[case]
        right = _V.seal(case, answer, count=count)
        seals.append(right)
        for tag, value in mistakes:
            wrong = _V.seal(case, value, count=count)
            if wrong != right and f"{tag}:{wrong}" not in known:
                known.append(f"{tag}:{wrong}")
    return ("\n" + textwrap.fill(" ".join(seals), 96, break_on_hyphens=False) + "\n",
            "\n" + textwrap.fill(" ".join(known), 96, break_on_hyphens=False) + "\n")


# -- comparing, naming mistakes ------------------------------------------------------------------
def close(got: Any, want: float) -> bool:
    return is_number(got) and math.isclose(got, want, rel_tol=REL, abs_tol=1e-12)


def same(got: Any, want: Any) -> bool:
    return got == want if isinstance(want, str) else close(got, want)


def named(got: Any, variants: Sequence[tuple[str, Any]]) -> str:
    """The known mistake that gives `got`, in words, or "" where it is none of them."""
    return next((str(MISTAKES[tag]) for tag, value in variants if same(got, value)), "")


def wrong(got: Any, want: Any, variants: Sequence[tuple[str, Any]] = ()) -> str | None:
    """None when `got` is right; else the named mistake it is, or ""."""
    return None if same(got, want) else named(got, variants)


def near_ridge(intensity: float, peak: float, bandwidth: float) -> bool:
    """Too close to the ridge for "memory" or "compute" to be decided by rounding alone."""
    return abs(intensity * bandwidth - peak) <= 1e-9 * peak


def log_uniform(rng: random.Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def random_roofs(rng: random.Random) -> tuple[float, float]:
    return round(log_uniform(rng, 1.0, 5000.0), 3), round(log_uniform(rng, 0.05, 20.0), 4)


# -- the checks ----------------------------------------------------------------------------------
@pytest.mark.points(2)
def test_random_roofs(learner: Any) -> None:
    """ridge_point, attainable and limit on random roofs and intensities, some at the ridge"""
    rng = random.Random(SEED)
    cases = []
    for _ in range(40):
        peak, bandwidth = random_roofs(rng)
        cases.append((log_uniform(rng, 1e-3, 1e5), peak, bandwidth))
    for _ in range(8):      # exactly at the ridge: a power-of-two bandwidth keeps it exact
        peak, bandwidth = round(log_uniform(rng, 1.0, 5000.0), 3), 2.0 ** rng.randint(-3, 4)
        cases.append((peak / bandwidth, peak, bandwidth))
    rng.shuffle(cases)
    for intensity, peak, bandwidth in cases:
        args = f"{intensity!r}, {peak}, {bandwidth}"
        got = learner.call("ridge_point", peak, bandwidth)
        why = wrong(got, peak / bandwidth, [("ridge-inverted", bandwidth / peak)])
        assert why is None, (f"ridge_point({peak}, {bandwidth}) returned {got!r}, which is not "
                             f"where the roofs meet: {but(why, 'peak / bandwidth')}")
        got = learner.call("attainable", intensity, peak, bandwidth)
        why = wrong(got, min(peak, intensity * bandwidth),
                    [("lower-roof", max(peak, intensity * bandwidth))])
        assert why is None, (f"attainable({args}) returned {got!r}: "
                             + but(why, MISTAKES["lower-roof"]))
        at_ridge = intensity * bandwidth == peak
        if near_ridge(intensity, peak, bandwidth) and not at_ridge:
            continue
        got = learner.call("limit", intensity, peak, bandwidth)
        why = wrong(got, bound(intensity, peak, bandwidth),
                    [("at-ridge", "memory")] if at_ridge else [])
        assert why is None, (f"limit({args}) returned {got!r}, which is not the roof that "
                             "limits there: " + but(why, "'memory' when intensity x bandwidth "
                                                    "< peak, otherwise 'compute'"))


@pytest.mark.points(1)
def test_zero_flops(learner: Any) -> None:
    """a kernel with no FLOPs: intensity 0, attainable 0, memory-bound"""
    rng = random.Random(SEED + 1)
    nbytes = rng.randint(1, 2**40)
    peak, bandwidth = random_roofs(rng)
    got = learner.call("arithmetic_intensity", 0, nbytes)
    assert close(got, 0.0), f"arithmetic_intensity(0, {nbytes}) returned {got!r}: a copy does " \
                            "no arithmetic, whatever it moves"
    got = learner.call("attainable", 0, peak, bandwidth)
    assert close(got, 0.0), f"attainable(0, {peak}, {bandwidth}) returned {got!r}: a kernel " \
                            "that does no arithmetic attains no TFLOPS"
    got = learner.call("limit", 0, peak, bandwidth)
    assert got == "memory", (f"limit(0, {peak}, {bandwidth}) returned {got!r}: an intensity "
                             "of 0 is left of every ridge")


@pytest.mark.points(2)
def test_invalid_inputs_raise_value_error(learner: Any) -> None:
    """every invalid input raises ValueError, and the valid inputs beside them do not"""
    rng = random.Random(SEED + 2)
    peak, bandwidth = random_roofs(rng)
    some, intensity = rng.randint(1, 10**6), log_uniform(rng, 1e-3, 1e4)
    gpu, kernel = rng.choice(list(SPECS.gpus)), rng.choice(list(PRECISION))
    no_gpu = f"gpu-{rng.randrange(16**6):06x}"
    no_kernel = f"{rng.choice(('conv2d', 'softmax', 'scan', 'stencil', 'attention'))}" \
                f"_{rng.randrange(100)}"
    refused: list[tuple[str, tuple[Any, ...], str]] = [
        ("arithmetic_intensity", (some, 0), "no bytes moved"),
        ("arithmetic_intensity", (some, -some), "negative bytes"),
        ("arithmetic_intensity", (-some, some), "negative FLOPs"),
        ("ridge_point", (0, bandwidth), "a peak of 0 TFLOPS"),
        ("ridge_point", (peak, 0), "a bandwidth of 0 TB/s"),
        ("ridge_point", (peak, -bandwidth), "a negative bandwidth"),
        ("attainable", (intensity, -peak, bandwidth), "a negative peak"),
        ("attainable", (intensity, peak, 0), "a bandwidth of 0 TB/s"),
        ("attainable", (-intensity, peak, bandwidth), "a negative intensity"),
        ("limit", (-intensity, peak, bandwidth), "a negative intensity"),
        ("limit", (intensity, 0, bandwidth), "a peak of 0 TFLOPS"),
        ("gpu_roofs", (no_gpu,), "a GPU specs.toml does not list"),
        ("kernel_counts", (no_kernel, some), "a kernel the exercise does not define"),
        ("kernel_counts", (kernel, 0), "n = 0"),
        ("kernel_intensity", (kernel, -some), "a negative n"),
        ("place_kernel", (no_kernel, some, gpu), "a kernel the exercise does not define"),
        ("place_kernel", (kernel, some, no_gpu), "a GPU specs.toml does not list"),
    ]
    valid: list[tuple[str, tuple[Any, ...], str]] = [
        ("arithmetic_intensity", (0, some), "zero FLOPs (a copy)"),
        ("ridge_point", (peak, bandwidth), "a positive peak and bandwidth"),
        ("attainable", (0, peak, bandwidth), "an intensity of 0"),
        ("gpu_roofs", (gpu,), "a GPU of specs.toml"),
        ("kernel_counts", (kernel, 1), "n = 1"),
        ("kernel_intensity", (kernel, 1), "n = 1"),
        ("place_kernel", (kernel, 1, gpu), "n = 1"),
    ]
    checks = [(True, *call) for call in refused] + [(False, *call) for call in valid]
    rng.shuffle(checks)
    for must_refuse, function, args, what in checks:
        shown = f"{function}({', '.join(repr(a) for a in args)})"
        if must_refuse:
            ok, did = raised_value_error(learner, function, *args)
            assert ok, f"{shown} {did}, but with {what} it should raise ValueError"
        else:
            ok, got = accepted(learner, function, *args)
            assert ok, f"{shown} did not return ({got}), but {what} is a valid input"


@pytest.mark.points(2)
def test_every_gpu_in_specs(learner: Any) -> None:
    """gpu_roofs for every GPU of specs.toml, whatever its bandwidth unit"""
    gpus = list(SPECS.gpus)
    rng = random.Random(SEED + 3)
    rng.shuffle(gpus)
    for gpu in gpus:
        got = learner.call("gpu_roofs", gpu)
        assert isinstance(got, dict), f"gpu_roofs({gpu!r}) returned {got!r:.100}, not a dict"
        unit = SPECS.gpus[gpu].values["memory_bandwidth"].unit
        mistakes = roof_mistakes(gpu)
        for key, value in roofs(gpu).items():
            assert key in got, f"gpu_roofs({gpu!r}) has no {key!r}: got {sorted(got)}"
            why = wrong(got[key], value, mistakes.get(key, []))
            assert why is None, (
                f"gpu_roofs({gpu!r})[{key!r}] is {got[key]!r}, which does not follow from "
                "specs.toml: " + but(why, f"it lists {gpu}'s bandwidth in {unit}; the roofs "
                                     "want peaks in TFLOPS, the bandwidth in TB/s and ridges "
                                     "in FLOP/B"))


@pytest.mark.points(1)
def test_kernels_at_other_sizes(learner: Any) -> None:
    """kernel_counts and kernel_intensity at sizes the notebook does not use"""
    rng = random.Random(SEED + 4)
    sizes = [*rng.sample(range(2, 64), 3), rng.randint(64, 5000), rng.randint(10**5, 10**7)]
    problems = []
    for name in PRECISION:
        for n in sizes:
            if name == "gemm" and n > 10**5:
                n = rng.randint(10**4, 10**5)
            right, mistakes = counts(name, n), count_mistakes(name, n)
            got = learner.call("kernel_counts", name, n)
            assert counts_shape(got), \
                f"kernel_counts({name!r}, {n}) returned {got!r:.100}, not (FLOPs, bytes)"
            flops_wrong = None if got[0] == right[0] else named(got[0], mistakes["flops"])
            bytes_wrong = None if got[1] == right[1] else named(got[1], mistakes["bytes"])
            problem = count_problem(name, n, got, flops_wrong, bytes_wrong)
            if problem:
                problems.append(problem)
                break                            # one size per kernel says enough
            got = learner.call("kernel_intensity", name, n)
            assert close(got, right[0] / right[1]), (
                f"kernel_intensity({name!r}, {n}) returned {got!r}, but kernel_counts is right: "
                "divide its FLOPs by its bytes")
    assert not problems, "\n".join(problems)


@pytest.mark.points(2)
def test_place_on_every_gpu(learner: Any) -> None:
    """place_kernel for every kernel on every GPU, GEMMs on both sides of each ridge"""
    rng = random.Random(SEED + 5)
    gpus = list(SPECS.gpus)
    rng.shuffle(gpus)
    for gpu in gpus:
        crossover = 3 * roofs(gpu)["fp16_ridge"]  # a GEMM of side n has intensity n / 3
        cases = [(name, rng.randint(1, 10**6)) for name in ("vector_add", "saxpy", "reduction")]
        cases += [("matvec", rng.randint(1, 20000)), ("gemm", rng.randint(1, 64)),
                  ("gemm", math.floor(crossover)), ("gemm", math.ceil(crossover) + 1),
                  ("gemm", rng.randint(4096, 32768))]
        for name, n in cases:
            precision = PRECISION[name]
            call = f"place_kernel({name!r}, {n}, {gpu!r})"
            got = learner.call("place_kernel", name, n, gpu)
            assert isinstance(got, dict), f"{call} returned {got!r:.100}, not a dict"
            want, mistakes = place(name, n, gpu), place_mistakes(name, n, gpu)
            for key in ("intensity", "ridge", "attainable_tflops"):
                assert key in got, f"{call} has no {key!r}: got {sorted(got)}"
                why = wrong(got[key], want[key], mistakes.get(key, []))
                assert why is None, f"{call}[{key!r}] is {got[key]!r}: " + but(
                    why, f"it is {name}'s FLOPs over its bytes" if key == "intensity" else
                    f"{name} is {precision}: use {gpu}'s {precision} roofs")
            r = roofs(gpu)
            if not near_ridge(want["intensity"], r[f"{precision}_tflops"], r["bandwidth_tbs"]):
                assert got.get("limit") == want["limit"], (
                    f"{call}['limit'] is {got.get('limit')!r}: compare the intensity with "
                    f"{gpu}'s {precision} ridge")


if __name__ == "__main__":
    seals, known = sealed_tables()
    print(f'_SEALS = """{seals}"""\n_KNOWN = """{known}"""')
