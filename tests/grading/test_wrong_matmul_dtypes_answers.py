"""matmul-dtypes: wrong but plausible answers graded by the real runner, and the parts of the
checks that need no GPU.

Each notebook under tests/fixtures/wrong_answers/matmul-dtypes/ is a complete
answer with one mistake (the README beside them and the notebook's
``gpulab_wrong_answer`` metadata say which). Graded with the visible and the
hidden checks it must not get full marks, the checks named in `WRONG` must
fail, and their messages must name the mistake. `flops-mnk` is caught without
a GPU and is graded everywhere; the others need one (``gpu`` tests).

Without a GPU, too: the fixtures keep the rules of kernel answers (so a GPU
failure is the mistake, not a refusal); the rules allow <mma.h> and
<cuda_pipeline_primitives.h> to this exercise alone; the checks' arithmetic
(`gpulab.grading.checks.reference.matmul_dtypes`); the header search of the hgemm
task; and the visible checks' messages, fed the findings each kind of mistake
produces. On a GPU, `test_the_bar_separates_naive_from_simple_tiled` times the
naive baseline, a plain shared-memory tiled kernel and the reference solution
in one run, and holds the bar of 0.1 of cuBLAS between the first two and the
reference at 0.3 or more; the reference's fallback reading (register-staged
double buffering instead of cp.async) must clear the bar too.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gpulab.course import load_course
from gpulab.grading.build import solution_path
from gpulab.grading.checks.cells import answer_cells, setup_cells
from gpulab.grading.checks.gpu import gpu_missing, new_seed, run_kernel
from gpulab.grading.checks.learner import Learner
from gpulab.grading.checks.notebook import read_notebook
from gpulab.grading.checks.reference.matmul_dtypes import bf16_bits, padded, side_for, tflops
from gpulab.grading.checks.runner import CheckReport
from gpulab.grading.checks.tasks import hgemm, sgemm
from gpulab.grading.checks.tasks.rules import violations
from helpers.wrong_answers import run_corpus

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "wrong_answers" / "matmul-dtypes"
EXERCISE = next(e for e in load_course().exercises() if e.name == "matmul-dtypes")
GiB = 2**30


@pytest.fixture(scope="module")
def checks(pytestconfig: pytest.Config) -> ModuleType:
    """The visible checks' module (its message helpers are tested here). Check files mark
    their points; outside gpulab's plugin that marker is declared first (markers are
    strict)."""
    pytestconfig.addinivalue_line("markers", "points(n): what a check is worth")
    path = ROOT / "exercises" / "tensor-cores" / "test_matmul_dtypes.py"
    spec = importlib.util.spec_from_file_location("matmul_dtypes_visible_checks", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Wrong:
    name: str
    says: dict[str, tuple[str, ...]]  # check -> words its failing message must hold
    gpu: bool = True
    may_fail: frozenset[str] = field(default_factory=frozenset)  # for the reader


KERNEL_CHECKS = (
    "test_hgemm_small_sizes",
    "test_hgemm_tiles_and_edges",
    "test_hgemm_sums_in_fp32",
    "test_hgemm_repeated_launches",
    "test_hgemm_thin_long_and_secret_sizes",
)
WRONG = [
    Wrong(
        "flops-mnk",
        {
            "test_tflops": ("half of", "a multiply-add is two FLOPs"),
            "test_tflops_random": ("2 m n k FLOPs",),
        },
        gpu=False,
    ),
    Wrong(
        "host-timer",
        {
            "test_dtype_throughput": ("host timer around an asynchronous launch",),
            "test_misaligned_k": ("host timer",),
            "test_timings_at_another_size": ("host timer",),
        },
    ),
    Wrong(
        "tf32-never-on",
        {"test_dtype_throughput": ("TF32 at the FP32 rate", "tf32_mode(True)")},
    ),
    Wrong(
        "edge-chunks-skipped",
        {
            "test_hgemm_tiles_and_edges": ("right on 128 x 128 x 128", "K is ragged", "hold 0"),
            # not test_hgemm_sums_in_fp32: at K = 16411 every chunk of A's last tile starts
            # inside K and is zero-filled element by element, so the stale rows of B meet
            # zeros (seen passing on an H100)
            "test_hgemm_repeated_launches": ("went wrong",),
            "test_hgemm_thin_long_and_secret_sizes": ("right on 128 x 128 x 128",),
        },
        may_fail=frozenset({"test_hgemm_small_sizes"}),  # a first tile's stale shared memory
    ),
    Wrong(
        "fp16-accumulator",
        {
            **{check: ("FP16 rounding", "keep them in FP32") for check in KERNEL_CHECKS},
            "test_hgemm_speed": ("speed does not count", "FP16 rounding"),
            "test_hgemm_speed_non_square": ("FP16 rounding",),
        },
    ),
    Wrong(
        "naive-wmma",
        {
            "test_hgemm_speed": ("0.1 needed", "shared memory reuse"),
            "test_hgemm_speed_non_square": ("shared memory reuse",),
        },
    ),
]


def notebook(wrong: Wrong) -> Path:
    return FIXTURES / f"{wrong.name}.ipynb"


def learner_call(path: Path, function: str, *args: Any) -> Any:
    """A function of a notebook's answers, called through a worker as the checks call it."""
    released = read_notebook(EXERCISE.notebook)
    cells = read_notebook(path)
    with Learner([*setup_cells(released), *answer_cells(cells, path).values()]) as learner:
        return learner.call(function, *args)


