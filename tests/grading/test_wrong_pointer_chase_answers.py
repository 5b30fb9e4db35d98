"""Wrong but plausible answers to pointer-chase, graded by the real runner; and the judges.

Each notebook under tests/fixtures/wrong_answers/pointer-chase/ is a learner's
answer with one mistake made on purpose (its metadata says which; the README
beside them lists them). Graded with the visible and the hidden checks, none
may earn full marks, the checks named below must fail with a message that
names the mistake, and no message may quote the reference solution. Parts 1
to 3 are judged on any machine; the mistakes that only a measurement shows
(no warm-up lap, cycles divided per pass) are graded on a GPU, and on any
machine their judges are fed the figures such a mistake produces, from
gpulab's recorded H200 curve, and must say the same. The checks' own pieces
are tested too: the synthetic curves' plateaus are the reference rule's, and
the footprints the GPU checks measure lie inside each plateau of the
recording.
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gpulab.course import load_course
from gpulab.grading.build import solution_path
from gpulab.grading.checks.gpu import gpu_missing
from gpulab.grading.checks.notebook import read_notebook
from gpulab.grading.checks.reference.pointer_chase import (
    MIN_STEPS,
    check_footprints,
    own_plan,
    own_plateaus,
    recorded_curve,
    synthetic_curve,
)
from gpulab.grading.checks.runner import CheckReport
from helpers.wrong_answers import run_corpus, solution_lines

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "wrong_answers" / "pointer-chase"
VISIBLE = ROOT / "exercises" / "memory-hierarchy" / "test_pointer_chase.py"
EXERCISE = next(e for e in load_course().exercises() if e.name == "pointer-chase")
KiB, MiB = 1 << 10, 1 << 20

# For each wrong answer: check -> words its failure message must hold, on any machine ...
MUST_FAIL: dict[str, dict[str, tuple[str, ...]]] = {
    "sequential-chain": {
        "test_make_chain_is_one_random_cycle": ("followed by their neighbour", "sequential"),
        "test_make_chain_random_sizes": ("sequential",),
    },
    "short-cycles": {
        "test_make_chain_is_one_random_cycle": ("separate cycles", "stays in L1"),
        "test_make_chain_random_sizes": ("separate cycles",),
    },
    "fixed-ranges": {
        "test_find_plateaus_on_fresh_curves": ("not from fixed ranges",),
        "test_find_plateaus_on_the_h200_recording": ("ends at 131072 bytes",),
        "test_find_plateaus_hidden_curves": ("not from fixed ranges",),
    },
    "no-warm-up": {},
    "per-pass": {},
}
# ... and on a GPU (where the measurement shows the mistake)
MUST_FAIL_ON_A_GPU: dict[str, dict[str, tuple[str, ...]]] = {
    "short-cycles": {
        "test_l2_latency": ("reads like L1", "every entry"),
        "test_hbm_latency": ("reads like L1",),
    },
    "no-warm-up": {
        "test_l2_latency": ("reads like HBM", "a cache left cold", "untimed"),
        "test_cold_vs_warm": ("warm figure",),
    },
    "per-pass": {
        check: ("divided by the wrong count", "loads timed")
        for check in ("test_l1_latency", "test_l2_latency", "test_hbm_latency")
    },
}


@pytest.fixture(scope="module", autouse=True)
def _points_marker(pytestconfig: pytest.Config) -> None:
    """Check files mark their points; here, outside gpulab's plugin, that marker is declared
    so that they can be imported (markers are strict)."""
    pytestconfig.addinivalue_line("markers", "points(n): what a check is worth")


@pytest.fixture(scope="module")
def v() -> ModuleType:
    """The visible checks, for their judges."""
    spec = importlib.util.spec_from_file_location("pointer_chase_visible", VISIBLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def graded(notebook: Path) -> CheckReport:
    report = run_corpus(EXERCISE, notebook)
    assert report.status in ("passed", "failed", "skipped"), (report.status, report.message)
    return report


def assert_fails_as_listed(name: str, report: CheckReport, listed: dict[str, Any]) -> None:
    by_check = {r.check: r for r in report.results}
    for check, words in listed.items():
        result = by_check[check]
        assert result.outcome == "failed", (check, result.outcome, result.message)
        missing = [word for word in words if word not in result.message]
        assert not missing, (name, check, missing, result.message)
    own = "\n".join(cell.source for cell in read_notebook(FIXTURES / f"{name}.ipynb").cells)
    quoted = [
        line
        for line in solution_lines(EXERCISE)
        if line not in own and any(line in r.message for r in report.results)
    ]
    assert not quoted, f"failure messages quote the solution: {quoted}"


def test_every_fixture_is_graded_here() -> None:
    assert {p.stem for p in FIXTURES.glob("*.ipynb")} == set(MUST_FAIL)
    assert set(MUST_FAIL_ON_A_GPU) <= set(MUST_FAIL) and len(MUST_FAIL) >= 3
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}.ipynb`" in readme for name in MUST_FAIL)
    for name in MUST_FAIL:
        assert read_notebook(FIXTURES / f"{name}.ipynb").metadata.get("gpulab_wrong_answer")


@pytest.mark.parametrize("name", [n for n, checks in MUST_FAIL.items() if checks])
def test_a_wrong_answer_fails_and_says_why(name: str) -> None:
    report = graded(FIXTURES / f"{name}.ipynb")
    assert report.status == "failed" and report.earned < report.possible, (
        report.status,
        report.earned,
        report.possible,
    )
    assert_fails_as_listed(name, report, MUST_FAIL[name])


@pytest.mark.parametrize("name", ["no-warm-up", "per-pass"])
def test_a_measuring_mistake_passes_the_checks_that_need_no_gpu(name: str) -> None:
    """Its parts 1 to 3 are right: only the GPU can show the mistake."""
    report = graded(FIXTURES / f"{name}.ipynb")
    failed = [(r.check, r.message) for r in report.results if r.outcome == "failed"]
    assert not failed
    assert all(r.needs_gpu for r in report.results if r.outcome == "skipped")


def test_the_solution_earns_every_point_it_can_here() -> None:
    report = graded(solution_path(EXERCISE))
    assert report.status in ("passed", "skipped"), [
        (r.check, r.message) for r in report.results if r.outcome == "failed"
    ]
    assert report.earned == report.possible > 0
    assert all(r.needs_gpu for r in report.results if r.outcome == "skipped")


@pytest.mark.gpu
@pytest.mark.skipif(gpu_missing() is not None, reason=str(gpu_missing()))
@pytest.mark.parametrize("name", list(MUST_FAIL_ON_A_GPU))
def test_a_wrong_answer_fails_on_the_gpu_and_says_why(name: str) -> None:
    report = graded(FIXTURES / f"{name}.ipynb")
    assert report.status == "failed" and report.earned < report.possible
    assert_fails_as_listed(name, report, {**MUST_FAIL[name], **MUST_FAIL_ON_A_GPU[name]})


# -- the judges of the GPU checks, fed what each mistake measures ------------------------------
# Cycles per load at the checks' footprints, as gpulab's H200 recording has them: L1 at
# 32 KiB, L2 at 8 MiB (a quarter of its 60 MiB L2), HBM at 256 MiB.
H200 = {"l1": 32.0, "l2": 280.7, "hbm": 658.5}
SIZES = check_footprints(60 * MiB, 140 * 2**30)


def found(yours: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        level: {"footprint": SIZES[level], "yours": yours[level], "trusted": H200[level]}
        for level in ("l1", "l2", "hbm")
    }


def test_the_checks_footprints_lie_inside_each_plateau_of_the_recording() -> None:
    assert {"l1": 32 * KiB, "l2": 8 * MiB, "hbm": 256 * MiB} == SIZES
    assert check_footprints(50 * MiB, 79 * 2**30) == SIZES  # an H100
    assert check_footprints(40 * MiB, 2**30)["hbm"] == 128 * MiB  # an eighth of 1 GiB free
    curve = dict((int(size), cycles) for size, cycles in recorded_curve())
    if curve:
        for level, size in SIZES.items():
            assert abs(curve[size] / H200[level] - 1) < 0.02, (level, curve[size])


def test_right_figures_pass_every_judge(v: ModuleType) -> None:
    close = found({"l1": 34.0, "l2": 300.0, "hbm": 640.0})
    assert [v.judge_level(level, close) for level in ("l1", "l2", "hbm")] == [None] * 3
    assert v.judge_cold_warm({"cold": 600.0, "warm": 290.0}, 8 * MiB, 658.5, 280.7) is None


def test_per_pass_is_named_at_every_level(v: ModuleType) -> None:
    """Cycles over laps: at 32 KiB the timed loads make 256 laps, at 8 MiB and 256 MiB one."""
    laps = {
        level: max(1, own_plan(SIZES[level], 60 * MiB)[1] // (SIZES[level] // 128))
        for level in SIZES
    }
    loads = {level: own_plan(SIZES[level], 60 * MiB)[1] for level in SIZES}
    per_pass = found({level: H200[level] * loads[level] / laps[level] for level in SIZES})
    for level in SIZES:
        said = v.judge_level(level, per_pass)
        assert said and "divided by the wrong count" in said and "loads timed" in said, said


def test_no_warm_up_is_named_at_l2_and_in_cold_vs_warm(v: ModuleType) -> None:
    """At 8 MiB a chase timed straight after the flush reads like HBM."""
    said = v.judge_level("l2", found({"l1": 33.0, "l2": 650.0, "hbm": 660.0}))
    assert said and "reads like HBM" in said and "a cache left cold" in said, said
    said = v.judge_cold_warm({"cold": 660.0, "warm": 650.0}, 8 * MiB, 658.5, 280.7)
    assert said and "warm figure" in said, said


def test_short_cycles_and_a_cold_that_is_warm_are_named(v: ModuleType) -> None:
    stuck = found({"l1": 32.0, "l2": 32.5, "hbm": 34.4})
    for level in ("l2", "hbm"):
        said = v.judge_level(level, stuck)
        assert said and "reads like L1" in said and "every entry" in said, said
    said = v.judge_cold_warm({"cold": 283.0, "warm": 281.0}, 8 * MiB, 658.5, 280.7)
    assert said and "reads like the warm one" in said and "flush" in said, said


def test_an_index_chase_or_l1_bypass_is_named_at_l1(v: ModuleType) -> None:
    # An index chase read 39.6 cycles at L1 on the H200, where the pure chase reads 32.0.
    index = v.judge_level("l1", found({"l1": 39.6, "l2": 280.7, "hbm": 658.5}))
    assert index and "between one load's return and the next" in index, index
    bypass = v.judge_level("l1", found({"l1": 280.0, "l2": 280.7, "hbm": 658.5}))
    assert bypass and "reads like L2" in bypass and "volatile" in bypass, bypass
    assert v.judge_level("l1", found({"l1": "fast", "l2": 1.0, "hbm": 1.0})) is not None


# -- the checks' own pieces --------------------------------------------------------------------


def test_synthetic_curves_have_the_plateaus_they_were_made_with() -> None:
    draw = random.Random(27)
    for i in range(2000):
        curve, want = synthetic_curve(draw, hbm=i % 5 != 0, far=i % 3 == 0)
        assert own_plateaus(curve) == want
        shuffled = list(curve)
        draw.shuffle(shuffled)
        assert own_plateaus(shuffled) == want


def test_the_recorded_curve_has_three_plateaus() -> None:
    curve = recorded_curve()
    if not curve:
        pytest.skip("this copy of gpulab ships no recorded H200 curve")
    levels = own_plateaus(curve)
    ends = [found_level["last"] for found_level in levels.values() if found_level is not None]
    assert len(ends) == 3 and ends == sorted(ends)


def test_the_plan_is_the_probes_less_its_flush() -> None:
    assert own_plan(32 * KiB, 60 * MiB) == [256, MIN_STEPS]
    assert own_plan(8 * MiB, 60 * MiB) == [65_536, 65_536]
    assert own_plan(256 * MiB, 60 * MiB) == [0, 2 * MiB]


def test_the_visible_checks_hold_no_answer_to_a_part() -> None:
    """The rules' readings and the chase live on the trusted side, not in the shipped file."""
    text = VISIBLE.read_text(encoding="utf-8")
    for answer in ("RawKernel", "permutation(", "median(", "cycle_table(", "np.roll"):
        assert answer not in text, answer


def test_the_chain_judge_names_each_mistake(v: ModuleType) -> None:
    order = list(range(1000))
    random.Random(3).shuffle(order)
    cycle = [0] * 1000
    for here, after in zip(order, order[1:] + order[:1], strict=True):
        cycle[here] = after
    call = "make_chain(1000, 128, 1)"
    assert v.chain_problem([x * 128 for x in cycle], 1000, 128, call) is None
    said = v.chain_problem(cycle, 1000, 128, call)  # entry numbers, not byte offsets
    assert said and "entry numbers" in said, said
    said = v.chain_problem([x * 128 for x in order], 1000, 128, call)  # a permutation
    assert said and "separate cycles" in said and "random permutation" in said, said
    said = v.chain_problem([0] * 1000, 1000, 128, call)
    assert said and "both followed by entry 0" in said, said
    said = v.chain_problem([((i + 7) % 1000) * 128 for i in range(1000)], 1000, 128, call)
    assert said and "fixed stride" in said, said
    assert v.chain_problem([0], 1, 128, "make_chain(1, 128, 0)") is None
    said = v.chain_problem((0,), 1, 128, "make_chain(1, 128, 0)")
    assert said and "a list of 1 plain ints" in said, said
