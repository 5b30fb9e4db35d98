"""Wrong but plausible answers to toolchain, graded by the real runner; and the checks' own parts.

Each notebook under tests/fixtures/wrong_answers/toolchain/ is a learner's
answer with one mistake made on purpose (its metadata says which; the README
beside them lists them). Graded with the visible and the hidden checks, none
may earn full marks, the checks named below must fail with a message that
names the mistake, and no message may quote the reference solution. The
mistakes in `can_run` and `ptx_summary` show without a GPU; `options-dropped`
(compiling without the options given) shows only where the checks compile on
a GPU, so it is graded there.

Without a GPU the checks' own parts are tested too: the answers the visible
checks hold (worked out by hand) agree with the hidden checks' decision and
PTX reading, the visible checks hold neither, the random cases cover every
outcome and change from seed to seed, and the trusted module refuses what
breaks a rule of kernel answers. On a GPU, the trusted compiles themselves:
NVRTC's PTX for this GPU and the heavy kernel's registers under its caps.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from gpulab.course import load_course
from gpulab.grading.build import solution_path
from gpulab.grading.checks.gpu import gpu_missing
from gpulab.grading.checks.notebook import read_notebook
from gpulab.grading.checks.reference import toolchain as trusted
from gpulab.grading.checks.runner import CheckReport
from helpers.wrong_answers import run_corpus, solution_lines

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "wrong_answers" / "toolchain"
VISIBLE = ROOT / "exercises" / "cuda-stack" / "test_toolchain.py"
HIDDEN = ROOT / "solutions" / "cuda-stack" / "test_toolchain_hidden.py"
EXERCISE = next(e for e in load_course().exercises() if e.name == "toolchain")

# For each wrong answer: check -> words its failure message must hold (every one of them).
MUST_FAIL: dict[str, dict[str, tuple[str, ...]]] = {
    "arch-specific-forward": {
        "test_can_run_arch_and_family_targets": ("compute_90a", "architecture-specific"),
        "test_can_run_cases_around_each_rule": ("architecture-specific", "(seed"),
    },
    "jit-ignores-ptx-isa": {
        "test_can_run_lesson_cases": ("PTX ISA 8.5", "PTX_ISA_CUDA", "driver for CUDA 12.4"),
        "test_can_run_versions": ("PTX ISA",),
    },
    "minor-compat-across-majors": {
        "test_can_run_lesson_cases": ("only within one major", "CUDA 13.0"),
        "test_can_run_versions": ("only within one major",),
    },
    "toolkit-not-isa": {
        "test_can_run_versions": ("you leave it out", "ISA 8.5 first came with CUDA 12.5"),
    },
    "registers-one-short": {
        "test_ptx_summary_samples": ("one short", "%f0 to %f4"),
        "test_ptx_summary_random_ptx": ("declares N registers",),
    },
    "opcodes-found-in-text": {
        "test_ptx_summary_random_ptx": ("comment", "(seed"),
    },
}
# Shown only where the checks compile on a GPU.
MUST_FAIL_ON_A_GPU: dict[str, dict[str, tuple[str, ...]]] = {
    "options-dropped": {
        "test_compile_ptx_takes_arch_and_options": ("pass the options",),
        "test_registers_match_the_driver": ("WITHOUT the options",),
    },
}


@pytest.fixture(scope="module", autouse=True)
def _points_marker(pytestconfig: pytest.Config) -> None:
    """Check files mark their points; here, outside gpulab's plugin, that marker is declared
    so that they can be imported (markers are strict)."""
    pytestconfig.addinivalue_line("markers", "points(n): what a check is worth")


def load(path: Path, name: str) -> ModuleType:
    """A check file as a module (the visible one under the name the hidden one asks for)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def visible() -> ModuleType:
    return load(VISIBLE, "test_toolchain")


@pytest.fixture(scope="module")
def hidden(visible: ModuleType) -> ModuleType:
    return load(HIDDEN, "toolchain_hidden_reference")


