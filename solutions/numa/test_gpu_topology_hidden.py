"""Hidden checks of the gpu-topology exercise: outputs the notebook does not show.

`parse_topo` meets a one-GPU VM, a driver that adds the "GPU NUMA ID" column
and underlines its header with escape codes, an older driver that names NICs
mlx5_N and has no "NUMA Affinity" column, text copied with spaces instead of
tabs, and text that is no matrix at all. Each is compared with this file's own
reading of the same text. `rank` must refuse what is no link label, and
`fastest_pair` must rank NV12 above NV2 and find the best pair of a mixed
NVLink mesh. `read_topology` meets more recorded NVML sessions: GPUs joined
directly by NVLink bridges (one pair whose second GPU cannot name the far end
of its links), six PCIe GPUs on every PCIe level, and the course's one H200.
On two GPUs, `measure_peer_copy` is timed in the other direction and at
another size.
"""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

import pytest

from gpulab.grading.checks.pytest_plugin import visible_checks


def _visible() -> ModuleType:
    """The visible checks' module (one copy of the helpers for both files)."""
    return visible_checks(__file__)


_V = _visible()
compare_parsed, matrix, pairs_of = _V.compare_parsed, _V.matrix, _V.pairs_of
tabbed, LEGEND, check_copy = _V.tabbed, _V.LEGEND, _V.check_copy
need_two_gpus, raised_value_error = _V.need_two_gpus, _V.raised_value_error
on_recording = _V.on_recording

# -- the check's own reading of nvidia-smi topo -m ----------------------------------------
_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
_EXTRA = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


def cpu_list(text: str) -> list[int]:
    cpus: set[int] = set()
    for item in text.split(","):
        first, _, last = item.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return sorted(cpus)


