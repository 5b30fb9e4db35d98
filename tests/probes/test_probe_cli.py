"""`gpulab probe`: list, run (tables and JSON that follows the published schema), schema."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gpulab.probes import PROBES, nvml
from gpulab.probes.model import ProbeResult
from gpulab.probes.nvml_record import Replay

H200 = Path(__file__).resolve().parents[1] / "fixtures" / "nvml" / "h200.json"
SCHEMA = json.loads(files("gpulab.probes").joinpath("result.schema.json").read_text())


def gpulab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpulab", *args], capture_output=True,
                          text=True, timeout=300)


def validate(document: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(document)


def test_schema_is_a_valid_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    done = gpulab("probe", "schema")
    assert done.returncode == 0 and json.loads(done.stdout) == SCHEMA


def test_list_names_every_probe() -> None:
    done = gpulab("probe", "list")
    assert done.returncode == 0, done.stderr
    for info in PROBES:
        assert info.name in done.stdout


def test_run_json_follows_the_schema_on_this_machine() -> None:
    done = gpulab("probe", "run", "system", "nvml_inventory", "nvml_sample", "cuda_properties",
                  "--json")
    assert "Traceback" not in done.stderr
    document = json.loads(done.stdout)
    validate(document)
    results = {r["probe"]: r for r in document["results"]}
    assert results["system"]["status"] in ("ok", "partial")
    assert done.returncode == (1 if any(r["status"] == "error" for r in results.values()) else 0)


def test_recorded_h200_results_follow_the_schema() -> None:
    backend = Replay.load(H200)
    results = [nvml.inventory(backend=backend).to_dict(), nvml.sample(backend=backend).to_dict()]
    validate({"gpulab": "test", "schema": 1, "results": results})
    again = [ProbeResult.from_dict(r).to_dict() for r in results]
    assert again == results


def test_schema_rejects_a_value_on_an_unsupported_reading() -> None:
    result = ProbeResult("x", "X", "ok", "m").to_dict()
    result["readings"] = [{"key": "fan", "label": "Fan", "value": 30, "unit": "%",
                           "convention": "", "status": "not_supported", "detail": ""}]
    with pytest.raises(jsonschema.ValidationError):
        validate({"gpulab": "t", "schema": 1, "results": [result]})


def test_run_prints_tables_for_people() -> None:
    done = gpulab("probe", "run", "system")
    assert done.returncode == 0, done.stderr
    assert "System" in done.stdout and "NUMA nodes" in done.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["probe", "run", "nope"], "no probe named 'nope'"),
    (["probe", "run"], "name the probes to run, or give --all"),
])
def test_bad_input_is_exit_2_without_traceback(args: list[str], message: str) -> None:
    done = gpulab(*args)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_recorded_readings_are_labelled_and_follow_the_schema() -> None:
    done = gpulab("probe", "run", "hbm_bandwidth", "cuda_properties", "--recorded", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    validate(document)
    for result in document["results"]:
        assert result["recorded"]["machine"] == "NVIDIA H200"
        assert result["status"] == "ok"
    people = gpulab("probe", "run", "hbm_bandwidth", "--recorded")
    assert "recorded on NVIDIA H200, " in people.stdout
