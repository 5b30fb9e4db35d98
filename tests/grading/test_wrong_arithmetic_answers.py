"""Wrong but plausible answers to roofline and occupancy, graded by the real runner.

Each notebook under tests/fixtures/wrong_answers/<exercise>/ is a complete
answer with one kind of mistake (the README beside them says which). Each is
graded by `run_checks` with the visible and the hidden checks, as a grading
run does: it must lose points in the checks named here, and the messages must
name the mistake without giving the right value. The reference solutions
must still pass, the visible roofline checks must hold no answer (only seals
that the hidden reference makes), exceptions are told by their type, hidden
inputs change from run to run, and a learner who fails one hidden check on
purpose cannot tell from the feedback page which one it was.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gpulab.course.catalog import load_course
from gpulab.grading.checks import draws
from gpulab.grading.checks.learner import LearnerError
from gpulab.grading.checks.notebook import read_notebook, write_notebook
from gpulab.grading.checks.runner import CheckReport
from gpulab.grading.classrun.feedback import write_feedback
from gpulab.grading.gradebook.verdict import ExerciseGrade, LearnerGrades, verdict
from helpers.wrong_answers import run_corpus

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "wrong_answers"
VISIBLE = ROOT / "exercises" / "memory-hierarchy" / "test_roofline.py"
HIDDEN = {
    "roofline": ROOT / "solutions" / "memory-hierarchy" / "test_roofline_hidden.py",
    "occupancy": ROOT / "solutions" / "gpu-architecture" / "test_occupancy_hidden.py",
}
# How a message that hands over the value would read ("want 2000", "the answer is 5").
GIVES_A_VALUE = re.compile(r"\b(want|should be|the answer is|must move|says)\s+[-\d.]", re.I)


def load(path: Path, name: str) -> ModuleType:
    """A check file as a module of its own (a fresh import each time)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", autouse=True)
def _points_marker(pytestconfig: pytest.Config) -> None:
    """Check files mark their points; here, outside gpulab's plugin, that marker is declared
    so that they can be imported (markers are strict)."""
    pytestconfig.addinivalue_line("markers", "points(n): what a check is worth")


@pytest.fixture(scope="module")
def reference() -> ModuleType:
    """The hidden roofline checks, with the reference arithmetic."""
    return load(HIDDEN["roofline"], "roofline_reference")


def grade(exercise: str, notebook: Path) -> CheckReport:
    entry = next(e for e in load_course().exercises() if e.name == exercise)
    return run_corpus(entry, notebook)


Reference = Callable[[ModuleType], Any]  # a right value, from the reference module


@dataclass(frozen=True)
class Wrong:
    exercise: str
    name: str
    fails: frozenset[str]  # checks that must fail
    may_fail: frozenset[str]  # and those that may (random hidden inputs)
    says: dict[str, str]  # check -> words its message must hold
    never: tuple[Reference, ...] = ()  # right values it must not print, from the reference


def right(function: str, *args: Any, key: str | int) -> Reference:
    """A right value, as the reference's `function` gives it."""
    return lambda reference: getattr(reference, function)(*args)[key]


# On a GPU, occupancy's checks against CUDA's occupancy API run too: a mistake shows there
# wherever their cases reach it (on a machine without a GPU they are skipped).
CUDA_CHECKS = (
    "test_matches_cuda_occupancy_api test_random_kernels_against_cuda "
    "test_every_block_size_against_cuda"
)


def _w(
    exercise: str,
    name: str,
    fails: str,
    says: dict[str, str],
    may_fail: str = "",
    never: tuple[Reference, ...] = (),
) -> Wrong:
    if exercise == "occupancy":
        may_fail += " " + CUDA_CHECKS
    return Wrong(exercise, name, frozenset(fails.split()), frozenset(may_fail.split()), says, never)


