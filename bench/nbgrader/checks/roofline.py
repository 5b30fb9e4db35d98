"""nbgrader's test cells for the roofline exercise.

Ported from exercises/memory-hierarchy/test_roofline.py (visible) and
solutions/memory-hierarchy/test_roofline_hidden.py (hidden), one test cell per
check, worth the same points. The checks run in the learner's kernel, as
nbgrader runs them: they call the learner's functions directly.

gpulab's visible checks keep only seals of the answers (a slow digest of each
answer written to six significant digits, counts exactly); here the checker
computes the same answers with the hidden file's reference arithmetic and
compares the same six-digit texts, so an answer passes where its seal would
match. "Raises ValueError" is told by the exception's type, as gpulab's worker
tells it (a subclass counts; a message does not). The hidden checks draw fresh
inputs per run from a seed of their own, as gpulab's do.
"""
# ruff: noqa: F821, RUF100  (the notebook's answer cells define the learner's functions)

# %% checker
# ruff: noqa: F811  (in the notebook: the checker imports what it uses, whatever came before)
import math
import os
import random

from gpulab.course.catalog import find_course_dir
from gpulab.course.specs import load_specs

CHECK_SPECS = load_specs(find_course_dir() / "specs.toml")
CHECK_PRECISION = {
    "vector_add": "fp32",
    "saxpy": "fp32",
    "reduction": "fp32",
    "matvec": "fp16",
    "gemm": "fp16",
}
CHECK_SEED = int.from_bytes(os.urandom(8), "big")
CHECK_REL = 1e-6
CHECK_TBS_PER = {"TB/s": 1.0, "GB/s": 1e-3}
CHECK_PEAK_KEY = {"fp32": "fp32", "fp16": "fp16_tensor"}

# -- the visible checks' cases, and the datasheet values they were sealed with ----------------
CHECK_DATASHEET = {
    "h200": {
        "fp32": (67.0, "TFLOPS"),
        "fp16_tensor": (989.4, "TFLOPS"),
        "memory_bandwidth": (4.8, "TB/s"),
    },
    "a100-80gb": {
        "fp32": (19.5, "TFLOPS"),
        "fp16_tensor": (312.0, "TFLOPS"),
        "memory_bandwidth": (2039.0, "GB/s"),
    },
}
CHECK_INTENSITY_CASES = ((5, 12), (7, 2), (2 * 8192**3, 6 * 8192**2), (0, 4096))
CHECK_ROOFS = ((67.0, 4.8), (989.4, 4.8), (66.9, 3.35), (756.0, 2.0))  # (TFLOPS, TB/s)
CHECK_INTENSITIES = (1 / 12, 0.25, 6.0, 60.0, 8192 / 3)
CHECK_AT_THE_RIDGE = ((67.0, 4.0, 16.75), (312.0, 0.5, 624.0), (100.0, 8.0, 12.5))
CHECK_ROOF_KEYS = ("bandwidth_tbs", "fp32_tflops", "fp16_tflops", "fp32_ridge", "fp16_ridge")
CHECK_SIZES = (1000, 8192)
CHECK_PLACES = (
    ("vector_add", 2**26),
    ("saxpy", 2**26),
    ("reduction", 2**26),
    ("matvec", 8192),
    ("gemm", 64),
    ("gemm", 8192),
)
CHECK_PLACE_KEYS = ("intensity", "ridge", "attainable_tflops", "limit")

CHECK_MISTAKES = {
    "fma": "a multiply-add (FMA) counts as two FLOPs, not one",
    "n-1": "a reduction of n values counts n adds, not n - 1",
    "saxpy-y": "SAXPY reads y and writes it back: y crosses the bus twice",
    "matvec-w": "the matrix-vector product moves x and y as well as W",
    "fp16-bytes": "an FP16 element is 2 bytes, not 4",
    "units": "specs.toml gives this GPU's bandwidth in GB/s: convert it to TB/s "
    "(1 TB/s = 1000 GB/s) before dividing or multiplying",
    "precision": "an FP16 kernel meets the FP16 Tensor Core peak and an FP32 kernel the FP32 "
    "one (KERNELS says which)",
    "lower-roof": "the attainable performance is the LOWER of the two roofs",
    "ridge-inverted": "the ridge is the peak divided by the bandwidth (TFLOPS / TB/s = FLOP/B)",
    "at-ridge": "exactly at the ridge both roofs agree, and the notebook's answer is 'compute'",
}
CHECK_FLOP_RULES = (
    "recount the FLOPs with the notebook's rules: an FMA is two FLOPs, a lone "
    "add one, and a reduction of n values n adds"
)
CHECK_BYTE_RULES = (
    "recount the bytes with the notebook's rules: each array read once and each "
    "written once (one read and written counts twice), 4 bytes per FP32 "
    "element, 2 per FP16, and scalars are free"
)


