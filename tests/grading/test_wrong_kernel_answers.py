"""Wrong but plausible kernel answers, graded by the real runner; and the rules of kernel answers.

Each notebook under tests/fixtures/wrong_answers/<exercise>/ (vector-add,
reduction, tiled-matmul, coalescing, bank-conflicts) is a complete answer
with one kind of mistake; the README beside them says which. On a GPU (the
``gpu`` tests) each is graded by `run_checks` with the visible and the hidden
checks, as a grading run does: it must not get full marks, the checks named
in `WRONG` must fail, and their messages must name the mistake without
handing over the fix. A mistake only compute-sanitizer is sure to catch (a
race that may not show in the sums) is skipped, with its reason, where the
sanitizer cannot run: never taken as a pass.

Without a GPU: the rules of kernel answers refuse what they should and
nothing else, before anything is compiled (this machine has no CuPy, so a
source that reached the compiler would fail differently); the fixtures that
break a rule are refused; compute-sanitizer's reports are read right, and a
missing or failing sanitizer is a skip with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gpulab.course import load_course
from gpulab.course.manifest import ExerciseEntry
from gpulab.grading.build import solution_path
from gpulab.grading.checks.cells import answer_cells, setup_cells
from gpulab.grading.checks.gpu import KernelAnswerError, gpu_missing, run_kernel, sanitize_kernel
from gpulab.grading.checks.learner import Learner
from gpulab.grading.checks.notebook import read_notebook
from gpulab.grading.checks.runner import CheckReport
from gpulab.grading.checks.tasks import copy_floats, reduce_sum, sgemm, transpose, vector_add
from gpulab.grading.checks.tasks.common import TaskError
from gpulab.grading.checks.tasks.rules import Rules, check_rules, violations
from gpulab.grading.checks.tasks.sanitize import NOT_AVAILABLE, parse, verdict
from helpers.wrong_answers import run_corpus

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "wrong_answers"
KERNELS = {  # exercise: (the answer function giving the source, the task, its rules)
    "vector-add": ("vector_add_source", "vector_add", vector_add.RULES),
    "reduction": ("reduce_sum_source", "reduce_sum", reduce_sum.RULES),
    "tiled-matmul": ("sgemm_source", "sgemm", sgemm.RULES),
    "coalescing": ("copy_floats_source", "copy_floats", copy_floats.RULES),
    "bank-conflicts": ("transpose_source", "transpose", transpose.RULES),
}
RULE_2 = "rule 2 (nothing kept between launches)"


@dataclass(frozen=True)
class Wrong:
    exercise: str
    name: str
    says: dict[str, tuple[str, ...]]  # check -> words its failing message must hold
    never: tuple[str, ...] = ()  # the fix's code: no message may hold it
    sanitizer: bool = False  # only compute-sanitizer is sure to catch it
    may_fail: frozenset[str] = field(default_factory=frozenset)  # for the reader


WRONG = [
    Wrong(
        "vector-add",
        "overrun",
        {
            "test_edge_sizes": ("just past the end of c",),
            "test_grid_stride": ("past the end of c",),
            "test_repeated_launches": ("past the end of c",),
            "test_speed": ("speed does not count", "past the end of c"),
            "test_secret_sizes": ("past the end of c",),
        },
        never=("i < n",),
    ),
    Wrong(
        "vector-add",
        "chunk-per-thread",
        {"test_speed": ("trusted grid-stride kernel", "neighbouring threads")},
    ),
    Wrong(
        "vector-add",
        "one-element-per-thread",
        {
            "test_launch_config": ("grows with n",),
            "test_grid_stride": ("never written", "keep going"),
            "test_repeated_launches": ("never written",),
            "test_secret_sizes": ("never written",),
        },
    ),
    Wrong(
        "vector-add",
        "device-cache",
        {
            check: (RULE_2, "line 3")
            for check in (
                "test_edge_sizes",
                "test_grid_stride",
                "test_repeated_launches",
                "test_speed",
                "test_secret_sizes",
            )
        },
    ),
    Wrong(
        "reduction",
        "no-tail",
        {
            "test_small_sizes": ("float4",),
            "test_large_sizes": ("n % 4",),
            "test_grid_stride": ("n % 4",),
            "test_speed": ("does not count",),
            "test_round_edges": ("n % 4",),
        },
    ),
    Wrong(
        "reduction",
        "partial-per-block",
        {
            "test_large_sizes": ("next to out[0]",),
            "test_grid_stride": ("next to out[0]",),
            "test_repeated_launches": ("next to out[0]",),
            "test_speed": ("does not count", "next to out[0]"),
        },
        never=("atomicAdd(out, v)",),
    ),
    Wrong(
        "reduction",
        "tree-without-syncthreads",
        {"test_sanitizer": ("racecheck", "shared-memory race", "__syncthreads()")},
        sanitizer=True,
        may_fail=frozenset({"test_repeated_launches", "test_speed"}),
    ),
    Wrong(
        "reduction",
        "cub-block-reduce",
        {
            check: ("rule 1 (no libraries)", "line 2", "your own tree")
            for check in (
                "test_small_sizes",
                "test_large_sizes",
                "test_grid_stride",
                "test_repeated_launches",
                "test_speed",
                "test_secret_sizes",
                "test_round_edges",
            )
        },
    ),
    Wrong(
        "tiled-matmul",
        "edge-loads-skipped",
        {
            "test_small_sizes": ("right on 128 x 128 x 128", "must read 0"),
            "test_tiles_and_edges": ("right on 128 x 128 x 128",),
            "test_repeated_launches": ("went wrong",),
            "test_thin_long_and_secret_sizes": ("right on 128 x 128 x 128",),
        },
    ),
    Wrong(
        "tiled-matmul",
        "second-barrier-missing",
        {"test_sanitizer": ("racecheck", "shared-memory race", "barrier")},
        sanitizer=True,
        may_fail=frozenset({"test_repeated_launches", "test_tiles_and_edges"}),
    ),
    Wrong(
        "tiled-matmul",
        "device-cache",
        {
            check: (RULE_2, "line 5")
            for check in (
                "test_small_sizes",
                "test_tiles_and_edges",
                "test_repeated_launches",
                "test_speed",
                "test_thin_long_and_secret_sizes",
                "test_speed_non_square",
            )
        },
    ),
    Wrong(
        "tiled-matmul",
        "skip-when-done",
        {
            "test_speed": ("one output per thread",),
            "test_speed_non_square": ("of it, 0.25 needed",),
        },
    ),
    Wrong(
        "coalescing",
        "chunk-per-thread",
        {"test_copy_speed": ("neighbouring threads read neighbouring addresses", "chunk")},
    ),
    Wrong(
        "coalescing",
        "float4-no-tail",
        {
            "test_copy_sizes": ("past dst[n - 1] were written",),
            "test_copy_grid_stride": ("past dst[n - 1]",),
            "test_copy_repeated": ("past dst[n - 1]",),
            "test_copy_speed": ("does not count",),
            "test_secret_sizes_and_grids": ("past dst[n - 1]",),
        },
    ),
    Wrong(
        "coalescing",
        "one-float4-per-thread",
        {
            "test_copy_launch_config": ("grows with n",),
            "test_copy_grid_stride": ("never written", "keep going"),
            "test_copy_repeated": ("never written",),
            "test_secret_sizes_and_grids": ("never written",),
        },
    ),
    Wrong(
        "bank-conflicts",
        "padding-wrong-side",
        {
            "test_speed": ("padded reference", "needed: at least 0.8"),
            "test_speed_wide": ("padded reference",),
        },
    ),
    Wrong(
        "bank-conflicts",
        "row-length-cols",
        {
            "test_transpose_is_right": (
                "right on every square matrix",
                "how long is one of its rows",
            ),
            "test_repeated_launches": ("went wrong",),
        },
        never=("oy * rows",),
    ),
    Wrong(
        "bank-conflicts",
        "missing-barrier",
        {"test_sanitizer": ("racecheck", "shared-memory race")},
        sanitizer=True,
        may_fail=frozenset({"test_repeated_launches"}),
    ),
]


def notebook(wrong: Wrong) -> Path:
    return FIXTURES / wrong.exercise / f"{wrong.name}.ipynb"


def entry(exercise: str) -> ExerciseEntry:
    return next(e for e in load_course().exercises() if e.name == exercise)


def kernel_source(exercise: str, path: Path) -> str:
    """The kernel text a notebook's answer gives, through a worker as the checks get it."""
    released = read_notebook(entry(exercise).notebook)
    cells = read_notebook(path)
    with Learner([*setup_cells(released), *answer_cells(cells, path).values()]) as learner:
        source = learner.call(KERNELS[exercise][0])
    assert isinstance(source, str)
    return source


