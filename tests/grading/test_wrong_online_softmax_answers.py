"""Wrong but plausible answers to online-softmax, graded by the real runner; and the checks'
own side of the exercise.

Each notebook under tests/fixtures/wrong_answers/online-softmax/ is a learner's answer
with one mistake made on purpose (its metadata says which; the README beside them
lists them). Graded with the visible and the hidden checks, none may earn full marks,
the checks named below must fail with a message that names the mistake, and no
message may quote the reference solution. The whole exercise runs on the CPU, so
every mistake is graded here. Then the checks' own side: the memory budget holds the
solution's streaming pass with room to spare and refuses one N × N matrix at every
size the checks draw, the mistakes' figures are named without a learner, and the
setup's `graded_call` hands over arrays exactly and says when an input was changed.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from gpulab.course import load_course
from gpulab.grading.build import solution_path
from gpulab.grading.checks.arrays import pack, unpack
from gpulab.grading.checks.cells import answer_cells, setup_cells
from gpulab.grading.checks.notebook import read_notebook
from gpulab.grading.checks.reference import online_softmax as reference
from gpulab.grading.checks.runner import CheckReport
from helpers.wrong_answers import run_corpus, solution_lines

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "wrong_answers" / "online-softmax"
VISIBLE = ROOT / "exercises" / "attention" / "test_online_softmax.py"
EXERCISE = next(e for e in load_course().exercises() if e.name == "online-softmax")

OVERFLOW = "exp overflowed"
MASKED = "is fully masked (every score −∞)"
RESCALE = "not rescaled: when a block raises a row's running maximum"
DIAGONAL = "your causal mask hides the diagonal"
N_BY_N = "the call held numbers of size N × N"
HALF = "stayed in float16"
ONCE = "S and P were counted once each"

# For each wrong answer: check -> words its failure message must hold (every one of them).
MUST_FAIL: dict[str, dict[str, tuple[str, ...]]] = {
    "no-max-shift": {
        "test_softmax_large_scores": (OVERFLOW, "softmax(x) = softmax(x − m)"),
        "test_softmax_on_fresh_scores": (OVERFLOW, "(seed "),
    },
    "no-rescale": {
        "test_stats_lesson_example": (RESCALE,),
        "test_stats_against_two_pass": (RESCALE, "exp(m − m_new)"),
        "test_attention_rescales": ("ℓ and the output were", RESCALE),
        "test_stats_on_fresh_rows": (RESCALE, "(seed "),
        "test_attention_on_fresh_inputs": (RESCALE, "(seed "),
    },
    "masked-nan": {
        "test_softmax_masked_rows": (MASKED, "all zeros"),
        "test_stats_against_two_pass": (MASKED, "m = -inf and l = 0"),
        "test_softmax_on_fresh_scores": (MASKED, "(seed "),
    },
    "causal-off-by-one": {
        "test_attention_causal": (DIAGONAL, "j ≤ i, not j < i"),
        "test_attention_edge_sizes": (DIAGONAL,),
        "test_attention_memory": (DIAGONAL,),
        "test_attention_on_fresh_inputs": (DIAGONAL, "(seed "),
    },
    "whole-matrix": {
        "test_attention_memory": (N_BY_N, "over the budget of 15.0 MiB", "float64 here is 32 MiB"),
        "test_attention_memory_on_a_fresh_size": (N_BY_N, "(seed "),
    },
    "float16-sums": {
        "test_softmax_dtypes": ("returned float16, want float32", HALF),
        "test_softmax_sums_float16_in_float32": (HALF, "(seed "),
    },
    "bytes-once": {
        "test_attention_bytes": (ONCE, "read back by the next"),
        "test_attention_bytes_on_fresh_sizes": (ONCE, "(seed "),
    },
}
# Hidden checks a wrong answer's drawn inputs may or may not reach (random per run).
MAY_FAIL = {
    "no-max-shift": {"test_softmax_infinite_scores"},
    "masked-nan": {"test_stats_on_fresh_rows"},
    "causal-off-by-one": {"test_attention_rescales", "test_attention_memory_on_a_fresh_size"},
    "no-rescale": {
        "test_attention_small",
        "test_attention_causal",
        "test_attention_edge_sizes",
        "test_attention_memory",
        "test_attention_memory_on_a_fresh_size",
    },
    "float16-sums": {"test_softmax_large_scores", "test_softmax_on_fresh_scores"},
}


@pytest.fixture(scope="module", autouse=True)
def _points_marker(pytestconfig: pytest.Config) -> None:
    """Check files mark their points; here, outside gpulab's plugin, that marker is declared
    so that the visible checks can be imported (markers are strict)."""
    pytestconfig.addinivalue_line("markers", "points(n): what a check is worth")


@pytest.fixture(scope="module")
def checks() -> ModuleType:
    """The visible checks, for their judgements."""
    spec = importlib.util.spec_from_file_location("online_softmax_visible", VISIBLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import would: its dataclass looks it up there
    spec.loader.exec_module(module)
    return module


def graded(notebook: Path) -> CheckReport:
    report = run_corpus(EXERCISE, notebook)
    assert report.status in ("passed", "failed"), (report.status, report.message)
    return report


# -- the fixtures ------------------------------------------------------------------------
def test_every_fixture_is_listed_and_answers_every_part() -> None:
    assert {p.stem for p in FIXTURES.glob("*.ipynb")} == set(MUST_FAIL)
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}.ipynb`" in readme for name in MUST_FAIL)
    released = read_notebook(EXERCISE.notebook)
    parts = set(answer_cells(released, EXERCISE.notebook))
    assert parts == {
        "softmax_two_pass",
        "predictions",
        "online_softmax_stats",
        "online_attention",
        "attention_bytes",
    }
    for name in MUST_FAIL:
        path = FIXTURES / f"{name}.ipynb"
        assert read_notebook(path).metadata.get("gpulab_wrong_answer"), f"{name}: say what is wrong"
        assert set(answer_cells(read_notebook(path), path)) == parts, name
    assert len(MUST_FAIL) >= 5


@pytest.mark.parametrize("name", list(MUST_FAIL))
def test_a_wrong_answer_fails_and_says_why(name: str) -> None:
    report = graded(FIXTURES / f"{name}.ipynb")
    assert report.status == "failed" and report.earned < report.possible, (
        report.earned,
        report.possible,
    )
    by_check = {r.check: r for r in report.results}
    for check, words in MUST_FAIL[name].items():
        result = by_check[check]
        assert result.outcome == "failed", (check, result.outcome, result.message)
        missing = [word for word in words if word not in result.message]
        assert not missing, (check, missing, result.message)
    allowed = set(MUST_FAIL[name]) | MAY_FAIL.get(name, set())
    unexpected = [r.check for r in report.results if r.outcome == "failed"]
    assert set(unexpected) <= allowed, [
        (r.check, r.message) for r in report.results if r.check in set(unexpected) - allowed
    ]
    own = "\n".join(cell.source for cell in read_notebook(FIXTURES / f"{name}.ipynb").cells)
    quoted = [
        line
        for line in solution_lines(EXERCISE)
        if line not in own and any(line in r.message for r in report.results)
    ]
    assert not quoted, f"failure messages quote the solution: {quoted}"


def test_the_solution_earns_every_point() -> None:
    report = graded(solution_path(EXERCISE))
    assert report.status == "passed", [
        (r.check, r.message) for r in report.results if r.outcome != "passed"
    ]
    assert report.earned == report.possible == 34


# -- the memory budget -----------------------------------------------------------------------
def solution_namespace() -> dict[str, Any]:
    """The released setup and the solution's answers, run here."""
    namespace: dict[str, Any] = {}
    for cell in setup_cells(read_notebook(EXERCISE.notebook)):
        exec(compile(cell.source, "setup", "exec"), namespace)
    path = solution_path(EXERCISE)
    for source in answer_cells(read_notebook(path), path).values():
        exec(compile(source.source, "answer", "exec"), namespace)
    return namespace