def graded(path: Path) -> CheckReport:
    report = run_corpus(EXERCISE, path)
    assert report.status in ("passed", "failed", "skipped"), (report.status, report.message)
    return report


def assert_says(wrong: Wrong, report: CheckReport) -> None:
    assert report.status == "failed" and report.earned < report.possible, (
        report.status,
        report.earned,
        report.possible,
    )
    results = {r.check: r for r in report.results}
    for check, words in wrong.says.items():
        result = results[check]
        assert result.outcome == "failed", (check, result.outcome, result.message)
        for word in words:
            assert word.lower() in result.message.lower(), (check, word, result.message)


# -- no GPU needed: the fixtures -------------------------------------------------------------
def test_every_fixture_is_listed_described_and_valid() -> None:
    assert {p.stem for p in FIXTURES.glob("*.ipynb")} == {w.name for w in WRONG}
    assert len(WRONG) >= 3
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    released = read_notebook(EXERCISE.notebook)
    for wrong in WRONG:
        cells = read_notebook(notebook(wrong))
        assert cells.metadata.get("gpulab_wrong_answer"), f"{wrong.name}: say what is wrong"
        assert f"`{wrong.name}.ipynb`" in readme
        assert set(answer_cells(cells, notebook(wrong))) == set(
            answer_cells(released, EXERCISE.notebook)
        )


def test_the_solution_and_the_fixtures_keep_the_rules() -> None:
    """So that a fixture fails for its mistake on the GPU, never for a refusal."""
    sources = {"solution": learner_call(solution_path(EXERCISE), "hgemm_source")}
    sources |= {w.name: learner_call(notebook(w), "hgemm_source") for w in WRONG}
    for name in ("simple-tiled.cu", "register-staged.cu"):
        sources[name] = (FIXTURES / name).read_text(encoding="utf-8")
    for name, source in sources.items():
        assert isinstance(source, str) and "hgemm" in source, name
        assert violations(source, hgemm.RULES) == [], name


@pytest.mark.skipif(gpu_missing() is None, reason="this machine has a GPU: the gpu test grades it")
def test_a_wrong_flop_count_fails_without_a_gpu() -> None:
    wrong = next(w for w in WRONG if not w.gpu)
    assert_says(wrong, graded(notebook(wrong)))


# -- no GPU needed: the rules and the headers ------------------------------------------------
HEAD = 'extern "C" __global__ void hgemm(const __half* A, const __half* B, float* C)\n{\n'


def test_the_tensor_core_headers_are_allowed_here_and_nowhere_else() -> None:
    source = (
        "#include <mma.h>\n#include <cuda_fp16.h>\n#include <cuda_pipeline_primitives.h>\n"
        + HEAD
        + "}\n"
    )
    assert violations(source, hgemm.RULES) == []
    refused = violations(source, sgemm.RULES)
    assert [v.line for v in refused] == [1, 3] and "rule 1 (no libraries)" in refused[0].rule
    for line in (
        "#include <cuda/pipeline>",
        "#include <cublas_v2.h>",
        "#include <cute/tensor.hpp>",
    ):
        found = violations(line + "\n" + HEAD + "}\n", hgemm.RULES)
        assert found and found[0].line == 1 and "<mma.h>" in found[0].rule, (line, found)
    for body, words in (
        ('    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 ...");\n', "asm"),
        ("    cublasGemmEx(handle);\n", "no library calls"),
        ("    cutlass::gemm::device::Gemm<> g;\n", "no library calls"),
    ):
        found = violations(HEAD + body + "}\n", hgemm.RULES)
        assert found and found[0].line == 3 and words in found[0].rule + found[0].text, found
    assert "<cuda_pipeline_primitives.h>" in hgemm.RULES.text()
    assert "<mma.h>" not in sgemm.RULES.text()