# -- no GPU needed: the fixtures ---------------------------------------------------------
def test_every_fixture_is_listed_and_valid() -> None:
    listed = {(w.exercise, w.name) for w in WRONG}
    found = {
        (p.parent.name, p.stem)
        for exercise in KERNELS
        for p in (FIXTURES / exercise).glob("*.ipynb")
    }
    assert found == listed
    for wrong in WRONG:
        cells = read_notebook(notebook(wrong))
        released = read_notebook(entry(wrong.exercise).notebook)
        assert set(answer_cells(cells, notebook(wrong))) == set(
            answer_cells(released, entry(wrong.exercise).notebook)
        )
    counts = {exercise: sum(w.exercise == exercise for w in WRONG) for exercise in KERNELS}
    assert min(counts.values()) >= 3, counts


@pytest.mark.parametrize(
    ("exercise", "name", "line"),
    [
        ("vector-add", "device-cache", 3),
        ("reduction", "cub-block-reduce", 2),
        ("tiled-matmul", "device-cache", 5),
    ],
)
def test_fixtures_that_break_a_rule_are_refused(exercise: str, name: str, line: int) -> None:
    source = kernel_source(exercise, FIXTURES / exercise / f"{name}.ipynb")
    with pytest.raises(TaskError) as caught:
        check_rules(source, KERNELS[exercise][2])
    assert caught.value.kind == "rule" and f"line {line}:" in str(caught.value)


