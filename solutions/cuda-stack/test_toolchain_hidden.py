"""Hidden checks of the toolchain exercise: inputs drawn afresh for every run.

Every check draws its inputs from the run's seed (`gpulab.grading.checks.draws`;
GPULAB_CHECK_SEED=<n> replays a run) and names it when it fails. Without a
GPU: `can_run` meets hundreds of random cases (GPUs from Turing to Blackwell,
drivers and toolkits from CUDA 10.0 to 13.5, fat binaries of one to four SASS
and PTX images, plain, 'a' and 'f') and cases built on purpose around each
rule, all compared with this file's own decision (`decide`); `ptx_summary`
meets random PTX made to look like NVRTC's, with guards, vector loads,
shared, local and parameter loads, atomics, comments that mention opcodes,
several kernels and device functions, compared with this file's own reading
(`summarize`). With a GPU: your kernels compiled with random options for
random architectures and summarised by both sides, and the heavy kernel with
random sizes, register caps and launch bounds against the driver's counts.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from types import ModuleType
from typing import Any

import pytest

from gpulab.grading.checks.draws import SEEN, rng, telling
from gpulab.grading.checks.pytest_plugin import visible_checks
from gpulab.grading.checks.reference import toolchain as trusted


def _visible() -> ModuleType:
    """The visible checks' module (one copy of the helpers for both files)."""
    return visible_checks(__file__)


_V = _visible()
PTX_ISA_CUDA, as_version, split_arch = _V.PTX_ISA_CUDA, _V.as_version, _V.split_arch
judge, summary_problem, your_sources = _V.judge, _V.summary_problem, _V.your_sources
checks_ptx, compare_compile, compare_registers = _V.checks_ptx, _V.compare_compile, \
    _V.compare_registers
KERNELS, EXPECTED, SHAPE = _V.KERNELS, _V.EXPECTED, _V.SHAPE


# -- the check's own decision ------------------------------------------------------------------
def runtime_starts(driver: str, built: str) -> bool:
    """Backward compatibility, and minor-version compatibility within a major from CUDA 11."""
    d, b = as_version(driver), as_version(built)
    return d >= b or (d[0] == b[0] and b[0] >= 11)


def fits_gpu(arch: str, gpu: tuple[int, int]) -> bool:
    """Whether an image of `arch` can serve a GPU of compute capability `gpu` at all."""
    kind, major, minor, suffix = split_arch(arch)
    if suffix == "a":
        return (major, minor) == gpu
    if suffix == "f" or kind == "sass":
        return major == gpu[0] and minor <= gpu[1]
    return gpu >= (major, minor)  # plain PTX: any later GPU, through the JIT


def decide(case: dict[str, Any]) -> dict[str, Any]:
    """The check's own can_run."""
    gpu, driver = as_version(case["gpu_cc"]), as_version(case["driver_cuda"])
    if not runtime_starts(case["driver_cuda"], case["built_with"]):
        return {"runs": False, "how": None, "reason": "driver-too-old", "usable": []}
    usable, too_new = [], False
    for image in case["embedded"]:
        if not fits_gpu(image["arch"], gpu):
            continue
        if image["kind"] == "ptx" and driver < as_version(PTX_ISA_CUDA[image["isa"]]):
            too_new = True
            continue
        usable.append(image["arch"])
    kinds = {split_arch(arch)[0] for arch in usable}
    if "sass" in kinds:
        return {"runs": True, "how": "sass", "reason": "native", "usable": usable}
    if "ptx" in kinds:
        return {"runs": True, "how": "ptx-jit", "reason": "jit", "usable": usable}
    reason = "ptx-too-new" if too_new else "no-image"
    return {"runs": False, "how": None, "reason": reason, "usable": []}


# -- random cases ----------------------------------------------------------------------------
GPUS = {"T4": "7.5", "A100": "8.0", "A10": "8.6", "L40S": "8.9", "H100": "9.0", "H200": "9.0",
        "GH200": "9.0", "B200": "10.0", "B300": "10.3", "RTX PRO 6000": "12.0"}
FIRST_DRIVER = {"7.5": "10.0", "8.0": "11.0", "8.6": "11.1", "8.9": "11.8", "9.0": "11.8",
                "10.0": "12.8", "10.3": "12.9", "12.0": "12.8"}
DRIVERS = ([f"10.{m}" for m in range(3)] + [f"11.{m}" for m in range(9)]
           + [f"12.{m}" for m in range(10)] + [f"13.{m}" for m in range(6)])
