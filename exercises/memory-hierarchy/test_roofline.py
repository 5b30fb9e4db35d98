"""Checks of the roofline exercise (lesson: the GPU memory hierarchy).

Each check calls your functions in a separate process. The right answers are
not written in this file. For each case it keeps a seal of the answer: a
salted, deliberately slow digest, made by the instructor's reference (which is
not shipped). Your answer is sealed the same way and the two seals compared,
so a check can say which quantity is wrong (the FLOPs, the bytes, a unit, a
ridge) without holding the right value; reading this file tells you no more
than running it. A few seals stand for common mistakes, so that a check can
name the mistake. Real numbers are compared at six significant digits,
counts of FLOPs and bytes exactly.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import pytest

from gpulab.course.catalog import find_course_dir
from gpulab.course.specs import load_specs
from gpulab.grading.checks.learner import LearnerError

SPECS = load_specs(find_course_dir() / "specs.toml")
PRECISION = {"vector_add": "fp32", "saxpy": "fp32", "reduction": "fp32",
             "matvec": "fp16", "gemm": "fp16"}

# -- the cases, and the datasheet values they were sealed with (inputs, not answers) -----------
DATASHEET = {"h200": {"fp32": (67.0, "TFLOPS"), "fp16_tensor": (989.4, "TFLOPS"),
                      "memory_bandwidth": (4.8, "TB/s")},
             "a100-80gb": {"fp32": (19.5, "TFLOPS"), "fp16_tensor": (312.0, "TFLOPS"),
                           "memory_bandwidth": (2039.0, "GB/s")}}
INTENSITY_CASES = ((5, 12), (7, 2), (2 * 8192**3, 6 * 8192**2), (0, 4096))
ROOFS = ((67.0, 4.8), (989.4, 4.8), (66.9, 3.35), (756.0, 2.0))   # (TFLOPS, TB/s)
INTENSITIES = (1 / 12, 0.25, 6.0, 60.0, 8192 / 3)
AT_THE_RIDGE = ((67.0, 4.0, 16.75), (312.0, 0.5, 624.0), (100.0, 8.0, 12.5))
ROOF_KEYS = ("bandwidth_tbs", "fp32_tflops", "fp16_tflops", "fp32_ridge", "fp16_ridge")
SIZES = (1000, 8192)
PLACES = (("vector_add", 2**26), ("saxpy", 2**26), ("reduction", 2**26), ("matvec", 8192),
          ("gemm", 64), ("gemm", 8192))
PLACE_KEYS = ("intensity", "ridge", "attainable_tflops", "limit")

# What a known mistake's seal means, in words that name it.
MISTAKES = {
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
FLOP_RULES = ("recount the FLOPs with the notebook's rules: an FMA is two FLOPs, a lone add "
              "one, and a reduction of n values n adds")
BYTE_RULES = ("recount the bytes with the notebook's rules: each array read once and each "
              "written once (one read and written counts twice), 4 bytes per FP32 element, 2 "
              "per FP16, and scalars are free")


# -- seals ------------------------------------------------------------------------------------
SALT = b"gpulab roofline, seals v1"
ROUNDS = 5_000  # 1.5 ms a seal on a 2-core VM: a run's 132 cost 0.2 s, 10**6 guesses 25 min


def answer_text(value: Any, *, count: bool = False) -> str | None:
    """An answer as the text that is sealed; None for a value that can be no answer.

    Counts are whole numbers, written exactly; other numbers to six
    significant digits; strings as they are.
    """
    if isinstance(value, str):
        return f"s:{value}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value) + 0.0            # + 0.0: -0.0 is 0.0
    except OverflowError:
        return None
    if not math.isfinite(number):
        return None
    if count:
        return f"i:{int(value)}" if number.is_integer() else None
    return f"r:{number:.5e}"


def seal(case: str, value: Any, *, count: bool = False) -> str:
    """The seal of `value` as the answer to `case` ("" for a value that can be no answer)."""
    text = answer_text(value, count=count)
    if text is None:
        return ""
    return hashlib.pbkdf2_hmac("sha256", f"{case} = {text}".encode(), SALT, ROUNDS).hex()[:16]


def case_keys() -> list[tuple[str, bool]]:
    """Every sealed case, in the order of `_SEALS`: (what was asked, is it a count)."""
    keys = [(f"arithmetic_intensity({f}, {b})", False) for f, b in INTENSITY_CASES]
    keys += [(f"ridge_point({p}, {b})", False) for p, b in ROOFS]
    for p, b in ROOFS:
        for i in INTENSITIES:
            keys += [(f"attainable({i!r}, {p}, {b})", False), (f"limit({i!r}, {p}, {b})", False)]
    for p, b, i in AT_THE_RIDGE:
        keys += [(f"attainable({i!r}, {p}, {b})", False), (f"limit({i!r}, {p}, {b})", False)]
    keys += [(f"gpu_roofs({gpu!r})[{key!r}]", False) for gpu in DATASHEET for key in ROOF_KEYS]
    for name in PRECISION:
        for n in SIZES:
            keys += [(f"kernel_counts({name!r}, {n})[{q}]", True) for q in ("flops", "bytes")]
    for gpu in DATASHEET:
        for name, n in PLACES:
            keys += [(f"place_kernel({name!r}, {n}, {gpu!r})[{key!r}]", False)
                     for key in PLACE_KEYS]
    return keys


# Made by the reference in the hidden checks (`sealed_tables` there), never by hand.
_SEALS = """
b8d37263655d0885 46103cda504d16b8 ee758f6d19feba74 54aa7300e64c01f3 cdec2924eb8ed5b7
1faf4ecfc72e85a6 0cdbec263b3c370f 68da9da93de6c9e7 5a91cd2c9eb1d798 0b39c6d47e316208
d754da1ff9a46d53 c17aae337e37ec3c 0dbc21af56114f57 0ebde01ff12e091c 17a722b8f0b7addb
62280e4d34c0e544 6bc7d86fc42f9681 8dc798c4f95aa4fa dd80cdd7731290dd e5332b27a4a895ee
d038f3036cc50549 3fbc7a64dd7758d2 18d61e8939c89531 d733b35bbd9a91b4 371e1e558d5f52cd
4d5eb9c1a7a2b42b 4ed80f00f4699f1f 268a92a5762048c1 58e786d254f33439 4e59bd49319cf518
33c0e291868777f8 e71fc886d58f0236 a550bdccbddbac89 0fffc6d5e1ffe5d1 4b977c7b0c070631
d43ad2fa822ec344 7e8c9c793515ab5a b9a7f6ab1aa0282f 1474bd520cfed7ff 9810d108aaf3b45b
5ac5610ed634caae 761e684278c70ddb 305595f7083d6f8a f1e751ee98943f1b 2ab33a799d6e1562
bca4162f7bd2f7e2 b98d702228f66c1c 7011a0c9a89a1ab9 c5a778aca5a534f5 069c83f8c6784072
e98ad08743770e98 c93994eedb931ad8 3276fb41891767b6 0d37a0cc09c5205f 5f1b811f74ea1b91
52258c21703d1545 1e6f98a44d3ddb5c 1e5db2c24027cb85 e4d8cbb0056b4f78 790709c2ef7726b1
1d8d80f29c0186ba 604e9c118146d4b1 05ed4a697f464da1 ab5a402caf09df95 bc888158c7d5d9bc
8e4ec782f7ef6af0 aef092e1ba084a90 976ccc96c7e218ab 73ba8d4d16804bd6 1fa6558acfbc83de
19adf06bc9ecd6cf dde122c4a7ff01b3 8591e447ca3e14e9 71a718250f18193b aef906903afd989f
4678a352b811ff04 1fe4e8e93ec68992 f7db124ad691beb3 00a738852f83cb5a 84c36d51563d06da
69c3f1aea3f10c4a f13235c69d2414b3 860c129bc056c3c0 ffc6a79cf0ca2e1d 6fcc5b3748671798
fb3f6e8939e1fc37 4c37c73839b490ef a8492774da4f473b 8bb01d6686847e19 ca02fc5660e473f2
7cfdefc02c86db04 8822cdd3443e941e ec46398570ea7fa7 e3c2943ebdc4886e 7bdf6db0e396c211
0622a52ba00afd18 005b7d4ca76221d5 7cef6db75a75984f 13769504dd14d6e4 2e17ae64f8ee1fea
b5a6c4141b643f4a b5242c0383edf338 0b13c87ff6770f88 46f5d49fee413fc7 d0f3a70c62b4c110
2d3fecec75d71490 519bf6a667367bce 0b0af6f26e5306be b7f9890114d1fb74 1317f771924bb43e
6d550af3193861a2 511a8c6b334fcf35 b3d2f5e31ad981ea f61d0d36ca3cc67f 3b1a6aa87fc3130b
4401dab136e3e3b0 9b61de2030aca0d5 f7798f2d86cb0d04 3b9c1e343d2ee902 72a43f76e9ca14fe
01b63a05f02210f3 db8bec835e2da94d 168dbb50b52e1fb7 97aedec47710381d 69d44573fc5aee6d
2bd8cd5127939e1f d2d816476f0289c8 a4588c5f600a9f28 8b5c9c52fb4dc5d5 3b7621c07ec94faa
73bf32daf980dd4d 6cfd76a2b1f0705e
"""
_KNOWN = """
ridge-inverted:c105b3765ff299f9 ridge-inverted:395253fc8790ca4c ridge-inverted:925fe8c43ad99ed7
ridge-inverted:7d95f471ac174c3c lower-roof:58657d62894d1766 lower-roof:5c390ef032e0632f
lower-roof:fb8c11fb9ab6b1fe lower-roof:8bf027b66e76db4d lower-roof:741cfcaa1f561cce
lower-roof:ec67972f0fdf5a29 lower-roof:bfc9bf5ed937289c lower-roof:525b6ba64ded00b4
lower-roof:2731147e3b64a744 lower-roof:85c147900013dfe4 lower-roof:03880c41aa6ecea9
lower-roof:d301518c90d42ac2 lower-roof:cb765364f314febd lower-roof:ea15fb1ca8e5f243
lower-roof:f9533901fea6cb2b lower-roof:77ca5ab7f59f317b lower-roof:27e0dbef4fe2a19b
lower-roof:bbce5887f17dd524 lower-roof:28a5a49d210d9db9 lower-roof:c85423adc5e799d1
at-ridge:e87f7926039aeea3 at-ridge:6ebbccf72ad845ae at-ridge:fdbdc2abe7c442a6
units:b33e53c51b9341e7 units:8d948bc66ef35d22 units:61e885ea2c271840 fma:2ec480892b704e9c
saxpy-y:8e0a3c5bc25c2ec3 fma:d61f93d48116e6cc saxpy-y:b45813b90fca5a24 n-1:4118115fefac89cd
n-1:1f1bf71d86623bea fma:81377d56287fbf69 matvec-w:b0dfc288fe544480 fp16-bytes:84b52f6b593248d4
fma:8219c465a9d308e1 matvec-w:51776e31c8fb12d8 fp16-bytes:6a04dfde71cbe91a fma:7f97fa560e78ff35
fp16-bytes:ebe6b782b7e03a00 fma:604eba2070e3fa27 fp16-bytes:8def692777a69a23
precision:e470316b58f252f7 precision:2c45471cf7216bf6 precision:a829e38723dfc610
precision:927a36be50860ac9 precision:630a393d8a732d7e precision:9ca96ee108cbbd6c
precision:b14c358d30de4c46 precision:f3373bda51135544 precision:3a1fc3ccb6bb6909
units:a741a0739134ccb1 units:3169d4f53772b5d6 precision:69f7508b4bf3499d units:a5ae46c02634bfed
units:f77fef0b72dbd29f precision:cf58c834b9c9d5f6 units:07fe28f08d393409 units:40b6cae5df6633d0
precision:1c2e55db9cf53268 units:dc87adfbb3de32c4 units:c3c41307eef3e7df
precision:e07dc46d4278d00b units:b4a65711195adbe2 precision:87ed4fe0bd477882
units:2b89dced96d9f08e precision:866444b26102c727 units:113232f1778cdb33
precision:8e6b2d843a03dc62
"""
EXPECTED = dict(zip([key for key, _ in case_keys()], _SEALS.split(), strict=False))
KNOWN = {mark: tag for tag, _, mark in (item.partition(":") for item in _KNOWN.split())}


def judged(case: str, got: Any, *, count: bool = False) -> str | None:
    """None when `got` is the sealed answer to `case`; else why not, in words: a named
    mistake where `got` is a known one, "" where it is not."""
    assert case in EXPECTED, f"the check itself has no seal for {case}; tell your instructor"
    mark = seal(case, got, count=count)
    if mark == EXPECTED[case]:
        return None
    return MISTAKES[KNOWN[mark]] if mark in KNOWN else ""


def but(why: str | None, otherwise: str) -> str:
    """The named mistake, or the general advice."""
    return why or otherwise


def datasheet_is_current() -> None:
    """The seals were made from these datasheet values: say so plainly if specs.toml changed."""
    for gpu, values in DATASHEET.items():
        for key, (number, unit) in values.items():
            entry = SPECS.gpus[gpu].values.get(key) if gpu in SPECS.gpus else None
            assert entry is not None and (entry.value, entry.unit) == (number, unit), (
                f"the check itself is out of date: its answers were sealed for {gpu}'s {key} = "
                f"{number} {unit}, but specs.toml now says otherwise; tell your instructor")


# -- exceptions, told by their type ------------------------------------------------------------
def raised_value_error(learner: Any, function: str, *args: Any) -> tuple[bool, str]:
    """Did the call raise ValueError (or a subclass)? And what it did instead, in words.

    Told by the exception's type as the worker reports it (`LearnerError.raised`,
    the built-in classes it is an instance of), never by its message: a
    ``ZeroDivisionError(": ValueError")`` is no ValueError. A worker that
    reports no type fails the check, saying so.
    """
    try:
        got = learner.call(function, *args)
    except LearnerError as exc:
        if exc.kind != "error":
            raise                               # a crash or a timeout is reported as such
        names = getattr(exc, "raised", None)
        raised_as = getattr(exc, "raised_as", None)
        if not names or not callable(raised_as):
            return False, "raised an error whose type could not be told"
        return bool(raised_as(ValueError)), f"raised {names[0]}"
    return False, f"returned {got!r:.80}"


def accepted(learner: Any, function: str, *args: Any) -> tuple[bool, Any]:
    """(True, the result) when the call returned; (False, the error's first line) if it raised."""
    try:
        return True, learner.call(function, *args)
    except LearnerError as exc:
        if exc.kind != "error":
            raise
        return False, str(exc).splitlines()[0]


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# -- the checks ----------------------------------------------------------------------------------
@pytest.mark.points(1)
def test_arithmetic_intensity(learner: Any) -> None:
    """arithmetic_intensity divides FLOPs by bytes"""
    for flops, nbytes in INTENSITY_CASES:
        call = f"arithmetic_intensity({flops}, {nbytes})"
        got = learner.call("arithmetic_intensity", flops, nbytes)
        assert judged(call, got) is None, (
            f"{call} returned {got!r}, which is not the intensity of {flops} FLOPs on {nbytes} "
            "bytes: divide the FLOPs by the bytes moved")


@pytest.mark.points(1)
def test_zero_bytes_is_refused(learner: Any) -> None:
    """arithmetic_intensity raises ValueError when no bytes move, and accepts zero FLOPs"""
    ok, did = raised_value_error(learner, "arithmetic_intensity", 1, 0)
    assert ok, (
        f"arithmetic_intensity(1, 0) {did}, but it should raise ValueError: a kernel that "
        "moves no bytes has no arithmetic intensity; test bytes_moved <= 0 before dividing "
        "(a ZeroDivisionError or a returned None does not say what was wrong)")
    ok, got = accepted(learner, "arithmetic_intensity", 0, 8)
    assert ok and is_number(got), (
        f"arithmetic_intensity(0, 8) gave {got!r}, but zero FLOPs is a valid input (a copy): "
        "refuse only bytes_moved <= 0 and negative FLOPs")


@pytest.mark.points(1)
def test_ridge_points(learner: Any) -> None:
    """ridge_point of the H200's and H100s' roofs, FP32 and FP16"""
    for peak, bandwidth in ROOFS:
        call = f"ridge_point({peak}, {bandwidth})"
        got = learner.call("ridge_point", peak, bandwidth)
        why = judged(call, got)
        assert why is None, (
            f"{call} returned {got!r}, which is not where the roofs meet: "
            + but(why, "where intensity x bandwidth = peak"))


@pytest.mark.points(2)
def test_attainable_and_limit(learner: Any) -> None:
    """attainable and limit on both sides of each ridge, and exactly at the ridge"""
    cases = [(i, p, b) for p, b in ROOFS for i in INTENSITIES] + \
        [(i, p, b) for p, b, i in AT_THE_RIDGE]
    for intensity, peak, bandwidth in cases:
        args = f"{intensity!r}, {peak}, {bandwidth}"
        got = learner.call("attainable", intensity, peak, bandwidth)
        why = judged(f"attainable({args})", got)
        assert why is None, (
            f"attainable({args}) returned {got!r}, which is not the attainable TFLOPS at "
            f"that intensity on roofs of {peak} TFLOPS and {bandwidth} TB/s: "
            + but(why, "the lower of the peak and intensity x bandwidth"))
        got = learner.call("limit", intensity, peak, bandwidth)
        why = judged(f"limit({args})", got)
        assert why is None, (
            f"limit({args}) returned {got!r}, which is not the roof that limits there: "
            + but(why, "'memory' when intensity x bandwidth < peak, otherwise 'compute'"))


@pytest.mark.points(2)
def test_gpu_roofs(learner: Any) -> None:
    """gpu_roofs reads the H200 and the A100 80 GB from specs.toml"""
    datasheet_is_current()
    for gpu, values in DATASHEET.items():
        got = learner.call("gpu_roofs", gpu)
        assert isinstance(got, dict), f"gpu_roofs({gpu!r}) returned {got!r:.100}, not a dict"
        missing = [key for key in ROOF_KEYS if key not in got]
        assert not missing, f"gpu_roofs({gpu!r}) has no {', '.join(missing)}: got {sorted(got)}"
        unit = values["memory_bandwidth"][1]
        advice = {"bandwidth_tbs": f"specs.toml gives {gpu}'s bandwidth in {unit}; the key "
                                   "wants TB/s",
                  "fp32_tflops": "the FP32 peak is the datasheet's fp32",
                  "fp16_tflops": "the FP16 peak is the datasheet's fp16_tensor",
                  "fp32_ridge": "the FP32 ridge is the FP32 peak over the bandwidth in TB/s",
                  "fp16_ridge": "the FP16 ridge is the FP16 peak over the bandwidth in TB/s"}
        for key in ROOF_KEYS:
            why = judged(f"gpu_roofs({gpu!r})[{key!r}]", got[key])
            assert why is None, (
                f"gpu_roofs({gpu!r})[{key!r}] is {got[key]!r}, which does not follow from "
                f"specs.toml's datasheet values: {but(why, advice[key])}")


def count_problem(name: str, n: int, got: Any, flops_wrong: str | None,
                  bytes_wrong: str | None) -> str | None:
    """What is wrong with kernel_counts(name, n) = got, given each count's verdict
    (None: right; else a named mistake or "")."""
    call = f"kernel_counts({name!r}, {n})"
    if flops_wrong is None and bytes_wrong is None:
        return None
    if flops_wrong is not None and bytes_wrong is not None:
        which = "both the FLOPs and the bytes are wrong"
    else:
        which = ("the FLOPs are wrong (the bytes are right)" if flops_wrong is not None
                 else "the bytes are wrong (the FLOPs are right)")
    advice = [why for why in (flops_wrong, bytes_wrong) if why] or \
        [rule for rule, wrong in ((FLOP_RULES, flops_wrong), (BYTE_RULES, bytes_wrong))
         if wrong is not None]
    return f"{call} returned {got!r}: {which}; {'; '.join(advice)}"


def counts_shape(got: Any) -> bool:
    return isinstance(got, list | tuple) and len(got) == 2 and all(is_number(v) for v in got)


@pytest.mark.points(2)
def test_kernel_counts(learner: Any) -> None:
    """kernel_counts counts each kernel's FLOPs and bytes; kernel_intensity divides them"""
    problems = []
    for name in PRECISION:
        for n in SIZES:
            call = f"kernel_counts({name!r}, {n})"
            got = learner.call("kernel_counts", name, n)
            assert counts_shape(got), f"{call} returned {got!r:.100}, not (FLOPs, bytes)"
            problem = count_problem(name, n, got,
                                    judged(f"{call}[flops]", got[0], count=True),
                                    judged(f"{call}[bytes]", got[1], count=True))
            if problem:
                problems.append(problem)
                break                            # one size per kernel says enough
            intensity = learner.call("kernel_intensity", name, n)
            assert is_number(intensity) and math.isclose(
                intensity, got[0] / got[1], rel_tol=1e-9), (
                f"kernel_intensity({name!r}, {n}) returned {intensity!r}, but kernel_counts "
                f"gives {got[0]} FLOPs and {got[1]} bytes: divide one by the other")
    assert not problems, "\n".join(problems)


@pytest.mark.points(2)
def test_place_kernel(learner: Any) -> None:
    """place_kernel puts each kernel on the H200's and the A100's roofline"""
    datasheet_is_current()
    for gpu in DATASHEET:
        for name, n in PLACES:
            call = f"place_kernel({name!r}, {n}, {gpu!r})"
            got = learner.call("place_kernel", name, n, gpu)
            assert isinstance(got, dict), f"{call} returned {got!r:.100}, not a dict"
            missing = [key for key in PLACE_KEYS if key not in got]
            assert not missing, f"{call} has no {', '.join(missing)}: got {sorted(got)}"
            precision = PRECISION[name]
            advice = {
                "intensity": f"it is {name}'s FLOPs over its bytes, as kernel_intensity "
                             "gives it (where kernel_counts is wrong, its check says which)",
                "ridge": f"{name} is an {precision} kernel: it meets {gpu}'s {precision} ridge",
                "attainable_tflops": f"the lower of {gpu}'s {precision} roofs at this intensity",
                "limit": f"compare the intensity with {gpu}'s {precision} ridge"}
            for key in PLACE_KEYS:
                why = judged(f"{call}[{key!r}]", got[key])
                assert why is None, f"{call}[{key!r}] is {got[key]!r}: {but(why, advice[key])}"
