"""Wrong but plausible answers to pinned-transfer, graded by the real runner; and the trusted side.

Each notebook under tests/fixtures/wrong_answers/pinned-transfer/ is a learner's
answer with one mistake made on purpose (its metadata says which; the README
beside them lists them). Graded with the visible and the hidden checks, none may
earn full marks, the checks named below must fail with a message that names the
mistake, and no message may quote the reference solution. The mistakes in the
size ladder, the fit and the NUMA node are caught on any machine; those in timing
a copy only where copies are timed, so their test needs a GPU.

The checks' trusted side (`gpulab.grading.checks.reference.pinned_transfer`) is tested
too: its fit finds the curve a synthetic curve was made from, its reading of a
GPU's NUMA node agrees with what numa-topology expects of the same recorded
machines, its link rates are the lesson's table, and the visible checks, which
ship to learners, hold no answer to a part.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from gpulab.course import load_course
from gpulab.grading.build import solution_path
from gpulab.grading.checks.gpu import gpu_missing
from gpulab.grading.checks.machines import load_machine, materialize
from gpulab.grading.checks.notebook import read_notebook
from gpulab.grading.checks.reference import pinned_transfer as ref
from gpulab.grading.checks.runner import CheckReport
from helpers.wrong_answers import run_corpus, solution_lines

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "wrong_answers" / "pinned-transfer"
VISIBLE = ROOT / "exercises" / "numa" / "test_pinned_transfer.py"
EXERCISE = next(e for e in load_course().exercises() if e.name == "pinned-transfer")
TWO_NODES = "needs two NUMA nodes"

# For each wrong answer caught without a GPU: check -> words its failure message must hold.
MUST_FAIL: dict[str, dict[str, tuple[str, ...]]] = {
    "gib-per-second": {
        "test_fit_on_synthetic_curves": ("1e9/2**30", "GiB/s", "10**9 bytes"),
        "test_fit_fresh_curves": ("GiB/s",),
    },
    "unweighted-fit": {
        "test_fit_on_synthetic_curves": ("ordinary least squares", "relative errors"),
    },
    "numa-node-file-only": {
        "test_gpu_numa_node_recorded_machines": ("'h200-vm'", "returned None", "local_cpulist"),
        "test_gpu_numa_node_changed_machines": ("local_cpulist",),
    },
    "ladder-doubles-lo": {
        "test_size_ladder": ("sizes such as 4000", "powers of two"),
    },
}
# The same for the wrong answers caught where copies are timed (on a GPU).
MUST_FAIL_GPU: dict[str, dict[str, tuple[str, ...]]] = {
    "pageable-as-pinned": {
        "test_pinned_copies_agree": ("pinned host to device",),
        "test_pinned_beats_pageable": ("page-locked", "NumPy array"),
    },
    "bytes-twice": {
        # the pageable check allows 60 % (a host memcpy's speed differs between processes),
        # so a doubled pageable figure can pass it: an H100 run graded it passed
        "test_pinned_copies_agree": ("counted twice",),
    },
    "host-timer": {
        "test_pinned_copies_agree": ("host timer", "asynchronous", "CUDA events"),
    },
}


def graded(notebook: Path) -> CheckReport:
    report = run_corpus(EXERCISE, notebook)
    assert report.status in ("passed", "failed", "skipped"), (report.status, report.message)
    return report


def fails_and_says_why(name: str, must: dict[str, tuple[str, ...]]) -> None:
    notebook = FIXTURES / f"{name}.ipynb"
    assert read_notebook(notebook).metadata.get("gpulab_wrong_answer"), "say what is wrong"
    report = graded(notebook)
    assert report.status == "failed" and report.earned < report.possible, (
        report.status,
        report.earned,
        report.possible,
    )
    by_check = {r.check: r for r in report.results}
    for check, words in must.items():
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


def test_every_fixture_is_graded_here() -> None:
    assert {p.stem for p in FIXTURES.glob("*.ipynb")} == set(MUST_FAIL) | set(MUST_FAIL_GPU)
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}.ipynb`" in readme for name in [*MUST_FAIL, *MUST_FAIL_GPU])


@pytest.mark.parametrize("name", list(MUST_FAIL))
def test_a_wrong_answer_fails_and_says_why(name: str) -> None:
    fails_and_says_why(name, MUST_FAIL[name])


@pytest.mark.gpu
@pytest.mark.skipif(gpu_missing() is not None, reason=str(gpu_missing()))
@pytest.mark.parametrize("name", list(MUST_FAIL_GPU))
def test_a_wrong_timing_fails_and_says_why(name: str) -> None:
    fails_and_says_why(name, MUST_FAIL_GPU[name])


@pytest.mark.skipif(gpu_missing() is None, reason="on a GPU, the timing test grades these")
@pytest.mark.parametrize("name", list(MUST_FAIL_GPU))
def test_a_wrong_timing_is_right_everywhere_else(name: str) -> None:
    """The timing mistakes are in part 2 alone: every check that runs without a GPU passes
    (so on a GPU, what fails is the timing)."""
    report = graded(FIXTURES / f"{name}.ipynb")
    assert not [(r.check, r.message) for r in report.results if r.outcome == "failed"]


def test_the_solution_earns_every_point_it_can_here() -> None:
    """Full marks on every check that runs here; only GPU checks may skip (without a GPU,
    or the NUMA comparison on a machine with one node)."""
    report = graded(solution_path(EXERCISE))
    assert report.status in ("passed", "skipped"), [
        (r.check, r.message) for r in report.results if r.outcome == "failed"
    ]
    assert report.earned == report.possible > 0
    skipped = [r for r in report.results if r.outcome == "skipped"]
    assert all(r.needs_gpu or r.message.startswith(TWO_NODES) for r in skipped), [
        (r.check, r.message) for r in skipped
    ]
    ran = {r.check for r in report.results if r.outcome == "passed"}
    assert {
        "test_fit_on_synthetic_curves",
        "test_fit_fresh_curves",
        "test_gpu_numa_node_recorded_machines",
        "test_gpu_numa_node_changed_machines",
    } <= ran


# ---- the trusted side ---------------------------------------------------------------------


def test_the_fit_finds_the_curve_it_was_made_from() -> None:
    rng = random.Random(5)
    for _ in range(200):
        fixed_us, gbs = rng.uniform(2, 40), rng.uniform(3, 120)
        sizes = [2**k for k in range(12, 31)]
        seconds = [
            (fixed_us * 1e-6 + n / (gbs * 1e9)) * math.exp(rng.gauss(0, 0.02)) for n in sizes
        ]
        a, b = ref.fit_latency_bandwidth(sizes, seconds)
        assert abs(a - fixed_us) <= 0.15 * fixed_us and abs(b - gbs) <= 0.03 * gbs
    exact = [2e-6 + n / 50e9 for n in (4096, 2**20, 2**30)]
    a, b = ref.fit_latency_bandwidth([4096, 2**20, 2**30], exact)
    assert a == pytest.approx(2.0) and b == pytest.approx(50.0)


def test_half_peak_and_ladder() -> None:
    assert ref.half_peak_size([1, 2, 4, 8], [1.0, 2.9, 6.0, 4.0]) == 4
    assert ref.half_peak_size([1, 2, 4, 8], [1.0, 3.0, 6.0, 4.0]) == 2
    assert ref.size_ladder(4 * 2**10, 2**30, 2**40) == [2**k for k in range(12, 31)]
    assert ref.size_ladder(4000, 10**9, 300 * 2**20) == [2**k for k in range(12, 29)]
    assert ref.size_ladder(4096, 2**30, 4095) == []


def test_link_rates_are_the_lessons_table() -> None:
    """Gen5 x16 about 63 GB/s and Gen4 x16 about 31.5 per direction (the lesson's claims),
    halving each generation down; nothing for Gen6 or an impossible width."""
    assert ref.link_gbs(5, 16) == pytest.approx(63.0, rel=0.005)
    assert ref.link_gbs(4, 16) == pytest.approx(31.5, rel=0.005)
    assert ref.link_gbs(3, 16) == pytest.approx(15.75, rel=0.005)
    assert [ref.link_gbs(g, 16) for g in (1, 2)] == [4.0, 8.0]
    assert ref.link_gbs(6, 16) is None and ref.link_gbs(5, 0) is None


@pytest.mark.parametrize("machine", ["two-socket", "h200-vm"])
def test_the_gpu_node_agrees_with_numa_topology(machine: str, tmp_path: Path) -> None:
    """Where the firmware names the node, the trusted reading is numa-topology's expected
    answer on the same recorded machine; where it says -1, the node of the local CPUs."""
    root = str(materialize(machine, tmp_path))
    nodes = ref.node_cpus(root)
    for gpu in load_machine(machine).want("numa-topology")["gpu_nodes"]:
        got = ref.gpu_numa_node(gpu["bus_id"].upper(), root)
        if gpu["numa_node"] is not None:
            assert got == gpu["numa_node"]
        else:
            near = [n for n, cpus in nodes.items() if set(cpus) & set(gpu["local_cpus"])]
            assert len(near) == 1 and got == near[0]


def test_page_nodes_places_a_touched_buffer_on_a_node_of_this_machine() -> None:
    numpy = pytest.importorskip("numpy")
    buffer = numpy.ones(16 * 2**20, dtype=numpy.uint8)
    found = ref.page_nodes(buffer.ctypes.data, buffer.nbytes)
    nodes = set(ref.node_cpus()) or {0}
    assert found and all(node is None or node in nodes for node in found)
    assert any(node is not None for node in found) or not ref.node_cpus()


def test_the_visible_checks_hold_no_answer_to_a_part() -> None:
    """Visible checks ship to learners: the fit, the ladder, the timed copies and the NUMA
    reading live on the trusted side (gpulab.grading.checks.reference), not in the file."""
    text = VISIBLE.read_text(encoding="utf-8")
    answers = [
        "memcpyAsync(",
        "get_elapsed_time(",
        "lstsq(",
        "empty_pinned(",
        "sched_setaffinity(",
        'numa_node").read_text',
        "/ 130",
    ]
    assert [answer for answer in answers if answer in text] == []


@pytest.mark.gpu
@pytest.mark.skipif(gpu_missing() is not None, reason=str(gpu_missing()))
def test_the_checks_own_pinned_buffer_lands_on_the_node_asked() -> None:
    """The trusted NUMA copy touches its buffer from the node's CPUs: move_pages must find
    its pages there (on every node with CPUs), and the copy must run at a plausible rate."""
    nodes = {n: cpus for n, cpus in ref.node_cpus().items() if cpus}
    for node, cpus in nodes.items():
        gbs, placed = ref.own_pinned_on_node(cpus, 16 * 2**20, "h2d")
        assert placed in (node, None) and gbs > 0.5, (node, placed, gbs)