# -- the reference arithmetic (gpulab's hidden file) -------------------------------------------
def check_roofs(gpu, *, per_tbs=CHECK_TBS_PER):
    """Bandwidth in TB/s, peaks in TFLOPS and ridges in FLOP/B, from specs.toml."""
    values = CHECK_SPECS.gpus[gpu].values
    bandwidth = values["memory_bandwidth"]
    out = {"bandwidth_tbs": float(bandwidth.value or 0) * per_tbs[bandwidth.unit]}
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


def check_bound(intensity, peak, bandwidth):
    return "memory" if intensity * bandwidth < peak else "compute"


def check_count_mistakes(name, n):
    """The common wrong counts of a kernel, for FLOPs and for bytes."""
    flops, nbytes = check_counts(name, n)
    wrong = {"flops": [], "bytes": []}
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


def check_roof_mistakes(gpu):
    """gpu_roofs' values with the bandwidth's unit ignored, where that changes them."""
    if CHECK_SPECS.gpus[gpu].values["memory_bandwidth"].unit == "TB/s":
        return {}
    raw = check_roofs(gpu, per_tbs={"GB/s": 1.0})
    return {key: [("units", value)] for key, value in raw.items() if "tflops" not in key}


def check_place(name, n, gpu, table=None, precision=None):
    """place_kernel's answer, from `table` (default: the GPU's roofs) and `precision`."""
    r = table or check_roofs(gpu)
    precision = precision or CHECK_PRECISION[name]
    peak, bandwidth = r[f"{precision}_tflops"], r["bandwidth_tbs"]
    flops, nbytes = check_counts(name, n)
    intensity = flops / nbytes
    return {
        "intensity": intensity,
        "ridge": peak / bandwidth,
        "attainable_tflops": min(peak, intensity * bandwidth),
        "limit": check_bound(intensity, peak, bandwidth),
    }


def check_place_mistakes(name, n, gpu):
    """Ridge and attainable TFLOPS against the other precision's roofs, or with GB/s as TB/s."""
    other = "fp16" if CHECK_PRECISION[name] == "fp32" else "fp32"
    wrong = {"ridge": [], "attainable_tflops": []}
    tables = [("precision", check_roofs(gpu), other)]
    if check_roof_mistakes(gpu):
        tables.append(("units", check_roofs(gpu, per_tbs={"GB/s": 1.0}), CHECK_PRECISION[name]))
    for tag, table, precision in tables:
        answer = check_place(name, n, gpu, table, precision)
        for key in wrong:
            wrong[key].append((tag, answer[key]))
    return wrong


def check_reference_answers():
    """Every case of the visible checks: {case: (answer, is it a count, mistakes)}."""
    out = {}
    for f, b in CHECK_INTENSITY_CASES:
        out[f"arithmetic_intensity({f}, {b})"] = (f / b, False, [])
    for p, b in CHECK_ROOFS:
        out[f"ridge_point({p}, {b})"] = (p / b, False, [("ridge-inverted", b / p)])
    cases = [(i, p, b) for p, b in CHECK_ROOFS for i in CHECK_INTENSITIES]
    for i, p, b in cases + [(i, p, b) for p, b, i in CHECK_AT_THE_RIDGE]:
        at_ridge = i * b == p
        out[f"attainable({i!r}, {p}, {b})"] = (
            min(p, i * b),
            False,
            [("lower-roof", max(p, i * b))],
        )
        out[f"limit({i!r}, {p}, {b})"] = (
            check_bound(i, p, b),
            False,
            [("at-ridge", "memory")] if at_ridge else [],
        )
    for gpu in CHECK_DATASHEET:
        right, wrong = check_roofs(gpu), check_roof_mistakes(gpu)
        for key in CHECK_ROOF_KEYS:
            out[f"gpu_roofs({gpu!r})[{key!r}]"] = (right[key], False, wrong.get(key, []))
    for name in CHECK_PRECISION:
        for n in CHECK_SIZES:
            answer, wrong = check_counts(name, n), check_count_mistakes(name, n)
            for quantity, value in zip(("flops", "bytes"), answer, strict=True):
                out[f"kernel_counts({name!r}, {n})[{quantity}]"] = (value, True, wrong[quantity])
    for gpu in CHECK_DATASHEET:
        for name, n in CHECK_PLACES:
            placed, misplaced = check_place(name, n, gpu), check_place_mistakes(name, n, gpu)
            for key in CHECK_PLACE_KEYS:
                out[f"place_kernel({name!r}, {n}, {gpu!r})[{key!r}]"] = (
                    placed[key],
                    False,
                    misplaced.get(key, []),
                )
    return out


