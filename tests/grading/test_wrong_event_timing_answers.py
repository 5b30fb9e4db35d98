"""Wrong but plausible answers to event-timing, graded by the real runner; and the checks'
own side of the exercise.

Each notebook under tests/fixtures/wrong_answers/event-timing/ is a learner's answer
with one mistake made on purpose (its metadata says which; the README beside them
lists them). Graded with the visible and the hidden checks, none may earn full marks,
the checks named below must fail with a message that names the mistake, and no
message may quote the reference solution. The mistakes of part 1 (a mean for a median,
bytes counted twice, GiB for GB) are graded here, without a GPU; those of parts 2 to 4
(a host timer with no synchronisation, no warm-up, a naive timer that waits, a warmed
"first" launch) only on a GPU, where the check times the kernel itself. Without one,
the checks' judgements are tried on figures such mistakes give, so that the messages
are proved here too. And the trusted side (gpulab.grading.checks.reference.event_timing)
times the very kernel the setup launches, on buffers sized by the same rule.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from gpulab.course import load_course
from gpulab.grading.build import solution_path
from gpulab.grading.checks.cells import answer_cells, setup_cells
from gpulab.grading.checks.gpu import gpu_missing
from gpulab.grading.checks.notebook import read_notebook
from gpulab.grading.checks.reference import event_timing
from gpulab.grading.checks.runner import CheckReport
from helpers.wrong_answers import run_corpus, solution_lines

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "wrong_answers" / "event-timing"
VISIBLE = ROOT / "exercises" / "measuring" / "test_event_timing.py"
EXERCISE = next(e for e in load_course().exercises() if e.name == "event-timing")

HOST_TIMER = "a host timer around an asynchronous launch"
FIRST_LAUNCH = "first launch: CuPy compiles it with NVRTC"

# For each wrong answer: check -> words its failure message must hold (every one of them).
CPU_MISTAKES: dict[str, dict[str, tuple[str, ...]]] = {
    "mean-not-median": {
        "test_median_ms": ("that is the mean", "outlier (9.7) pulls the mean up"),
        "test_median_ms_on_fresh_timings": ("that is the mean", "(seed "),
    },
    "bytes-counted-twice": {
        "test_achieved_gbs": ("bytes counted twice",),
        "test_achieved_gbs_on_fresh_figures": ("bytes counted twice", "(seed "),
    },
    "gib-not-gb": {"test_achieved_gbs": ("GB are decimal", "GiB")},
}
GPU_MISTAKES: dict[str, dict[str, tuple[str, ...]]] = {
    "host-timer-no-sync": {
        "test_time_host_synced": (HOST_TIMER, "Synchronise"),
        "test_time_host_synced_other_size": (HOST_TIMER,),
        "test_compare": (HOST_TIMER, "['synced_ms']"),
    },
    "no-warm-up": {
        "test_time_events_on_a_kernel_never_launched": (
            "never launched",
            FIRST_LAUNCH,
            "Warm up",
        ),
    },
    "naive-waits": {
        "test_time_host_naive": ("Yours waited for the GPU",),
        "test_compare": ("Yours waited for the GPU", "['naive_ms']"),
    },
    "cold-after-warm-up": {
        "test_time_cold": ("looks like a warm launch", FIRST_LAUNCH),
        "test_compare": ("looks like a warm launch", "['cold_ms']"),
    },
}
MUST_FAIL = {**CPU_MISTAKES, **GPU_MISTAKES}


@pytest.fixture(scope="module", autouse=True)
def _points_marker(pytestconfig: pytest.Config) -> None:
    """Check files mark their points; here, outside gpulab's plugin, that marker is declared
    so that the visible checks can be imported (markers are strict)."""
    pytestconfig.addinivalue_line("markers", "points(n): what a check is worth")


@pytest.fixture(scope="module")
def checks() -> ModuleType:
    """The visible checks, for their judgements of figures."""
    spec = importlib.util.spec_from_file_location("event_timing_visible", VISIBLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def graded(notebook: Path) -> CheckReport:
    report = run_corpus(EXERCISE, notebook)
    assert report.status in ("passed", "failed", "skipped"), (report.status, report.message)
    return report


def fails_and_says_why(name: str) -> None:
    notebook = FIXTURES / f"{name}.ipynb"
    assert read_notebook(notebook).metadata.get("gpulab_wrong_answer"), "say what is wrong"
    report = graded(notebook)
    assert report.status == "failed" and report.earned < report.possible, (
        report.status,
        report.earned,
        report.possible,
    )
    by_check = {r.check: r for r in report.results}
    for check, words in MUST_FAIL[name].items():
        result = by_check[check]
        assert result.outcome == "failed", (check, result.outcome, result.message)
        missing = [word for word in words if word not in result.message]
        assert not missing, (check, missing, result.message)
    own = "\n".join(cell.source for cell in read_notebook(notebook).cells)
    quoted = [
        line
        for line in solution_lines(EXERCISE)
        if line not in own and any(line in r.message for r in report.results)
    ]
    assert not quoted, f"failure messages quote the solution: {quoted}"


# -- the fixtures ------------------------------------------------------------------------
def test_every_fixture_is_listed_and_answers_every_part() -> None:
    assert {p.stem for p in FIXTURES.glob("*.ipynb")} == set(MUST_FAIL)
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}.ipynb`" in readme for name in MUST_FAIL)
    released = read_notebook(EXERCISE.notebook)
    parts = set(answer_cells(released, EXERCISE.notebook))
    assert {"median_ms", "achieved_gbs", "time_events", "compare", "predictions"} <= parts
    for name in MUST_FAIL:
        path = FIXTURES / f"{name}.ipynb"
        assert set(answer_cells(read_notebook(path), path)) == parts, name
    assert len(MUST_FAIL) >= 3


@pytest.mark.parametrize("name", list(CPU_MISTAKES))
def test_a_wrong_answer_to_part_1_fails_and_says_why(name: str) -> None:
    fails_and_says_why(name)


@pytest.mark.gpu
@pytest.mark.skipif(gpu_missing() is not None, reason=str(gpu_missing()))
@pytest.mark.parametrize("name", list(GPU_MISTAKES))
def test_a_wrong_timing_fails_on_the_gpu_and_says_why(name: str) -> None:
    fails_and_says_why(name)


def test_the_solution_earns_every_point_it_can_here() -> None:
    """Full marks on every check that runs here; only GPU checks may skip."""
    report = graded(solution_path(EXERCISE))
    assert report.status in ("passed", "skipped"), [
        (r.check, r.message) for r in report.results if r.outcome == "failed"
    ]
    assert report.earned == report.possible > 0
    skipped = [r for r in report.results if r.outcome == "skipped"]
    assert all(r.needs_gpu for r in skipped), [(r.check, r.message) for r in skipped]


# -- the judgements of parts 2 to 4, on figures each mistake gives ------------------------
EVENTS = 1.6  # ms per launch: a kernel moving about 5 GB at about 3 TB/s


def test_a_host_timer_without_synchronisation_is_named(checks: ModuleType) -> None:
    for why in (
        checks.judge_synced(0.012, EVENTS, "time_host_synced(...)", 20),
        checks.judge_events(0.009, EVENTS, "time_events(...)", 20),
    ):
        assert why is not None and HOST_TIMER in why
    assert checks.judge_synced(EVENTS * 1.05, EVENTS, "time_host_synced(...)", 20) is None
    assert checks.judge_events(EVENTS * 0.95, EVENTS, "time_events(...)", 20) is None


def test_a_timing_without_warm_up_is_named(checks: ModuleType) -> None:
    # compilation in a single timing of 2 launches: 30 ms over 2 launches on top of 1.6 ms
    why = checks.judge_events(EVENTS + 15.0, EVENTS, "time_events(...)", 2)
    assert why is not None and "warm up before recording the start event" in why
    total = checks.judge_events(EVENTS * 20, EVENTS, "time_events(...)", 20)
    assert total is not None and "the time of all 20 launches; return it per launch" in total


def test_a_naive_timer_that_waits_and_a_warm_first_launch_are_named(checks: ModuleType) -> None:
    waited = checks.judge_naive(EVENTS * 1.1, EVENTS, "time_host_naive(...)")
    assert waited is not None and "Yours waited for the GPU" in waited
    assert checks.judge_naive(0.008, EVENTS, "time_host_naive(...)") is None
    warm = checks.judge_cold(EVENTS * 1.05, 30.0, EVENTS, "time_cold(...)")
    assert warm is not None and "looks like a warm launch" in warm
    assert checks.judge_cold(25.0, 30.0, EVENTS, "time_cold(...)") is None


def test_bandwidth_mistakes_are_named(checks: ModuleType) -> None:
    right = event_timing.gbs(2**29, EVENTS)
    for got, words in (
        (2 * right, "bytes counted twice"),
        (right * 1e9 / 2**30, "GB are decimal"),
        (right / 2, "half the traffic"),
        (right * 1000, "a factor of 1000 is a unit"),
    ):
        why = checks.judge_gbs(got, right, "compare(n)['events_gbs']", 0.05)
        assert why is not None and words in why, (got, why)
    assert checks.judge_gbs(right * 1.03, right, "compare(n)['events_gbs']", 0.05) is None


def test_median_mistakes_are_named(checks: ModuleType) -> None:
    samples = [1.25, 1.5, 1.0, 1.75]
    assert checks.judge_median(1.375, samples, 1.375, "four") is None
    for got, words in (
        (1.5, "mean of the two middle values"),
        (1.0, "that is the minimum"),
        (sum([0.98, 1.0, 1.01, 1.02, 9.7]) / 5, "that is the mean"),
    ):
        data = [0.98, 1.0, 1.01, 1.02, 9.7] if words == "that is the mean" else samples
        want = 1.01 if words == "that is the mean" else 1.375
        why = checks.judge_median(got, data, want, "case")
        assert why is not None and words in why, (got, why)


# -- the trusted side times what the setup launches ----------------------------------------
def setup_namespace(free: int) -> dict[str, Any]:
    """The released setup cell run here, with CuPy standing in for a GPU with `free` bytes
    free (only buffer_elements reads it)."""
    namespace: dict[str, Any] = {}
    for cell in setup_cells(read_notebook(EXERCISE.notebook)):
        exec(compile(cell.source, "setup", "exec"), namespace)
    device = SimpleNamespace(mem_info=(free, 2 * free))
    namespace["cp"] = SimpleNamespace(cuda=SimpleNamespace(Device=lambda: device))
    return namespace


def test_the_trusted_side_launches_the_setups_kernel_the_same_way() -> None:
    namespace = setup_namespace(80 * 10**9)
    assert namespace["SCALE_SOURCE"] == event_timing.KERNEL_SOURCE
    assert namespace["THREADS"] == event_timing.THREADS


@pytest.mark.parametrize("free", [79 * 10**9, 140 * 10**9, 190 * 10**9, 15 * 10**9, 10**8])
def test_buffers_are_sized_by_the_same_rule_from_free_memory(free: int) -> None:
    n = setup_namespace(free)["buffer_elements"]()
    assert n == event_timing.elements_for(free)
    assert n % 2**18 == 0 and 2**20 <= n <= 2**30
    if 2**20 < n < 2**30:  # each buffer a 32nd of the free memory, less than a MiB under it
        assert 0 <= free / 32 - 4 * n < 2**20


def test_the_visible_checks_hold_no_answer_to_a_part() -> None:
    """Visible checks ship to learners: the timings live on the trusted side
    (gpulab.grading.checks.reference.event_timing), not in the file."""
    text = VISIBLE.read_text(encoding="utf-8")
    calls = ["get_elapsed_time(", "perf_counter(", ".record(", "Event(", "statistics"]
    assert [call for call in calls if call in text] == []
