"""`gpulab probe`: list (with what runs here), run (tables and JSON that follows the
published schema; the exit status says when a named probe cannot run here), schema."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from rich.console import Console, RenderableType

from gpulab.probes import PROBES, nvml
from gpulab.probes.cuda import cannot_run_here
from gpulab.probes.model import ProbeResult, Recorded, Table, run_schema
from gpulab.probes.nvml import Replay
from gpulab.probes.registry import exit_status
from gpulab.probes.render import render_probe_list, render_result
from helpers.probes import no_driver_here

H200 = Path(__file__).resolve().parents[1] / "fixtures" / "nvml" / "h200.json"
SCHEMA = run_schema()
HAS_CUPY = importlib.util.find_spec("cupy") is not None
WIDE = 250  # columns, so that no line of the output is wrapped


def gpulab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpulab", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": str(WIDE)},
    )


def printed(renderable: RenderableType) -> str:
    console = Console(width=WIDE, file=io.StringIO(), color_system=None)
    console.print(renderable)
    text = console.file.getvalue()
    assert isinstance(text, str)
    return text


def row(text: str, probe: str) -> list[str]:
    """The cells of one probe's row in `gpulab probe list`."""
    line = next(line for line in text.splitlines() if line.split()[:1] == [probe])
    return re.split(r"\s{2,}", line.strip())


def validate(document: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(document)


def test_schema_is_a_valid_schema_and_what_probe_schema_prints() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    done = gpulab("probe", "schema")
    assert done.returncode == 0 and done.stdout == json.dumps(SCHEMA, indent=2) + "\n"


def test_list_names_every_probe() -> None:
    done = gpulab("probe", "list")
    assert done.returncode == 0, done.stderr
    for info in PROBES:
        assert info.name in done.stdout


def test_list_marks_what_cannot_run_here_and_why() -> None:
    why = no_driver_here()
    done = gpulab("probe", "list")
    assert done.returncode == 0, done.stderr
    assert row(done.stdout, "system")[:3] == ["system", "Linux", "yes"]
    assert row(done.stdout, "nvml_inventory")[:3] == ["nvml_inventory", "NVIDIA driver", "no"]
    assert row(done.stdout, "cuda_properties")[:3] == ["cuda_properties", "GPU + CuPy", "no"]
    # one reason for both kinds, said once, and it is the driver, not CuPy
    reason = f"Probes that need the NVIDIA driver or a GPU and CuPy cannot run here: {why}"
    assert done.stdout.count(reason) == 1
    assert "CuPy is not installed" not in done.stdout


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed here; this checks the machine without it")
def test_list_with_a_driver_but_no_cupy() -> None:
    text = printed(render_probe_list(cannot_run_here(Replay.load(H200))))
    assert row(text, "nvml_inventory")[2] == "yes"
    for info in PROBES:
        assert row(text, info.name)[2] == ("no" if info.needs == "cuda" else "yes"), info.name
    assert (
        "Probes that need a GPU and CuPy cannot run here: CuPy is not installed: "
        "pip install 'gpulab[cuda13]'"
    ) in text
    assert "NVIDIA driver cannot run here" not in text


def test_a_gpu_probe_that_cannot_run_here_exits_1_with_the_reason() -> None:
    why = no_driver_here()
    done = gpulab("probe", "run", "cuda_properties")
    assert done.returncode == 1, done.stdout
    assert "CUDA device properties  no gpu" in done.stdout
    assert why in done.stdout and "CuPy" not in done.stdout
    as_json = gpulab("probe", "run", "cuda_properties", "--json")
    assert as_json.returncode == 1
    (result,) = json.loads(as_json.stdout)["results"]
    assert (result["status"], result["message"]) == ("no_gpu", why)


def test_run_all_exits_0_when_probes_only_cannot_run_here() -> None:
    no_driver_here()
    done = gpulab("probe", "run", "--all", "--json")
    statuses = {r["probe"]: r["status"] for r in json.loads(done.stdout)["results"]}
    assert statuses["cuda_properties"] == "no_gpu"
    assert done.returncode == (1 if "error" in statuses.values() else 0)


def test_exit_status() -> None:
    assert exit_status(["ok", "partial"]) == 0
    assert exit_status(["ok", "no_gpu"]) == 1
    assert exit_status(["unavailable"]) == 1
    assert exit_status(["ok", "no_gpu", "unavailable"], every=True) == 0
    assert exit_status(["ok", "error"], every=True) == 1


def test_an_empty_table_says_none_found() -> None:
    columns = ("address", "device id", "class", "driver", "NUMA node")
    result = ProbeResult(
        "system",
        "System",
        "ok",
        "no NVIDIA GPU",
        tables=(
            Table("NVIDIA GPUs on the PCI bus", columns, ()),
            Table("NUMA nodes", ("node",), ((0,),)),
        ),
    )
    text = printed(render_result(result))
    assert "NVIDIA GPUs on the PCI bus: none found" in text
    assert "address" not in text and "device id" not in text  # no headers without rows
    assert "NUMA nodes" in text and "node" in text


def test_a_recorded_result_says_it_is_not_this_machine() -> None:
    result = ProbeResult("x", "X", "ok", "m", recorded=Recorded("NVIDIA H200", "2026-12-03"))
    assert "X  ok  (recorded on NVIDIA H200, 2026-12-03, not this machine)" in printed(
        render_result(result)
    )


def test_run_json_follows_the_schema_on_this_machine() -> None:
    done = gpulab(
        "probe", "run", "system", "nvml_inventory", "nvml_sample", "cuda_properties", "--json"
    )
    assert "Traceback" not in done.stderr
    document = json.loads(done.stdout)
    validate(document)
    results = {r["probe"]: r for r in document["results"]}
    assert results["system"]["status"] in ("ok", "partial")
    # named probes: one that failed, or that cannot run here, makes the exit status 1
    assert done.returncode == (
        1 if any(r["status"] in ("error", "no_gpu", "unavailable") for r in results.values()) else 0
    )


def test_recorded_h200_results_follow_the_schema() -> None:
    backend = Replay.load(H200)
    results = [nvml.inventory(backend=backend).to_dict(), nvml.sample(backend=backend).to_dict()]
    validate({"gpulab": "test", "schema": 1, "results": results})
    again = [ProbeResult.from_dict(r).to_dict() for r in results]
    assert again == results


def test_schema_rejects_a_value_on_an_unsupported_reading() -> None:
    result = ProbeResult("x", "X", "ok", "m").to_dict()
    result["readings"] = [
        {
            "key": "fan",
            "label": "Fan",
            "value": 30,
            "unit": "%",
            "convention": "",
            "status": "not_supported",
            "detail": "",
        }
    ]
    with pytest.raises(jsonschema.ValidationError):
        validate({"gpulab": "t", "schema": 1, "results": [result]})


def test_run_prints_tables_for_people() -> None:
    done = gpulab("probe", "run", "system")
    assert done.returncode == 0, done.stderr
    assert "System" in done.stdout and "NUMA nodes" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["probe", "run", "nope"], "no probe named 'nope'"),
        (["probe", "run"], "name the probes to run, or give --all"),
    ],
)
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
    assert re.search(
        r"\(recorded on NVIDIA H200, \d{4}-\d\d-\d\d, not this machine\)", people.stdout
    )
