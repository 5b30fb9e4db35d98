"""Wrong but plausible answers to the system exercises, graded by the real runner.

Each notebook under tests/fixtures/wrong_answers/<exercise>/ (env-report, namespaces,
cgroup-limits, numa-topology) is a learner's answer with one or more mistakes made on
purpose (its metadata says which; the folder's README lists them). Graded with the
visible and the hidden checks, none may earn full marks, the checks named below must
fail with a message that names the mistake, and no message may quote the reference
solution (the learner's own lines in a traceback aside). The recorded machines the checks use are
tested here too: their expected answers agree with gpulab's own system probe (a second,
independent reading), and no answer is the same on every machine, so no constant passes.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest

from gpulab.course import load_course
from gpulab.grading.build import solution_path
from gpulab.grading.checks.machines import (
    FOLDER,
    load_machine,
    machine_names,
    materialize,
    nvml_expected,
    nvml_names,
)
from gpulab.grading.checks.notebook import read_notebook
from gpulab.grading.checks.runner import CheckReport
from helpers.wrong_answers import run_corpus, solution_lines

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "wrong_answers"
EXERCISES = {e.name: e for e in load_course().exercises()}

# For each wrong answer: check -> words its failure message must hold.
MUST_FAIL: dict[str, dict[str, dict[str, str]]] = {
    "env-report": {
        "wrong1-split-every-equals": {
            "test_gpu_report": "turn the integer into 'major.minor'",
            "test_parse_os_release_quoting": "split each line at its first '=' only",
        },
        "wrong2-name-version-path": {
            "test_os_name": "take PRETTY_NAME (NAME is shorter)",
            "test_kernel_release": "what uname -r prints",
        },
        "wrong3-constant-no-gpu": {"test_gpu_report": "do not assume there is none"},
        "library-import": {"test_parse_os_release": "gpulab's own code is not part of your"},
        "own1-this-machine-only": {"test_os_name": "from the file under root"},
        "own2-first-gpu-and-division": {"test_gpu_report": "cuda_version is '12.04'"},
    },
    "namespaces": {
        "wrong1-slice-drop-children-one-sign": {
            "test_namespace_ids": "*_for_children included",
            "test_differs_from_pid1": "that is an answer (None), not a crash",
            "test_ns_inode_other_links": "invalid literal",
        },
        "wrong2-empty-when-hidden-systemd": {
            "test_differs_from_pid1": "the honest answer is None",
            "test_in_container_evidence_is_true": "/proc/1/comm holds 'process_api'",
        },
        "wrong3-constant-true": {"test_in_container_verdict": "no deciding sign is present"},
        "own1-constant-false": {"test_in_container_verdict": "which rules out False"},
        "own2-weak-signs-decide": {
            "test_in_container_verdict": "/.dockerenv and PID 1's command do not decide"
        },
        "own3-valueerror-by-name": {"test_ns_inode_rejects_other_links": "but not with ValueError"},
        "own4-this-machine-only": {"test_namespace_ids": "read the links under root"},
        "library-import": {
            "test_ns_inode_reads_recorded_links": "gpulab's own code is not part of your"
        },
    },
    "cgroup-limits": {
        "wrong1-v2-top-level-only": {
            "test_cgroup_version": "both together are hybrid",
            "test_memory_limit": "walk up the chain",
        },
        "wrong2-own-cgroup-only": {
            "test_memory_limit": "not the process's own: walk up the chain",
            "test_limits_the_checker_sets": "on the parent of your process's cgroup",
        },
        "wrong3-swapped-mib-sentinel": {
            "test_parse_cpu_max_examples": "CPUs = quota / period",
            "test_memory_limit": "2**60 or more",
            "test_cpu_quota": "not period / quota",
        },
        "own1-outermost-limit": {"test_memory_limit": "keep the smallest on the chain"},
        "own2-chain-with-root": {"test_cgroup_chain": "without root"},
        "library-import": {"test_parse_cpu_max_examples": "gpulab's own code is not part of your"},
    },
    "numa-topology": {
        "wrong1-int-empty-name-sort-no-pin": {
            "test_parse_cpulist_empty": "int('') fails",
            "test_pin_to_node": "do not just report the CPUs",
            "test_gpu_nodes": "NVSwitches",
        },
        "wrong2-text-asked-no-gpus": {
            "test_numa_nodes": "one int per node",
            "test_pin_to_node": "not what you asked for",
            "test_gpu_nodes": "whose NVIDIA GPUs are",
        },
        "wrong3-every-cpu-unsorted": {
            "test_pin_to_node": "not to every CPU",
            "test_parse_cpulist_odd_inputs": "the result is sorted",
        },
        "own1-this-machine-only": {"test_numa_nodes": "under root"},
        "library-import": {"test_parse_cpulist_examples": "gpulab's own code is not part of your"},
    },
}
CASES = [(exercise, name) for exercise, answers in MUST_FAIL.items() for name in answers]


def graded(exercise: str, notebook: Path) -> CheckReport:
    report = run_corpus(EXERCISES[exercise], notebook)
    assert report.status in ("passed", "failed"), (report.status, report.message)
    return report


def test_every_fixture_is_graded_here() -> None:
    found = {
        (p.parent.name, p.stem)
        for exercise in MUST_FAIL
        for p in (FIXTURES / exercise).glob("*.ipynb")
    }
    assert found == set(CASES)
    assert all(len(answers) >= 3 for answers in MUST_FAIL.values())


@pytest.mark.parametrize(("exercise", "name"), CASES, ids=[f"{e}/{n}" for e, n in CASES])
def test_a_wrong_answer_fails_and_says_why(exercise: str, name: str) -> None:
    notebook = FIXTURES / exercise / f"{name}.ipynb"
    assert read_notebook(notebook).metadata.get("gpulab_wrong_answer"), "say what is wrong"
    report = graded(exercise, notebook)
    total = sum(r.points for r in report.results)
    assert report.status == "failed" and report.earned < total
    by_check = {r.check: r for r in report.results}
    for check, words in MUST_FAIL[exercise][name].items():
        result = by_check[check]
        assert result.outcome == "failed", (check, result.outcome)
        assert words in result.message, (check, result.message)
    own = "\n".join(cell.source for cell in read_notebook(notebook).cells)  # its traceback
    quoted = [
        line
        for line in solution_lines(EXERCISES[exercise])
        if line not in own and any(line in r.message for r in report.results)
    ]
    assert not quoted, f"failure messages quote the solution: {quoted}"


@pytest.mark.parametrize("exercise", list(MUST_FAIL))
def test_the_reference_solution_passes_everything(exercise: str) -> None:
    report = graded(exercise, solution_path(EXERCISES[exercise]))
    assert report.status == "passed", [
        (r.check, r.message) for r in report.results if r.outcome != "passed"
    ]
    assert all(r.outcome == "passed" for r in report.results)  # nothing skipped here


# ---- the recorded machines ------------------------------------------------------------------


def test_each_machine_says_what_it_is_and_the_readme_agrees() -> None:
    readme = (FOLDER / "README.md").read_text(encoding="utf-8")
    for name in machine_names():
        machine = load_machine(name)
        assert machine.kind in ("real", "constructed") and machine.about
        assert f"`{name}`" in readme and machine.kind in readme
    rows = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^\| `([a-z0-9-]+)` \| (real|constructed)\b", readme, re.MULTILINE)
    }
    for name in nvml_names():
        data = json.loads((FOLDER / "nvml" / f"{name}.json").read_text(encoding="utf-8"))
        constructed = "constructed" in data or "constructed" in str(data.get("note", ""))
        assert name in rows, f"machines/README.md has no row for the NVML session {name!r}"
        assert rows[name] == ("constructed" if constructed else "real"), (
            f"the NVML session {name!r} is {'constructed' if constructed else 'real'}, but "
            f"machines/README.md says {rows[name]}"
        )


def test_no_constant_answer_passes_every_machine() -> None:
    answers: dict[tuple[str, str], set[str]] = {}
    for name in machine_names():
        for exercise, functions in load_machine(name).expected.items():
            for function, value in functions.items():
                answers.setdefault((exercise, function), set()).add(json.dumps(value))
    for name in ("h200", "two-h100", "no-library"):
        answers.setdefault(("env-report", "gpu_report"), set()).add(json.dumps(nvml_expected(name)))
    same = sorted(key for key, values in answers.items() if len(values) < 2)
    assert same == [], f"the same answer on every machine: {same}"


def test_the_expected_answers_agree_with_gpulabs_own_system_probe() -> None:
    from gpulab.probes.system import system

    for name in machine_names():
        machine = load_machine(name)
        with tempfile.TemporaryDirectory() as folder:
            probe = system(materialize(name, Path(folder) / "root"))
        found = {r.key: r.value for r in probe.readings if r.status == "ok"}
        env = machine.expected.get("env-report")
        if env:
            assert found["os"] == env["os_name"], name
        ns = machine.expected.get("namespaces")
        if ns:
            differs = ns["differs_from_pid1"]
            assert found.get("namespaces_differ_from_pid1") == (
                None if differs is None else ", ".join(differs) or "none"
            ), name
            assert found["in_container"] in ns["verdicts"], name
        cg = machine.expected.get("cgroup-limits")
        if cg:
            assert (
                found["cgroup_version"],
                found.get("cgroup_memory_limit"),
                found.get("cgroup_cpu_limit"),
                found.get("cgroup_pids_limit"),
            ) == (cg["cgroup_version"], cg["memory_limit"], cg["cpu_quota"], cg["pids_limit"]), name
        numa = machine.expected.get("numa-topology")
        if numa:
            assert found["numa_nodes"] == len(numa["numa_nodes"]), name
            assert found["gpus_in_sysfs"] == len(numa["gpu_nodes"]), name