WRONG = [
    _w(
        "roofline",
        "units-and-none",
        "test_zero_bytes_is_refused test_gpu_roofs test_place_kernel "
        "test_invalid_inputs_raise_value_error test_every_gpu_in_specs test_place_on_every_gpu",
        {
            "test_gpu_roofs": "bandwidth in GB/s: convert it to TB/s",
            "test_zero_bytes_is_refused": "returned None, but it should raise ValueError",
            "test_every_gpu_in_specs": "convert it to TB/s",
        },
        never=(
            right("roofs", "a100-80gb", key="bandwidth_tbs"),
            right("roofs", "a100-80gb", key="fp16_ridge"),
            right("place", "vector_add", 2**26, "a100-80gb", key="ridge"),
        ),
    ),
    _w(
        "roofline",
        "counting",
        "test_kernel_counts test_place_kernel test_kernels_at_other_sizes test_place_on_every_gpu",
        {
            "test_kernel_counts": "SAXPY reads y and writes it back",
            "test_kernels_at_other_sizes": "counts n adds, not n - 1",
        },
        never=(
            right("counts", "saxpy", 1000, key=1),
            right("counts", "matvec", 1000, key=1),
            right("counts", "saxpy", 8192, key=1),
            right("counts", "matvec", 8192, key=1),
        ),
    ),
    _w(
        "roofline",
        "fp32-peak",
        "test_place_kernel test_place_on_every_gpu",
        {"test_place_kernel": "an FP16 kernel meets the FP16 Tensor Core peak"},
        never=(
            right("place", "matvec", 8192, "h200", key="ridge"),
            right("place", "matvec", 8192, "h200", key="attainable_tflops"),
        ),
    ),
    _w(
        "roofline",
        "ridge-is-memory",
        "test_attainable_and_limit test_random_roofs",
        {
            "test_attainable_and_limit": "exactly at the ridge both roofs agree",
            "test_random_roofs": "exactly at the ridge",
        },
    ),
    _w(
        "roofline",
        "fma-one-flop",
        "test_kernel_counts test_place_kernel test_kernels_at_other_sizes test_place_on_every_gpu",
        {
            "test_kernel_counts": "the FLOPs are wrong (the bytes are right); a multiply-add "
            "(FMA) counts as two FLOPs"
        },
        never=(
            right("counts", "saxpy", 1000, key=0),
            right("counts", "matvec", 1000, key=0),
            right("counts", "gemm", 1000, key=0),
            right("counts", "gemm", 8192, key=0),
        ),
    ),
    _w(
        "roofline",
        "errors-by-message",
        "test_zero_bytes_is_refused test_invalid_inputs_raise_value_error",
        {
            "test_zero_bytes_is_refused": (
                "raised ZeroDivisionError, but it should raise ValueError"
            ),
            "test_invalid_inputs_raise_value_error": "it should raise ValueError",
        },
    ),
    _w(
        "roofline",
        "refuses-zero-flops",
        "test_arithmetic_intensity test_zero_bytes_is_refused test_zero_flops "
        "test_invalid_inputs_raise_value_error",
        {
            "test_zero_bytes_is_refused": "zero FLOPs is a valid input",
            "test_invalid_inputs_raise_value_error": "is a valid input",
        },
    ),
    _w(
        "occupancy",
        "whole-register-file",
        "test_lesson_examples test_every_register_count",
        {
            "test_lesson_examples": "your count for registers is too generous",
            "test_every_register_count": "your count for registers",
        },
        # Shared-memory steps draw blocks of up to 32 registers a thread: where a
        # warp takes 768 of them, pooling the partitions' leftovers counts one warp
        # too many, in about one run in seventeen.
        may_fail="test_random_limits test_shared_memory_steps",
    ),
    _w(
        "occupancy",
        "shared-without-reserve",
        "test_lesson_examples test_rounding test_shared_memory_steps",
        {
            "test_rounding": "your count for shared memory is too generous",
            "test_shared_memory_steps": "add reserved_shared_memory_per_block",
        },
        may_fail="test_random_limits test_every_register_count",
    ),
    _w(
        "occupancy",
        "threads-not-warps",
        "test_rounding test_every_register_count",
        {"test_rounding": "your count for threads is too generous"},
        may_fail="test_random_limits test_shared_memory_steps",
    ),
    _w(
        "occupancy",
        "registers-not-rounded",
        "test_rounding test_every_register_count",
        {"test_rounding": "your count for registers is too generous"},
        may_fail="test_random_limits test_shared_memory_steps",
    ),
    _w(
        "occupancy",
        "launch-limits-ignored",
        "test_blocks_that_cannot_launch test_random_limits",
        {"test_blocks_that_cannot_launch": "your count for threads is too generous"},
    ),
]


def spellings(value: Any) -> list[str]:
    """The ways a message could print `value`."""
    if isinstance(value, int):
        return [str(value), f"{value:,}"]
    return [repr(value), f"{value:.6g}", f"{value:.4g}"]