@pytest.mark.parametrize(("n", "d", "block"), [(2048, 16, 64), (1900, 16, 56), (2400, 4, 24)])
def test_the_budget_holds_a_streaming_pass_and_refuses_an_n_by_n_matrix(
    checks: ModuleType, n: int, d: int, block: int
) -> None:
    """At the visible size and the corners of the hidden draws, the solution, causal, stays
    under half the budget, even with a boolean N × N mask besides, and one N × N matrix of
    float64 is more than twice the budget."""
    namespace = solution_namespace()
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((n, d)) for _ in range(3))
    attention = namespace["online_attention"]
    _, peak = namespace["peak_mib"](attention, q, k, v, block=block, causal=True)
    budget = checks.memory_budget(n, d, block)
    assert peak * 2**20 < budget / 2, (peak, budget / 2**20)
    assert peak * 2**20 + n * n < budget  # np.tri(n, n, dtype=bool) is tolerated
    assert n * n * 8 > 2 * budget
    assert checks.judge_memory(peak, n, d, block, "call") is None
    why = checks.judge_memory(n * n * 8 / 2**20, n, d, block, "call")
    assert why is not None and N_BY_N in why


# -- the judgements, on what each mistake gives ---------------------------------------------
def test_byte_mistakes_are_named(checks: ModuleType) -> None:
    n, d, b = 4096, 128, 2
    right = checks.LESSON_BYTES[True]
    assert right == 4 * n * n * b + 4 * n * d * b
    assert checks.LESSON_BYTES[False] == 4 * n * d * b
    for got, words in (
        (2 * n * n * b + 4 * n * d * b, ONCE),
        (4 * n * n * b, "Q, K, V and O are missing"),
        (right * 8, "that is bits"),
        (right // b, "that counts values"),
        (right / 2**20, "that is MiB"),
        (checks.LESSON_BYTES[False], "the other version's count"),
    ):
        why = checks.judge_bytes(got, right, n, d, b, True, "attention_bytes(...)")
        assert why is not None and words in why, (got, why)
    assert checks.judge_bytes(right, right, n, d, b, True, "call") is None
    fused = checks.judge_bytes(3 * n * d * b, 4 * n * d * b, n, d, b, False, "call")
    assert fused is not None and "O is written too" in fused


def test_softmax_mistakes_are_named(checks: ModuleType) -> None:
    square = np.arange(9.0).reshape(3, 3) % 4
    flat = checks.flat_reduced(square, -1)
    reply = checks.Reply(flat, None, False)
    why = checks.judge_softmax(reply, square, -1, "softmax_two_pass(x)")
    assert why is not None and "keepdims=True" in why
    columns = checks.Reply(reference.softmax(square, 0), None, False)
    why = checks.judge_softmax(columns, square, 1, "softmax_two_pass(x, axis=1)")
    assert why is not None and "that is the softmax along axis 0" in why
    right = checks.Reply(reference.softmax(square, -1), None, True)
    why = checks.judge_softmax(right, square, -1, "softmax_two_pass(x)")
    assert why is not None and "changed its input in place" in why
    listed = checks.Reply(reference.softmax(square).tolist(), None, False)
    why = checks.judge_softmax(listed, square, -1, "softmax_two_pass(x)")
    assert why is not None and "return a NumPy array" in why


def test_attention_mistakes_are_named(checks: ModuleType) -> None:
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((6, 3)) for _ in range(3))
    s = q @ k.T / np.sqrt(3)
    flipped = reference.softmax(np.where(~reference.causal_mask(6, 6, shift=-1), s, -np.inf)) @ v
    for got, causal, words in (
        (flipped, True, "the wrong triangle"),
        (reference.softmax(s) @ v, True, "no score was masked"),
        (reference.attention(q, k, v, causal=True), False, "causal=False, yet you masked"),
        (reference.softmax(q @ k.T) @ v, False, "not divided by √d"),
        (checks.unrescaled_attention(q, k, v, 2, False, True, False), False, "the output was"),
    ):
        why = checks.judge_attention(checks.Reply(got, None, False), q, k, v, 2, causal, "call")
        assert why is not None and words in why, (words, why)


