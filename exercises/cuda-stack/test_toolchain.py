"""Checks of the toolchain exercise (lesson: the CUDA software stack).

Each check calls your functions in a separate process. Without a GPU:
`can_run` meets the lesson's own situations (an sm_80 binary on an H100, a
CUDA 12.6 application on a driver for CUDA 12.4, a CUDA 13 container on a
CUDA 12 driver, ...) and cases built around the arch-specific ('a') and
family-specific ('f') targets and the PTX ISA a driver can JIT-compile; the
expected answers were worked out by hand from the rules in the notebook, and
a failing check names the image or the rule you misjudged. `ptx_summary`
reads PTX that CUDA 13.0's NVRTC wrote for five small kernels, and is
compared with counts made by hand. With a GPU: the check compiles your two
kernels itself (NVRTC, through CuPy, for this GPU's virtual architecture),
compares your `compile_ptx` with its own compile, looks at what your summary
finds in them, and compares your `kernel_registers` with the registers and
local memory the driver reports for the same compile (this is where the
heavy kernel's registers, uncapped, under --maxrregcount=32 and under
__launch_bounds__(1024), are recorded beside your predictions). The checks'
own compiles are in `gpulab.grading.checks.reference.toolchain`.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpulab.grading.checks.reference import toolchain as trusted

# The first CUDA release whose driver JIT-compiles each PTX ISA version (the checks' own copy
# of the notebook's PTX_ISA_CUDA; NVIDIA's PTX ISA release notes).
PTX_ISA_CUDA = {
    "6.3": "10.0", "6.4": "10.1", "6.5": "10.2",
    "7.0": "11.0", "7.1": "11.1", "7.2": "11.2", "7.3": "11.3", "7.4": "11.4", "7.5": "11.5",
    "7.6": "11.6", "7.7": "11.7", "7.8": "11.8",
    "8.0": "12.0", "8.1": "12.1", "8.2": "12.2", "8.3": "12.3", "8.4": "12.4", "8.5": "12.5",
    "8.6": "12.7", "8.7": "12.8", "8.8": "12.9",
    "9.0": "13.0", "9.1": "13.1", "9.2": "13.2", "9.3": "13.3", "9.4": "13.4", "9.5": "13.5",
}
REASONS = ("native", "jit", "driver-too-old", "ptx-too-new", "no-image")
HOW = {"native": "sass", "jit": "ptx-jit"}
_ARCH = re.compile(r"(sm|compute)_(\d+)(\d)([af]?)")


# -- cases --------------------------------------------------------------------------------------
def sass(arch: str) -> dict[str, str]:
    return {"kind": "sass", "arch": arch}


def ptx(arch: str, isa: str) -> dict[str, str]:
    return {"kind": "ptx", "arch": arch, "isa": isa}


def case(gpu: str, cc: str, driver: str, built: str, *images: dict[str, str]) -> dict[str, Any]:
    return {"gpu": gpu, "gpu_cc": cc, "driver_cuda": driver, "built_with": built,
            "embedded": list(images)}


def want(reason: str, *usable: str) -> dict[str, Any]:
    """An expected answer, from its reason and its usable images."""
    return {"runs": reason in HOW, "how": HOW.get(reason), "reason": reason,
            "usable": list(usable)}


# (what the case is about, the case, the expected answer: worked out by hand)
LESSON_CASES = [
    ("an application built with -gencode arch=compute_80,code=sm_80 on an H100",
     case("H100", "9.0", "13.0", "12.8", sass("sm_80")), want("no-image")),
    ("the same application with compute_80 PTX added",
     case("H100", "9.0", "13.0", "12.8", sass("sm_80"), ptx("compute_80", "8.7")),
     want("jit", "compute_80")),
    ("-arch=sm_90 (sm_90 SASS and compute_90 PTX) on an H200",
     case("H200", "9.0", "13.0", "13.0", sass("sm_90"), ptx("compute_90", "9.0")),
     want("native", "sm_90", "compute_90")),
    ("nvidia-smi says CUDA 12.4, the application was built with CUDA 12.6",
     case("H100", "9.0", "12.4", "12.6", sass("sm_90"), ptx("compute_90", "8.5")),
     want("native", "sm_90")),
    ("a CUDA 12.8 application that carries only PTX, on a driver for CUDA 12.4",
     case("H100", "9.0", "12.4", "12.8", ptx("compute_90", "8.7")), want("ptx-too-new")),
    ("a CUDA 13 container on a host whose driver supports CUDA 12.8",
     case("H100", "9.0", "12.8", "13.0", sass("sm_90"), ptx("compute_90", "9.0")),
     want("driver-too-old")),
    ("CuPy's CUDA 13.2 runtime and its cubins on a driver for CUDA 13.0",
     case("H200", "9.0", "13.0", "13.2", sass("sm_90")), want("native", "sm_90")),
    ("nvcc 13.0 without -arch (sm_75 SASS and compute_75 PTX) on an H200",
     case("H200", "9.0", "13.0", "13.0", sass("sm_75"), ptx("compute_75", "9.0")),
     want("jit", "compute_75")),
    ("-arch=native on an H100 (sm_90 SASS, no PTX), then run on a B200",
     case("B200", "10.0", "12.8", "12.8", sass("sm_90")), want("no-image")),
    ("the lesson's -gencode fat binary (sm_80, sm_90, compute_90) on an A100",
     case("A100", "8.0", "12.2", "12.2", sass("sm_80"), sass("sm_90"), ptx("compute_90", "8.2")),
     want("native", "sm_80")),
]
SUFFIX_CASES = [
    ("sm_90a and compute_90a on the GPU they were built for",
     case("H100", "9.0", "12.9", "12.9", sass("sm_90a"), ptx("compute_90a", "8.8")),
     want("native", "sm_90a", "compute_90a")),
    ("the same sm_90a binary on a B200",
     case("B200", "10.0", "12.9", "12.9", sass("sm_90a"), ptx("compute_90a", "8.8")),
     want("no-image")),
    ("sm_100a code on a B300 (compute capability 10.3)",
     case("B300", "10.3", "12.9", "12.9", sass("sm_100a"), ptx("compute_100a", "8.8")),
     want("no-image")),
    ("sm_100f code on a B300",
     case("B300", "10.3", "13.0", "12.9", sass("sm_100f")), want("native", "sm_100f")),
    ("sm_103f code on a B200 (compute capability 10.0)",
     case("B200", "10.0", "13.0", "12.9", sass("sm_103f"), ptx("compute_103f", "8.8")),
     want("no-image")),
    ("the sm_100f family on a compute capability 12.0 GPU",
     case("RTX PRO 6000", "12.0", "12.9", "12.9", sass("sm_100f"), ptx("compute_100f", "8.8")),
     want("no-image")),
    ("plain sm_100 and compute_100 on a compute capability 12.0 GPU",
     case("RTX PRO 6000", "12.0", "12.9", "12.8", sass("sm_100"), ptx("compute_100", "8.7")),
     want("jit", "compute_100")),
    ("sm_80 SASS on an L4 (compute capability 8.9)",
     case("L4", "8.9", "12.4", "12.2", sass("sm_80"), ptx("compute_80", "8.2")),
     want("native", "sm_80", "compute_80")),
    ("sm_86 and sm_89 SASS on an A100 (compute capability 8.0)",
     case("A100", "8.0", "12.4", "12.2", sass("sm_86"), sass("sm_89")), want("no-image")),
    ("sm_70 SASS on a T4 (compute capability 7.5)",
     case("T4", "7.5", "12.4", "11.8", sass("sm_70"), ptx("compute_70", "7.8")),
     want("native", "sm_70", "compute_70")),
    ("compute_100f and compute_100a PTX on a B300",
     case("B300", "10.3", "13.0", "13.0", ptx("compute_100f", "9.0"), ptx("compute_100a", "9.0")),
     want("jit", "compute_100f")),
]
VERSION_CASES = [
    ("a CUDA 11.8 application on a driver for CUDA 11.2",
     case("A100", "8.0", "11.2", "11.8", sass("sm_80")), want("native", "sm_80")),
    ("a CUDA 10.2 application on a driver for CUDA 10.1",
     case("T4", "7.5", "10.1", "10.2", sass("sm_75"), ptx("compute_75", "6.5")),
     want("driver-too-old")),
    ("a CUDA 12.9 application on a driver for CUDA 11.8",
     case("H100", "9.0", "11.8", "12.9", sass("sm_90")), want("driver-too-old")),
    ("a CUDA 11.4 application with only compute_80 PTX, on a driver for CUDA 12.2",
     case("H100", "9.0", "12.2", "11.4", ptx("compute_80", "7.4")), want("jit", "compute_80")),
    ("a CUDA 12.6 application with only PTX (ISA 8.5), on a driver for CUDA 12.5",
     case("H100", "9.0", "12.5", "12.6", ptx("compute_80", "8.5")), want("jit", "compute_80")),
    ("a CUDA 13.1 application on a driver for CUDA 13.0",
     case("H100", "9.0", "13.0", "13.1", sass("sm_90"), ptx("compute_90", "9.1")),
     want("native", "sm_90")),
    ("a CUDA 12.8 application with only PTX, on a driver for CUDA 12.7",
     case("H100", "9.0", "12.7", "12.8", ptx("compute_90", "8.7")), want("ptx-too-new")),
    ("a CUDA 12.4 application with sm_80 SASS and compute_89 PTX on an H200",
     case("H200", "9.0", "13.2", "12.4", sass("sm_80"), ptx("compute_89", "8.4")),
     want("jit", "compute_89")),
]


# -- judging can_run ------------------------------------------------------------------------------
def as_version(text: str) -> tuple[int, int]:
    major, minor = str(text).split(".")
    return int(major), int(minor)


def split_arch(arch: str) -> tuple[str, int, int, str]:
    """("sass" or "ptx", major, minor, suffix "" / "a" / "f") of sm_90a, compute_100f..."""
    match = _ARCH.fullmatch(arch)
    if match is None:
        raise ValueError(f"not an architecture name: {arch!r}")
    kind = "sass" if match.group(1) == "sm" else "ptx"
    return kind, int(match.group(2)), int(match.group(3)), match.group(4)


def describe(c: dict[str, Any]) -> str:
    """A case in words, for messages."""
    images = ", ".join(
        f"{i['arch']} SASS" if i["kind"] == "sass" else f"{i['arch']} PTX (ISA {i['isa']})"
        for i in c["embedded"])
    return (f"{c['gpu']} of compute capability {c['gpu_cc']}, driver for CUDA "
            f"{c['driver_cuda']}, built with CUDA {c['built_with']}, carrying {images}")


def runtime_rule(c: dict[str, Any], starts: bool) -> str:
    """Why the application's CUDA runtime does (`starts`) or does not start on this driver."""
    driver, built = as_version(c["driver_cuda"]), as_version(c["built_with"])
    d, b = c["driver_cuda"], c["built_with"]
    if starts and driver >= built:
        return (f"a driver for CUDA {d} runs applications of CUDA {b}, which is not newer: "
                "backward compatibility")
    if starts:
        return (f"CUDA {b} and the driver's CUDA {d} are of the same major release, "
                f"{built[0]}: since CUDA 11, minor-version compatibility lets the runtime start "
                "on an older driver of its own major (only PTX from the newer toolkit and "
                "features that need the newer driver fail)")
    if built[0] > driver[0]:
        return (f"CUDA {b} is a newer major release than the driver's CUDA {d}: minor-version "
                "compatibility holds only within one major, so the runtime does not start "
                "(cudaErrorInsufficientDriver); nothing is loaded and nothing is usable")
    return (f"before CUDA 11 there was no minor-version compatibility: a CUDA {b} application "
            f"needs a driver for CUDA {b} or newer, and this one is for CUDA {d}; nothing is "
            "loaded and nothing is usable")