TOOLKITS = ([f"10.{m}" for m in range(3)] + [f"11.{m}" for m in range(9)]
            + [f"12.{m}" for m in (0, 1, 2, 3, 4, 5, 6, 8, 9)] + [f"13.{m}" for m in range(6)])
# The PTX ISA each toolkit writes (CUDA 12.6 still wrote 8.5; there was no CUDA 12.7 toolkit).
TOOLKIT_ISA = {"12.6": "8.5", "12.8": "8.7", "12.9": "8.8"}
# The first toolkit that compiles for each target, and the one that dropped it.
ARCH_SINCE = {"70": "10.0", "75": "10.0", "80": "11.0", "86": "11.1", "89": "11.8", "90": "11.8",
              "90a": "12.0", "100": "12.8", "100a": "12.8", "120": "12.8", "120a": "12.8",
              "103": "12.9", "103a": "12.9", "100f": "12.9", "103f": "12.9", "120f": "12.9"}
ARCH_UNTIL = {"70": "13.0"}


def isa_of(toolkit: str) -> str:
    if toolkit in TOOLKIT_ISA:
        return TOOLKIT_ISA[toolkit]
    major, minor = as_version(toolkit)
    return {10: f"6.{minor + 3}", 11: f"7.{minor}", 12: f"8.{minor}", 13: f"9.{minor}"}[major]


def targets_of(toolkit: str) -> list[str]:
    """The targets (90, 90a, 100f, ...) that `toolkit` compiles for."""
    v = as_version(toolkit)
    return [t for t, since in ARCH_SINCE.items()
            if as_version(since) <= v and (t not in ARCH_UNTIL or v < as_version(ARCH_UNTIL[t]))]


def random_case(r: random.Random) -> dict[str, Any]:
    """A machine and an application that could meet: the GPU's driver supports it, the
    application's images are ones its toolkit can make."""
    gpu = r.choice(list(GPUS))
    cc = GPUS[gpu]
    drivers = [d for d in DRIVERS if as_version(d) >= as_version(FIRST_DRIVER[cc])]
    driver = r.choice(drivers)
    dv = as_version(driver)
    plan = r.choice(("newer driver", "newer driver", "same major", "same major", "newer major"))
    if plan == "same major":
        pool = [t for t in TOOLKITS if as_version(t)[0] == dv[0] and as_version(t) > dv]
    elif plan == "newer major":
        pool = [t for t in TOOLKITS if as_version(t)[0] > dv[0]]
    else:
        pool = [t for t in TOOLKITS if as_version(t) <= dv]
    built = r.choice(pool or [t for t in TOOLKITS if as_version(t) <= dv])
    targets = targets_of(built)
    gpu_target = cc.replace(".", "")
    near = [t for t in targets if t.rstrip("af")[:-1] == gpu_target[:-1]
            or int(t.rstrip("af")[:-1]) == int(gpu_target[:-1]) - 1]
    images: list[dict[str, str]] = []
    for _ in range(r.randint(1, 4)):
        target = r.choice(near if near and r.random() < 0.7 else targets)
        kind = r.choice(("sass", "ptx"))
        image = ({"kind": "sass", "arch": f"sm_{target}"} if kind == "sass" else
                 {"kind": "ptx", "arch": f"compute_{target}", "isa": isa_of(built)})
        if all(i["arch"] != image["arch"] for i in images):
            images.append(image)
    return {"gpu": gpu, "gpu_cc": cc, "driver_cuda": driver, "built_with": built,
            "embedded": images}