def test_the_task_finds_crt_mma_h_in_a_toolkit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "include" / "crt").mkdir(parents=True)
    monkeypatch.setenv("CUDA_PATH", str(tmp_path / "nothing-here"))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    before = hgemm._toolkit_headers()
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert hgemm._toolkit_headers() == before  # crt/ without mma.h is no toolkit
    (tmp_path / "include" / "crt" / "mma.h").write_text("// crt/mma.h\n")
    assert hgemm._toolkit_headers() == str(tmp_path / "include")


# -- no GPU needed: the checks' arithmetic ---------------------------------------------------
def test_the_checks_arithmetic() -> None:
    assert tflops(8192, 8192, 8192, 1.0) == pytest.approx(1099.511627776)
    assert tflops(1, 1, 1, 1.0) == 2e-9
    assert padded(8192, 8192, 8191, 8) == (8192, 8192, 8192)
    assert padded(50257, 768, 3071, 64) == (50304, 768, 3072)
    assert padded(1, 1, 1, 16) == (16, 16, 16)
    assert [side_for(g * GiB) for g in (2, 4, 15, 16, 80, 141)] == [
        2048,
        4096,
        4096,
        8192,
        8192,
        8192,
    ]
    assert hgemm.rtol(1) == hgemm.rtol(64) == 8 * 8 * 2.0**-24
    assert hgemm.rtol(16384) == pytest.approx(8 * 128 * 2.0**-24)


def test_bf16_rounding_is_to_nearest_even() -> None:
    one = 0x3F800000  # 1.0 in float32
    assert bf16_bits(one) == 0x3F80
    assert bf16_bits(one | 0x7FFF) == 0x3F80  # below half an ulp: down
    assert bf16_bits(one | 0x8000) == 0x3F80  # a tie, 0x3F80 even: stays
    assert bf16_bits(one | 0x18000) == 0x3F82  # a tie, 0x3F81 odd: up to even
    assert bf16_bits(one | 0x8001) == 0x3F81  # above half an ulp: up


# -- no GPU needed: what the checks say to each kind of mistake ------------------------------
def case(m: int, n: int, k: int, **found: Any) -> dict[str, Any]:
    """A case as the hgemm task reports it: right unless `found` says otherwise."""
    base: dict[str, Any] = {"M": m, "N": n, "K": k, "size": m * n, "wrong": 0, "untouched": 0}
    base["overrun"] = 0
    base |= {"overrun_before": 0, "worst": 1e-7, "first_wrong": None}
    return base | found


