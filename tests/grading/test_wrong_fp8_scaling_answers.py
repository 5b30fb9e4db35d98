"""Wrong but plausible answers to fp8-scaling, graded by the real runner; and the checks'
own E4M3 rounding against values worked out by hand.

Each notebook under tests/fixtures/wrong_answers/fp8-scaling/ is a learner's answer with
one mistake made on purpose (its metadata says which; the README beside them lists
them). Graded with the visible and the hidden checks, none may earn full marks, the
checks named below must fail with a message that names the mistake, and no message may
quote the reference solution. The checks of part 4 need an FP8 GPU and are skipped here;
every mistake below is in the CPU parts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpulab.course import load_course
from gpulab.grading.build import solution_path
from gpulab.grading.checks.notebook import read_notebook
from gpulab.grading.checks.reference import fp8_scaling as reference
from gpulab.grading.checks.runner import CheckReport
from helpers.wrong_answers import run_corpus, solution_lines

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "wrong_answers" / "fp8-scaling"
EXERCISE = next(e for e in load_course().exercises() if e.name == "fp8-scaling")

WHOLE = "every row got the same scale, the whole tensor's amax / 448"
ZERO = "a row or block of zeros has amax 0"
POWER = "MX scales must be powers of two"
TRUNCATED = "rounded toward zero (truncated)"
CLAMP = "values above 448 in magnitude"
SQNR = "recipe_sqnr"

# For each wrong answer: check -> words its failure message must hold (every one of them).
MUST_FAIL: dict[str, dict[str, tuple[str, ...]]] = {
    "whole-tensor-row-scale": {
        "test_per_row": (WHOLE,),
        "test_linear_recipes_on_fresh_tensors": (WHOLE, "(seed "),
    },
    "zero-amax": {
        "test_per_row": (ZERO, "the scale 1.0"),
        "test_blocks": (ZERO,),
        "test_linear_recipes_on_fresh_tensors": (ZERO, "(seed "),
    },
    "mx-not-power-of-two": {
        "test_mx": (POWER,),
        "test_mx_on_fresh_tensors": (POWER, "(seed "),
    },
    "truncated": {
        "test_e4m3_known_values": (TRUNCATED, "ties to even"),
        "test_e4m3_every_binade": (TRUNCATED,),
        "test_per_tensor": (TRUNCATED,),
        "test_e4m3_on_fresh_values": (TRUNCATED, "(seed "),
    },
    "no-clamp": {
        "test_e4m3_known_values": (CLAMP, "Saturate"),
        "test_e4m3_on_fresh_values": (CLAMP, "(seed "),
    },
}
# Checks a wrong answer may fail besides (its errors reach them, or drawn inputs may).
MAY_FAIL = {
    "whole-tensor-row-scale": {"test_outlier_ranking", "test_sqnr_on_fresh_outliers"},
    "zero-amax": set(),
    "mx-not-power-of-two": {"test_outlier_ranking", "test_sqnr_on_fresh_outliers"},
    "truncated": {
        "test_per_row",
        "test_blocks",
        "test_mx",
        "test_outlier_ranking",
        "test_linear_recipes_on_fresh_tensors",
        "test_mx_on_fresh_tensors",
        "test_sqnr_on_fresh_outliers",
    },
    "no-clamp": {
        "test_e4m3_every_binade",
        "test_mx",
        "test_outlier_ranking",
        "test_mx_on_fresh_tensors",
        "test_sqnr_on_fresh_outliers",
    },
}


def graded(notebook: Path) -> CheckReport:
    report = run_corpus(EXERCISE, notebook)
    assert report.status in ("passed", "failed"), (report.status, report.message)
    return report


def test_every_fixture_is_listed() -> None:
    assert {p.stem for p in FIXTURES.glob("*.ipynb")} == set(MUST_FAIL)
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}.ipynb`" in readme for name in MUST_FAIL)
    for name in MUST_FAIL:
        metadata = read_notebook(FIXTURES / f"{name}.ipynb").metadata
        assert metadata.get("gpulab_wrong_answer"), f"{name}: say what is wrong"
    assert len(MUST_FAIL) >= 3


@pytest.mark.parametrize("name", list(MUST_FAIL))
def test_a_wrong_answer_fails_and_says_why(name: str) -> None:
    report = graded(FIXTURES / f"{name}.ipynb")
    assert report.status == "failed" and report.earned < report.possible
    by_check = {r.check: r for r in report.results}
    for check, words in MUST_FAIL[name].items():
        result = by_check[check]
        assert result.outcome == "failed", (check, result.outcome, result.message)
        missing = [word for word in words if word not in result.message]
        assert not missing, (check, missing, result.message)
    allowed = set(MUST_FAIL[name]) | MAY_FAIL[name]
    failed = {r.check for r in report.results if r.outcome == "failed"}
    assert failed <= allowed, [
        (r.check, r.message) for r in report.results if r.check in failed - allowed
    ]
    own = "\n".join(cell.source for cell in read_notebook(FIXTURES / f"{name}.ipynb").cells)
    quoted = [
        line
        for line in solution_lines(EXERCISE)
        if line not in own and any(line in r.message for r in report.results)
    ]
    assert not quoted, f"failure messages quote the solution: {quoted}"


def test_the_solution_earns_every_point_that_needs_no_gpu() -> None:
    report = run_corpus(EXERCISE, solution_path(EXERCISE))
    assert report.status in ("passed", "skipped"), [
        (r.check, r.message) for r in report.results if r.outcome != "passed"
    ]
    ran = [r for r in report.results if r.outcome != "skipped"]
    assert sum(r.points for r in ran) == 23
    assert all(r.needs_gpu for r in report.results if r.outcome == "skipped")


# -- the checks' own E4M3 ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "want"),
    [
        (448.0, 448.0),
        (2.0**-9, 0.001953125),  # the smallest subnormal
        (1.0625, 1.0),  # a tie: to the even mantissa 000
        (1.1875, 1.25),  # a tie: to the even mantissa 010
        (240.0, 240.0),
        (464.0, 448.0),  # saturated (it is also a tie between 448 and 480)
        (470.0, 448.0),
        (1e9, 448.0),
        (-500.0, -448.0),
        (2.0**-10, 0.0),  # half the smallest subnormal: ties to 0
        (1.5 * 2.0**-9, 2.0**-8),  # a subnormal tie, to the even 2 × 2^-9
        (0.015625, 0.015625),  # the smallest normal
        (0.0146484375, 0.015625),  # 7.5 × 2^-9: a tie, to the even 8 × 2^-9 = 2^-6
        (0.3, 0.3125),
        (0.0, 0.0),
    ],
)
def test_round_e4m3_known_values(value: float, want: float) -> None:
    assert float(reference.round_e4m3(np.array([value]))[0]) == want


def test_round_e4m3_gives_every_value_back_and_nothing_else() -> None:
    """All 126 positive finite E4M3 values (bits 0x01 to 0x7E) are fixed points; every
    midpoint between neighbours goes to the one with the even mantissa."""
    values = []
    for bits in range(1, 0x7F):
        exponent, mantissa = bits >> 3, bits & 7
        if exponent == 0:
            values.append(mantissa * 2.0**-9)
        else:
            values.append((1 + mantissa / 8) * 2.0 ** (exponent - 7))
    grid = np.array(values)
    assert grid.max() == 448.0 and grid.min() == 2.0**-9
    assert np.array_equal(reference.round_e4m3(grid), grid)
    assert np.array_equal(reference.round_e4m3(-grid), -grid)
    mids = (grid[:-1] + grid[1:]) / 2
    got = reference.round_e4m3(mids)
    even = np.where(np.arange(1, 0x7E) % 2 == 0, grid[:-1], grid[1:])  # bits of the lower one
    assert np.array_equal(got, even)


def test_mx_scales_land_the_maximum_in_256_to_512() -> None:
    amax = np.array([[1.0, 100.0, 120.0, 448.0, 1e-3, 0.0]])
    scales = reference.scales_from(amax, power_of_two=True)
    assert np.all(np.frexp(scales)[0] == 0.5)
    landed = amax[0, :5] / scales[0, :5]
    assert np.all((landed >= 256) & (landed < 512))
    assert scales[0, 5] == 1.0