def on_purpose(r: random.Random) -> list[dict[str, Any]]:
    """Cases made around each rule: 'a' and 'f' images next to the GPU's own target, PTX of
    an ISA just newer or just as new as the driver's, runtimes one minor or one major ahead."""
    cases = []
    for gpu, cc in (("H100", "9.0"), ("B200", "10.0"), ("B300", "10.3"), ("RTX PRO 6000", "12.0")):
        major, minor = as_version(cc)
        for target in (f"{major}{minor}", f"{major}0", f"{major}3"):
            for suffix in ("", "a", "f"):
                t = target + suffix
                built = r.choice([b for b in TOOLKITS if as_version(b) >= (12, 9)])
                driver = r.choice([d for d in DRIVERS if as_version(d) >= as_version(built)])
                if t not in targets_of(built) or t in ("90f", "123", "123a", "123f"):
                    continue
                kind = r.choice(("sass", "ptx"))
                image = ({"kind": "sass", "arch": f"sm_{t}"} if kind == "sass" else
                         {"kind": "ptx", "arch": f"compute_{t}", "isa": isa_of(built)})
                cases.append({"gpu": gpu, "gpu_cc": cc, "driver_cuda": driver,
                              "built_with": built, "embedded": [image]})
    for _ in range(12):  # PTX against the driver's JIT, within one major
        built = r.choice([t for t in TOOLKITS if as_version(t) >= (11, 1)])
        same = [d for d in DRIVERS if as_version(d)[0] == as_version(built)[0]
                and as_version(d) >= (11, 8)]
        if not same:
            continue
        driver = r.choice(same)
        target = r.choice(["75", "80", "86", "89", "90"][: 2 + (as_version(built) >= (11, 8)) * 3])
        cases.append({"gpu": "H100", "gpu_cc": "9.0", "driver_cuda": driver, "built_with": built,
                      "embedded": [{"kind": "ptx", "arch": f"compute_{target}",
                                    "isa": isa_of(built)}]})
    for major in (11, 12, 13):  # one major ahead, and one minor ahead
        for built, driver in ((f"{major}.{r.randint(1, 5)}", f"{major - 1}.{r.randint(0, 2)}"),
                              (f"{major}.{r.randint(1, 5)}", f"{major}.0")):
            if built not in TOOLKITS or driver not in DRIVERS:
                continue
            cases.append({"gpu": "T4", "gpu_cc": "7.5", "driver_cuda": driver, "built_with": built,
                          "embedded": [{"kind": "sass", "arch": "sm_75"}]})
    cases.append({"gpu": "T4", "gpu_cc": "7.5", "driver_cuda": "10.1", "built_with": "10.2",
                  "embedded": [{"kind": "sass", "arch": "sm_75"}]})
    r.shuffle(cases)
    return cases


def judge_all(learner: Any, cases: list[dict[str, Any]], about: str) -> None:
    wrong = []
    with telling(about):
        for c in cases:
            problem = judge(c, learner.call("can_run", c), decide(c))
            if problem:
                wrong.append(problem)
    assert not wrong, (f"{len(wrong)} of {len(cases)} {about} are misjudged {SEEN}; for "
                       "example:\n  " + "\n  ".join(wrong[:2]))


@pytest.mark.points(4)
def test_can_run_random_cases(learner: Any) -> None:
    """can_run on 300 random machines and applications"""
    r = rng("can_run_random_cases")
    cases = [random_case(r) for _ in range(300)]
    judge_all(learner, cases, "random cases")


@pytest.mark.points(2)
def test_can_run_cases_around_each_rule(learner: Any) -> None:
    """can_run on 'a' and 'f' targets beside the GPU's own, PTX at the JIT's edge, majors"""
    judge_all(learner, on_purpose(rng("can_run_around_each_rule")), "cases made around a rule")


# -- the check's own reading of PTX ------------------------------------------------------------
FAMILIES = ("fma", "ld.global", "st.global")
_REG = re.compile(r"\.reg\s+\.(\w+)\s+%[\w$]+<(\d+)>\s*;")
_ENTRY = re.compile(r"\.entry\s+([\w$]+)")


def summarize(ptx: str) -> dict[str, Any]:
    """The check's own ptx_summary, by the notebook's rules."""
    out: dict[str, Any] = {"version": None, "target": None, "entries": [], "registers": {},
                           "instructions": 0, "fma": 0, "ld.global": 0, "st.global": 0}
    registers: Counter[str] = Counter()
    for raw in ptx.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line or line in ("{", "}") or line.endswith(":"):
            continue
        words = line.replace(",", " ").split()
        if words[0] in (".version", ".target") and out[words[0][1:]] is None:
            out[words[0][1:]] = words[1]
        entry = _ENTRY.search(line)
        if entry:
            out["entries"].append(entry.group(1))
        declared = _REG.fullmatch(line)
        if declared:
            registers[declared.group(1)] += int(declared.group(2))
        if line.startswith(".") or not line.endswith(";"):
            continue
        opcode = (words[1] if words[0].startswith("@") else words[0]).rstrip(";")
        out["instructions"] += 1
        for family in FAMILIES:
            if opcode == family or opcode.startswith(family + "."):
                out[family] += 1
    out["registers"] = dict(registers)
    return out