def graded(notebook: Path) -> CheckReport:
    report = run_corpus(EXERCISE, notebook)
    assert report.status in ("passed", "failed", "skipped"), (report.status, report.message)
    return report


def assert_fails_as_said(name: str, expected: dict[str, tuple[str, ...]]) -> None:
    notebook = FIXTURES / f"{name}.ipynb"
    assert read_notebook(notebook).metadata.get("gpulab_wrong_answer"), "say what is wrong"
    report = graded(notebook)
    assert report.status == "failed" and report.earned < report.possible, (
        report.status,
        report.earned,
        report.possible,
    )
    by_check = {r.check: r for r in report.results}
    for check, words in expected.items():
        result = by_check[check]
        assert result.outcome == "failed", (check, result.outcome, result.message)
        missing = [word for word in words if word not in result.message]
        assert not missing, (check, missing, result.message)
    quoted = [
        line
        for line in solution_lines(EXERCISE)
        if any(line in r.message for r in report.results if r.outcome == "failed")
    ]
    assert not quoted, f"failure messages quote the solution: {quoted}"


def test_every_fixture_is_graded_here() -> None:
    names = set(MUST_FAIL) | set(MUST_FAIL_ON_A_GPU)
    assert {p.stem for p in FIXTURES.glob("*.ipynb")} == names
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in readme for name in names)


@pytest.mark.parametrize("name", list(MUST_FAIL))
def test_a_wrong_answer_fails_and_says_why(name: str) -> None:
    assert_fails_as_said(name, MUST_FAIL[name])


@pytest.mark.gpu
@pytest.mark.skipif(gpu_missing() is not None, reason=str(gpu_missing()))
@pytest.mark.parametrize("name", list(MUST_FAIL_ON_A_GPU))
def test_a_wrong_answer_fails_on_a_gpu_and_says_why(name: str) -> None:
    assert_fails_as_said(name, MUST_FAIL_ON_A_GPU[name])


def test_the_solution_earns_every_point_it_can_here() -> None:
    """Full marks on every check that runs here; only GPU checks may skip."""
    report = graded(solution_path(EXERCISE))
    assert report.status in ("passed", "skipped"), [
        (r.check, r.message) for r in report.results if r.outcome == "failed"
    ]
    assert report.earned == report.possible > 0
    skipped = [r for r in report.results if r.outcome == "skipped"]
    assert all(r.needs_gpu for r in skipped), [(r.check, r.message) for r in skipped]


# ---- the checks' own parts --------------------------------------------------------------------


def test_the_hand_worked_answers_agree_with_the_hidden_decision(
    visible: ModuleType, hidden: ModuleType
) -> None:
    cases = visible.LESSON_CASES + visible.SUFFIX_CASES + visible.VERSION_CASES
    for what, case, right in cases:
        assert hidden.decide(case) == right, what
    assert {right["reason"] for _, _, right in cases} == set(visible.REASONS)


def test_the_hand_counted_samples_agree_with_the_hidden_reading(
    visible: ModuleType, hidden: ModuleType
) -> None:
    for text, what, right in visible.SAMPLES:
        assert hidden.summarize(text) == right, what
        assert visible.summary_problem(right, right, what) is None


def test_the_visible_checks_hold_no_decision_and_no_reading() -> None:
    """Visible checks ship to learners: the decision and the PTX reading stay hidden."""
    text = VISIBLE.read_text(encoding="utf-8")
    assert "def decide" not in text and "def summarize" not in text
    assert "fits_gpu" not in text and "runtime_starts" not in text
    assert "<(\\d+)>" not in text  # no reader of .reg declarations