@pytest.mark.parametrize("wrong", WRONG, ids=lambda w: f"{w.exercise}-{w.name}")
def test_a_wrong_answer_loses_points_and_is_told_its_mistake(
    wrong: Wrong, reference: ModuleType
) -> None:
    report = grade(wrong.exercise, FIXTURES / wrong.exercise / f"{wrong.name}.ipynb")
    assert report.status == "failed", report.message
    assert report.earned < report.possible
    failed = {r.check: r for r in report.results if r.outcome == "failed"}
    assert wrong.fails <= set(failed), f"these should fail: {sorted(wrong.fails - set(failed))}"
    assert set(failed) <= wrong.fails | wrong.may_fail, (
        f"these should pass: {sorted(set(failed) - wrong.fails - wrong.may_fail)}"
    )
    for check, words in wrong.says.items():
        assert words in failed[check].message, failed[check].message
    values = [spelling for value in wrong.never for spelling in spellings(value(reference))]
    for result in failed.values():
        assert not GIVES_A_VALUE.search(result.message), result.message
        assert result.kind in (None, "error"), result.message  # an answer, not a crash
        shown = [
            v
            for v in values  # as a number of its own, not a part of another
            if re.search(rf"(?<![\d.]){re.escape(v)}(?![\d])", result.message)
        ]
        assert not shown, f"{result.check} prints the right value {shown}: {result.message}"


@pytest.mark.parametrize("exercise", ["roofline", "occupancy"])
def test_the_reference_solutions_pass(exercise: str) -> None:
    lesson = "memory-hierarchy" if exercise == "roofline" else "gpu-architecture"
    report = grade(exercise, ROOT / "solutions" / lesson / f"{exercise}.ipynb")
    ran = [r for r in report.results if r.outcome != "skipped"]
    assert ran and all(r.outcome == "passed" for r in ran), [
        f"{r.check}: {r.message}" for r in ran if r.outcome != "passed"
    ]
    assert all(r.needs_gpu for r in report.results if r.outcome == "skipped")


def test_the_visible_seals_are_the_references(reference: ModuleType) -> None:
    """The seals in the visible file are what the hidden reference makes today (after a
    change to the cases or to specs.toml, run the hidden file and paste what it prints)."""
    visible = reference._V
    seals, known = reference.sealed_tables()
    assert (seals, known) == (visible._SEALS, visible._KNOWN), (
        "the seals are out of date: run the hidden file and paste what it prints"
    )
    assert {tag for tag, _, _ in (item.partition(":") for item in known.split())} <= set(
        visible.MISTAKES
    )


def test_no_real_answer_sits_near_a_rounding_edge(reference: ModuleType) -> None:
    """Real answers are sealed at six significant digits: each must be far enough from the
    edge between two roundings that a learner's last-bit difference cannot cross it."""
    for case, answer, _ in reference.reference_answers():
        if not isinstance(answer, float) or not answer:
            continue
        scaled = abs(answer) / 10.0 ** (int(f"{abs(answer):e}".split("e")[1]) - 5)
        assert abs(scaled % 1 - 0.5) > 1e-9 * scaled, (case, answer)


def test_the_visible_file_holds_no_answer(reference: ModuleType) -> None:
    text = VISIBLE.read_text(encoding="utf-8")
    assert not re.search(r"def (counts|roofs|bound|reference)\(|12 \* n|min\(", text)
    datasheet = {
        s
        for values in reference._V.DATASHEET.values()
        for number, _ in values.values()
        for s in spellings(number)
    }
    for case, answer, _ in reference.reference_answers():
        if isinstance(answer, str) or set(spellings(answer)) & datasheet:
            continue
        if isinstance(answer, int) and answer < 1000:
            continue
        long = [
            s
            for s in spellings(answer)
            if len(s.strip("0.-").replace(".", "")) >= 4 and s not in case
        ]  # an input of its own case tells nothing
        # as a number of its own: a seal's hex digits may hold the same digits by chance
        assert not [s for s in long if re.search(rf"(?<![\w.]){re.escape(s)}(?!\w)", text)], (
            case,
            answer,
        )


class _Caller:
    """A learner whose every call raises the given error."""

    def __init__(self, error: LearnerError) -> None:
        self.error = error

    def call(self, name: str, *args: Any) -> Any:
        raise self.error


MRO = {
    "ZeroDivisionError": ("ZeroDivisionError", "ArithmeticError", "Exception", "BaseException"),
    "RuntimeError": ("RuntimeError", "Exception", "BaseException"),
    "ValueError": ("ValueError", "Exception", "BaseException"),
    "UnicodeDecodeError": (
        "UnicodeDecodeError",
        "UnicodeError",
        "ValueError",
        "Exception",
        "BaseException",
    ),
}