# Instruction lines for random PTX, with neighbours a careless reader may count as fma,
# ld.global or st.global (mad, ldu.global, ld.shared, atom.global, cvta.to.global ...).
BODY = [
    "ld.param.u64 \t%rd{a}, [{k}_param_{p}];", "ld.param.f32 \t%f{a}, [{k}_param_{p}];",
    "mov.u32 \t%r{a}, %tid.x;", "mad.lo.s32 \t%r{a}, %r{b}, %r{c}, %r{d};",
    "cvta.to.global.u64 \t%rd{a}, %rd{b};", "mul.wide.s32 \t%rd{a}, %r{b}, 4;",
    "add.s64 \t%rd{a}, %rd{b}, %rd{c};", "setp.ge.s32 \t%p{a}, %r{b}, %r{c};",
    "ld.global.f32 \t%f{a}, [%rd{b}];", "ld.global.nc.f32 \t%f{a}, [%rd{b}];",
    "ld.global.v4.f32 \t{{%f{a}, %f{b}, %f{c}, %f{d}}}, [%rd{e}];",
    "ld.global.v2.u64 \t{{%rd{a}, %rd{b}}}, [%rd{c}];", "ldu.global.f32 \t%f{a}, [%rd{b}];",
    "ld.shared.f32 \t%f{a}, [%rd{b}];", "ld.local.f32 \t%f{a}, [%rd{b}];",
    "st.global.f32 \t[%rd{a}], %f{b};",
    "st.global.v4.f32 \t[%rd{a}], {{%f{b}, %f{c}, %f{d}, %f{e}}};",
    "st.shared.f32 \t[%rd{a}], %f{b};", "st.local.f32 \t[%rd{a}], %f{b};",
    "fma.rn.f32 \t%f{a}, %f{b}, %f{c}, %f{d};", "fma.rn.ftz.f32 \t%f{a}, %f{b}, %f{c}, %f{d};",
    "fma.rn.f64 \t%fd{a}, %fd{b}, %fd{c}, %fd{d};", "mul.rn.f32 \t%f{a}, %f{b}, %f{c};",
    "add.f32 \t%f{a}, %f{b}, %f{c};", "atom.global.add.f32 \t%f{a}, [%rd{b}], %f{c};",
    "red.global.add.f32 \t[%rd{a}], %f{b};", "bar.sync \t0;",
    "shfl.sync.bfly.b32 \t%r{a}, %r{b}, 16, 31, -1;",
    "cvt.rn.f32.s32 \t%f{a}, %r{b};", "selp.f32 \t%f{a}, %f{b}, %f{c}, %p{d};",
]
COMMENTS = ["// fma.rn.f32 would do this in one instruction", "// ld.global.f32 of x[i]",
            "// st.global.f32 \t[%rd4], %f1;", "// demoted variable", "// begin inline asm",
            "// .reg .f32 %f<9>;"]
TARGETS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100f", "sm_103a",
           "sm_120")
TYPES = (("pred", "%p"), ("b16", "%rs"), ("f32", "%f"), ("b32", "%r"), ("f64", "%fd"),
         ("b64", "%rd"), ("f32", "%ftmp"), ("b32", "%hr"))


