"""The GPU topology probe: its pure helpers exactly, the `nvidia-smi topo -m` parser on
real public outputs, NVML answers replayed (a constructed two-GPU machine and, once
re-recorded, the project's H200), no GPU here, and on a GPU the probe against nvidia-smi."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pynvml
import pytest

from gpulab.probes import ProbeResult, Reading, run_probe
from gpulab.probes.machine_record import record
from gpulab.probes.model import run_schema
from gpulab.probes.nvml import Recorder, Replay, ReplayMismatch
from gpulab.probes.registry import get_probe
from gpulab.probes.topology import (
    LEVEL_LABELS,
    LinkEnd,
    TopoMatrix,
    ancestor_label,
    best_pair,
    build_matrix,
    cpu_list,
    format_cpu_list,
    gpu_topology,
    label_rank,
    nvlink_counts,
    nvlink_version_text,
    p2p_status_text,
    parse_cpu_list,
    sysfs_pci_address,
)
from helpers.probes import entries, set_answer
from helpers.topo_text import parse_topo_matrix

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TOPO = FIXTURES / "topology"
CONSTRUCTED = TOPO / "constructed-two-h100-nvswitch.json"
SCHEMA = run_schema()
H0, H1 = {"__handle__": 0}, {"__handle__": 1}


# ---- helpers --------------------------------------------------------------------------------


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def answer(data: dict[str, Any], call: str, args: list[Any]) -> Any:
    found = entries(data, call, args)
    assert found and "result" in found[0], f"the recording has no answer to {call}{args}"
    return found[0]["result"]


def constructed() -> dict[str, Any]:
    return copy.deepcopy(load(CONSTRUCTED))


def reading(result: ProbeResult, key: str) -> Reading:
    found = result.reading(key)
    assert found is not None, f"{result.probe} has no reading {key}"
    return found


def table(result: ProbeResult, title: str) -> Any:
    return next(t for t in result.tables if t.title == title)


def validate(result: ProbeResult) -> None:
    data = json.loads(json.dumps(result.to_dict()))
    jsonschema.Draft202012Validator(SCHEMA).validate(
        {"gpulab": "t", "schema": 1, "results": [data]}
    )
    assert ProbeResult.from_dict(data).to_dict() == data


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k not in ("started", "seconds")}


# ---- pure helpers ---------------------------------------------------------------------------


def test_ancestor_levels_use_nvidia_smi_labels() -> None:
    assert [
        ancestor_label(level)
        for level in (
            pynvml.NVML_TOPOLOGY_INTERNAL,
            pynvml.NVML_TOPOLOGY_SINGLE,
            pynvml.NVML_TOPOLOGY_MULTIPLE,
            pynvml.NVML_TOPOLOGY_HOSTBRIDGE,
            pynvml.NVML_TOPOLOGY_NODE,
            pynvml.NVML_TOPOLOGY_SYSTEM,
        )
    ] == ["PIX", "PIX", "PXB", "PHB", "NODE", "SYS"]
    assert set(LEVEL_LABELS) == {0, 10, 20, 30, 40, 50}
    with pytest.raises(ValueError, match="NVML topology level 60 is not one of 0, 10"):
        ancestor_label(60)


def test_labels_rank_nvlink_by_count_then_pcie_nearest_first() -> None:
    shuffled = ["PHB", "NV4", "SYS", "PIX", "NV18", "NODE", "NV12", "PXB", "NV1"]
    assert sorted(shuffled, key=label_rank, reverse=True) == [
        "NV18",
        "NV12",
        "NV4",
        "NV1",
        "PIX",
        "PXB",
        "PHB",
        "NODE",
        "SYS",
    ]
    assert label_rank("NV2") > label_rank("PIX") > label_rank("SYS")
    for bad in ("X", "nv18", "NV", "SOC", ""):
        with pytest.raises(ValueError, match="is not a path label"):
            label_rank(bad)


def test_affinity_bitmasks_become_kernel_cpu_lists() -> None:
    assert cpu_list([0xFFFF]) == "0-15"
    assert cpu_list([0]) == "" and cpu_list([]) == ""
    assert cpu_list([0b10101]) == "0,2,4"
    assert cpu_list([0b11]) == "0-1"
    # NVML's documented example: CPUs 0, 1, 32 and 33 in 32-bit words are [0x3, 0x3]
    assert cpu_list([0x3, 0x3], word_bits=32) == "0-1,32-33"
    assert cpu_list([0x3, 0x3]) == "0-1,64-65"
    dgx_socket0 = [(1 << 56) - 1, ((1 << 16) - 1) << 48, (1 << 40) - 1]
    dgx_socket1 = [0xFF << 56, (1 << 48) - 1, ((1 << 24) - 1) << 40, (1 << 32) - 1, 0]
    assert cpu_list(dgx_socket0) == "0-55,112-167"
    assert cpu_list(dgx_socket1) == "56-111,168-223"
    assert cpu_list([1 << 63, 1]) == "63-64"  # a run across two words


def test_cpu_lists_parse_and_format_back() -> None:
    assert parse_cpu_list("0-3,8") == {0, 1, 2, 3, 8}
    assert parse_cpu_list("6,14,22,30") == {6, 14, 22, 30}
    assert parse_cpu_list("") == frozenset()
    assert format_cpu_list([8, 3, 2, 1, 0, 2]) == "0-3,8"
    for text in ("0-55,112-167", "0,2,4,6,8,10", "7", "0-1,32-33"):
        assert format_cpu_list(parse_cpu_list(text)) == text
    for bad in ("0-", "a-3", "1-2-3", "x"):
        with pytest.raises(ValueError, match="is neither N nor N-M"):
            parse_cpu_list(bad)


def test_nvlink_versions_and_p2p_statuses() -> None:
    assert nvlink_version_text(pynvml.NVML_NVLINK_VERSION_4_0) == "4.0"
    assert nvlink_version_text(pynvml.NVML_NVLINK_VERSION_3_1) == "3.1"
    assert nvlink_version_text(pynvml.NVML_NVLINK_VERSION_2_2) == "2.2"
    assert nvlink_version_text(pynvml.NVML_NVLINK_VERSION_5_0) == "5.0"
    assert nvlink_version_text(42) == "unknown (42)"
    assert p2p_status_text(pynvml.NVML_P2P_STATUS_OK) == "OK"
    assert p2p_status_text(pynvml.NVML_P2P_STATUS_GPU_NOT_SUPPORTED) == "GPU not supported"
    assert (
        p2p_status_text(pynvml.NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED)
        == "topology not supported"
    )
    assert p2p_status_text(pynvml.NVML_P2P_STATUS_DISABLED_BY_REGKEY) == "disabled by regkey"
    assert p2p_status_text(17) == "unknown (17)"


def test_pci_bus_ids_as_sysfs_names_them() -> None:
    assert sysfs_pci_address("00000000:1B:00.0") == "0000:1b:00.0"
    assert sysfs_pci_address("0000:C3:00.0") == "0000:c3:00.0"
    assert sysfs_pci_address("0000000F:01:00.0") == "000f:01:00.0"


GPU_BUSES = ["00000000:1B:00.0", "00000000:43:00.0", "00000000:52:00.0"]


def test_direct_nvlink_links_count_once_per_pair() -> None:
    bridge = [[LinkEnd("00000000:43:00.0")] * 4, [LinkEnd("00000000:1b:00.0")] * 4, []]
    assert nvlink_counts(GPU_BUSES, bridge) == {(0, 1): 4, (0, 2): 0, (1, 2): 0}
    one_side_mute = [[LinkEnd("00000000:43:00.0")] * 2, [], []]
    assert nvlink_counts(GPU_BUSES, one_side_mute)[0, 1] == 2


def test_switch_links_join_every_pair_through_the_fabric() -> None:
    switch = LinkEnd("00000000:05:00.0", switch=True)
    links = [[switch] * 18, [switch] * 16, [switch] * 18]
    assert nvlink_counts(GPU_BUSES, links) == {(0, 1): 16, (0, 2): 18, (1, 2): 16}
    # a far end that is no GPU here (NVSwitches a VM cannot see) counts as fabric too
    hidden = [[LinkEnd("00000000:99:00.0")] * 6, [LinkEnd(None)] * 6, []]
    assert nvlink_counts(GPU_BUSES, hidden) == {(0, 1): 6, (0, 2): 0, (1, 2): 0}


def test_the_matrix_puts_nvlink_before_pcie_and_mirrors_each_pair() -> None:
    matrix = build_matrix(
        3,
        {(0, 1): "SYS", (0, 2): "PHB", (1, 2): None},
        {(0, 1): 4, (0, 2): 0},
        ["0-7", "8-15", None],
        ["0", "1", None],
        [None, None, "2"],
    )
    assert matrix.gpus == ("GPU0", "GPU1", "GPU2")
    assert matrix.links == (("X", "NV4", "PHB"), ("NV4", "X", None), ("PHB", None, "X"))
    assert (matrix.cpu_affinity, matrix.numa_affinity, matrix.gpu_numa_id) == (
        ("0-7", "8-15", None),
        ("0", "1", None),
        (None, None, "2"),
    )
    assert best_pair(matrix) == (0, 1, "NV4")
    assert build_matrix(1, {}, {}, ["0-15"], ["0"], [None]).links == (("X",),)


def test_the_matrix_survives_a_table() -> None:
    matrix = TopoMatrix(
        ("GPU0", "GPU1"),
        (("X", "NV18"), ("NV18", "X")),
        ("0-55,112-167", "56-111,168-223"),
        ("0", "1"),
        (None, None),
    )
    table = matrix.to_table()
    assert table.title == "GPU topology"
    assert table.columns == ("GPU", "GPU0", "GPU1", "CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
    assert table.rows[1] == ("GPU1", "NV18", "X", "56-111,168-223", "1", None)
    assert TopoMatrix.from_table(table) == matrix
    with pytest.raises(ValueError, match="is not a GPU topology table"):
        TopoMatrix.from_table(type(table)("GPUs", ("index", "name"), ()))


# ---- the parser on public nvidia-smi outputs ------------------------------------------------

SAMPLES = {
    "hgx-h100-nv18.txt": dict(
        gpus=8,
        others=(),
        best=(0, 1, "NV18"),
        labels={"NV18"},
        cpu=["0-47,96-143"] * 4 + ["48-95,144-191"] * 4,
        numa=["0"] * 4 + ["1"] * 4,
    ),
    "h100-nv6-nics.txt": dict(
        gpus=4,
        others=("NIC0", "NIC1", "NIC2", "NIC3"),
        best=(0, 1, "NV6"),
        labels={"NV6"},
        cpu=["6,14,22,30", "4,12,20,28", "7,15,23,31", "5,13,21,29"],
        numa=["3", "1", "7", "5"],
    ),
    "rtx4090-pcie-nics.txt": dict(
        gpus=8,
        others=("NIC0", "NIC1"),
        best=(0, 1, "SYS"),
        labels={"SYS"},
        cpu=["0-55,112-167"] * 4 + ["56-111,168-223"] * 4,
        numa=["0"] * 4 + ["1"] * 4,
    ),
    "rtx4090-five-gpus.txt": dict(
        gpus=5,
        others=(),
        best=(1, 2, "PHB"),
        labels={"SYS", "PHB", "NODE"},
        cpu=["8-15,24-31"] + ["0-7,16-23"] * 4,
        numa=["1", "0", "0", "0", "0"],
    ),
    "tesla-p4-one-gpu.txt": dict(
        gpus=1, others=(), best=None, labels=set(), cpu=["0-7"], numa=[None]
    ),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_parser_reads_public_outputs(name: str) -> None:
    want = SAMPLES[name]
    text = (TOPO / name).read_text(encoding="utf-8")
    matrix = parse_topo_matrix(text)
    n = int(want["gpus"])
    assert matrix.gpus == tuple(f"GPU{i}" for i in range(n))
    assert matrix.others == want["others"]
    assert matrix.columns == ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
    assert [matrix.links[i][i] for i in range(n)] == ["X"] * n
    assert {matrix.links[i][j] for i in range(n) for j in range(n) if i != j} == want["labels"]
    assert all(matrix.links[i][j] == matrix.links[j][i] for i in range(n) for j in range(n))
    assert list(matrix.cpu_affinity) == want["cpu"]
    assert list(matrix.numa_affinity) == want["numa"]
    assert matrix.gpu_numa_id == (None,) * n  # "N/A" on all of these machines
    assert best_pair(matrix) == want["best"]


def test_parser_reads_the_exact_cells_of_a_mixed_pcie_machine() -> None:
    matrix = parse_topo_matrix((TOPO / "rtx4090-five-gpus.txt").read_text())
    assert matrix.links[1] == ("SYS", "X", "PHB", "NODE", "NODE")
    assert matrix.links[3] == ("SYS", "NODE", "NODE", "X", "PHB")


def test_every_sample_names_its_source() -> None:
    readme = (TOPO / "README.md").read_text(encoding="utf-8")
    for path in sorted(TOPO.glob("*.txt")):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# source: https://github.com/"), path.name
        assert path.name in readme and first.split()[2] in readme, path.name
    assert "constructed" in load(CONSTRUCTED) and "constructed" in CONSTRUCTED.name


HEADER = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Legend:\n  X = Self\n", "no header line found"),
        (
            f"{HEADER}\nGPU0\t X \tPHX\t0-7\t0\t\tN/A\nGPU1\tPHB\t X \t0-7\t0\t\tN/A\n",
            "line 2: 'PHX' in column GPU1 is not a path label",
        ),
        (
            f"{HEADER}\nGPU0\tPHB\tPHB\t0-7\t0\t\tN/A\nGPU1\tPHB\t X \t0-7\t0\t\tN/A\n",
            "line 2: row GPU0 has 'PHB' in column GPU0; X belongs in a device's own column",
        ),
        (
            f"{HEADER}\nGPU0\t X \tX\t0-7\t0\t\tN/A\nGPU1\tPHB\t X \t0-7\t0\t\tN/A\n",
            "line 2: row GPU0 has 'X' in column GPU1",
        ),
        (
            f"# two lines\n# before\n{HEADER}\nGPU0\t X \nGPU1\tPHB\t X \t0-7\t0\t\tN/A\n",
            "line 4: row GPU0 has 1 cells, the header names 2 devices",
        ),
        (
            f"{HEADER}\nGPU0\t X \tPHB\t0-7\t0\t\tN/A\nGPU2\tPHB\t X \t0-7\t0\t\tN/A\n",
            "line 3: row 'GPU2' is not a column of the header",
        ),
        (
            f"{HEADER}\nGPU0\t X \tPHB\t0-7\t0\t\tN/A\n\nGPU1\tPHB\t X \t0-7\t0\t\tN/A\n",
            "no row for GPU1 below the header \\(line 1\\)",
        ),
        (
            f"{HEADER}\nGPU0\t X \tPHB\t0-7\t0\nGPU1\tPHB\t X \t0-7\t0\t\tN/A\n",
            "line 2: row GPU0 has 2 affinity values, the header names 3",
        ),
        (
            "\tGPU0\tGPU1\tCPU Affinity\tMystery\nGPU0\t X \tPHB\t0-7\n",
            "line 1: unknown column text 'Mystery' after the devices",
        ),
    ],
)
def test_parser_names_the_line_of_bad_input(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_topo_matrix(text)


def test_parser_ignores_colour_codes_and_older_columns() -> None:
    text = (
        "\x1b[4m\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\x1b[0m\n"
        "GPU0\t X \tPIX\tPHB\t0-9,20-29\n"
        "GPU1\tPIX\t X \tPHB\t0-9,20-29\n"
        "mlx5_0\tPHB\tPHB\t X \n"
    )
    matrix = parse_topo_matrix(text)
    assert matrix.columns == ("CPU Affinity",) and matrix.others == ("mlx5_0",)
    assert matrix.links == (("X", "PIX"), ("PIX", "X"))
    assert matrix.cpu_affinity == ("0-9,20-29",) * 2
    assert matrix.numa_affinity == (None, None)  # the column is not there


# ---- replaying NVML: a constructed two-GPU machine ------------------------------------------


def test_constructed_two_gpu_machine() -> None:
    data = constructed()
    got = gpu_topology(Replay(data))
    assert got.status == "partial"  # the GPU NUMA id is not supported
    value = {r.key: r.value for r in got.readings if r.status == "ok"}
    assert value["gpu_count"] == answer(data, "nvmlDeviceGetCount", [])
    assert value["gpu_pci_bus_id"] == answer(data, "nvmlDeviceGetPciInfo", [H0])["busId"]
    states = [
        e["result"]
        for e in entries(data, "nvmlDeviceGetNvLinkState")
        if e["args"][0] == H0 and "result" in e
    ]
    assert value["nvlink_links_active"] == sum(states) == 18
    assert (
        value["nvlink_version"]
        == nvlink_version_text(answer(data, "nvmlDeviceGetNvLinkVersion", [H0, 0]))
        == "4.0"
    )
    assert value["gpu_numa_node"] == 0
    assert value["gpu_local_cpus"] == "0-55,112-167"
    assert value["best_pair"] == "GPU0-GPU1 (NV18)"
    assert reading(got, "gpu_numa_id").status == "not_supported"
    assert "nvmlDeviceGetNumaNodeId" in reading(got, "gpu_numa_id").detail
    assert reading(got, "gpu_local_cpus").detail == "sysfs local_cpulist agrees"
    matrix = TopoMatrix.from_table(got.tables[0])
    assert matrix == TopoMatrix(
        ("GPU0", "GPU1"),
        (("X", "NV18"), ("NV18", "X")),
        ("0-55,112-167", "56-111,168-223"),
        ("0", "1"),
        (None, None),
    )
    links = table(got, "NVLink links")
    assert len(links.rows) == 36 and {row[5] for row in links.rows} == {"NVSwitch"}
    (pair,) = table(got, "GPU pairs").rows
    assert pair == ("GPU0-GPU1", "NV18", "SYS", "OK", "OK", "OK", "OK")
    assert got.message == (
        "2 GPUs: NVIDIA H100 80GB HBM3; GPU 0 on NUMA node 0; local CPUs "
        "0-55,112-167; 18 NVLink links active on GPU 0; nearest pair "
        "GPU0-GPU1 (NV18)"
    )
    validate(got)


def test_one_gpu_has_no_pair() -> None:
    data = constructed()
    set_answer(data, "nvmlDeviceGetCount", result=1)
    got = gpu_topology(Replay(data))
    best = reading(got, "best_pair")
    assert best.status == "not_supported" and best.detail == "needs two GPUs"
    assert reading(got, "gpu_count").value == 1
    assert got.tables[0].rows == (("GPU0", "X", "0-55,112-167", "0", None),)
    assert table(got, "GPU pairs").rows == ()
    validate(got)


def test_a_gpu_without_nvlink_and_numa_from_sysfs() -> None:
    data = constructed()
    set_answer(data, "nvmlDeviceGetCount", result=1)
    set_answer(
        data, "nvmlDeviceGetNvLinkState", args=[H0, 0], error=pynvml.NVML_ERROR_NOT_SUPPORTED
    )
    set_answer(data, "nvmlDeviceGetMemoryAffinity", error=pynvml.NVML_ERROR_NOT_SUPPORTED)
    numa_path = "/sys/bus/pci/devices/0000:1b:00.0/numa_node"
    set_answer(data, "sysfs_text", args=[numa_path], result="1")
    got = gpu_topology(Replay(data))
    for key in ("nvlink_links_active", "nvlink_version"):
        assert reading(got, key).status == "not_supported", key
        assert "nvmlDeviceGetNvLinkState" in reading(got, key).detail
    assert table(got, "NVLink links").rows == ()
    assert "no NVLink" in got.message
    numa = reading(got, "gpu_numa_node")
    assert (numa.value, numa.detail) == (1, "sysfs numa_node")
    set_answer(data, "sysfs_text", args=[numa_path], result="-1")
    numa = reading(gpu_topology(Replay(data)), "gpu_numa_node")
    assert numa.status == "not_supported" and "numa_node is -1" in numa.detail
    assert "nvmlDeviceGetMemoryAffinity" in numa.detail


def test_direct_links_and_refused_p2p() -> None:
    data = constructed()
    buses = [answer(data, "nvmlDeviceGetPciInfo", [h])["busId"] for h in (H0, H1)]
    for entry in entries(data, "nvmlDeviceGetNvLinkState"):
        entry["result"] = int(entry["args"][1] < 4)  # links 0-3 up: a 4-link bridge
    for entry in entries(data, "nvmlDeviceGetNvLinkRemoteDeviceType"):
        entry["result"] = pynvml.NVML_NVLINK_DEVICE_TYPE_GPU
    for entry in entries(data, "nvmlDeviceGetNvLinkRemotePciInfo"):
        entry["result"]["busId"] = buses[1 - entry["args"][0]["__handle__"]]
    set_answer(data, "nvmlDeviceGetTopologyCommonAncestor", result=pynvml.NVML_TOPOLOGY_HOSTBRIDGE)
    set_answer(
        data,
        "nvmlDeviceGetP2PStatus",
        args=[H0, H1, 3],
        result=pynvml.NVML_P2P_STATUS_GPU_NOT_SUPPORTED,
    )
    got = gpu_topology(Replay(data))
    assert reading(got, "nvlink_links_active").value == 4
    assert reading(got, "best_pair").value == "GPU0-GPU1 (NV4)"
    links = table(got, "NVLink links")
    assert [row[2] for row in links.rows].count("Active") == 8
    assert {row[6] for row in links.rows if row[2] == "Active"} == {"GPU0", "GPU1"}
    (pair,) = table(got, "GPU pairs").rows
    assert pair == ("GPU0-GPU1", "NV4", "PHB", "OK", "OK", "OK", "GPU not supported")


def test_a_pair_nvml_cannot_place() -> None:
    data = constructed()
    for entry in entries(data, "nvmlDeviceGetNvLinkState"):
        entry["result"] = 0
    set_answer(data, "nvmlDeviceGetTopologyCommonAncestor", error=pynvml.NVML_ERROR_NOT_SUPPORTED)
    got = gpu_topology(Replay(data))
    best = reading(got, "best_pair")
    assert best.status == "not_supported" and "no path" in best.detail
    assert TopoMatrix.from_table(got.tables[0]).links == (("X", None), (None, "X"))
    validate(got)


@pytest.mark.parametrize(
    ("name", "words"), [("no-library.json", "libnvidia-ml"), ("no-devices.json", "lists no GPUs")]
)
def test_no_driver_or_no_gpu_is_one_result(name: str, words: str) -> None:
    got = gpu_topology(Replay(load(FIXTURES / "nvml" / name)))
    assert got.status == "no_gpu"
    assert got.message.startswith("no NVIDIA GPU found: ") and words in got.message
    assert got.readings == () and got.tables == ()
    validate(got)


def test_no_driver_here_through_the_real_pynvml() -> None:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this machine has a working NVIDIA driver; the no-GPU path needs one without")
    got = run_probe("gpu_topology")
    assert got.status == "no_gpu" and got.message.startswith("no NVIDIA GPU found: ")


# ---- recording and replaying the real machine -----------------------------------------------


def test_sysfs_reads_are_recorded_and_replayed(tmp_path: Path) -> None:
    path = tmp_path / "numa_node"
    path.write_text("3\n")
    recorder = Recorder(pynvml)
    assert recorder.sysfs_text(str(path)) == "3"
    assert recorder.sysfs_text(str(tmp_path / "absent")) is None
    replay = Replay(recorder.recording("test"))
    assert replay.sysfs_text(str(path)) == "3"
    assert replay.sysfs_text(str(tmp_path / "absent")) is None
    with pytest.raises(ReplayMismatch, match="sysfs_text"):
        replay.sysfs_text("/sys/elsewhere")


def test_a_recording_replays_the_topology_it_recorded() -> None:
    data = json.loads(json.dumps(record(0.01)))
    assert "topology" in data and "nvidia_smi_topo" in data
    got = gpu_topology(Replay(data))
    assert comparable(got.to_dict()) == comparable(data["topology"])


def h200_recording() -> dict[str, Any]:
    data = load(FIXTURES / "nvml" / "h200.json")
    assert "topology" in data and data.get("nvidia_smi_topo"), (
        "tests/fixtures/nvml/h200.json lacks the topology probe's result or nvidia-smi topo "
        "-m's text: record it again on the H200 with python -m gpulab.probes.nvml"
    )
    return data


def test_the_recorded_h200_replays_its_topology() -> None:
    data = h200_recording()
    got = gpu_topology(Replay(data))
    assert comparable(got.to_dict()) == comparable(data["topology"])
    assert reading(got, "gpu_count").value == answer(data, "nvmlDeviceGetCount", [])
    validate(got)


def test_the_recorded_h200_matches_its_nvidia_smi() -> None:
    data = h200_recording()
    assert_matches_nvidia_smi(gpu_topology(Replay(data)), data["nvidia_smi_topo"])


def assert_matches_nvidia_smi(result: ProbeResult, smi_text: str) -> None:
    ours = TopoMatrix.from_table(table(result, "GPU topology"))
    smi = parse_topo_matrix(smi_text)
    assert ours.gpus == smi.gpus
    assert ours.links == smi.links
    for i, gpu in enumerate(smi.gpus):
        if "CPU Affinity" in smi.columns:
            assert (
                None if ours.cpu_affinity[i] is None else parse_cpu_list(ours.cpu_affinity[i])
            ) == (None if smi.cpu_affinity[i] is None else parse_cpu_list(smi.cpu_affinity[i])), gpu
        if "NUMA Affinity" in smi.columns:
            assert ours.numa_affinity[i] == smi.numa_affinity[i], gpu


# ---- the registry and the command line ------------------------------------------------------


def test_the_probe_is_registered() -> None:
    info = get_probe("gpu_topology")
    assert (info.title, info.needs) == ("GPU topology", "nvml")
    assert info.function() is gpu_topology


def test_run_json_follows_the_schema() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gpulab", "probe", "run", "gpu_topology", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in done.stderr
    document = json.loads(done.stdout)
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    (result,) = document["results"]
    assert result["probe"] == "gpu_topology"
    assert result["status"] in ("ok", "partial", "no_gpu", "unavailable")


# ---- on a GPU -------------------------------------------------------------------------------


@pytest.mark.gpu
def test_nvml_matrix_equals_nvidia_smi_here() -> None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        pytest.skip("nvidia-smi is not on PATH")
    got = gpu_topology()
    if got.status in ("no_gpu", "unavailable"):
        pytest.skip(f"needs NVML and a GPU: {got.message}")
    assert got.status in ("ok", "partial"), got.message
    text = subprocess.run(
        [smi, "topo", "-m"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert_matches_nvidia_smi(got, text)
    assert reading(got, "gpu_count").value == len(parse_topo_matrix(text).gpus)
    validate(got)
