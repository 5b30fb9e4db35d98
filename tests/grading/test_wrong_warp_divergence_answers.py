"""Wrong but plausible answers to warp-divergence, graded by the real runner; and its model.

Each notebook under tests/fixtures/wrong_answers/warp-divergence/ is the
released exercise answered right except for one mistake (the README beside
them says which). Graded by `run_checks` with the visible and the hidden
checks, as a grading run does, each must lose points, the checks named in
`WRONG` must fail, and their messages must name the mistake. A mistake in the
model shows without a GPU; the kernel and timing mistakes need one (the
``gpu`` tests, skipped here). Without a GPU too: the checks' own model gives
the lesson's figures, the kernel answers keep the rules of kernel answers (so
that the GPU checks judge what they are meant to), and the solution earns
every point the checks that need no GPU can give.
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
from gpulab.grading.checks.gpu import gpu_missing
from gpulab.grading.checks.learner import Learner
from gpulab.grading.checks.notebook import read_notebook
from gpulab.grading.checks.reference import warp_divergence as ref
from gpulab.grading.checks.runner import CheckReport
from gpulab.grading.checks.tasks import two_paths
from gpulab.grading.checks.tasks.rules import violations
from helpers.wrong_answers import run_corpus

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "wrong_answers" / "warp-divergence"
EXERCISE = next(e for e in load_course().exercises() if e.name == "warp-divergence")
VISIBLE = ROOT / "exercises" / "gpu-architecture" / "test_warp_divergence.py"
CPU_CHECKS = {
    "test_patterns",
    "test_paths_per_warp",
    "test_predicted_slowdown",
    "test_secret_sizes",
    "test_secret_masks_paths",
    "test_secret_masks_slowdown",
}


@dataclass(frozen=True)
class Wrong:
    name: str
    says: dict[str, tuple[str, ...]]  # check -> words its failing message must hold
    gpu: bool = False  # only a GPU shows the mistake
    may_fail: frozenset[str] = field(default_factory=frozenset)  # for the reader


WRONG = [
    Wrong(
        "per-thread-cost",
        {
            "test_predicted_slowdown": ("per warp, not per thread", "for one lane as for sixteen"),
            "test_secret_masks_slowdown": ("per warp, not per thread",),
            "test_model_against_the_gpu": ("lane 0 alone", "per warp, not per thread"),
            "test_model_on_secret_masks": ("per warp, not per thread",),
        },
    ),
    Wrong(
        "kernel-wide-paths",
        {
            "test_predicted_slowdown": ("'by_warp'", "property of one warp"),
            "test_secret_masks_slowdown": ("property of one warp",),
            "test_model_against_the_gpu": ("no warp split", "property of one warp"),
            "test_model_on_secret_masks": ("random whole warps", "property of one warp"),
        },
    ),
    Wrong(
        "host-timer",
        {"test_time_patterns": ("host timer around an asynchronous launch", "CUDA events")},
        gpu=True,
        may_fail=frozenset({"test_model_on_secret_masks"}),  # its launches still run
    ),
    Wrong(
        "select-paths",
        {
            "test_paths_really_diverge": ("costs (almost) nothing", "a select"),
            "test_time_patterns": ("your split costs almost nothing", "merged"),
        },
        gpu=True,
    ),
    Wrong(
        "same-paths",
        {
            "test_kernel_is_right": ("ended where path A ends", "merged by the compiler"),
            "test_paths_really_diverge": ("went wrong",),
            "test_kernel_on_secret_masks": ("ended where path A ends",),
        },
        gpu=True,
        may_fail=frozenset({"test_time_patterns"}),
    ),
]


def notebook(wrong: Wrong) -> Path:
    return FIXTURES / f"{wrong.name}.ipynb"


def graded(path: Path) -> CheckReport:
    return run_corpus(EXERCISE, path)


def kernel_source(path: Path) -> str:
    """The kernel text a notebook's answer gives, through a worker as the checks get it."""
    released = read_notebook(EXERCISE.notebook)
    cells = [*setup_cells(released), *answer_cells(read_notebook(path), path).values()]
    with Learner(cells) as learner:
        source = learner.call("kernel_source")
    assert isinstance(source, str)
    return source