def random_ptx(r: random.Random) -> str:
    """PTX shaped like NVRTC's: a header, one to three kernels and maybe a device function."""
    lines = ["//", "// Generated by NVIDIA NVVM Compiler", "//",
             f"// Compiler Build ID: CL-{r.randint(30000000, 39999999)}", "//", "",
             f".version {r.choice(list(PTX_ISA_CUDA))}",
             f".target {r.choice(TARGETS)}",
             ".address_size 64", ""]
    functions = [("entry", f"k{i}_{r.randint(0, 999)}") for i in range(r.randint(1, 3))]
    if r.random() < 0.4:
        functions.insert(r.randint(0, len(functions)), ("func", f"helper{r.randint(0, 99)}"))
    for kind, name in functions:
        lines.append(f"\t// .globl\t{name}")
        if kind == "entry":
            lines.append(f".visible .entry {name}(")
            params = r.randint(1, 4)
            lines += [f"\t.param .u64 {name}_param_{p}" + ("," if p < params - 1 else "")
                      for p in range(params)]
            lines.append(")")
            if r.random() < 0.3:
                lines.append(f".maxntid {r.choice([128, 256, 1024])}, 1, 1")
        else:
            lines += [f".func  (.param .b32 func_retval0) {name}(", f"\t.param .b32 {name}_p0",
                      ")"]
        lines.append("{")
        for t, prefix in r.sample(TYPES, r.randint(1, len(TYPES))):
            lines.append(f"\t.reg .{t} \t{prefix}<{r.randint(1, 60)}>;")
        if r.random() < 0.4:
            lines.append(f"\t.shared .align 4 .b8 {name}_tile[{r.choice([512, 1024, 4096])}];")
        if r.random() < 0.3:
            depot = f"__local_depot{r.randint(0, 3)}[{r.randint(4, 99) * 8}]"
            lines.append(f"\t.local .align 16 .b8 \t{depot};")
        lines.append("")
        for block in range(r.randint(1, 4)):
            if block:
                lines += ["", f"$L__BB{r.randint(0, 9)}_{block}:"]
            for _ in range(r.randint(2, 14)):
                text = r.choice(BODY).format(k=name, p=r.randint(0, 3), a=r.randint(1, 40),
                                             b=r.randint(1, 40), c=r.randint(1, 40),
                                             d=r.randint(1, 40), e=r.randint(1, 40))
                if r.random() < 0.15:
                    text = f"@{r.choice(['', '!'])}%p{r.randint(1, 6)} {text}"
                if r.random() < 0.1:
                    text += "\t" + r.choice(COMMENTS)
                lines.append("\t" + text)
                if r.random() < 0.08:
                    lines.append("\t" + r.choice(COMMENTS))
            if r.random() < 0.5:
                lines.append(f"\t@%p{r.randint(1, 6)} bra \t$L__BB{r.randint(0, 9)}_{block + 1};")
        lines += ["\tret;", "", "}"]
    return "\n".join(lines) + "\n"


@pytest.mark.points(3)
def test_ptx_summary_random_ptx(learner: Any) -> None:
    """ptx_summary of 60 random PTX files: guards, vector loads, comments, several kernels"""
    r = rng("ptx_summary_random_ptx")
    with telling("random PTX"):
        for number in range(60):
            text = random_ptx(r)
            problem = summary_problem(learner.call("ptx_summary", text), summarize(text),
                                      f"ptx_summary(<random PTX file {number + 1}>)")
            assert problem is None, f"{problem} {SEEN}\nThe file:\n{text[:3000]}"


# -- on a GPU ----------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.points(2)
def test_your_kernels_with_other_options(learner: Any) -> None:
    """your kernels for random architectures and options: compile_ptx, and your summary"""
    r = rng("your_kernels_with_other_options")
    sources = your_sources(learner)
    archs = ["compute_75", "compute_80", "compute_86", "compute_89", trusted.virtual_arch()]
    for name in KERNELS:
        for options in ((), (r.choice(("--fmad=false", "-use_fast_math", "--fmad=true")),)):
            arch = r.choice(archs)
            compare_compile(learner, name, sources[name], arch, options)
            text = checks_ptx(name, sources[name], arch, options)
            right = summarize(text)
            problem = summary_problem(learner.call("ptx_summary", text), right,
                                      f"ptx_summary(<PTX of your {name} for {arch}, "
                                      f"{list(options)}>)")
            assert problem is None, problem
            if "--fmad=false" not in options:
                got = {family: right[family] for family in FAMILIES}
                assert got == EXPECTED[name], (
                    f"your {name} compiles (for {arch}, {list(options)}) to {got}: a kernel "
                    f"{SHAPE[name]} has {EXPECTED[name]}")


@pytest.mark.gpu
@pytest.mark.points(2)
def test_registers_random_kernels(learner: Any, measured: Any) -> None:
    """kernel_registers on heavy kernels of random sizes, caps and launch bounds"""
    r = rng("registers_random_kernels")
    cases = []
    for number in range(4):
        values = r.randint(16, 160)
        if number % 2:
            cap = r.randint(24, 128)
            cases.append((f"random_heavy_{number}", f"a heavy kernel of {values} values with "
                          f"--maxrregcount={cap}", trusted.heavy_source(values), "heavy",
                          (f"--maxrregcount={cap}",)))
        else:
            threads = r.choice((128, 256, 512, 1024))
            blocks = r.randint(1, min(4, 2048 // threads))  # within an SM's 2048 threads
            bounds = f"__launch_bounds__({threads}, {blocks})"
            cases.append((f"random_heavy_{number}", f"a heavy kernel of {values} values with "
                          f"{bounds}", trusted.heavy_source(values, bounds), "heavy", ()))
    with telling("random heavy kernels"):
        compare_registers(learner, measured, cases)