# -- judging as the seals do: six significant digits, counts exactly ---------------------------
def check_answer_text(value, *, count=False):
    """An answer as the text gpulab seals; None for a value that can be no answer."""
    if isinstance(value, str):
        return f"s:{value}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value) + 0.0
    except OverflowError:
        return None
    if not math.isfinite(number):
        return None
    if count:
        return f"i:{int(value)}" if number.is_integer() else None
    return f"r:{number:.5e}"


CHECK_EXPECTED = check_reference_answers()


def check_judged(case, got, *, count=False):
    """None when `got` is the answer to `case`; else a named mistake where `got` is a known
    one, "" where it is not."""
    answer, _, mistakes = CHECK_EXPECTED[case]
    mark = check_answer_text(got, count=count)
    if mark is not None and mark == check_answer_text(answer, count=count):
        return None
    return next(
        (
            CHECK_MISTAKES[tag]
            for tag, value in mistakes
            if mark is not None and mark == check_answer_text(value, count=count)
        ),
        "",
    )


def check_but(why, otherwise):
    return why or otherwise


def check_datasheet_is_current():
    for gpu, values in CHECK_DATASHEET.items():
        for key, (number, unit) in values.items():
            entry = CHECK_SPECS.gpus[gpu].values.get(key) if gpu in CHECK_SPECS.gpus else None
            assert entry is not None and (entry.value, entry.unit) == (number, unit), (
                f"the check itself is out of date: {gpu}'s {key} is no longer {number} {unit}"
            )


# -- calls, exceptions told by their type ---------------------------------------------------------
def check_call(function, *args):
    """The learner's function `function` called with `args`."""
    found = globals().get(function)
    if not callable(found):
        raise NameError(f"no function named {function!r}: did the answer cell define it?")
    return found(*args)


def check_raised_value_error(function, *args):
    """Did the call raise ValueError (or a subclass)? And what it did instead, in words."""
    try:
        got = check_call(function, *args)
    except Exception as exc:
        return isinstance(exc, ValueError), f"raised {type(exc).__name__}"
    return False, f"returned {got!r:.80}"


def check_accepted(function, *args):
    """(True, the result) when the call returned; (False, the error) if it raised."""
    try:
        return True, check_call(function, *args)
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}"


def check_is_number(value):
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_count_problem(name, n, got, flops_wrong, bytes_wrong):
    """What is wrong with kernel_counts(name, n) = got, given each count's verdict."""
    call = f"kernel_counts({name!r}, {n})"
    if flops_wrong is None and bytes_wrong is None:
        return None
    if flops_wrong is not None and bytes_wrong is not None:
        which = "both the FLOPs and the bytes are wrong"
    else:
        which = (
            "the FLOPs are wrong (the bytes are right)"
            if flops_wrong is not None
            else "the bytes are wrong (the FLOPs are right)"
        )
    advice = [why for why in (flops_wrong, bytes_wrong) if why] or [
        rule
        for rule, wrong in ((CHECK_FLOP_RULES, flops_wrong), (CHECK_BYTE_RULES, bytes_wrong))
        if wrong is not None
    ]
    return f"{call} returned {got!r}: {which}; {'; '.join(advice)}"


def check_counts_shape(got):
    return isinstance(got, list | tuple) and len(got) == 2 and all(map(check_is_number, got))


# -- the hidden checks' comparisons -----------------------------------------------------------
def check_close(got, want):
    return check_is_number(got) and math.isclose(got, want, rel_tol=CHECK_REL, abs_tol=1e-12)


def check_same(got, want):
    return got == want if isinstance(want, str) else check_close(got, want)


def check_named(got, variants):
    return next((str(CHECK_MISTAKES[tag]) for tag, value in variants if check_same(got, value)), "")