def image_rule(image: dict[str, Any], c: dict[str, Any]) -> str:
    """The rule that decides whether `image` serves this case's GPU."""
    kind, major, minor, suffix = split_arch(image["arch"])
    arch, cc = image["arch"], f"{major}.{minor}"
    if suffix == "a":
        reach = (f"{arch} is architecture-specific: it serves compute capability {cc} exactly, "
                 "and no other GPU, not even a later one of the same major"
                 + (" (its PTX cannot be JIT-compiled for later GPUs either)"
                    if kind == "ptx" else ""))
    elif suffix == "f":
        reach = (f"{arch} is family-specific: it serves GPUs of major {major} with a minor of "
                 f"{minor} or more, and no other major")
    elif kind == "sass":
        reach = (f"SASS for {arch} runs on GPUs of major {major} with a minor of {minor} or "
                 "more, never on another major")
    else:
        reach = (f"PTX for {arch} can be JIT-compiled for compute capability {cc} and any later "
                 "one")
    if kind == "ptx":
        isa = image.get("isa")
        reach += (f"; and only a driver whose JIT knows PTX ISA {isa} can compile it (ISA {isa} "
                  f"first came with CUDA {PTX_ISA_CUDA.get(str(isa), '?')}, see PTX_ISA_CUDA; "
                  f"this driver is for CUDA {c['driver_cuda']})")
    return f"the GPU's compute capability is {c['gpu_cc']}, and {reach}"