@pytest.mark.parametrize("exercise", list(KERNELS))
def test_the_solutions_and_the_other_fixtures_keep_the_rules(exercise: str) -> None:
    sources = [kernel_source(exercise, solution_path(entry(exercise)))]
    sources += [
        kernel_source(exercise, notebook(w))
        for w in WRONG
        if w.exercise == exercise and w.name not in ("device-cache", "cub-block-reduce")
    ]
    for source in sources:
        assert violations(source, KERNELS[exercise][2]) == []


# -- no GPU needed: the rules --------------------------------------------------------------
KERNEL_HEAD = 'extern "C" __global__ void k(float* c, int n)\n{\n'


@pytest.mark.parametrize(
    ("source", "line", "words"),
    [
        ("#include <cub/cub.cuh>\n" + KERNEL_HEAD + "}\n", 1, "rule 1 (no libraries)"),
        ('#include "thrust/reduce.h"\n' + KERNEL_HEAD + "}\n", 1, "rule 1"),
        ("__device__ float cache[1024];\n" + KERNEL_HEAD + "}\n", 1, "no __device__ variables"),
        ("__device__ int seen = 0;\n" + KERNEL_HEAD + "}\n", 1, "no __device__ variables"),
        ("__device__ const float* last;\n" + KERNEL_HEAD + "}\n", 1, "no __device__ variables"),
        ("__managed__ int seen;\n" + KERNEL_HEAD + "}\n", 1, "no __managed__ variables"),
        ("__constant__ float scale[4];\n" + KERNEL_HEAD + "}\n", 1, "no __constant__ variables"),
        (
            KERNEL_HEAD + "    static int calls = 0;\n    c[0] = ++calls;\n}\n",
            3,
            "no static variables except __shared__ or const",
        ),
        (KERNEL_HEAD + "    static const float* last;\n}\n", 3, "no static variables"),
        (KERNEL_HEAD + '    asm volatile("membar.gl;");\n}\n', 3, "rule 3 (CUDA C only)"),
        ("#define DEV __device__\nDEV int x;\n" + KERNEL_HEAD + "}\n", 1, "rule 4"),
        ("#define CAT(a, b) a ## b\n" + KERNEL_HEAD + "}\n", 1, "no ## token pasting"),
    ],
)
def test_rules_refuse_state_libraries_and_asm_with_rule_and_line(
    source: str, line: int, words: str
) -> None:
    found = violations(source, Rules("an exercise"))
    assert found and found[0].line == line and words in found[0].rule, found


