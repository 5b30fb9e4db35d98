"""`gpulab probe run` saves what ran for this machine; `probe saved` lists it with its machine
and names the files it skips; `probe forget` removes it. Real `gpulab` processes, each with
the test's own state folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from gpulab.probes.model import Gpu, Machine, ProbeResult, Reading, run_schema
from gpulab.probes.saved import ResultStore, this_machine
from helpers.probes import no_driver_here

SCHEMA = run_schema()
ELSEWHERE = Machine("elsewhere", (Gpu("NVIDIA A100-SXM4-80GB", "GPU-00000000-aaaa-bbbb"),))


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def store(state: Path) -> ResultStore:
    return ResultStore.under(state)


def gpulab(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPULAB_STATE_DIR": str(state), "COLUMNS": "250"}
    done = subprocess.run(
        [sys.executable, "-m", "gpulab", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_a_probe_run_saves_its_result_for_this_machine(state: Path, store: ResultStore) -> None:
    """On any machine, a GPU or none: the system probe reads the host and runs everywhere."""
    done = gpulab(state, "probe", "run", "system")
    assert done.returncode == 0, done.stderr
    here = this_machine()
    assert f"Saved for this machine ({here.label}): system, in {store.folder}." in done.stdout
    document = json.loads((store.folder / "system.json").read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    assert Machine.from_dict(document["machine"]) == here
    loaded = store.load(here)
    assert set(loaded.mine) == {"system"} and loaded.notes() == []
    assert loaded.mine["system"].status in ("ok", "partial")
    # --json prints the same document, and saves it over the last one
    as_json = gpulab(state, "probe", "run", "system", "--json")
    printed = json.loads(as_json.stdout)
    assert printed.keys() == document.keys() and printed["machine"] == document["machine"]
    assert json.loads((store.folder / "system.json").read_text()) == printed


def test_what_cannot_run_or_was_recorded_is_not_saved(state: Path, store: ResultStore) -> None:
    recorded = gpulab(state, "probe", "run", "hbm_bandwidth", "--recorded", "--json")
    assert recorded.returncode == 0 and "machine" not in json.loads(recorded.stdout)
    assert store.files() == []
    no_driver_here()
    done = gpulab(state, "probe", "run", "cuda_properties")
    assert done.returncode == 1 and "Saved for this machine" not in done.stdout
    assert store.files() == []


def test_saved_lists_each_result_with_its_machine(state: Path, store: ResultStore) -> None:
    assert gpulab(state, "probe", "run", "system").returncode == 0
    theirs = ProbeResult(
        "hbm_bandwidth",
        "HBM bandwidth",
        "ok",
        "m",
        readings=(Reading("copy", "Copy", 1900.0, "GB/s"),),
        device="NVIDIA A100-SXM4-80GB",
        started="2026-11-02T08:30:00+00:00",
    )
    store.save(theirs, ELSEWHERE)
    broken = store.folder / "stride_sweep.json"
    broken.write_text("{cut off")
    done = gpulab(state, "probe", "saved")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0].strip() == f"Saved results in {store.folder}"
    assert lines[1].split() == ["probe", "status", "measured", "machine"]
    hbm = next(line for line in lines if line.startswith("hbm_bandwidth"))
    assert hbm.split()[:4] == ["hbm_bandwidth", "ok", "2026-11-02", "08:30"]
    assert hbm.rstrip().endswith(
        "another machine (NVIDIA A100-SXM4-80GB on elsewhere): not used here"
    )
    system = next(line for line in lines if line.startswith("system"))
    assert f"this machine ({this_machine().label})" in system
    assert done.stderr.startswith(f"gpulab: {broken} was skipped and left as it is: it is not JSON")
    assert broken.read_text() == "{cut off"


def test_saved_with_nothing_saved(state: Path, store: ResultStore) -> None:
    done = gpulab(state, "probe", "saved")
    assert (done.returncode, done.stderr) == (0, "")
    assert f"No saved results in {store.folder}: `gpulab probe run NAME`" in done.stdout


def test_forget_removes_by_name_or_all(state: Path, store: ResultStore) -> None:
    for probe in ("hbm_bandwidth", "pcie_bandwidth"):
        store.save(ProbeResult(probe, probe, "ok", "m"), ELSEWHERE)
    (store.folder / "stride_sweep.json").write_text("not ours to judge: forget removes it")
    done = gpulab(state, "probe", "forget", "hbm_bandwidth")
    assert done.returncode == 0
    assert done.stdout == f"forgot hbm_bandwidth ({store.folder / 'hbm_bandwidth.json'})\n"
    done = gpulab(state, "probe", "forget", "hbm_bandwidth")
    assert done.returncode == 2
    assert done.stderr == (
        f"gpulab: no saved result of 'hbm_bandwidth' in {store.folder} "
        "(`gpulab probe saved` lists them)\n"
    )
    done = gpulab(state, "probe", "forget", "--all")
    assert done.returncode == 0 and store.files() == []
    assert "forgot pcie_bandwidth" in done.stdout and "forgot stride_sweep" in done.stdout
    done = gpulab(state, "probe", "forget", "--all")
    assert (done.returncode, done.stdout) == (0, f"nothing saved in {store.folder}\n")


@pytest.mark.parametrize("args", [["probe", "forget"], ["probe", "forget", "x", "--all"]])
def test_forget_needs_names_or_all(state: Path, args: list[str]) -> None:
    done = gpulab(state, *args)
    assert done.returncode == 2
    assert done.stderr == "gpulab: name the saved results to forget, or give --all\n"


@pytest.mark.parametrize("command", ["saved", "forget"])
def test_help(state: Path, command: str) -> None:
    done = gpulab(state, "probe", command, "--help")
    assert done.returncode == 0 and done.stdout.startswith(f"usage: gpulab probe {command}")
    assert "saved" in done.stdout