# -- no GPU needed ---------------------------------------------------------------------------
def test_every_fixture_is_listed_and_valid() -> None:
    assert {p.stem for p in FIXTURES.glob("*.ipynb")} == {w.name for w in WRONG}
    released = set(answer_cells(read_notebook(EXERCISE.notebook), EXERCISE.notebook))
    for wrong in WRONG:
        assert set(answer_cells(read_notebook(notebook(wrong)), notebook(wrong))) == released
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert all(f"`{w.name}.ipynb`" in readme for w in WRONG)
    assert len(WRONG) >= 3


def test_the_model_gives_the_lessons_figures() -> None:
    """Lane parity and one lane out cost two paths, a by-warp split one, a tenth 1.1."""
    n = 8 * ref.THREADS

    def slowdown(name: str, uniform: float = 0.0) -> float:
        return ref.predicted_slowdown(ref.pattern_mask(name, n), 1.0, 1.0, uniform)

    assert slowdown("lane_parity") == slowdown("one_lane") == 2.0
    assert slowdown("by_warp") == slowdown("uniform") == slowdown("all_b") == 1.0
    assert slowdown("lane_parity", ref.TENTH_PREFIX) == pytest.approx(1.1)
    assert ref.paths_per_warp([0] * 32 + [1]) == [1, 1]
    assert ref.paths_per_warp([lane % 4 for lane in range(40)]) == [4, 4]
    assert ref.predicted_slowdown([0] * 32 + [1, 0], 1.0, 3.0) == pytest.approx(2.5)
    with pytest.raises(ValueError, match="no pattern named"):
        ref.pattern_mask("lane-parity", 32)


def test_the_trusted_kernel_and_the_solution_keep_the_rules() -> None:
    sources = [ref.trusted_source(), kernel_source(solution_path(EXERCISE))]
    sources += [kernel_source(notebook(w)) for w in WRONG if w.gpu]
    for source in sources:
        assert violations(source, two_paths.RULES) == []
        assert 'extern "C" __global__ void two_paths(' in source


@pytest.mark.parametrize("wrong", [w for w in WRONG if not w.gpu], ids=lambda w: w.name)
def test_a_wrong_model_fails_without_a_gpu_and_says_why(wrong: Wrong) -> None:
    report = graded(notebook(wrong))
    assert report.status == "failed", (report.status, report.message)
    assert report.earned < report.possible
    results = {r.check: r for r in report.results}
    for check, words in wrong.says.items():
        result = results[check]
        if check not in CPU_CHECKS and gpu_missing():
            assert result.outcome == "skipped", (check, result.outcome)
            continue
        assert result.outcome == "failed", (check, result.outcome, result.message)
        for word in words:
            assert word.lower() in result.message.lower(), (check, word, result.message)
    expected = set(wrong.says) | wrong.may_fail
    for result in report.results:
        if result.check in CPU_CHECKS and result.check not in expected:
            assert result.outcome == "passed", (result.check, result.message)


def test_the_solution_earns_every_point_it_can_here() -> None:
    report = graded(solution_path(EXERCISE))
    failed = [(r.check, r.message) for r in report.results if r.outcome == "failed"]
    assert not failed
    if gpu_missing():
        assert {r.check for r in report.results if r.outcome == "passed"} == CPU_CHECKS


