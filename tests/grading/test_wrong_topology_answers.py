"""Wrong but plausible answers to gpu-topology, graded by the real runner, on any machine.

Each notebook under tests/fixtures/wrong_answers/gpu-topology/ is a learner's
answer with one mistake made on purpose (its metadata says which; the README
beside them lists them). Graded with the visible and the hidden checks, none
may earn full marks, the checks named below must fail with a message that names
the mistake, and no message may quote the reference solution. Part 3 is judged
on recorded NVML sessions (gpulab/grading/checks/machines/nvml/), so all of this runs
without a GPU. The sessions are tested too: each answers every call part 3
names, and the answers written down for them (nvml/expected/gpu-topology.json)
agree with gpulab's own topology probe replaying the same session (a second,
independent reading) and with the checks' trusted reading
(`gpulab.grading.checks.reference.gpu_topology`).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from gpulab.course import load_course
from gpulab.grading.build import solution_path
from gpulab.grading.checks.machines import FOLDER, nvml_expected, nvml_recording, pynvml_from
from gpulab.grading.checks.notebook import read_notebook
from gpulab.grading.checks.reference.gpu_topology import own_topology
from gpulab.grading.checks.runner import CheckReport
from gpulab.probes.nvml import Replay, ReplayMismatch
from gpulab.probes.topology import TopoMatrix, gpu_topology
from helpers.wrong_answers import run_corpus, solution_lines

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "wrong_answers" / "gpu-topology"
VISIBLE = ROOT / "exercises" / "numa" / "test_gpu_topology.py"
EXERCISE = next(e for e in load_course().exercises() if e.name == "gpu-topology")
SESSIONS = sorted(
    name
    for name in json.loads(
        (FOLDER / "nvml" / "expected" / "gpu-topology.json").read_text(encoding="utf-8")
    )
    if not name.startswith("_")
)

# For each wrong answer: check -> words its failure message must hold (every one of them).
MUST_FAIL: dict[str, dict[str, tuple[str, ...]]] = {
    "wrong1-space-split-text-rank": {
        "test_parse_hgx_board": ("while calling parse_topo()",),
        "test_parse_pcie_server": ("while calling parse_topo()",),
        "test_rank_orders_the_labels": ("compare the link counts as numbers",),
        "test_fastest_pair_hidden_cases": ("NV2 against NV12",),
    },
    # without nvidia-smi the call fails; with it, the machine's own GPUs come back
    "wrong2-reads-nvidia-smi": {
        "test_read_topology_on_recorded_machines": ("'hgx-8'", "nvidia-smi", "NVML"),
        "test_read_topology_direct_links": ("nvidia-smi",),
        "test_read_topology_pcie_levels_and_one_gpu": ("'pcie-six'", "nvidia-smi"),
    },
    "own1-direct-links-one-side": {
        "test_read_topology_on_recorded_machines": ("'hgx-8'", "NVSwitch", "switch fabric"),
        "test_read_topology_direct_links": (
            "'nvlink-bridge-mute'",
            "count the links from both sides",
        ),
    },
    "own2-valueerror-by-name": {
        "test_rank_refuses_unknown_labels": ("raised TypeError", "which is not a ValueError")
    },
    "own3-constant-one-gpu": {
        "test_read_topology_on_recorded_machines": (
            "returned 1 GPU(s)",
            "lists 8",
            "must ask NVML",
        ),
        "test_read_topology_direct_links": ("returned 1 GPU(s)",),
        "test_read_topology_pcie_levels_and_one_gpu": ("lists 6",),
    },
    "own4-pcie-always-sys": {
        "test_read_topology_on_recorded_machines": (
            "'pcie-pair'",
            "'SYS'",
            "'PIX'",
            "nvmlDeviceGetTopologyCommonAncestor",
        ),
        "test_read_topology_pcie_levels_and_one_gpu": ("'pcie-six'",),
    },
    "own5-notsupported-not-caught": {
        "test_read_topology_on_recorded_machines": (
            "'pcie-pair'",
            "NVMLError_NotSupported",
            "are answers",
        ),
        "test_read_topology_pcie_levels_and_one_gpu": ("'h200-topology'",),
    },
    "library-import": {
        "test_read_topology_on_recorded_machines": ("gpulab's own code is not part of your",)
    },
}


def graded(notebook: Path) -> CheckReport:
    report = run_corpus(EXERCISE, notebook)
    assert report.status in ("passed", "failed", "skipped"), (report.status, report.message)
    return report


def test_every_fixture_is_graded_here() -> None:
    assert {p.stem for p in FIXTURES.glob("*.ipynb")} == set(MUST_FAIL)
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in readme for name in MUST_FAIL)


@pytest.mark.parametrize("name", list(MUST_FAIL))
def test_a_wrong_answer_fails_and_says_why(name: str) -> None:
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
    own = "\n".join(cell.source for cell in read_notebook(notebook).cells)  # its traceback
    quoted = [
        line
        for line in solution_lines(EXERCISE)
        if line not in own and any(line in r.message for r in report.results)
    ]
    assert not quoted, f"failure messages quote the solution: {quoted}"


def test_the_solution_earns_every_point_it_can_here() -> None:
    """Full marks on every check that runs here; only GPU checks may skip (without a GPU,
    or part 4 with one GPU)."""
    report = graded(solution_path(EXERCISE))
    assert report.status in ("passed", "skipped"), [
        (r.check, r.message) for r in report.results if r.outcome == "failed"
    ]
    assert report.earned == report.possible > 0
    skipped = [r for r in report.results if r.outcome == "skipped"]
    assert all(r.needs_gpu for r in skipped), [(r.check, r.message) for r in skipped]
    ran = {r.check for r in report.results if r.outcome == "passed"}
    assert {
        "test_read_topology_on_recorded_machines",
        "test_read_topology_direct_links",
        "test_read_topology_pcie_levels_and_one_gpu",
        "test_rank_refuses_unknown_labels",
    } <= ran


# ---- the recorded sessions ------------------------------------------------------------------


def probe_labels(name: str) -> dict[str, Any]:
    """gpulab's topology probe replaying session `name`, in read_topology()'s shape."""
    result = gpu_topology(Replay(nvml_recording(name), name))
    matrix = TopoMatrix.from_table(result.tables[0])
    return {
        "gpus": list(matrix.gpus),
        "links": {
            a: {b: matrix.links[i][j] for j, b in enumerate(matrix.gpus) if j != i}
            for i, a in enumerate(matrix.gpus)
        },
    }


def test_the_checks_use_every_session_and_each_says_it_is_constructed() -> None:
    used = set()
    for path in (VISIBLE, ROOT / "solutions" / "numa" / "test_gpu_topology_hidden.py"):
        text = path.read_text(encoding="utf-8")
        used |= {name for name in SESSIONS if f'"{name}"' in text}
    assert used == set(SESSIONS)
    for name in SESSIONS:
        data = nvml_recording(name)
        assert "constructed" in data["machine"] and data["constructed"], name
        assert nvml_expected(name, "gpu-topology")["about"], name


@pytest.mark.parametrize("name", SESSIONS)
def test_each_session_answers_every_call_part_3_names(name: str) -> None:
    pm = pynvml_from(name)
    replay = Replay(nvml_recording(name), name)
    count = replay.nvmlDeviceGetCount()
    handles = [replay.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    for h in handles:
        replay.nvmlDeviceGetPciInfo(h)
        for link in range(pm.NVML_NVLINK_MAX_LINKS):
            try:
                active = replay.nvmlDeviceGetNvLinkState(h, link) == pm.NVML_FEATURE_ENABLED
            except (pm.NVMLError_NotSupported, pm.NVMLError_InvalidArgument):
                continue
            except ReplayMismatch as exc:
                raise AssertionError(f"{name}: {exc}") from None
            if active:
                with contextlib.suppress(pm.NVMLError_NotSupported):  # a mute far end
                    replay.nvmlDeviceGetNvLinkRemotePciInfo(h, link)
    for a in handles:
        for b in handles:
            if a != b:
                replay.nvmlDeviceGetTopologyCommonAncestor(a, b)
    replay.nvmlShutdown()


@pytest.mark.parametrize("name", SESSIONS)
def test_the_expected_answers_agree_with_gpulabs_own_topology_probe(name: str) -> None:
    want = nvml_expected(name, "gpu-topology")["read_topology"]
    assert probe_labels(name) == want


@pytest.mark.parametrize("name", SESSIONS)
def test_the_checks_trusted_reading_agrees_on_each_session(name: str) -> None:
    got = own_topology(pynvml_from(name))
    want = nvml_expected(name, "gpu-topology")["read_topology"]
    assert {"gpus": got["gpus"], "links": got["links"]} == want


def test_one_side_of_the_mute_bridge_cannot_name_its_far_ends() -> None:
    """The session that tests counting from both sides: GPU 0 names GPU 1 on every link,
    GPU 1 names nothing."""
    calls = [
        c
        for c in nvml_recording("nvlink-bridge-mute")["calls"]
        if c["call"] == "nvmlDeviceGetNvLinkRemotePciInfo"
    ]
    named = [c["result"]["busId"] for c in calls if c["args"][0] == {"__handle__": 0}]
    mute = [c.get("error", {}).get("value") for c in calls if c["args"][0] == {"__handle__": 1}]
    assert named == ["00000000:52:00.0"] * 12 and mute == [3] * 12


def test_no_constant_topology_passes_every_session() -> None:
    answers = {
        json.dumps(nvml_expected(name, "gpu-topology")["read_topology"], sort_keys=True)
        for name in SESSIONS
    }
    assert len(answers) == len(SESSIONS)


def test_the_visible_checks_hold_no_answer_to_a_part() -> None:
    """Visible checks ship to learners: the NVML reading and the timed copy live on the
    trusted side (gpulab.grading.checks.reference), not in the file."""
    text = VISIBLE.read_text(encoding="utf-8")
    calls = [
        "nvmlDeviceGetNvLinkState(",
        "nvmlDeviceGetNvLinkRemotePciInfo(",
        "nvmlDeviceGetTopologyCommonAncestor(",
        "nvmlDeviceGetCount(",
        "memcpyPeerAsync(",
        "deviceEnablePeerAccess(",
        "get_elapsed_time(",
    ]
    assert [call for call in calls if call in text] == []