OUTCOME = {
    "native": "a SASS image that fits the GPU is loaded as it is, and the driver prefers it to "
              "compiling PTX: runs True, how 'sass', reason 'native'",
    "jit": "no SASS fits, but a PTX image does and the driver's JIT can compile it: runs True, "
           "how 'ptx-jit', reason 'jit'",
    "ptx-too-new": "no SASS fits, and the PTX that would fit the GPU is of an ISA newer than the "
                   "driver's JIT knows (CUDA_ERROR_UNSUPPORTED_PTX_VERSION): runs False, how "
                   "None, reason 'ptx-too-new'",
    "no-image": "nothing in the binary fits this GPU ('no kernel image is available for "
                "execution on the device'): runs False, how None, reason 'no-image'",
    "driver-too-old": "the runtime does not start: runs False, how None, reason "
                      "'driver-too-old', usable []",
}


def shape_problem(got: Any, c: dict[str, Any]) -> str | None:
    """What is wrong with the form of a can_run answer."""
    if not isinstance(got, dict):
        return f"returned {got!r:.80}, not a dict"
    missing = [k for k in ("runs", "how", "reason", "usable") if k not in got]
    if missing:
        return f"the answer has no {', '.join(missing)} (keys: {sorted(got)})"
    if not isinstance(got["runs"], bool):
        return f"runs is {got['runs']!r}: True or False"
    if got["how"] not in ("sass", "ptx-jit", None):
        return f"how is {got['how']!r}: 'sass', 'ptx-jit' or None"
    if got["reason"] not in REASONS:
        return f"reason is {got['reason']!r}: one of {', '.join(map(repr, REASONS))}"
    archs = [image["arch"] for image in c["embedded"]]
    usable = got["usable"]
    if not isinstance(usable, list) or any(a not in archs for a in usable) or \
            len(set(usable)) != len(usable):
        return (f"usable is {usable!r:.120}: a list of the arch names of the embedded images "
                f"({', '.join(archs)}) that could serve this GPU, each once")
    return None


def judge(c: dict[str, Any], got: Any, right: dict[str, Any]) -> str | None:
    """What is wrong with the learner's answer `got` to case `c`, whose answer is `right`."""
    call = f"can_run({describe(c)})"
    problem = shape_problem(got, c)
    if problem:
        return f"{call}: {problem}"
    starts, said_starts = right["reason"] != "driver-too-old", got["reason"] != "driver-too-old"
    if starts != said_starts:
        said = "it starts" if said_starts else "the driver is too old"
        return f"{call}: you say {said}, but {runtime_rule(c, starts)}"
    if not starts and got["usable"]:
        return f"{call}: {runtime_rule(c, False)}: usable is []"
    for image in c["embedded"]:
        arch = image["arch"]
        listed, should = arch in got["usable"], arch in right["usable"]
        if listed != should:
            verdict = ("you list it as usable, but it is not" if listed
                       else "you leave it out, but it is usable")
            return f"{call}: {arch}: {verdict}: {image_rule(image, c)}"
    if got["usable"] != right["usable"]:
        return f"{call}: list the usable images in the order of case['embedded']"
    if (got["runs"], got["how"], got["reason"]) != (right["runs"], right["how"], right["reason"]):
        return (f"{call}: your usable images are right, but you say runs {got['runs']}, how "
                f"{got['how']!r}, reason {got['reason']!r}: {OUTCOME[right['reason']]}")
    return None