# -- the setup's graded_call -----------------------------------------------------------------
def test_graded_call_hands_over_arrays_exactly_and_sees_a_changed_input() -> None:
    namespace = solution_namespace()

    def shift_in_place(x: Any) -> Any:
        x -= x.max()
        return x

    namespace["shift_in_place"] = shift_in_place
    namespace["echo"] = lambda x: x
    x = np.array([[1.0, -np.inf, np.nan], [np.inf, 2.5, 0.0]], dtype=np.float32)
    wire = json.loads(json.dumps(pack(x), allow_nan=False))
    reply = json.loads(json.dumps(namespace["graded_call"]("echo", wire), allow_nan=False))
    got = unpack(reply["value"])
    assert got.dtype == np.float32 and np.array_equal(got, x, equal_nan=True)
    assert reply["changed_input"] is False and reply["peak_mib"] is None
    reply = namespace["graded_call"]("shift_in_place", pack(np.array([1.0, 3.0])))
    assert reply["changed_input"] is True
    stats = namespace["graded_call"]("online_softmax_stats", [pack(np.full(3, -np.inf))])
    m, total = unpack(stats["value"])
    assert np.isneginf(m) and total == 0.0
    traced = namespace["graded_call"](
        "online_attention", *(pack(np.ones((64, 2))) for _ in range(3)), block=8, traced=True
    )
    assert isinstance(traced["peak_mib"], float) and traced["peak_mib"] > 0