def wrong_case(m: int, n: int, k: int, worst: float, **found: Any) -> dict[str, Any]:
    first = {"index": 3, "got": 1.0, "want": 2.0}
    return case(m, n, k, wrong=m * n // 2 + 1, worst=worst, first_wrong=first, **found)


def test_fp16_sums_are_named_as_such(checks: ModuleType) -> None:
    run = [case(128, 128, 128), wrong_case(64, 64, 8192, 3e-4)]
    message = checks.diagnose(run[1:], run)
    assert message is not None and "FP16 rounding" in message and "keep them in FP32" in message


def test_a_ragged_k_is_named(checks: ModuleType) -> None:
    run = [
        case(128, 128, 128),
        case(130, 128, 128),
        wrong_case(128, 128, 137, 0.5),
        wrong_case(128, 128, 136, 0.5),
    ]
    message = checks.diagnose(run[2:3], run)
    assert message is not None and "wrong when K is ragged" in message and "hold 0" in message


def test_stale_edge_values_of_rounding_size_are_not_called_fp16_sums(checks: ModuleType) -> None:
    """Seen on an H100: a tile left unwritten past a ragged K held values that put 7 x 9 x
    4099 off by 3.9e-3, the size of FP16 rounding. Whole tiles right, every K a multiple
    of 32 right: that is the edge, and the message must say so, not blame the sums."""
    run = [
        case(128, 128, 128),
        case(64, 64, 8192),
        wrong_case(128, 128, 137, 2e-3),
        wrong_case(128, 128, 136, 0.5),
        wrong_case(7, 9, 4099, 3.9e-3),
    ]
    message = checks.diagnose(run[4:], run)
    assert message is not None and "wrong when K is ragged" in message, message
    assert "FP16 rounding" not in message
    fp16_everywhere = [wrong_case(128, 128, 128, 1e-3), wrong_case(7, 9, 4099, 3.9e-3)]
    message = checks.diagnose(fp16_everywhere[1:], fp16_everywhere)
    assert message is not None and "FP16 rounding" in message


def test_rows_off_16_byte_boundaries_are_named(checks: ModuleType) -> None:
    run = [
        case(128, 128, 128),
        case(128, 128, 136),
        case(130, 128, 128),
        wrong_case(128, 128, 137, 0.5),
        wrong_case(17, 33, 19, 0.5),
    ]
    message = checks.diagnose(run[3:], run)
    assert message is not None and "multiples of 8" in message and "half by half" in message


def test_wrong_edges_and_writes_past_c_are_named(checks: ModuleType) -> None:
    run = [case(128, 128, 128), wrong_case(130, 128, 128, 1.0)]
    message = checks.diagnose(run[1:], run)
    assert message is not None and "wrong at the edges" in message
    past = [case(128, 128, 128), wrong_case(130, 133, 128, 1.0, overrun=40)]
    message = checks.diagnose(past[1:], past)
    assert message is not None and "past the ends of C" in message and "row < M" in message


@pytest.mark.parametrize(
    ("dtype", "ratio", "words"),
    [
        ("fp16", 0.01, "host timer around an asynchronous launch"),
        ("fp32", 0.02, "host timer"),
        ("fp32", 0.15, "TF32 was on"),
        ("tf32", 7.0, "TF32 at the FP32 rate"),
        ("fp16", 14.0, "at an FP32 rate"),
        ("bf16", 1.8, "the first product"),
        ("fp16", 0.6, "too fast by"),
    ],
)
def test_timing_mistakes_are_named(
    checks: ModuleType, dtype: str, ratio: float, words: str
) -> None:
    want = 2.0
    message = checks.timing_problem(dtype, 8192, 8192, want * ratio, want)
    assert message is not None and words in message, message
    assert checks.timing_problem(dtype, 8192, 8192, want * 1.2, want) is None
    assert "expected the milliseconds" in checks.timing_problem(dtype, 8192, 8191, None, want)


def test_a_slow_kernel_is_told_about_shared_memory_reuse(checks: ModuleType) -> None:
    timed: dict[str, Any] = {"M": 8192, "N": 8192, "K": 8192, "ratio": 0.03}
    timed["tflops"] = {"yours": 21.0, "cublas": 700.0}
    message = checks.speed_message(timed, checks.SPEED)
    assert "shared memory reuse" in message and "0.1 needed" in message


# -- on the GPU ------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.skipif(gpu_missing() is not None, reason=str(gpu_missing()))
@pytest.mark.parametrize("wrong", WRONG, ids=[w.name for w in WRONG])
def test_wrong_answers_lose_points_with_a_message_that_names_the_mistake(wrong: Wrong) -> None:
    assert_says(wrong, graded(notebook(wrong)))


@pytest.mark.gpu
@pytest.mark.skipif(gpu_missing() is not None, reason=str(gpu_missing()))
def test_the_bar_separates_naive_from_simple_tiled(checks: ModuleType) -> None:
    """Timed in one run each, on the size the checks time: the naive baseline below the
    learner's bar, a plain shared-memory tiled kernel above it, the reference at 0.3."""
    from gpulab.grading.checks.reference.matmul_dtypes import side

    n = side()
    kernels = {
        "naive": (
            learner_call(FIXTURES / "naive-wmma.ipynb", "hgemm_source"),
            learner_call(FIXTURES / "naive-wmma.ipynb", "hgemm_config", n, n, n),
        ),
        "simple": (
            (FIXTURES / "simple-tiled.cu").read_text(encoding="utf-8"),
            {"grid": [-(-n // 64), -(-n // 64)], "block": [128]},
        ),
        "reference": (
            learner_call(solution_path(EXERCISE), "hgemm_source"),
            learner_call(solution_path(EXERCISE), "hgemm_config", n, n, n),
        ),
        "register-staged": (  # the reference's tiling without cp.async: the fallback reading
            (FIXTURES / "register-staged.cu").read_text(encoding="utf-8"),
            {"grid": [-(-n // 128), -(-n // 128)], "block": [256]},
        ),
    }
    ratios: dict[str, float] = {}
    for name, (source, config) in kernels.items():
        timed = run_kernel(
            "hgemm",
            source,
            {"seed": new_seed(), "cases": [], "timed": {"M": n, "N": n, "K": n, "config": config}},
            timeout=600,
        )["timed"]
        assert not checks.bad(timed), (name, timed)
        ratios[name] = timed["ratio"]
    print(", ".join(f"{name} {ratio:.3f}" for name, ratio in ratios.items()), "of cuBLAS")
    assert ratios["naive"] < checks.SPEED <= ratios["simple"], ratios
    assert ratios["register-staged"] >= checks.SPEED, ratios
    assert ratios["reference"] >= 0.3, ratios