def check_cases(learner: Any, cases: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> None:
    wrong = []
    for what, c, right in cases:
        problem = judge(c, learner.call("can_run", c), right)
        if problem:
            wrong.append(f"{what}: {problem}")
    assert not wrong, (f"{len(wrong)} of {len(cases)} cases are misjudged; the first:\n  "
                       + "\n  ".join(wrong[:2]))


@pytest.mark.points(3)
def test_can_run_lesson_cases(learner: Any) -> None:
    """the lesson's situations: sm_80 on an H100, CUDA 12.6 on a 12.4 driver, CUDA 13 on 12"""
    check_cases(learner, LESSON_CASES)


@pytest.mark.points(2)
def test_can_run_arch_and_family_targets(learner: Any) -> None:
    """plain, family ('f') and architecture-specific ('a') targets, SASS and PTX"""
    check_cases(learner, SUFFIX_CASES)


@pytest.mark.points(2)
def test_can_run_versions(learner: Any) -> None:
    """backward and minor-version compatibility, and which PTX ISA a driver can JIT-compile"""
    check_cases(learner, VERSION_CASES)


# -- ptx_summary: PTX that CUDA 13.0"s NVRTC wrote (nvrtcGetPTX) ----------------------------
SAXPY_PTX = r"""//
// Generated by NVIDIA NVVM Compiler
//
// Compiler Build ID: CL-36424714
// Cuda compilation tools, release 13.0, V13.0.88
// Based on NVVM 7.0.1
//

.version 9.0
.target sm_90
.address_size 64

	// .globl	saxpy

.visible .entry saxpy(
	.param .f32 saxpy_param_0,
	.param .u64 saxpy_param_1,
	.param .u64 saxpy_param_2,
	.param .u32 saxpy_param_3
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<5>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<8>;


	ld.param.f32 	%f1, [saxpy_param_0];
	ld.param.u64 	%rd1, [saxpy_param_1];
	ld.param.u64 	%rd2, [saxpy_param_2];
	ld.param.u32 	%r2, [saxpy_param_3];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;

	cvta.to.global.u64 	%rd3, %rd2;
	cvta.to.global.u64 	%rd4, %rd1;
	mul.wide.s32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd4, %rd5;
	ld.global.f32 	%f2, [%rd6];
	add.s64 	%rd7, %rd3, %rd5;
	ld.global.f32 	%f3, [%rd7];
	fma.rn.f32 	%f4, %f2, %f1, %f3;
	st.global.f32 	[%rd7], %f4;

$L__BB0_2:
	ret;

}
"""

SAXPY4_PTX = r"""//
// Generated by NVIDIA NVVM Compiler
//
// Compiler Build ID: CL-36424714
// Cuda compilation tools, release 13.0, V13.0.88
// Based on NVVM 7.0.1
//

.version 9.0
.target sm_90
.address_size 64

	// .globl	saxpy4

.visible .entry saxpy4(
	.param .f32 saxpy4_param_0,
	.param .u64 saxpy4_param_1,
	.param .u64 saxpy4_param_2,
	.param .u32 saxpy4_param_3
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<22>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<8>;


	ld.param.f32 	%f1, [saxpy4_param_0];
	ld.param.u64 	%rd1, [saxpy4_param_1];
	ld.param.u64 	%rd2, [saxpy4_param_2];
	ld.param.u32 	%r2, [saxpy4_param_3];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;

	cvta.to.global.u64 	%rd3, %rd2;
	cvta.to.global.u64 	%rd4, %rd1;
	mul.wide.s32 	%rd5, %r1, 16;
	add.s64 	%rd6, %rd4, %rd5;
	ld.global.v4.f32 	{%f2, %f3, %f4, %f5}, [%rd6];
	add.s64 	%rd7, %rd3, %rd5;
	ld.global.v4.f32 	{%f10, %f11, %f12, %f13}, [%rd7];
	fma.rn.f32 	%f18, %f5, %f1, %f13;
	fma.rn.f32 	%f19, %f4, %f1, %f12;
	fma.rn.f32 	%f20, %f3, %f1, %f11;
	fma.rn.f32 	%f21, %f2, %f1, %f10;
	st.global.v4.f32 	[%rd7], {%f21, %f20, %f19, %f18};

$L__BB0_2:
	ret;

}
"""

SAXPY_NO_FMAD_PTX = r"""//
// Generated by NVIDIA NVVM Compiler
//
// Compiler Build ID: CL-36424714
// Cuda compilation tools, release 13.0, V13.0.88
// Based on NVVM 7.0.1
//

.version 9.0
.target sm_80
.address_size 64

	// .globl	saxpy

.visible .entry saxpy(
	.param .f32 saxpy_param_0,
	.param .u64 saxpy_param_1,
	.param .u64 saxpy_param_2,
	.param .u32 saxpy_param_3
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<6>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<8>;


	ld.param.f32 	%f1, [saxpy_param_0];
	ld.param.u64 	%rd1, [saxpy_param_1];
	ld.param.u64 	%rd2, [saxpy_param_2];
	ld.param.u32 	%r2, [saxpy_param_3];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;

	cvta.to.global.u64 	%rd3, %rd2;
	cvta.to.global.u64 	%rd4, %rd1;
	mul.wide.s32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd4, %rd5;
	ld.global.f32 	%f2, [%rd6];
	mul.rn.f32 	%f3, %f2, %f1;
	add.s64 	%rd7, %rd3, %rd5;
	ld.global.f32 	%f4, [%rd7];
	add.rn.f32 	%f5, %f3, %f4;
	st.global.f32 	[%rd7], %f5;

$L__BB0_2:
	ret;

}
"""

BLOCK_SUM_PTX = r"""//
// Generated by NVIDIA NVVM Compiler
//
// Compiler Build ID: CL-36424714
// Cuda compilation tools, release 13.0, V13.0.88
// Based on NVVM 7.0.1
//

.version 9.0
.target sm_90a
.address_size 64

	// .globl	block_sum
// _ZZ9block_sumE4part has been demoted

.visible .entry block_sum(
	.param .u64 block_sum_param_0,
	.param .u64 block_sum_param_1,
	.param .u32 block_sum_param_2
)
{
	.reg .pred 	%p<7>;
	.reg .f32 	%f<14>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<13>;
	// demoted variable
	.shared .align 4 .b8 _ZZ9block_sumE4part[1024];

	ld.param.u64 	%rd3, [block_sum_param_0];
	ld.param.u64 	%rd4, [block_sum_param_1];
	ld.param.u32 	%r10, [block_sum_param_2];
	mov.u32 	%r1, %ntid.x;
	mov.u32 	%r11, %ctaid.x;
	mov.u32 	%r2, %tid.x;
	mad.lo.s32 	%r14, %r11, %r1, %r2;
	setp.ge.s32 	%p1, %r14, %r10;
	mov.f32 	%f13, 0f00000000;
	@%p1 bra 	$L__BB0_3;

	mov.u32 	%r12, %nctaid.x;
	mul.lo.s32 	%r4, %r12, %r1;
	cvta.to.global.u64 	%rd1, %rd3;
	mov.f32 	%f13, 0f00000000;

$L__BB0_2:
	mul.wide.s32 	%rd5, %r14, 4;
	add.s64 	%rd6, %rd1, %rd5;
	ld.global.nc.f32 	%f6, [%rd6];
	add.f32 	%f13, %f13, %f6;
	add.s32 	%r14, %r14, %r4;
	setp.lt.s32 	%p2, %r14, %r10;
	@%p2 bra 	$L__BB0_2;

$L__BB0_3:
	mul.wide.u32 	%rd7, %r2, 4;
	mov.u64 	%rd8, _ZZ9block_sumE4part;
	add.s64 	%rd2, %rd8, %rd7;
	st.shared.f32 	[%rd2], %f13;
	bar.sync 	0;
	shr.u32 	%r15, %r1, 1;
	setp.eq.s32 	%p3, %r15, 0;
	@%p3 bra 	$L__BB0_7;

$L__BB0_4:
	setp.ge.u32 	%p4, %r2, %r15;
	@%p4 bra 	$L__BB0_6;

	add.s32 	%r13, %r15, %r2;
	mul.wide.u32 	%rd9, %r13, 4;
	add.s64 	%rd11, %rd8, %rd9;
	ld.shared.f32 	%f7, [%rd2];
	ld.shared.f32 	%f8, [%rd11];
	add.f32 	%f9, %f8, %f7;
	st.shared.f32 	[%rd2], %f9;

$L__BB0_6:
	bar.sync 	0;
	shr.u32 	%r15, %r15, 1;
	setp.ne.s32 	%p5, %r15, 0;
	@%p5 bra 	$L__BB0_4;

$L__BB0_7:
	setp.ne.s32 	%p6, %r2, 0;
	@%p6 bra 	$L__BB0_9;

	ld.shared.f32 	%f10, [_ZZ9block_sumE4part];
	cvta.to.global.u64 	%rd12, %rd4;
	atom.global.add.f32 	%f11, [%rd12], %f10;

$L__BB0_9:
	ret;

}
"""

TWO_KERNELS_PTX = r"""//
// Generated by NVIDIA NVVM Compiler
//
// Compiler Build ID: CL-36424714
// Cuda compilation tools, release 13.0, V13.0.88
// Based on NVVM 7.0.1
//

.version 9.0
.target sm_80
.address_size 64

	// .globl	scale

.visible .entry scale(
	.param .u64 scale_param_0,
	.param .f32 scale_param_1,
	.param .u32 scale_param_2
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<4>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<5>;


	ld.param.u64 	%rd1, [scale_param_0];
	ld.param.f32 	%f1, [scale_param_1];
	ld.param.u32 	%r2, [scale_param_2];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;

	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.s32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.f32 	%f2, [%rd4];
	mul.f32 	%f3, %f2, %f1;
	st.global.f32 	[%rd4], %f3;

$L__BB0_2:
	ret;

}
	// .globl	axpby
.visible .entry axpby(
	.param .f32 axpby_param_0,
	.param .u64 axpby_param_1,
	.param .f32 axpby_param_2,
	.param .u64 axpby_param_3,
	.param .u32 axpby_param_4
)
.maxntid 1024, 1, 1
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<3>;
	.reg .b32 	%r<6>;
	.reg .f64 	%fd<7>;
	.reg .b64 	%rd<8>;


	ld.param.f32 	%f1, [axpby_param_0];
	ld.param.u64 	%rd1, [axpby_param_1];
	ld.param.f32 	%f2, [axpby_param_2];
	ld.param.u64 	%rd2, [axpby_param_3];
	ld.param.u32 	%r2, [axpby_param_4];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB1_2;

	cvta.to.global.u64 	%rd3, %rd2;
	cvta.to.global.u64 	%rd4, %rd1;
	mul.wide.s32 	%rd5, %r1, 8;
	add.s64 	%rd6, %rd4, %rd5;
	ld.global.f64 	%fd1, [%rd6];
	cvt.f64.f32 	%fd2, %f1;
	add.s64 	%rd7, %rd3, %rd5;
	ld.global.f64 	%fd3, [%rd7];
	cvt.f64.f32 	%fd4, %f2;
	mul.f64 	%fd5, %fd3, %fd4;
	fma.rn.f64 	%fd6, %fd1, %fd2, %fd5;
	st.global.f64 	[%rd7], %fd6;

$L__BB1_2:
	ret;

}
"""

# (sample, what it is, the summary counted by hand from the text)
SAMPLES = [
    (SAXPY_PTX, "SAXPY, one element per thread, for compute_90",
     {"version": "9.0", "target": "sm_90", "entries": ["saxpy"],
      "registers": {"pred": 2, "f32": 5, "b32": 6, "b64": 8},
      "instructions": 20, "fma": 1, "ld.global": 2, "st.global": 1}),
    (SAXPY4_PTX, "SAXPY on float4, one float4 per thread, for compute_90",
     {"version": "9.0", "target": "sm_90", "entries": ["saxpy4"],
      "registers": {"pred": 2, "f32": 22, "b32": 6, "b64": 8},
      "instructions": 23, "fma": 4, "ld.global": 2, "st.global": 1}),
    (SAXPY_NO_FMAD_PTX, "SAXPY compiled with --fmad=false, for compute_80",
     {"version": "9.0", "target": "sm_80", "entries": ["saxpy"],
      "registers": {"pred": 2, "f32": 6, "b32": 6, "b64": 8},
      "instructions": 21, "fma": 0, "ld.global": 2, "st.global": 1}),
    (BLOCK_SUM_PTX, "a block sum through shared memory with one atomicAdd, for compute_90a",
     {"version": "9.0", "target": "sm_90a", "entries": ["block_sum"],
      "registers": {"pred": 7, "f32": 14, "b32": 16, "b64": 13},
      "instructions": 48, "fma": 0, "ld.global": 1, "st.global": 0}),
    (TWO_KERNELS_PTX, "two kernels in one module, one in double with __launch_bounds__(1024)",
     {"version": "9.0", "target": "sm_80", "entries": ["scale", "axpby"],
      "registers": {"pred": 4, "f32": 7, "b32": 12, "b64": 13, "f64": 7},
      "instructions": 40, "fma": 1, "ld.global": 3, "st.global": 2}),
]


SUMMARY_KEYS = ("version", "target", "entries", "registers", "instructions", "fma", "ld.global",
                "st.global")
INSTRUCTION_RULE = (
    "an instruction is a line that, once its // comment is gone, ends with ';' and does not "
    "start with a dot (.reg, .param, .shared, .local are declarations); labels ($L__BB0_2:) "
    "and lines of only '{' or '}' are not instructions either")
FAMILY_RULE = {
    "fma": "count instructions whose opcode is fma or starts with 'fma.' (fma.rn.f32, "
           "fma.rn.f64), wherever a guard (@%p1) stands before it; mad.lo.s32 is an integer "
           "multiply-add, not an fma, and a word in a comment is no instruction",
    "ld.global": "count instructions whose opcode starts with 'ld.global.' (ld.global.f32, "
                 "ld.global.nc.f32, ld.global.v4.f32), a guarded one too; ld.param, ld.shared, "
                 "ld.local and atom.global are other instructions, and a word in a comment is "
                 "no instruction",
    "st.global": "count instructions whose opcode starts with 'st.global.' (st.global.f32, "
                 "st.global.v4.f32), a guarded one too; st.shared and st.local are not global "
                 "stores, and a word in a comment is no instruction",
}
SUMMARY_RULE = {
    "version": "the PTX ISA version, the word after .version, as text ('9.0')",
    "target": "the first word after .target, as text, suffix kept ('sm_90a')",
    "entries": "the names of the .entry functions (the kernels), in the order of the file; a "
               ".func is a device function, not an entry",
}


def summary_problem(got: Any, right: dict[str, Any], call: str) -> str | None:
    """What is wrong with a ptx_summary answer, by key, without the right value."""
    if not isinstance(got, dict):
        return f"{call} returned {got!r:.80}, not a dict"
    missing = [k for k in SUMMARY_KEYS if k not in got]
    if missing:
        return f"{call} has no {', '.join(missing)} (keys: {sorted(got)})"
    for key in ("version", "target", "entries"):
        if got[key] != right[key]:
            return f"{call}: {key} is {got[key]!r:.80}, which is not {SUMMARY_RULE[key]}"
    problem = registers_problem(got["registers"], right["registers"])
    if problem:
        return f"{call}: {problem}"
    for key in ("instructions", "fma", "ld.global", "st.global"):
        mine = got[key]
        if not isinstance(mine, int) or isinstance(mine, bool):
            return f"{call}: {key} is {mine!r:.40}: a whole number"
        if mine != right[key]:
            way = "too many" if mine > right[key] else "too few"
            rule = INSTRUCTION_RULE if key == "instructions" else FAMILY_RULE[key]
            return f"{call}: your {key} count, {mine}, is {way}: {rule}"
    return None


def registers_problem(mine: Any, right: dict[str, int]) -> str | None:
    """What is wrong with a summary's registers, without the right numbers."""
    if not isinstance(mine, dict) or not all(isinstance(n, int) for n in mine.values()):
        return (f"registers is {mine!r:.80}: a dict from each type declared by .reg (without "
                "its dot: 'f32', 'b64', 'pred') to how many registers of it are declared")
    if sorted(mine) != sorted(right):
        return (f"registers has the types {sorted(mine)}, but the .reg lines declare the types "
                f"{sorted(right)} (each type without its dot)")
    if all(mine[t] == n - 1 for t, n in right.items()):
        return ("every count in registers is one short: '.reg .f32 %f<N>;' declares N "
                "registers, so %f<5> declares FIVE, %f0 to %f4, even though the compiler's "
                "code starts at %f1")
    for t in sorted(right):
        if mine[t] != right[t]:
            way = "too many" if mine[t] > right[t] else "too few"
            return (f"registers[{t!r}] is {mine[t]}, {way}: each '.reg .{t} %name<N>;' "
                    f"declares N registers of type {t}, and every declaration of the type in "
                    "the file counts (a module with two kernels declares registers in each)")
    return None


@pytest.mark.points(3)
def test_ptx_summary_samples(learner: Any) -> None:
    """ptx_summary of PTX written by NVRTC: version, target, entries, registers, instructions"""
    for text, what, right in SAMPLES:
        problem = summary_problem(learner.call("ptx_summary", text), right,
                                  f"ptx_summary(<PTX of {what}>)")
        assert problem is None, problem


# -- on a GPU: your kernels, compiled by the check ---------------------------------------------
KERNELS = ("saxpy", "saxpy4")
# What one-element-per-thread SAXPY kernels become in PTX: x[i] and y[i] loaded, one
# multiply-add per float, y[i] stored (float4: one vector load or store moves four floats).
EXPECTED = {
    "saxpy": {"ld.global": 2, "st.global": 1, "fma": 1},
    "saxpy4": {"ld.global": 2, "st.global": 1, "fma": 4},
}
SHAPE = {
    "saxpy": "saxpy(float a, const float* x, float* y, int n): y[i] = a * x[i] + y[i] for the "
             "one i of each thread, under if (i < n), no loop",
    "saxpy4": "saxpy4(float a, const float4* x, float4* y, int n4): the same on the float4 of "
              "each thread, its four floats one after the other, under if (i < n4), no loop",
}


def your_sources(learner: Any) -> dict[str, str]:
    """The learner's two kernels, refused before compiling where they break a rule."""
    got = learner.call("kernel_sources")
    assert isinstance(got, dict) and all(isinstance(got.get(k), str) for k in KERNELS), (
        f"kernel_sources() returned {got!r:.120}: a dict with the CUDA C source of each of "
        f"{', '.join(KERNELS)} (a string)")
    for name in KERNELS:
        problem = trusted.source_problem(got[name])
        assert problem is None, f"your {name}: {problem}"
    return {name: got[name] for name in KERNELS}


def checks_ptx(name: str, source: str, arch: str, options: tuple[str, ...] = ()) -> str:
    """The check's own compile of one of the learner's kernels."""
    try:
        return trusted.own_ptx(source, arch, options)
    except ValueError as exc:
        raise AssertionError(f"your {name} did not compile: {exc}") from None


def code_lines(text: str) -> list[str]:
    """PTX without comments and blank lines, each line stripped."""
    lines = (line.split("//", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line]


def directive(text: str, name: str) -> str | None:
    match = re.search(rf"^\s*\.{name}\s+([\w.]+)", text, re.MULTILINE)
    return match.group(1) if match else None


def compare_compile(learner: Any, name: str, source: str, arch: str,
                    options: tuple[str, ...]) -> None:
    """The learner's compile_ptx against the check's own compile of the same source."""
    call = f"compile_ptx(<your {name}>, {arch!r}, {list(options)})"
    mine = learner.call("compile_ptx", source, arch, list(options))
    assert isinstance(mine, str), f"{call} returned {type(mine).__name__}: the PTX text (str)"
    ours = code_lines(checks_ptx(name, source, arch, options))
    theirs = code_lines(mine)
    if theirs == ours:
        return
    if directive(mine, "target") != directive("\n".join(ours), "target"):
        raise AssertionError(
            f"{call} gives PTX for .target {directive(mine, 'target')}: compile for the "
            f"virtual architecture you are given (--gpu-architecture={arch})")
    line = next((i for i, (a, b) in enumerate(zip(theirs, ours, strict=False)) if a != b),
                min(len(theirs), len(ours)))
    raise AssertionError(
        f"{call} differs from NVRTC's PTX for the same source and options from line {line + 1}"
        f" of the code on (yours: {theirs[line] if line < len(theirs) else '(ends)'!r:.70}, "
        f"NVRTC's: {ours[line] if line < len(ours) else '(ends)'!r:.70}): pass the options "
        "you are given, and no others, and return nvrtcGetPTX's text")


@pytest.mark.gpu
@pytest.mark.points(2)
def test_your_kernels_in_ptx(learner: Any) -> None:
    """your two SAXPY kernels: your compile_ptx against NVRTC's, and your summary of them"""
    sources = your_sources(learner)
    arch = trusted.virtual_arch()
    for name in KERNELS:
        compare_compile(learner, name, sources[name], arch, ())
        text = checks_ptx(name, sources[name], arch)
        call = f"ptx_summary(<PTX of your {name} for {arch}>)"
        got = learner.call("ptx_summary", text)
        assert isinstance(got, dict) and all(k in got for k in SUMMARY_KEYS), (
            f"{call} returned {got!r:.100}: a dict with {', '.join(SUMMARY_KEYS)}")
        for key in ("version", "target"):
            assert got[key] == directive(text, key), (
                f"{call}: {key} is {got[key]!r}, which is not {SUMMARY_RULE[key]}")
        assert got["entries"] == [name], (
            f"{call}: entries is {got['entries']!r:.80}; the PTX has one kernel, {name}: "
            f"declare it extern \"C\" so that its name is not mangled, and list "
            f"{SUMMARY_RULE['entries']}")
        for family, count in EXPECTED[name].items():
            assert got[family] == count, (
                f"{call}: you count {got[family]} {family} instruction(s). A kernel "
                f"{SHAPE[name]} compiles to {EXPECTED[name]['ld.global']} global loads, "
                f"{EXPECTED[name]['st.global']} global store and {EXPECTED[name]['fma']} "
                f"fma: if your ptx_summary passes the samples, look at the kernel (print its "
                "PTX in the notebook), else at how ptx_summary counts")


@pytest.mark.gpu
@pytest.mark.points(1)
def test_compile_ptx_takes_arch_and_options(learner: Any) -> None:
    """compile_ptx for another architecture, and with --fmad=false"""
    sources = your_sources(learner)
    compare_compile(learner, "saxpy", sources["saxpy"], "compute_80", ("--fmad=false",))
    compare_compile(learner, "saxpy4", sources["saxpy4"], "compute_75", ())


# -- on a GPU: registers ------------------------------------------------------------------------
def register_cases(sources: dict[str, str]) -> list[tuple[str, str, str, str, tuple[str, ...]]]:
    """(key, what, source, kernel name, options) of each register count the check records."""
    heavy = trusted.heavy_source()
    return [
        ("saxpy_registers", "your saxpy", sources["saxpy"], "saxpy", ()),
        ("saxpy4_registers", "your saxpy4", sources["saxpy4"], "saxpy4", ()),
        ("heavy_registers", "the heavy kernel", heavy, "heavy", ()),
        ("heavy_registers_maxrreg32", "the heavy kernel with --maxrregcount=32", heavy, "heavy",
         ("--maxrregcount=32",)),
        ("heavy_registers_bounds1024", "the heavy kernel with __launch_bounds__(1024)",
         trusted.heavy_source(bounds="__launch_bounds__(1024)"), "heavy", ()),
    ]


def registers_shape(got: Any, call: str) -> None:
    keys = ("registers", "local_bytes")
    assert isinstance(got, dict) and all(
        isinstance(got.get(k), int) and not isinstance(got.get(k), bool) for k in keys), (
        f"{call} returned {got!r:.100}: a dict with 'registers' (per thread) and 'local_bytes' "
        "(local memory per thread), both whole numbers from the compiled kernel")


def compare_registers(learner: Any, measured: Any, cases: Any) -> None:
    """The learner's kernel_registers against the driver's own answer, each recorded."""
    wrong = []
    for key, what, source, name, options in cases:
        call = f"kernel_registers(<{what}>, {name!r}, {list(options)})"
        got = learner.call("kernel_registers", source, name, list(options))
        registers_shape(got, call)
        ours = trusted.own_registers(source, name, options)
        measured(key, label=f"registers per thread of {what}", unit="registers",
                 yours=got["registers"], trusted=ours["registers"], tolerance=0)
        if options == ("--maxrregcount=32",):
            measured("heavy_local_bytes_maxrreg32",
                     label=f"local memory per thread of {what}", unit="bytes",
                     yours=got["local_bytes"], trusted=ours["local_bytes"], tolerance=0)
        if got == ours:
            continue
        plain = trusted.own_registers(source, name, ())
        if got["registers"] != ours["registers"] and options and got == plain:
            why = ("that is what it uses compiled WITHOUT the options: pass them to the "
                   "compiler (RawModule's options)")
        elif got["registers"] != ours["registers"]:
            why = ("read num_regs of the kernel compiled from this source with exactly these "
                   "options")
        else:
            why = ("local_bytes is the kernel's local memory per thread (local_size_bytes), "
                   "where the registers that did not fit go")
        wrong.append(f"{call} gives {got}, but the driver reports {ours} for the same compile: "
                     f"{why}")
    assert not wrong, "\n".join(wrong[:2])


@pytest.mark.gpu
@pytest.mark.points(3)
def test_registers_match_the_driver(learner: Any, measured: Any) -> None:
    """registers and local memory of your kernels and of the heavy kernel, capped and bounded"""
    cases = register_cases(your_sources(learner))
    compare_registers(learner, measured, cases)
    capped = trusted.own_registers(cases[3][2], "heavy", ("--maxrregcount=32",))
    bounded = trusted.own_registers(cases[4][2], "heavy", ())
    assert capped["registers"] <= 32 and bounded["registers"] <= 64, (
        f"the check's own compiles broke their caps ({capped}, {bounded}): report this")
