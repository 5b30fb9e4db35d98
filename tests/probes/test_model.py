"""The probe records (gpulab.probes.model), defined once as msgspec structs: the recording
reads and writes back unchanged, the schema `gpulab probe schema` prints is generated from
the types and agrees with the decoder, and a mistyped field is refused naming its path."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest

from gpulab.errors import GpulabError
from gpulab.probes import recorded
from gpulab.probes.model import (
    Gpu,
    Machine,
    ProbeResult,
    Reading,
    Recorded,
    RunDocument,
    Table,
    Telemetry,
    run_schema,
)
from gpulab.probes.saved import run_document

RECORDING = files("gpulab.probes").joinpath("recorded", recorded.RECORDED_FILE)
SCHEMA = run_schema()
Document = dict[str, Any]


def recording() -> Document:
    data: Document = json.loads(RECORDING.read_text(encoding="utf-8"))
    return data


def in_field_order(item: Document) -> Document:
    """`item` with each table's keys in `Table`'s field order. h200.json was written when a
    table listed its units before its rows; the struct writes them after (its constructor's
    order). That is the one difference: everything else is compared byte for byte."""
    fields = Table.__struct_fields__
    return {**item, "tables": [{k: t[k] for k in fields} for t in item["tables"]]}


def test_every_recorded_result_writes_back_byte_for_byte() -> None:
    raw = RECORDING.read_bytes()
    document = RunDocument.from_json(raw)
    items = recording()["results"]
    assert len(document.results) == len(items) > 10
    for result, item in zip(document.results, items, strict=True):
        assert json.dumps(result.to_dict(), indent=2) == json.dumps(
            in_field_order(item), indent=2
        ), result.probe
        assert ProbeResult.from_dict(item) == result
    assert document.to_dict() == {
        **recording(),
        "results": [in_field_order(item) for item in items],
    }


@pytest.mark.parametrize("name", list(recorded.RECORDINGS))
def test_every_shipped_recording_validates_and_names_its_gpu(name: str) -> None:
    """h200.json and h100.json both ship, follow the schema, and each result says which GPU
    made it: a claim card's "also" row must never show one GPU's figure under another's name."""
    path = files("gpulab.probes").joinpath("recorded", f"{name}.json")
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(path.read_text("utf-8")))
    results = recorded.recorded_results(name)
    assert len(results) > 10
    gpu = recorded.RECORDINGS[name].removeprefix("NVIDIA ")
    for result in results.values():
        assert result.recorded is not None and gpu in result.recorded.machine, result.probe
    assert name in recorded.recorded_runs()


def test_the_schema_validates_the_recording_and_a_run_document() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    validator.validate(recording())
    results = list(recorded.recorded_results().values())
    here = Machine("lab-node", (Gpu("NVIDIA H200", "GPU-8dfe4d19"),))
    for machine in (here, None):
        document = json.loads(json.dumps(run_document(results, machine)))
        validator.validate(document)
        assert ("machine" in document) == (machine is not None)
        assert RunDocument.from_json(json.dumps(document).encode()).results == tuple(results)


def test_the_schema_is_generated_with_titles_and_descriptions() -> None:
    assert SCHEMA["title"] == "gpulab probe run"
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    defs = SCHEMA["$defs"]
    assert set(defs) == {
        "RunDocument",
        "Machine",
        "Gpu",
        "ProbeResult",
        "Reading",
        "Table",
        "Telemetry",
        "Recorded",
    }
    assert defs["RunDocument"]["description"].startswith("What `gpulab probe run --json`")
    assert defs["RunDocument"]["required"] == ["gpulab", "schema", "results"]
    assert all(d["additionalProperties"] is False for d in defs.values())
    assert defs["ProbeResult"]["properties"]["schema"] == {"enum": [1]}


def _change(path: str, value: object) -> Callable[[Document], None]:
    """Set the field at `path` ("results.3.readings.0.value") of a document to `value`."""
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]

    def change(document: Document) -> None:
        target: Any = document
        for key in parents:
            target = target[key]
        target[last] = value

    return change


BAD = [  # a damage, and where msgspec says it is
    (_change("results.0.readings.0.value", [1]), "`$.results[0].readings[0].value`"),
    (_change("results.0.readings.0.key", ""), "`$.results[0].readings[0].key`"),
    (_change("results.0.readings.7.value", 3), "`$.results[0].readings[7]`"),  # not_supported
    (_change("results.0.status", "fine"), "`$.results[0].status`"),
    (_change("results.0.probe", "Not A Name"), "`$.results[0].probe`"),
    (_change("results.0.seconds", -1), "`$.results[0].seconds`"),
    (_change("results.0.surprise", 1), "`$.results[0]`"),
    (_change("results.0.schema", 2), "`$.results[0].schema`"),
    (_change("results.0.tables.0.rows", [[{"x": 1}]]), "`$.results[0].tables[0].rows[0][0]`"),
    (_change("results.5.telemetry.sm_clock_mhz", [1980.0]), "`$.results[5].telemetry"),
    (_change("results.5.telemetry.samples", "79"), "`$.results[5].telemetry.samples`"),
    (_change("schema", 2), "`$.schema`"),
]