def reference_parse(text: str) -> dict[str, Any]:
    """The check's own parser, for the hidden samples."""
    lines = [_ESCAPE.sub("", line).rstrip() for line in text.splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    columns = [c for c in re.split(r"\t+| {2,}", lines[0].strip()) if c]
    devices = [c for c in columns if c not in _EXTRA]
    extras = [c for c in columns if c in _EXTRA]
    parsed: dict[str, Any] = {"gpus": [d for d in devices if d.startswith("GPU")],
                              "nics": [d for d in devices if not d.startswith("GPU")],
                              "links": {}, "cpu_affinity": {}, "numa_affinity": {}}
    for line in lines[1:]:
        if not line.strip():
            break
        cells = line.split()
        name, values, rest = cells[0], cells[1:1 + len(devices)], cells[1 + len(devices):]
        parsed["links"][name] = {d: v for d, v in zip(devices, values, strict=True) if d != name}
        if name.startswith("GPU"):
            found = dict(zip(extras, rest, strict=False))
            cpus, numa = found.get("CPU Affinity", "N/A"), found.get("NUMA Affinity", "N/A")
            parsed["cpu_affinity"][name] = None if cpus == "N/A" else cpu_list(cpus)
            parsed["numa_affinity"][name] = None if numa == "N/A" else int(numa)
    return parsed


# -- the hidden samples -------------------------------------------------------------------
UNDERLINE, RESET = "\x1b[4m", "\x1b[0m"

# One GPU in a VM, as the course's H200 shows it; a driver with the GPU NUMA ID column.
ONE_GPU = (UNDERLINE + "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID" + RESET + "\n"
           "GPU0\t X \t0-15\t0\t\tN/A\n" + LEGEND)

# Four NUMA nodes, two GPUs on each, NVLink 3 through NVSwitches, escape codes in the header.
_A100_ROWS = []
_AFFINITY = {0: ("48-63,176-191", 3), 1: ("16-31,144-159", 1), 2: ("112-127,240-255", 7),
             3: ("80-95,208-223", 5)}
for _i in range(8):
    _cells = [" X " if _j == _i else "NV12" for _j in range(8)]
    _cells += ["PXB" if _i // 2 == _n else "SYS" for _n in range(4)]
    _cpus, _node = _AFFINITY[_i // 2]
    _A100_ROWS.append("\t".join([f"GPU{_i}", *_cells, _cpus, str(_node), "", "N/A"]))
for _n in range(4):
    _cells = ["PXB" if _i // 2 == _n else "SYS" for _i in range(8)]
    _cells += [" X " if _m == _n else "SYS" for _m in range(4)]
    _A100_ROWS.append("\t".join([f"NIC{_n}", *_cells]))
A100_BOX = (UNDERLINE + "\t" + "\t".join([*(f"GPU{i}" for i in range(8)),
                                          *(f"NIC{n}" for n in range(4)), *_EXTRA]) + RESET
            + "\n" + "\n".join(_A100_ROWS) + "\n" + LEGEND
            + "\nNIC Legend:\n\n" + "".join(f"  NIC{n}: mlx5_{n}\n" for n in range(4)))

# An older driver (NICs named by device, no NUMA Affinity column), copied from a terminal
# with spaces; eight GPUs in a mesh of single and double NVLinks.
MESH = """\
        GPU0    GPU1    GPU2    GPU3    GPU4    GPU5    GPU6    GPU7    mlx5_0  mlx5_1  CPU Affinity
GPU0     X      NV1     NV1     NV2     NV1     SYS     SYS     SYS     PIX     SYS     0-19,40-59
GPU1    NV1      X      NV2     NV1     SYS     NV1     SYS     SYS     PIX     SYS     0-19,40-59
GPU2    NV1     NV2      X      NV2     SYS     SYS     NV1     SYS     PHB     SYS     0-19,40-59
GPU3    NV2     NV1     NV2      X      SYS     SYS     SYS     NV1     PHB     SYS     0-19,40-59
GPU4    NV1     SYS     SYS     SYS      X      NV2     NV1     NV1     SYS     PIX     20-39,60-79
GPU5    SYS     NV1     SYS     SYS     NV2      X      NV1     NV2     SYS     PIX     20-39,60-79
GPU6    SYS     SYS     NV1     SYS     NV1     NV1      X      NV2     SYS     PHB     20-39,60-79
GPU7    SYS     SYS     SYS     NV1     NV1     NV2     NV2      X      SYS     PHB     20-39,60-79
mlx5_0  PIX     PIX     PHB     PHB     SYS     SYS     SYS     SYS      X      SYS
mlx5_1  SYS     SYS     SYS     SYS     PIX     PIX     PHB     PHB     SYS      X
""" + LEGEND

NOT_A_MATRIX = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                "driver. Make sure that the latest NVIDIA driver is installed and running.\n")


# -- part 1 -------------------------------------------------------------------------------
@pytest.mark.points(1)
def test_parse_one_gpu(learner: Any) -> None:
    """parse_topo reads a one-GPU VM: no pairs, no NICs, and the GPU NUMA ID column"""
    want = reference_parse(ONE_GPU)
    assert want["links"] == {"GPU0": {}} and want["cpu_affinity"]["GPU0"] == list(range(16))
    compare_parsed(learner.call("parse_topo", ONE_GPU), want, "one-GPU sample")


@pytest.mark.points(2)
def test_parse_numa_id_column_and_escapes(learner: Any) -> None:
    """parse_topo ignores escape codes and takes NUMA Affinity, not the last column"""
    want = reference_parse(A100_BOX)
    assert want["numa_affinity"]["GPU4"] == 7 and want["links"]["NIC3"]["GPU7"] == "PXB"
    compare_parsed(learner.call("parse_topo", A100_BOX), want, "sample with GPU NUMA ID")


@pytest.mark.points(1)
def test_parse_old_driver_with_spaces(learner: Any) -> None:
    """parse_topo reads mlx5_N columns, spaces instead of tabs, no NUMA Affinity column"""
    want = reference_parse(MESH)
    assert want["nics"] == ["mlx5_0", "mlx5_1"] and want["numa_affinity"]["GPU5"] is None
    compare_parsed(learner.call("parse_topo", MESH), want, "older sample with spaces")


@pytest.mark.points(1)
def test_parse_refuses_what_is_no_matrix(learner: Any) -> None:
    """parse_topo raises ValueError on nvidia-smi's error message"""
    refused, did = raised_value_error(learner, "parse_topo", NOT_A_MATRIX)
    assert refused, (f"parse_topo on nvidia-smi's 'has failed' message {did}: text whose first "
                     "line names no GPU is no topology matrix; raise ValueError saying so")


# -- part 2 -------------------------------------------------------------------------------
@pytest.mark.points(1)
def test_rank_refuses_unknown_labels(learner: Any) -> None:
    """rank raises ValueError for X, NV, NV0 and words that are no link label"""
    for label in ("X", "NV", "NV0", "FAST", ""):
        refused, did = raised_value_error(learner, "rank", label)
        assert refused, (f"rank({label!r}) {did}: it is no link between two devices; raise "
                         "ValueError naming the label, so that a parsing mistake shows")


@pytest.mark.points(2)
def test_fastest_pair_hidden_cases(learner: Any) -> None:
    """fastest_pair: NV12 beats NV2, the mesh's first NV2 pair, None for one GPU"""
    four = ["GPU0", "GPU1", "GPU2", "GPU3"]
    cases = [
        ("NV2 against NV12", matrix(four, pairs_of(four, "SYS", GPU0_GPU1="NV2",
                                                   GPU2_GPU3="NV12")), ["GPU2", "GPU3"]),
        ("the NVLink mesh", reference_parse(MESH), ["GPU0", "GPU3"]),
        ("a one-GPU machine", reference_parse(ONE_GPU), None),
        ("two GPUs across sockets", matrix(["GPU0", "GPU1"], {("GPU0", "GPU1"): "SYS"}),
         ["GPU0", "GPU1"]),
    ]
    for what, parsed, want in cases:
        got = learner.call("fastest_pair", parsed)
        assert got == want, (f"fastest_pair on {what} returned {got!r}, want {want!r}" + (
            ": with fewer than two GPUs there is no pair" if want is None else ""))


# -- part 3 -------------------------------------------------------------------------------
@pytest.mark.points(2)
def test_read_topology_direct_links(learner: Any) -> None:
    """read_topology() counts links between two GPUs, from both sides (NVLink bridges)"""
    problems = [why for session in ("nvlink-bridge", "nvlink-bridge-mute")
                if (why := on_recording(learner, session))]
    assert not problems, "\n".join(problems)


@pytest.mark.points(2)
def test_read_topology_pcie_levels_and_one_gpu(learner: Any) -> None:
    """read_topology() gives every PCIe level of six PCIe GPUs, and one GPU without pairs"""
    problems = [why for session in ("pcie-six", "h200-topology")
                if (why := on_recording(learner, session))]
    assert not problems, "\n".join(problems)


# -- part 4 -------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.points(2)
def test_peer_copy_other_direction_and_size(learner: Any) -> None:
    """measure_peer_copy from the last GPU to GPU 0, 64 MiB, agrees with the check's timing"""
    count = need_two_gpus()
    check_copy(learner, count - 1, 0, 64 * 2**20)