def check_wrong(got, want, variants=()):
    return None if check_same(got, want) else check_named(got, variants)


def check_near_ridge(intensity, peak, bandwidth):
    return abs(intensity * bandwidth - peak) <= 1e-9 * peak


def check_log_uniform(rng, low, high):
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def check_random_roofs(rng):
    return (
        round(check_log_uniform(rng, 1.0, 5000.0), 3),
        round(check_log_uniform(rng, 0.05, 20.0), 4),
    )


# %% test test_arithmetic_intensity points=1 needs=intensity
for flops, nbytes in CHECK_INTENSITY_CASES:
    call = f"arithmetic_intensity({flops}, {nbytes})"
    got = arithmetic_intensity(flops, nbytes)
    assert check_judged(call, got) is None, (
        f"{call} returned {got!r}, which is not the intensity of {flops} FLOPs on {nbytes} "
        "bytes: divide the FLOPs by the bytes moved"
    )

# %% test test_zero_bytes_is_refused points=1 needs=intensity
ok, did = check_raised_value_error("arithmetic_intensity", 1, 0)
assert ok, (
    f"arithmetic_intensity(1, 0) {did}, but it should raise ValueError: a kernel that "
    "moves no bytes has no arithmetic intensity"
)
ok, got = check_accepted("arithmetic_intensity", 0, 8)
assert ok and check_is_number(got), (
    f"arithmetic_intensity(0, 8) gave {got!r}, but zero FLOPs is a valid input (a copy)"
)

# %% test test_ridge_points points=1 needs=roofline
for peak, bandwidth in CHECK_ROOFS:
    call = f"ridge_point({peak}, {bandwidth})"
    got = ridge_point(peak, bandwidth)
    why = check_judged(call, got)
    assert why is None, f"{call} returned {got!r}, which is not where the roofs meet: " + check_but(
        why, "where intensity x bandwidth = peak"
    )

# %% test test_attainable_and_limit points=2 needs=roofline
cases = [(i, p, b) for p, b in CHECK_ROOFS for i in CHECK_INTENSITIES] + [
    (i, p, b) for p, b, i in CHECK_AT_THE_RIDGE
]
for intensity, peak, bandwidth in cases:
    args = f"{intensity!r}, {peak}, {bandwidth}"
    got = attainable(intensity, peak, bandwidth)
    why = check_judged(f"attainable({args})", got)
    assert why is None, f"attainable({args}) returned {got!r}: " + check_but(
        why, "the lower of the peak and intensity x bandwidth"
    )
    got = limit(intensity, peak, bandwidth)
    why = check_judged(f"limit({args})", got)
    assert why is None, (
        f"limit({args}) returned {got!r}, which is not the roof that limits "
        "there: "
        + check_but(why, "'memory' when intensity x bandwidth < peak, otherwise 'compute'")
    )

# %% test test_gpu_roofs points=2 needs=gpus,roofline
check_datasheet_is_current()
for gpu in CHECK_DATASHEET:
    got = gpu_roofs(gpu)
    assert isinstance(got, dict), f"gpu_roofs({gpu!r}) returned {got!r:.100}, not a dict"
    missing = [key for key in CHECK_ROOF_KEYS if key not in got]
    assert not missing, f"gpu_roofs({gpu!r}) has no {', '.join(missing)}: got {sorted(got)}"
    for key in CHECK_ROOF_KEYS:
        why = check_judged(f"gpu_roofs({gpu!r})[{key!r}]", got[key])
        assert why is None, (
            f"gpu_roofs({gpu!r})[{key!r}] is {got[key]!r}, which does not follow from "
            f"specs.toml's datasheet values: {check_but(why, 'peaks in TFLOPS, TB/s, FLOP/B')}"
        )

# %% test test_kernel_counts points=2 needs=kernels,intensity
problems = []
for name in CHECK_PRECISION:
    for n in CHECK_SIZES:
        call = f"kernel_counts({name!r}, {n})"
        got = kernel_counts(name, n)
        assert check_counts_shape(got), f"{call} returned {got!r:.100}, not (FLOPs, bytes)"
        problem = check_count_problem(
            name,
            n,
            got,
            check_judged(f"{call}[flops]", got[0], count=True),
            check_judged(f"{call}[bytes]", got[1], count=True),
        )
        if problem:
            problems.append(problem)
            break  # one size per kernel says enough
        intensity = kernel_intensity(name, n)
        assert check_is_number(intensity) and math.isclose(
            intensity, got[0] / got[1], rel_tol=1e-9
        ), (
            f"kernel_intensity({name!r}, {n}) returned {intensity!r}, but kernel_counts gives "
            f"{got[0]} FLOPs and {got[1]} bytes: divide one by the other"
        )