@pytest.mark.parametrize(("damage", "where"), BAD, ids=[where for _, where in BAD])
def test_a_mistyped_field_is_refused_by_the_decoder_and_the_schema_saying_where(
    damage: Callable[[Document], None], where: str
) -> None:
    document = copy.deepcopy(recording())
    damage(document)
    with pytest.raises(msgspec.ValidationError, match=re.escape(f"- at {where}")):
        RunDocument.from_json(json.dumps(document).encode())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(SCHEMA).validate(document)


def test_a_damaged_recording_names_its_file_and_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = recording()
    document["results"][2]["readings"][0]["value"] = {"a": 1}
    bad = tmp_path / "h200.json"
    bad.write_text(json.dumps(document))
    monkeypatch.setattr(recorded, "RECORDED_FILE", str(bad))
    recorded.recorded_results.cache_clear()
    try:
        with pytest.raises(GpulabError) as raised:
            recorded.recorded_results()
        assert str(raised.value) == (
            f"{bad}: the recorded readings cannot be read: Expected `bool | int | float | str "
            "| null`, got `object` - at `$.results[2].readings[0].value`. This copy of gpulab "
            "is damaged: reinstall it."
        )
        bad.write_text("{half")
        with pytest.raises(GpulabError, match="JSON is malformed"):
            recorded.recorded_results()
    finally:
        recorded.recorded_results.cache_clear()


def test_recorded_results_are_labelled_with_their_machine_and_date() -> None:
    found = recorded.recorded_results()
    assert found and all(r.status in ("ok", "partial") for r in found.values())
    hbm = found["hbm_bandwidth"]
    assert hbm.recorded == Recorded("NVIDIA H200", hbm.started[:10])


def test_records_are_frozen_values() -> None:
    reading = Reading("copy", "Copy", 4262.0, "GB/s")
    with pytest.raises(AttributeError):
        reading.value = 1.0  # type: ignore[misc]
    assert reading == Reading("copy", "Copy", 4262.0, "GB/s")
    assert len({reading, Reading("copy", "Copy", 4262.0, "GB/s")}) == 1
    result = ProbeResult("x", "X", "ok", "m", readings=(reading,), started="t")
    timed = msgspec.structs.replace(result, seconds=1.23456)
    assert timed.seconds == 1.235 and result.seconds == 0.0  # rounded to the millisecond
    assert ProbeResult.from_dict(timed.to_dict()) == timed
    assert Telemetry.from_dict(Telemetry(3, (1.0, 2.0)).to_dict()) == Telemetry(3, (1.0, 2.0))


def test_a_table_without_units_has_one_empty_unit_per_column() -> None:
    table = Table("t", ("a", "b"), ((1, None),))
    assert table.units == ("", "") and table == Table("t", ("a", "b"), ((1, None),), ("", ""))
    assert table.to_dict() == {
        "title": "t",
        "columns": ["a", "b"],
        "rows": [[1, None]],
        "units": ["", ""],
    }


def test_a_reading_that_is_not_ok_has_no_value() -> None:
    with pytest.raises(ValueError, match="a reading that is error has no value"):
        Reading("fan", "Fan", 30, status="error")
    assert Reading.not_supported("fan", "Fan").value is None


def test_a_numpy_like_float_is_written_as_a_float() -> None:
    class Float64(float):  # what NumPy's float64 is to msgspec: a float subclass
        pass

    reading = Reading("copy", "Copy", Float64(1.5), "GB/s")
    assert reading.to_dict()["value"] == 1.5


def test_numpy_scalars_in_readings_and_tables_are_written_as_plain_values() -> None:
    """Probes compute with NumPy and CuPy: their int64, float32, bool_ and 0-d arrays must
    reach the JSON as the numbers they hold, as they do through `json`'s float subclasses."""
    numpy = pytest.importorskip("numpy")
    reading = Reading("blocks", "Blocks", numpy.int64(132), "blocks")
    table = Table(
        "t",
        ("n", "ms", "ok"),
        ((numpy.int32(3), numpy.float32(0.5), numpy.bool_(True)), (numpy.array(7), 1.0, False)),
    )
    result = ProbeResult("micro_test", "T", "ok", "m", readings=(reading,), tables=(table,))
    data = json.loads(json.dumps(result.to_dict()))
    assert data["readings"][0]["value"] == 132
    assert data["tables"][0]["rows"] == [[3, 0.5, True], [7, 1.0, False]]
    assert ProbeResult.from_dict(data).to_dict() == data