@pytest.mark.parametrize(
    ("kind", "text", "passes"),
    [
        ("ZeroDivisionError", ": ValueError", False),
        ("RuntimeError", "not a ValueError", False),
        ("ValueError", "bytes_moved must be positive", True),
        ("UnicodeDecodeError", "a subclass of ValueError", True),
    ],
)
def test_value_errors_are_told_by_type_never_by_message(kind: str, text: str, passes: bool) -> None:
    visible = sys.modules.get("test_roofline") or load(VISIBLE, "test_roofline")
    error = LearnerError(f"while calling f(): {kind}: {text}", raised=MRO[kind])
    ok, did = visible.raised_value_error(_Caller(error), "f")
    assert (ok, did) == (passes, f"raised {kind}")


def test_an_error_without_a_type_is_not_read_from_its_message() -> None:
    visible = sys.modules.get("test_roofline") or load(VISIBLE, "test_roofline")
    error = LearnerError("while calling f(): ValueError: its text says so")
    assert visible.raised_value_error(_Caller(error), "f") == (
        False,
        "raised an error whose type could not be told",
    )


@pytest.mark.parametrize("exercise", ["roofline", "occupancy"])
def test_hidden_inputs_change_from_run_to_run(exercise: str) -> None:
    def seed(**env: str) -> int:  # each checks run is a process of its own
        done = subprocess.run(
            [sys.executable, "-c", "from gpulab.grading.checks.draws import SEED; print(SEED)"],
            capture_output=True,
            text=True,
            check=True,
            env={**{k: v for k, v in os.environ.items() if k != draws.ENV}, **env},
        )
        return int(done.stdout)

    assert len({seed(), seed(), seed()}) == 3  # fresh in every run ...
    assert seed(GPULAB_CHECK_SEED="1234") == 1234  # ... or replayed on demand
    assert load(HIDDEN[exercise], f"{exercise}_hidden").SEED == draws.SEED
    text = HIDDEN[exercise].read_text(encoding="utf-8")
    assert "from gpulab.grading.checks.draws import SEED" in text and "urandom" not in text
    tests = re.findall(r"^def (test_\w+)\(learner", text, re.M)
    for name in tests:  # every hidden check draws from the seed
        body = text.split(f"def {name}(")[1].split("\n@pytest")[0]
        assert "rng" in body, f"{name} does not vary its inputs"


def _probe(target: Path, lie_in: str) -> Path:
    """The roofline solution, lying about the GPU "h20" (which only the hidden checks use) in
    `lie_in`: "gpu_roofs" or "place_kernel". The red team's bit channel (V17)."""
    notebook = read_notebook(ROOT / "solutions" / "memory-hierarchy" / "roofline.ipynb")
    for cell in notebook.cells:
        part = cell.metadata.get("gpulab", {}).get("part")
        if part == "gpus":
            cell.source = cell.source.replace("def gpu_roofs(gpu):", "def _roofs(gpu):") + (
                "\n\n\ndef gpu_roofs(gpu):\n    roofs = _roofs(gpu)\n"
                + (
                    "    if gpu == 'h20':\n        roofs['fp32_ridge'] = 1.0\n"
                    if lie_in == "gpu_roofs"
                    else ""
                )
                + "    return roofs\n"
            )
        if part == "place":
            cell.source = cell.source.replace("roofs = gpu_roofs(gpu)", "roofs = _roofs(gpu)")
            if lie_in == "place_kernel":
                cell.source = cell.source.replace(
                    '        "ridge": roofs[f"{precision}_ridge"],',
                    '        "ridge": 1.0 if gpu == "h20" else roofs[f"{precision}_ridge"],',
                )
    write_notebook(notebook, target)
    return target


def test_failing_a_hidden_check_on_purpose_shows_on_no_page(tmp_path: Path) -> None:
    pages = []
    for lie_in, check in (
        ("gpu_roofs", "test_every_gpu_in_specs"),
        ("place_kernel", "test_place_on_every_gpu"),
    ):
        report = grade("roofline", _probe(tmp_path / f"{lie_in}.ipynb", lie_in))
        failed = [r.check for r in report.results if r.outcome == "failed"]
        assert failed == [check]  # the bit is there to be read...
        kind, message, rows = verdict(report)
        grades = LearnerGrades(
            "Mallory",
            "mallory",
            (ExerciseGrade("roofline", kind, report.earned, report.possible, message, rows),),
        )
        html_path, md_path = write_feedback(
            grades, tmp_path / lie_in, title="GPU course", run_at="today", maxima={"roofline": 21}
        )
        pages.append((html_path.read_text(encoding="utf-8"), md_path.read_text(encoding="utf-8")))
    assert pages[0] == pages[1]  # ...but no page shows it
    html, md = pages[0]
    assert 'Hidden checks: <span class="points">8/10 points</span> in all' in html
    assert "**Hidden checks: 8/10 points** in all" in md
