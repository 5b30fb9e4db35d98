"""The learner's saved probe results (gpulab.probes.saved): real files in a private folder,
one per probe, latest wins; used only on the machine that made them; a bad file is skipped
with its name, never removed."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import jsonschema
import pytest
from msgspec.structs import replace

from gpulab.probes.model import Gpu, Machine, ProbeResult, Reading, Recorded, Table, run_schema
from gpulab.probes.nvml import Replay
from gpulab.probes.saved import RESULTS_FOLDER, ResultStore, run_document, this_machine
from helpers.probes import H200_NVML, no_driver_here

SCHEMA = run_schema()
H200_UUID = "GPU-8dfe4d19-1004-3586-8bc1-dba3369af561"
H200 = Machine("lab-node", (Gpu("NVIDIA H200", H200_UUID),))
A100 = Machine("lab-node", (Gpu("NVIDIA A100-SXM4-80GB", "GPU-00000000-aaaa-bbbb-cccc"),))


def result(probe: str = "hbm_bandwidth", value: float = 4262.0, **changes: object) -> ProbeResult:
    made = ProbeResult(
        probe,
        "HBM bandwidth",
        "ok",
        "measured",
        readings=(Reading("copy", "Copy", value, "GB/s"),),
        tables=(Table("sweep", ("bytes", "rate"), ((1024, 1.5), (2048, None)), ("B", "GB/s")),),
        device="NVIDIA H200",
        started="2026-12-24T10:00:00+00:00",
        seconds=1.25,
    )
    return replace(made, **changes)


@pytest.fixture
def store(tmp_path: Path) -> ResultStore:
    return ResultStore.under(tmp_path / "state")


def test_a_saved_result_is_the_run_document_with_its_machine(store: ResultStore) -> None:
    path = store.save(result(), H200)
    assert path == store.folder / "hbm_bandwidth.json"
    assert store.folder == store.folder.parent / RESULTS_FOLDER
    document = json.loads(path.read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    assert document["machine"] == {
        "host": "lab-node",
        "gpus": [{"name": "NVIDIA H200", "uuid": H200_UUID}],
    }
    assert document == json.loads(json.dumps(run_document([result()], H200)))
    (saved,), skipped = store.read()
    assert skipped == [] and saved.result == result() and saved.machine == H200
    assert saved.path == path
    assert [p.name for p in store.folder.iterdir()] == ["hbm_bandwidth.json"]  # no temp file


def test_the_latest_result_of_a_probe_wins(store: ResultStore) -> None:
    store.save(result(value=1.0), H200)
    store.save(result(value=2.0, started="2026-12-25T09:00:00+00:00"), H200)
    loaded = store.load(H200)
    assert loaded.mine["hbm_bandwidth"].readings[0].value == 2.0
    assert loaded.mine["hbm_bandwidth"].started.startswith("2026-12-25")
    assert len(store.files()) == 1


@pytest.mark.parametrize(
    "kept",
    [
        result(status="error"),
        result(status="no_gpu"),
        result(status="unavailable"),
        result(recorded=Recorded("NVIDIA H200", "2026-12-03")),
    ],
    ids=["error", "no_gpu", "unavailable", "recorded"],
)
def test_only_a_result_that_ran_here_is_saved(store: ResultStore, kept: ProbeResult) -> None:
    assert store.save(kept, H200) is None
    assert not store.folder.exists()


def test_a_partial_result_is_saved(store: ResultStore) -> None:
    assert store.save(result(status="partial"), H200) is not None
    assert store.load(H200).mine["hbm_bandwidth"].status == "partial"


def test_a_result_that_cannot_be_written_raises_and_keeps_the_old_file(
    store: ResultStore, tmp_path: Path
) -> None:
    store.save(result(value=1.0), H200)
    blocked = ResultStore(tmp_path / "a-file")
    blocked.folder.write_text("not a folder")
    with pytest.raises(OSError):
        blocked.save(result(), H200)
    assert blocked.folder.read_text() == "not a folder"
    assert store.load(H200).mine["hbm_bandwidth"].readings[0].value == 1.0


def test_results_of_another_machine_are_set_aside_with_a_note(store: ResultStore) -> None:
    store.save(result(), A100)
    store.save(result("pcie_bandwidth"), A100)
    store.save(result("stride_sweep"), H200)
    loaded = store.load(H200)
    assert set(loaded.mine) == {"stride_sweep"}
    assert sorted(s.result.probe for s in loaded.others) == ["hbm_bandwidth", "pcie_bandwidth"]
    assert loaded.notes() == [
        "Saved results of hbm_bandwidth, pcie_bandwidth were measured on another machine "
        "(NVIDIA A100-SXM4-80GB on lab-node), not this one (NVIDIA H200 on lab-node): not "
        "used here. `gpulab probe forget NAME` removes one."
    ]
    assert len(store.files()) == 3  # nothing removed


def test_which_machine_is_the_same() -> None:
    # by UUID where every GPU has one: the hostname may change (a container's)
    assert H200.same_as(replace(H200, host="renamed"))
    assert not H200.same_as(A100)
    two = Machine("x", (Gpu("NVIDIA H200", "GPU-b"), Gpu("NVIDIA H200", "GPU-a")))
    assert two.same_as(Machine("y", (Gpu("NVIDIA H200", "GPU-a"), Gpu("NVIDIA H200", "GPU-b"))))
    assert not two.same_as(Machine("x", (Gpu("NVIDIA H200", "GPU-a"),)))
    # without UUIDs, the names and the hostname
    named = Machine("lab", (Gpu("NVIDIA H200"),))
    assert named.same_as(Machine("lab", (Gpu("NVIDIA H200"),)))
    assert not named.same_as(Machine("other", (Gpu("NVIDIA H200"),)))
    # without a GPU: the hostname, and never a machine with one
    cpu = Machine("laptop")
    assert cpu.same_as(Machine("laptop")) and not cpu.same_as(Machine("desktop"))
    assert not cpu.same_as(replace(H200, host="laptop"))
    assert cpu.label == "no NVIDIA GPU on laptop"
    assert two.label == "2× NVIDIA H200 on x"


def _bad(store: ResultStore, name: str, text: str) -> str:
    store.folder.mkdir(parents=True, exist_ok=True)
    path = store.folder / f"{name}.json"
    path.write_text(text)
    found, skipped = store.read()
    assert found == [] and len(skipped) == 1
    assert path.read_text() == text  # left as it is
    assert skipped[0].startswith(f"{path} was skipped and left as it is: ")
    assert skipped[0].endswith(f"`gpulab probe forget {name}` removes it.")
    return skipped[0]


def test_a_file_that_is_not_json_is_skipped_by_name(store: ResultStore) -> None:
    assert "it is not JSON (JSON is malformed" in _bad(store, "hbm_bandwidth", "{half a file")


def test_a_foreign_format_is_skipped_by_name(store: ResultStore) -> None:
    recorded = json.dumps({"gpulab": "0.1.0", "schema": 1, "results": []})
    assert "it is not a result saved by gpulab" in _bad(store, "hbm_bandwidth", recorded)
    assert (
        "it does not follow `gpulab probe schema` (schema 1): Expected `object`, got `array`."
    ) in _bad(store, "hbm_bandwidth", "[1, 2]")
    newer = json.loads(json.dumps(run_document([result()], H200)))
    newer["schema"] = 2
    assert "(schema 1): Invalid enum value 2 - at `$.schema`" in _bad(
        store, "hbm_bandwidth", json.dumps(newer)
    )


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda d: d["results"].append(d["results"][0]), "it does not hold exactly one result"),
        (
            lambda d: d["results"][0].pop("status"),
            "Object missing required field `status` - at `$.results[0]`",
        ),
        (
            lambda d: d["results"][0]["readings"][0].update(value=[1, 2]),
            "Expected `bool | int | float | str | null`, got `array` - at "
            "`$.results[0].readings[0].value`",
        ),
        (
            lambda d: d["results"][0]["readings"][0].update(status="not_supported"),
            "a reading that is not_supported has no value (it has 4262.0) - at "
            "`$.results[0].readings[0]`",
        ),
        (
            lambda d: d["results"][0]["tables"][0].update(rows="x"),
            "Expected `array`, got `str` - at `$.results[0].tables[0].rows`",
        ),
        (
            lambda d: d["results"][0].update(seconds="1"),
            "Expected `float`, got `str` - at `$.results[0].seconds`",
        ),
        (
            lambda d: d["results"][0].update(surprise=1),
            "Object contains unknown field `surprise` - at `$.results[0]`",
        ),
        (
            lambda d: d.update(machine={"host": 3, "gpus": []}),
            "Expected `str`, got `int` - at `$.machine.host`",
        ),
        (
            lambda d: d["results"][0].update(probe="pcie_bandwidth"),
            "it holds a result of 'pcie_bandwidth', not of 'hbm_bandwidth'",
        ),
        (lambda d: d["results"][0].update(status="error"), "its result is error"),
    ],
)
def test_a_damaged_result_is_skipped_by_name(store: ResultStore, change: object, why: str) -> None:
    document = json.loads(json.dumps(run_document([result()], H200)))
    change(document)  # type: ignore[operator]
    assert why in _bad(store, "hbm_bandwidth", json.dumps(document))


def test_good_files_load_beside_a_bad_one(store: ResultStore) -> None:
    store.save(result(), H200)
    (store.folder / "stride_sweep.json").write_bytes(b"\xff\xfe not utf-8")
    (store.folder / ".hbm_bandwidth-x.tmp").write_text("a write that was cut off")
    (store.folder / "notes.txt").write_text("not ours")
    loaded = store.load(H200)
    assert set(loaded.mine) == {"hbm_bandwidth"}
    (skipped,) = loaded.skipped
    assert "stride_sweep.json was skipped" in skipped and "not JSON" in skipped
    assert loaded.notes() == [skipped]


def test_an_unreadable_folder_is_said(store: ResultStore) -> None:
    store.folder.parent.mkdir(parents=True)
    store.folder.symlink_to(store.folder)  # a loop: listing it fails, as for root too
    found, skipped = store.read()
    assert found == [] and skipped == [
        f"{store.folder} cannot be read (Too many levels of "
        "symbolic links): your saved results are not used"
    ]


def test_forget(store: ResultStore) -> None:
    for probe in ("hbm_bandwidth", "pcie_bandwidth", "stride_sweep"):
        store.save(result(probe), H200)
    removed, absent = store.forget(["hbm_bandwidth", "nope", "../state"])
    assert [p.name for p in removed] == ["hbm_bandwidth.json"] and absent == ["nope", "../state"]
    removed, absent = store.forget()
    assert [p.name for p in removed] == ["pcie_bandwidth.json", "stride_sweep.json"]
    assert absent == [] and store.files() == []
    assert store.forget() == ([], [])


def test_this_machine_through_a_recorded_nvml() -> None:
    machine = this_machine(Replay.load(H200_NVML))
    assert machine == Machine(socket.gethostname(), (Gpu("NVIDIA H200", H200_UUID),))


def test_a_machine_without_a_gpu_is_known_by_its_hostname() -> None:
    """The truthful CPU-only path: NVML finds no GPU here, host probes still save."""
    no_driver_here()
    machine = this_machine()
    assert machine == Machine(socket.gethostname(), ())
    assert machine.same_as(this_machine())
    assert os.environ.get("GPULAB_STATE_DIR")  # the tests' own, never the user's