assert not problems, "\n".join(problems)

# %% test test_place_kernel points=2 needs=all
check_datasheet_is_current()
for gpu in CHECK_DATASHEET:
    for name, n in CHECK_PLACES:
        call = f"place_kernel({name!r}, {n}, {gpu!r})"
        got = place_kernel(name, n, gpu)
        assert isinstance(got, dict), f"{call} returned {got!r:.100}, not a dict"
        missing = [key for key in CHECK_PLACE_KEYS if key not in got]
        assert not missing, f"{call} has no {', '.join(missing)}: got {sorted(got)}"
        for key in CHECK_PLACE_KEYS:
            why = check_judged(f"{call}[{key!r}]", got[key])
            assert why is None, f"{call}[{key!r}] is {got[key]!r}: " + check_but(
                why, f"{name} is {CHECK_PRECISION[name]}: use {gpu}'s {CHECK_PRECISION[name]} roofs"
            )

# %% hidden test_random_roofs points=2 needs=roofline
rng = random.Random(CHECK_SEED)
cases = []
for _ in range(40):
    peak, bandwidth = check_random_roofs(rng)
    cases.append((check_log_uniform(rng, 1e-3, 1e5), peak, bandwidth))
for _ in range(8):  # exactly at the ridge: a power-of-two bandwidth keeps it exact
    peak, bandwidth = round(check_log_uniform(rng, 1.0, 5000.0), 3), 2.0 ** rng.randint(-3, 4)
    cases.append((peak / bandwidth, peak, bandwidth))
rng.shuffle(cases)
for intensity, peak, bandwidth in cases:
    args = f"{intensity!r}, {peak}, {bandwidth}"
    got = ridge_point(peak, bandwidth)
    why = check_wrong(got, peak / bandwidth, [("ridge-inverted", bandwidth / peak)])
    assert why is None, f"ridge_point({peak}, {bandwidth}) returned {got!r}: " + check_but(
        why, "peak / bandwidth"
    )
    got = attainable(intensity, peak, bandwidth)
    why = check_wrong(
        got, min(peak, intensity * bandwidth), [("lower-roof", max(peak, intensity * bandwidth))]
    )
    assert why is None, f"attainable({args}) returned {got!r}: " + check_but(
        why, CHECK_MISTAKES["lower-roof"]
    )
    at_ridge = intensity * bandwidth == peak
    if check_near_ridge(intensity, peak, bandwidth) and not at_ridge:
        continue
    got = limit(intensity, peak, bandwidth)
    why = check_wrong(
        got, check_bound(intensity, peak, bandwidth), [("at-ridge", "memory")] if at_ridge else []
    )
    assert why is None, f"limit({args}) returned {got!r}: " + check_but(
        why, "'memory' when intensity x bandwidth < peak, otherwise 'compute'"
    )

# %% hidden test_zero_flops points=1 needs=intensity,roofline
rng = random.Random(CHECK_SEED + 1)
nbytes = rng.randint(1, 2**40)
peak, bandwidth = check_random_roofs(rng)
got = arithmetic_intensity(0, nbytes)
assert check_close(got, 0.0), f"arithmetic_intensity(0, {nbytes}) returned {got!r}"
got = attainable(0, peak, bandwidth)
assert check_close(got, 0.0), f"attainable(0, {peak}, {bandwidth}) returned {got!r}"
got = limit(0, peak, bandwidth)
assert got == "memory", f"limit(0, {peak}, {bandwidth}) returned {got!r}"

