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
ROUNDS = 20_000


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
34d1f7efb0ad0b92 ad49353a7aca9c34 c2a15c4bfbaaa97d d06e94e2c290db7b c1ee5215e70880df
58d4eebbefb2d394 668ac537fa06698f f16405cc25050a18 cf28f888ad8d6d25 0aa204a191f19c8b
5a12c842aa7810b2 b0f62352aee6ce44 f3849d7139577101 bd634c775f2a01bf a2217f36aef07568
affbfbb3b4fe06ee 23496ece0704e5ca 1a1b4da811b86146 693d8f9b15070a0d 74b3dfbf5d9c3f2c
7de55fcd0442bc34 d5bf530e997369bc c0a39ed4c5eeb978 34196afddef15742 96ae0159a327e825
ff8d3947638d58ae f3863e51c7004e99 fd68ce00bbed07ed cf58e1cff76c666f a6fc82a02f3dd242
94799ddcb8080996 b04c6f84925df506 4e732b4876511b2b 344010084e853a8e 6fe54469b30e3279
f1143c83221f19a2 b9cbde2eea2f6619 b755e8728d26a87c b1abdca7729c3b8b 107f69863c359237
5bd0fb5832002600 93055dc32d5dec89 163bee7945eb1612 f037b16846ff2b75 7c140ff57281b164
e00c7cffd2b5b619 fe2a7e84546feb4b 9ddc351b5dc8971c d64e28cadd5c1450 f39fcf9adc58ee79
f63751f76cf2955f 0cf678c41f81e139 b6a75893d5ea58c8 a79b66de56aea55f 12e7ff5c8530959c
fed9cc209364b6a4 01bd625a9e78ac2c 6531d31cc47c3e09 a2a4b5aa256e4e10 e1d747cad73fce82
25a19614062776c4 79dcd2e556026d69 cf951882248808f4 271de0510794b17f 6ce542689fb30eab
71d47de2c2df894d 86f98b72f8b68516 92083e8200dc47f1 d84851d3e8118668 9b0c6c9447f4d956
eb6227e29a44c4d2 1f5807482cebb6aa a979e1a625dc75d8 cbda4f6a15a738cb 9ad76d7fc03579b6
bd67b57d9ffe6a57 ed6c6e4ae636b5ee 543a204e986cd3cd 14e51db321259681 43e0bdf592a905e5
17eaa39ad1597736 616b4f2f563ab4d3 8f7b339881267600 db80bb5f8b3fbed5 55631ce116d9ce6f
2cccb99abf4556a8 520ef32e72f678fc 0ea076bf34db7dc4 f0c53a608320fade 21c6e711e8aef495
2d6d4fe8a454dfad 153670fd6a8a3397 b5745d77f77870e2 692daa038d3962da 1e1ef1a14c967c34
f827bcb7c7643b84 7cff5c0e3a16295f fc5ea4682575fcd6 b65bc8ce433fc5cf 0e163b8e9fbbb4d4
b25d514d7e3b69eb 70e9115c9854c706 bc744ec894bb9780 68c227744f66db7d 2e84cced02b9b0f2
b5aa96d46255305f 8a7cbce5377dd868 1bdafff04b43f427 01e6978c293acfa1 2fa38e819d3f0764
26accfda7b8b17a5 39a38ef210b89a79 46b1298efaf84287 aca1cc0e324c64bc b63ccf4438cf4b5f
9871d20bcc551de0 e7196d12c317041a ca6ce7f7ac395842 59f2360868373084 00ef8f527a2d22b3
f0a7513d268ada38 141fa7e1481297b4 88f5a105702e076b 40c401c237b3a9a1 073092a2a257f098
e3bfeafd33e5c3f4 6d6d46c9f4d44046 8f5e905592b5fc08 b3105261da18545b 092af96fa48f012f
0cb5a9b3326529b6 4f8597c3ad0e91aa
"""
_KNOWN = """
ridge-inverted:b9568ad54dd9d68c ridge-inverted:3242208028a51767 ridge-inverted:0963680f15384735
ridge-inverted:88185ba308ca5e62 lower-roof:397c720b0ab7053d lower-roof:bb01ef8aacaa9201
lower-roof:d4b90327620051fd lower-roof:76fcb892958d04d6 lower-roof:eb227563775d21c2
lower-roof:245aca1baa8c9ac4 lower-roof:f43b861c23097e22 lower-roof:2ae154455e5e322a
lower-roof:3970076bf99bea0d lower-roof:e5f763ed9203eb51 lower-roof:c64534b5f45e5720
lower-roof:87a94665bcb011e4 lower-roof:b0b8176ad44c823b lower-roof:eec05ea53f65b003
lower-roof:4b977a4a16253349 lower-roof:237c0c1155f6dff7 lower-roof:51a1634bfde0a52e
lower-roof:aedf919891fa8d3c lower-roof:65b5f9b714ad291c lower-roof:bc437f8747c9e7ef
at-ridge:0d23aa217f43825f at-ridge:8851350171c9aeb1 at-ridge:b82145528b6c83f1
units:24f61e98a983f1ba units:a720810c8a0f80bb units:8bf4522616cc0b0a fma:4c1d7beeb267a31d
saxpy-y:0031fe5bc1dd99df fma:beee36c9f5bc2713 saxpy-y:09b3cd10565b297b n-1:4bd155bb4e24096b
n-1:84488eddd77ba273 fma:d73dca1c07f0f191 matvec-w:0715e7b910667fa6 fp16-bytes:25494bd40445675e
fma:a808f448865a46c0 matvec-w:bd18429ac02fa4b2 fp16-bytes:69397e0ab2f0bfce fma:be293b979bcf7cb0
fp16-bytes:39889e739673424c fma:3926b5f0c02c5ad9 fp16-bytes:8ce3c6c5703a0fd2
precision:f9f229340930e3d2 precision:5986ac422b7cf281 precision:c4f263063d8a32e0
precision:999f472bcd31c12a precision:512eaa7680073ba6 precision:7343005b4068653e
precision:04210f6b546c5573 precision:5fa7ab713e8540bd precision:57b32b46dfe8466d
units:4a20def834e4bed9 units:75a7fcf432ab2856 precision:68835efddd34d1c0 units:39b36df72132a849
units:6f7d03e5a565d4df precision:412f953c4ff24e80 units:89426eacc19185c1 units:8a53f4d04711c6f7
precision:9515ba7474ddc26a units:013bcdfb2da67510 units:ed92a712acdf7b67
precision:5ab7f16f5bd38d9a units:bd14f5e88079dddf precision:d670b7ed94b7944e
units:bb486fa74e866dd3 precision:8ff309e5b133829b units:5539b3aafa53fc14
precision:8e7c93766cc885cf
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