def test_the_judge_names_the_rule(visible: ModuleType, hidden: ModuleType) -> None:
    """A wrong answer to a case is explained by the rule it broke, for each kind of mistake."""
    case = visible.case("B200", "10.0", "12.9", "12.9", visible.ptx("compute_90a", "8.8"))
    said = visible.judge(
        case,
        {"runs": True, "how": "ptx-jit", "reason": "jit", "usable": ["compute_90a"]},
        hidden.decide(case),
    )
    assert said is not None and "architecture-specific" in said
    case = visible.case("H100", "9.0", "12.8", "13.1", visible.sass("sm_90"))
    said = visible.judge(
        case,
        {"runs": True, "how": "sass", "reason": "native", "usable": ["sm_90"]},
        hidden.decide(case),
    )
    assert said is not None and "only within one major" in said
    case = visible.case("H100", "9.0", "13.0", "13.0", visible.sass("sm_90"))
    said = visible.judge(
        case,
        {"runs": True, "how": "ptx-jit", "reason": "jit", "usable": ["sm_90"]},
        hidden.decide(case),
    )
    assert said is not None and "how 'sass', reason 'native'" in said
    said = visible.judge(case, {"runs": True}, hidden.decide(case))
    assert said is not None and "has no how, reason, usable" in said


def test_random_cases_cover_every_outcome_and_change_with_the_seed(
    visible: ModuleType, hidden: ModuleType
) -> None:
    for seed in range(5):
        draw = random.Random(seed)
        reasons = Counter(hidden.decide(hidden.random_case(draw))["reason"] for _ in range(300))
        assert all(reasons[r] >= 10 for r in visible.REASONS), reasons
        around = Counter(hidden.decide(c)["reason"] for c in hidden.on_purpose(random.Random(seed)))
        assert all(around[r] >= 1 for r in visible.REASONS), around
    assert hidden.random_case(random.Random(1)) == hidden.random_case(random.Random(1))
    assert [hidden.random_case(random.Random(1)) for _ in range(3)] != [
        hidden.random_case(random.Random(2)) for _ in range(3)
    ]
    assert hidden.random_ptx(random.Random(1)) != hidden.random_ptx(random.Random(2))


def test_every_drawn_case_could_happen(hidden: ModuleType) -> None:
    """The GPU's driver supports it; each image is one its toolkit makes, in its toolkit's ISA."""
    version = hidden.as_version
    draw = random.Random(7)
    for _ in range(500):
        case = hidden.random_case(draw)
        built = version(case["built_with"])
        assert version(case["driver_cuda"]) >= version(hidden.FIRST_DRIVER[case["gpu_cc"]]), case
        for image in case["embedded"]:
            assert image["arch"].split("_")[1] in hidden.targets_of(case["built_with"]), case
            if image["kind"] == "ptx":
                assert version(hidden.PTX_ISA_CUDA[image["isa"]]) <= built, case


def test_the_trusted_side_refuses_sources_that_break_a_rule() -> None:
    assert trusted.source_problem(trusted.heavy_source()) is None
    assert "rule 1" in str(trusted.source_problem("#include <cstdio>\n" + trusted.heavy_source()))
    assert "rule 3" in str(trusted.source_problem('__global__ void k() { asm("trap;"); }'))
    assert "string of CUDA C" in str(trusted.source_problem(42))
    bounded = trusted.heavy_source(12, "__launch_bounds__(256)")
    assert "float v[12];" in bounded and "void __launch_bounds__(256) heavy(" in bounded


@pytest.mark.gpu
@pytest.mark.skipif(gpu_missing() is not None, reason=str(gpu_missing()))
def test_the_trusted_compiles_on_this_gpu(hidden: ModuleType) -> None:
    arch = trusted.virtual_arch()
    text = trusted.own_ptx(trusted.heavy_source(8), arch)
    summary = hidden.summarize(text)
    assert summary["target"] == arch.replace("compute_", "sm_") and summary["entries"] == ["heavy"]
    with pytest.raises(ValueError, match="could not compile"):
        trusted.own_ptx("__global__ void broken( {", arch)
    plain = trusted.own_registers(trusted.heavy_source(), "heavy")
    capped = trusted.own_registers(trusted.heavy_source(), "heavy", ("--maxrregcount=32",))
    bounded = trusted.own_registers(trusted.heavy_source(bounds="__launch_bounds__(1024)"), "heavy")
    assert plain["registers"] > 64 >= bounded["registers"] and capped["registers"] <= 32
    assert capped["local_bytes"] > plain["local_bytes"]