# %% hidden test_invalid_inputs_raise_value_error points=2 needs=all
rng = random.Random(CHECK_SEED + 2)
peak, bandwidth = check_random_roofs(rng)
some, intensity = rng.randint(1, 10**6), check_log_uniform(rng, 1e-3, 1e4)
gpu, kernel = rng.choice(list(CHECK_SPECS.gpus)), rng.choice(list(CHECK_PRECISION))
no_gpu = f"gpu-{rng.randrange(16**6):06x}"
no_kernel = (
    f"{rng.choice(('conv2d', 'softmax', 'scan', 'stencil', 'attention'))}_{rng.randrange(100)}"
)
refused = [
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
valid = [
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
        ok, did = check_raised_value_error(function, *args)
        assert ok, f"{shown} {did}, but with {what} it should raise ValueError"
    else:
        ok, got = check_accepted(function, *args)
        assert ok, f"{shown} did not return ({got}), but {what} is a valid input"

# %% hidden test_every_gpu_in_specs points=2 needs=gpus,roofline
gpus = list(CHECK_SPECS.gpus)
rng = random.Random(CHECK_SEED + 3)
rng.shuffle(gpus)
for gpu in gpus:
    got = gpu_roofs(gpu)
    assert isinstance(got, dict), f"gpu_roofs({gpu!r}) returned {got!r:.100}, not a dict"
    mistakes = check_roof_mistakes(gpu)
    for key, value in check_roofs(gpu).items():
        assert key in got, f"gpu_roofs({gpu!r}) has no {key!r}: got {sorted(got)}"
        why = check_wrong(got[key], value, mistakes.get(key, []))
        assert why is None, (
            f"gpu_roofs({gpu!r})[{key!r}] is {got[key]!r}, which does not "
            "follow from specs.toml: " + check_but(why, "peaks in TFLOPS, the bandwidth in TB/s")
        )

# %% hidden test_kernels_at_other_sizes points=1 needs=kernels,intensity
rng = random.Random(CHECK_SEED + 4)
sizes = [*rng.sample(range(2, 64), 3), rng.randint(64, 5000), rng.randint(10**5, 10**7)]
problems = []
for name in CHECK_PRECISION:
    for n in sizes:
        if name == "gemm" and n > 10**5:
            n = rng.randint(10**4, 10**5)
        right, mistakes = check_counts(name, n), check_count_mistakes(name, n)
        got = kernel_counts(name, n)
        assert check_counts_shape(got), (
            f"kernel_counts({name!r}, {n}) returned {got!r:.100}, not (FLOPs, bytes)"
        )
        flops_wrong = None if got[0] == right[0] else check_named(got[0], mistakes["flops"])
        bytes_wrong = None if got[1] == right[1] else check_named(got[1], mistakes["bytes"])
        problem = check_count_problem(name, n, got, flops_wrong, bytes_wrong)
        if problem:
            problems.append(problem)
            break  # one size per kernel says enough
        got = kernel_intensity(name, n)
        assert check_close(got, right[0] / right[1]), (
            f"kernel_intensity({name!r}, {n}) returned {got!r}, but kernel_counts is right"
        )
assert not problems, "\n".join(problems)

# %% hidden test_place_on_every_gpu points=2 needs=all
rng = random.Random(CHECK_SEED + 5)
gpus = list(CHECK_SPECS.gpus)
rng.shuffle(gpus)
for gpu in gpus:
    crossover = 3 * check_roofs(gpu)["fp16_ridge"]  # a GEMM of side n has intensity n / 3
    cases = [(name, rng.randint(1, 10**6)) for name in ("vector_add", "saxpy", "reduction")]
    cases += [
        ("matvec", rng.randint(1, 20000)),
        ("gemm", rng.randint(1, 64)),
        ("gemm", math.floor(crossover)),
        ("gemm", math.ceil(crossover) + 1),
        ("gemm", rng.randint(4096, 32768)),
    ]
    for name, n in cases:
        precision = CHECK_PRECISION[name]
        call = f"place_kernel({name!r}, {n}, {gpu!r})"
        got = place_kernel(name, n, gpu)
        assert isinstance(got, dict), f"{call} returned {got!r:.100}, not a dict"
        want, mistakes = check_place(name, n, gpu), check_place_mistakes(name, n, gpu)
        for key in ("intensity", "ridge", "attainable_tflops"):
            assert key in got, f"{call} has no {key!r}: got {sorted(got)}"
            why = check_wrong(got[key], want[key], mistakes.get(key, []))
            assert why is None, f"{call}[{key!r}] is {got[key]!r}: " + check_but(
                why, f"{name} is {precision}: use {gpu}'s {precision} roofs"
            )
        r = check_roofs(gpu)
        if not check_near_ridge(want["intensity"], r[f"{precision}_tflops"], r["bandwidth_tbs"]):
            assert got.get("limit") == want["limit"], (
                f"{call}['limit'] is {got.get('limit')!r}: compare the intensity with "
                f"{gpu}'s {precision} ridge"
            )