# -- no GPU needed: how the GPU checks judge what they found ------------------------------------
@pytest.fixture(scope="module")
def checks(pytestconfig: pytest.Config) -> ModuleType:
    """The visible checks as a module (their points marker declared: markers are strict)."""
    pytestconfig.addinivalue_line("markers", "points(n): what a check is worth")
    spec = importlib.util.spec_from_file_location("warp_divergence_checks", VISIBLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(yours: dict[str, float], trusted: dict[str, float], failed: int = 0) -> dict[str, Any]:
    return {
        "n": 270_336,
        "launches": 33,
        "failed_launches": failed,
        "ms": {"yours": yours, "trusted": trusted},
    }


TRUSTED_KERNEL = {"uniform": 1.0, "all_b": 1.01, "lane_parity": 2.0}


def test_a_kernel_that_pays_for_the_split_passes_and_a_select_is_named(checks: ModuleType) -> None:
    assert (
        checks.divergence_problem(timed({**TRUSTED_KERNEL, "lane_parity": 1.9}, TRUSTED_KERNEL))
        is None
    )
    merged = checks.divergence_problem(
        timed({**TRUSTED_KERNEL, "lane_parity": 1.03}, TRUSTED_KERNEL)
    )
    assert merged is not None and "costs (almost) nothing" in merged and "a select" in merged
    costly = checks.divergence_problem(
        timed({"uniform": 1.0, "all_b": 2.0, "lane_parity": 3.0}, TRUSTED_KERNEL)
    )
    assert costly is not None and "should cost the same" in costly
    wrong = checks.divergence_problem(timed(TRUSTED_KERNEL, TRUSTED_KERNEL, failed=3))
    assert wrong is not None and "went wrong" in wrong


TRUSTED_TIMES: dict[str, Any] = {
    "n": 270_336,
    "ms": {
        "uniform": 1.0,
        "all_b": 1.0,
        "lane_parity": 2.0,
        "one_lane": 2.0,
        "by_warp": 1.0,
        "uniform_tenth": 10.0,
        "tenth": 11.0,
    },
}


def test_timings_agree_or_the_mistake_is_named(checks: ModuleType) -> None:
    right = {key: value * 1.1 for key, value in TRUSTED_TIMES["ms"].items()}
    assert checks.timing_problems(right, TRUSTED_TIMES) == []
    host = {key: 0.012 for key in TRUSTED_TIMES["ms"]}
    [said] = checks.timing_problems(host, TRUSTED_TIMES)
    assert "host timer around an asynchronous launch" in said
    merged = {**right, "lane_parity": 1.1, "one_lane": 1.1, "tenth": 11.0}
    problems = checks.timing_problems(merged, TRUSTED_TIMES)
    assert len(problems) == 2 and all("merged" in text for text in problems)
    total = {key: value * 3 * 1.05 for key, value in TRUSTED_TIMES["ms"].items()}
    assert "divide by the number of launches" in checks.timing_problems(total, TRUSTED_TIMES)[0]


def test_a_lane_on_the_wrong_path_is_named(checks: ModuleType) -> None:
    case = {
        "label": "odd lanes on path B",
        "n": 1000,
        "uniform_iters": 0,
        "iters": 17,
        "size": 1000,
        "overrun": 0,
        "untouched": 0,
        "on_b": 500,
        "b_like_a": 500,
        "a_like_b": 0,
        "wrong": 500,
        "wrong_on_a": 0,
        "wrong_on_b": 500,
        "first_wrong": {"index": 1, "lane": 1, "warp": 0, "path": "B", "got": 0.2, "want": 0.79},
    }
    assert "ended where path A ends" in checks.describe_case(case)
    swapped = {**case, "b_like_a": 0, "a_like_b": 500, "wrong_on_a": 500, "wrong": 1000}
    assert "wrong way round" in checks.describe_case(swapped)
    late = {**case, "b_like_a": 3, "uniform_iters": 20}
    assert "only then iters steps" in checks.describe_case(late)
    assert "i >= n must not write" in checks.describe_case({**case, "overrun": 4})


# -- on a GPU: the kernel and timing mistakes ------------------------------------------------
@pytest.mark.gpu
@pytest.mark.skipif(gpu_missing() is not None, reason=str(gpu_missing()))
@pytest.mark.parametrize("wrong", [w for w in WRONG if w.gpu], ids=lambda w: w.name)
def test_a_wrong_kernel_or_timer_fails_on_a_gpu_and_says_why(wrong: Wrong) -> None:
    report = graded(notebook(wrong))
    assert report.status == "failed", (report.status, report.message)
    assert report.earned < report.possible
    results = {r.check: r for r in report.results}
    for check, words in wrong.says.items():
        result = results[check]
        assert result.outcome == "failed", (check, result.outcome, result.message)
        for word in words:
            assert word.lower() in result.message.lower(), (check, word, result.message)
    for result in report.results:  # the model is right in these: its checks pass
        if result.check in CPU_CHECKS:
            assert result.outcome == "passed", (result.check, result.message)
