"""Wrong but plausible answers to nvml-health, graded by the real runner, and the recorded
NVML sessions its checks use.

Each notebook under tests/fixtures/wrong_answers/nvml-health/ is the reference answer with
one mistake (its metadata says which; the folder's README lists them). Most of them are
right on the course's H200 (ECC on, MIG off, only the fan and the NUMA node unsupported, an
idle GPU), so only the recorded sessions of other GPUs tell them apart. Graded with the
visible and the hidden checks, none may earn full marks, the checks named below must fail
with a message that names the mistake, and no message may quote the reference solution; the
reference solution passes every check that runs without a GPU. The sessions' expected
answers (``nvml/expected/nvml-health.json``, worked out by hand) are compared with gpulab's
own NVML probes run on the same recordings, a second reading; no constant answer is right
on every session.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gpulab.course import load_course
from gpulab.course.manifest import ExerciseEntry
from gpulab.grading.build import solution_path
from gpulab.grading.checks.machines import FOLDER, nvml_expected, nvml_recording
from gpulab.grading.checks.notebook import read_notebook
from gpulab.grading.checks.runner import CheckReport
from gpulab.probes.nvml import Replay, ReplayMismatch
from gpulab.probes.nvml import inventory as inventory_probe
from gpulab.probes.nvml import sample as sample_probe
from helpers.wrong_answers import run_corpus, solution_lines

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "wrong_answers" / "nvml-health"
VISIBLE = ROOT / "exercises" / "gpu-management" / "test_nvml_health.py"
EXERCISE = "nvml-health"
SESSIONS = ("h100-mig", "rtx-4090", "old-driver")

# For each wrong answer: check -> words its failure message must hold.
MUST_FAIL: dict[str, dict[str, str]] = {
    "notsupported-as-zero": {
        "test_inventory_recorded_gpus": "a mode that is not supported is None, not 'Disabled'"
    },
    "pending-modes": {"test_inventory_recorded_gpus": "that is the pending mode"},
    "milliwatts-as-watts": {
        "test_inventory_recorded_gpus": "NVML answers in milliwatts, divide by 1000",
        "test_sample_recorded_gpu": "NVML answers in milliwatts, divide by 1000",
        "test_inventory_second_recorded_gpu": "NVML answers in milliwatts",
        "test_sample_second_recorded_gpu": "NVML answers in milliwatts",
    },
    "function-not-found-escapes": {
        "test_inventory_recorded_gpus": "NVMLError_FunctionNotFound, an answer like NotSupported"
    },
    "memory-clock-as-sm": {
        "test_sample_recorded_gpu": "that is the memory clock (NVML_CLOCK_MEM)",
        "test_sample_second_recorded_gpu": "that is the memory clock (NVML_CLOCK_MEM)",
    },
    "memory-utilization": {
        "test_sample_recorded_gpu": "the memory's busy share (.memory), not the GPU's (.gpu)",
        "test_sample_second_recorded_gpu": "the memory's busy share (.memory)",
    },
    "index-ignored": {
        "test_inventory_second_recorded_gpu": "ask NVML about the GPU at that index",
        "test_sample_second_recorded_gpu": "open the handle of the GPU at the index asked for",
    },
    "h200-constant": {
        "test_inventory_recorded_gpus": "do not write in what yours says",
        "test_inventory_second_recorded_gpu": "that is the default limit",
    },
}


@pytest.fixture(scope="module", autouse=True)
def _points_marker(pytestconfig: pytest.Config) -> None:
    """Check files mark their points; here, outside gpulab's plugin, that marker is declared
    so that the visible checks can be imported (markers are strict)."""
    pytestconfig.addinivalue_line("markers", "points(n): what a check is worth")


@pytest.fixture(scope="module")
def visible() -> ModuleType:
    """The visible checks, for their table of NVML calls and their reading of a GPU."""
    spec = importlib.util.spec_from_file_location("nvml_health_visible", VISIBLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def entry() -> ExerciseEntry:
    return next(e for e in load_course().exercises() if e.name == EXERCISE)


def graded(notebook: Path) -> CheckReport:
    report = run_corpus(entry(), notebook)
    assert report.status in ("passed", "failed", "skipped"), (report.status, report.message)
    return report


# ---- the wrong answers -----------------------------------------------------------------------


def test_every_fixture_is_graded_here() -> None:
    assert {p.stem for p in FIXTURES.glob("*.ipynb")} == set(MUST_FAIL)
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in readme for name in MUST_FAIL)


@pytest.mark.parametrize("name", list(MUST_FAIL))
def test_a_wrong_answer_fails_and_says_why(name: str) -> None:
    notebook = FIXTURES / f"{name}.ipynb"
    assert read_notebook(notebook).metadata.get("gpulab_wrong_answer"), "say what is wrong"
    report = graded(notebook)
    assert report.status == "failed" and report.earned < report.possible
    by_check = {r.check: r for r in report.results}
    for check, words in MUST_FAIL[name].items():
        result = by_check[check]
        assert result.outcome == "failed", (check, result.outcome)
        assert words in result.message, (check, result.message)
    own = "\n".join(cell.source for cell in read_notebook(notebook).cells)  # its traceback
    quoted = [
        line
        for line in solution_lines(entry())
        if line not in own and any(line in r.message for r in report.results)
    ]
    assert not quoted, f"failure messages quote the solution: {quoted}"


def test_the_reference_solution_passes_every_check_that_runs() -> None:
    report = graded(solution_path(entry()))
    cpu = [r for r in report.results if not r.needs_gpu]
    assert {r.check for r in cpu} >= {c for checks in MUST_FAIL.values() for c in checks}
    assert all(r.outcome == "passed" for r in cpu), [
        (r.check, r.message) for r in cpu if r.outcome != "passed"
    ]
    assert report.earned == report.possible > 0
    # without a GPU the GPU checks skip (saying so); with one they must pass too
    assert all(r.outcome == "skipped" for r in report.results if r.needs_gpu)


# ---- the recorded sessions -------------------------------------------------------------------


class Held:
    """A Replay of a session for gpulab's probes, which read more than the exercise: a call
    the recording does not hold answers NotSupported, and only what it holds is compared."""

    def __init__(self, session: str) -> None:
        self.replay = Replay(nvml_recording(session), f"the recorded session {session!r}")

    def __getattr__(self, name: str) -> Any:
        call = getattr(self.replay, name)

        def answer(*args: Any) -> Any:
            try:
                return call(*args)
            except ReplayMismatch:
                import pynvml

                raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED) from None

        return answer


def wanted(session: str, function: str) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = nvml_expected(session, EXERCISE).get(function, {})
    return found


def test_each_session_is_constructed_and_holds_every_call_the_exercise_names(
    visible: ModuleType,
) -> None:
    for session in SESSIONS:
        data = json.loads((FOLDER / "nvml" / f"{session}.json").read_text(encoding="utf-8"))
        assert data["constructed"].startswith("Not a recording of a real machine"), session
        assert nvml_expected(session, EXERCISE)["about"].startswith("the recorded "), session
        count = next(c["result"] for c in data["calls"] if c["call"] == "nvmlDeviceGetCount")
        assert set(wanted(session, "inventory")) == {str(i) for i in range(count)}, session
        for index in range(count):
            for call, args in visible.CALLS.values():
                visible.recorded(session, call, index, *args)  # LookupError if missing
        for index in wanted(session, "sample"):
            for call, args in (
                ("nvmlDeviceGetUtilizationRates", ()),
                ("nvmlDeviceGetClockInfo", (1,)),
                ("nvmlDeviceGetClockInfo", (2,)),
                ("nvmlDeviceGetPowerUsage", ()),
                ("nvmlDeviceGetTemperature", (0,)),
                ("nvmlDeviceGetCurrentClocksEventReasons", ()),
            ):
                status, _ = visible.recorded(session, call, int(index), *args)
                assert status == "ok", (session, index, call)
    assert "sample" in nvml_expected("rtx-4090", EXERCISE)


@pytest.mark.parametrize("session", SESSIONS)
def test_the_expected_inventory_agrees_with_gpulabs_own_probe(
    visible: ModuleType, session: str
) -> None:
    want = wanted(session, "inventory")
    reading, totals = visible.own_inventory(Held(session))  # the GPU check's own reading
    assert reading == want["0"] and totals == {want["0"]["memory_total_bytes"]}, session
    probe = inventory_probe(Held(session))
    found = {r.key: r.value for r in probe.readings if r.status == "ok"}
    # the probe reads the enforced limit; in these sessions no other limit is in force
    assert found["power_limit"] == want["0"]["power_limit_w"], session
    for index, row in enumerate(probe.tables[0].rows if probe.tables else ()):
        fields = dict(zip(probe.tables[0].columns, row, strict=True))
        gpu = want[str(index)]
        assert (
            fields["name"],
            fields["UUID"],
            fields["memory"],
            fields["power limit"],
            fields["compute mode"],
            fields["persistence"],
            fields["MIG"],
            fields["ECC"],
        ) == (
            gpu["name"],
            gpu["uuid"],
            gpu["memory_total_bytes"] // 2**20,
            gpu["power_limit_w"],
            gpu["compute_mode"],
            gpu["persistence_mode"],
            gpu["mig_mode"],
            gpu["ecc_mode"],
        )


@pytest.mark.parametrize("session", [s for s in SESSIONS if wanted(s, "sample")])
def test_the_expected_samples_agree_with_gpulabs_own_probe(session: str) -> None:
    for index, want in wanted(session, "sample").items():
        probe = sample_probe(Held(session), int(index))
        found = {r.key: r.value for r in probe.readings if r.status == "ok"}
        assert (
            found["utilization_gpu"],
            found["clock_sm"],
            found["power_draw"],
            found["temperature"],
            found["clock_event_reasons_mask"],
        ) == (
            want["utilization_pct"],
            want["sm_clock_mhz"],
            want["power_w"],
            want["temperature_c"],
            want["reasons"],
        ), (session, index)
        # the mistakes the sample check names must be visible in the recording
        assert found["utilization_memory"] != want["utilization_pct"], (session, index)
        assert found["clock_mem"] != want["sm_clock_mhz"], (session, index)


def test_no_constant_inventory_is_right_on_every_session() -> None:
    answers = [gpu for s in SESSIONS for gpu in wanted(s, "inventory").values()]
    same = sorted(key for key in answers[0] if len({json.dumps(gpu[key]) for gpu in answers}) < 2)
    # No GPU here reports a NUMA node: NVML gives one only where the GPU's memory is a NUMA
    # node (Grace Hopper), not for x86 servers or VMs; a GPU check can still tell.
    assert same == ["numa_node"], f"the same answer on every session: {same}"
    # where NVML can say NotSupported, some GPU does and another answers: neither "always
    # None" nor "never None" is right everywhere
    for key in ("ecc_mode", "mig_mode", "remapped_rows", "fan_speed_pct"):
        assert {gpu[key] is None for gpu in answers} == {True, False}, key