@pytest.mark.parametrize(
    ("source", "rules", "line"),
    [
        (KERNEL_HEAD + "    typedef cub::BlockReduce<float, 256> R;\n}\n", reduce_sum.RULES, 3),
        (
            KERNEL_HEAD + "    float s = cooperative_groups::reduce(g, v, op);\n}\n",
            reduce_sum.RULES,
            3,
        ),
        (KERNEL_HEAD + "    int s = __reduce_add_sync(~0u, 1);\n}\n", reduce_sum.RULES, 3),
        (KERNEL_HEAD + "    nvcuda::wmma::fragment<> f;\n}\n", sgemm.RULES, 3),
    ],
)
def test_an_exercise_adds_rules_of_its_own(source: str, rules: Rules, line: int) -> None:
    found = violations(source, rules)
    assert [v.line for v in found] == [line] and f"a rule of {rules.exercise}" in found[0].rule


def test_rules_leave_functions_scratch_constants_comments_and_text_alone() -> None:
    source = """
#include <cuda_fp16.h>
#include "cuda_bf16.h"
#define TILE 32                  // __device__ int in_a_comment;
/* static int counter; asm("nop"); cub::BlockReduce */
static const int WARPS = 8;
constexpr int LANES = 32;
template <int PAD>
__device__ __forceinline__ float lane_sum(float v) { return v; }
static __device__ float helper(float v) { return v; }
__host__ __device__ inline int twice(int v) { return 2 * v; }
extern "C" __global__ void __launch_bounds__(256, 2) k(const float* x, float* out)
{
    __shared__ float tile[TILE][TILE + 1];
    static __shared__ float more[32];
    extern __shared__ float dynamic[];
    const char* note = "__device__ static asm ## cub::";
    static_assert(TILE == 32, "tiles of 32");
    out[0] = lane_sum(x[0]) + static_cast<float>(WARPS);
}
"""
    assert violations(source, reduce_sum.RULES) == []


def test_a_rule_is_enforced_before_anything_compiles() -> None:
    """A source that breaks a rule and would not compile either is refused for the rule, with
    its line, by the kernel worker: on this machine CuPy is missing, so any later step fails."""
    source = (
        "#include <cub/cub.cuh>\n"
        'extern "C" __global__ void reduce_sum(const float* x, float* out, '
        "unsigned long long n) { this is not C }\n"
    )
    with pytest.raises(KernelAnswerError) as caught:
        run_kernel(
            "reduce_sum",
            source,
            {
                "seed": 1,
                "cases": [{"label": "n = 1", "n": 1, "config": {"blocks": 1, "threads": 32}}],
            },
        )
    assert caught.value.kind == "rule"
    assert "line 1: '#include <cub/cub.cuh>': rule 1 (no libraries)" in str(caught.value)
    assert "(The rules: no #include except" in str(caught.value)


# -- no GPU needed: compute-sanitizer's reports ----------------------------------------------
MEMCHECK = """========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at vector_add+0x70 in /tmp/tmpab12/kern.cu:6
=========     by thread (39,0,0) in block (3,0,0)
=========     Address 0x7f3e1e000fa0 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f3e1e000000 of size 4000 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f4a3] in libcuda.so.1
=========
========= ERROR SUMMARY: 2 errors
"""
RACECHECK = """========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at sgemm+0x1f0 in kern.cu:41
=========     and Read access at sgemm+0x3a0 in kern.cu:48 [1024 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""
CLEAN = (
    "========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 0 hazards displayed "
    "(0 errors, 0 warnings)\n"
)


def test_sanitizer_reports_are_read_with_lines_of_the_learners_source() -> None:
    memcheck = parse("memcheck", MEMCHECK)
    assert memcheck["errors"] == 2
    assert memcheck["first"] == (
        "Invalid __global__ write of size 4 bytes at vector_add in line 6 by thread (39,0,0) "
        "in block (3,0,0) Address 0x7f3e1e000fa0 is out of bounds and is 1 bytes after the "
        "nearest allocation at 0x7f3e1e000000 of size 4000 bytes"
    )
    racecheck = parse("racecheck", RACECHECK)
    assert racecheck["errors"] == 1 and racecheck["first"].startswith(
        "Error: Race reported between Write access at sgemm in line 41 and Read access at "
        "sgemm in line 48"
    )
    assert parse("racecheck", CLEAN)["errors"] == 0
    assert parse("memcheck", "Device not supported")["errors"] is None


def test_sanitizer_verdicts() -> None:
    def tool(name: str, text: str, ran: bool = True) -> dict[str, object]:
        return {"tool": name, **parse(name, text), "ran": ran, "reason": f"not run: {name}"}

    clean = {
        "ran": True,
        "tools": [tool("memcheck", "ERROR SUMMARY: 0 errors"), tool("racecheck", CLEAN)],
    }
    assert verdict(clean) == (None, None)
    skipped, problem = verdict(
        {"ran": True, "tools": [tool("memcheck", MEMCHECK), tool("racecheck", RACECHECK)]}
    )
    assert skipped is None and problem is not None
    assert "memcheck found 2 invalid memory accesses" in problem
    assert "racecheck found 1 shared-memory race in your kernel" in problem
    assert "no __syncthreads() between the two" in problem
    # A tool that could not run is a skip with its reason, never a pass; a finding wins.
    cannot = {"ran": True, "tools": [tool("memcheck", "", ran=False)]}
    assert verdict(cannot) == ("not run: memcheck", None)
    assert verdict({"ran": False, "reason": NOT_AVAILABLE, "tools": []}) == (NOT_AVAILABLE, None)
    mixed = {"ran": True, "tools": [tool("memcheck", MEMCHECK), tool("racecheck", "", False)]}
    assert verdict(mixed)[1] is not None


@pytest.mark.skipif(gpu_missing() is None, reason="this machine has a GPU")
def test_without_a_gpu_the_sanitizer_check_is_a_skip_with_the_reason() -> None:
    found = sanitize_kernel("vector_add", "anything", [])
    assert found.problem is None and found.skipped == gpu_missing()


# -- on the GPU: every fixture graded by the real runner -----------------------------------
def _graded(wrong: Wrong) -> CheckReport:
    return run_corpus(entry(wrong.exercise), notebook(wrong))


@pytest.mark.gpu
@pytest.mark.skipif(gpu_missing() is not None, reason=str(gpu_missing()))
@pytest.mark.parametrize("wrong", WRONG, ids=[f"{w.exercise}/{w.name}" for w in WRONG])
def test_wrong_kernel_answers_lose_points_with_a_message_that_names_the_mistake(
    wrong: Wrong,
) -> None:
    report = _graded(wrong)
    assert report.status == "failed", (report.status, report.message)
    results = {r.check: r for r in report.results}
    if wrong.sanitizer and results["test_sanitizer"].outcome == "skipped":
        pytest.skip(
            f"only compute-sanitizer is sure to catch this mistake: "
            f"{results['test_sanitizer'].message}"
        )
    assert report.earned < report.possible
    for check, words in wrong.says.items():
        result = results[check]
        assert result.outcome == "failed", (check, result.outcome, result.message)
        for word in words:
            assert word.lower() in result.message.lower(), (check, word, result.message)
    for result in report.results:
        for fix in wrong.never:
            assert fix not in result.message, (result.check, fix, result.message)
