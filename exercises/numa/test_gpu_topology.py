"""Checks of the gpu-topology exercise (lesson: NUMA, CPU affinity and PCIe).

Parts 1 and 2 need no GPU: `parse_topo` reads two sample outputs of
``nvidia-smi topo -m`` written out below (an HGX board whose GPUs meet through
NVSwitches, and a PCIe server with a NIC), and its result is compared with the
answer worked out here from how each sample was wired; `rank` and
`fastest_pair` get small matrices with known answers. Part 3 needs no GPU
either: `read_topology` runs while ``pynvml`` answers from recorded NVML
sessions of other machines (an eight-GPU HGX board, two PCIe GPUs on one
switch), and is compared with the answers written down for them; on a GPU it
is also compared with the checks' own NVML reading of this machine. Part 4
times peer copies with CuPy, in this process, and compares with your
`measure_peer_copy` and with your prediction of the fastest pair; it needs two
GPUs and says so where there is only one. The checks' own readings of this
machine are in `gpulab.grading.checks.reference.gpu_topology`.
"""

from __future__ import annotations

import importlib
import itertools
import re
from typing import Any

import pytest

from gpulab.grading.checks.learner import LearnerError
from gpulab.grading.checks.machines import nvml_expected
from gpulab.grading.checks.reference.gpu_topology import (
    COPY_BYTES,
    cuda_index_by_bus,
    own_copy,
    own_topology,
)
from gpulab.grading.checks.worker import REFUSED

# -- the samples --------------------------------------------------------------------------


def tabbed(matrix: str) -> str:
    """nvidia-smi separates the matrix's columns with tabs: turn an aligned matrix into that."""
    lines = (re.sub(r" {2,}", "\t", line) for line in matrix.splitlines())
    return "\n".join(re.sub(r"\tX(?=\t|$)", "\t X ", line) for line in lines) + "\n"


LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""  # noqa: E501  (nvidia-smi's own lines)

# An HGX board with eight GPUs on two sockets: every GPU reaches every other through
# NVSwitches with all 18 links; NIC n shares a PCIe switch with GPUs 2n and 2n + 1.
HGX = tabbed("""\
        GPU0    GPU1    GPU2    GPU3    GPU4    GPU5    GPU6    GPU7    NIC0    NIC1    NIC2    NIC3    CPU Affinity    NUMA Affinity
GPU0     X      NV18    NV18    NV18    NV18    NV18    NV18    NV18    PIX     NODE    SYS     SYS     0-55,112-167    0
GPU1    NV18     X      NV18    NV18    NV18    NV18    NV18    NV18    PIX     NODE    SYS     SYS     0-55,112-167    0
GPU2    NV18    NV18     X      NV18    NV18    NV18    NV18    NV18    NODE    PIX     SYS     SYS     0-55,112-167    0
GPU3    NV18    NV18    NV18     X      NV18    NV18    NV18    NV18    NODE    PIX     SYS     SYS     0-55,112-167    0
GPU4    NV18    NV18    NV18    NV18     X      NV18    NV18    NV18    SYS     SYS     PIX     NODE    56-111,168-223  1
GPU5    NV18    NV18    NV18    NV18    NV18     X      NV18    NV18    SYS     SYS     PIX     NODE    56-111,168-223  1
GPU6    NV18    NV18    NV18    NV18    NV18    NV18     X      NV18    SYS     SYS     NODE    PIX     56-111,168-223  1
GPU7    NV18    NV18    NV18    NV18    NV18    NV18    NV18     X      SYS     SYS     NODE    PIX     56-111,168-223  1
NIC0    PIX     PIX     NODE    NODE    SYS     SYS     SYS     SYS      X      NODE    SYS     SYS
NIC1    NODE    NODE    PIX     PIX     SYS     SYS     SYS     SYS     NODE     X      SYS     SYS
NIC2    SYS     SYS     SYS     SYS     PIX     PIX     NODE    NODE    SYS     SYS      X      NODE
NIC3    SYS     SYS     SYS     SYS     NODE    NODE    PIX     PIX     SYS     SYS     NODE     X
""") + LEGEND + """
NIC Legend:

  NIC0: mlx5_0
  NIC1: mlx5_1
  NIC2: mlx5_2
  NIC3: mlx5_3
"""  # noqa: E501

# A PCIe server: GPU1 and GPU2 share a switch; GPU0 sits under a second switch below the
# same parent; GPU3 and the NIC hang off another host bridge of socket 0; GPU4 is on
# socket 1.
PCIE = tabbed("""\
        GPU0    GPU1    GPU2    GPU3    GPU4    NIC0    CPU Affinity    NUMA Affinity
GPU0     X      PXB     PXB     NODE    SYS     NODE    0-15,32-47      0
GPU1    PXB      X      PIX     NODE    SYS     NODE    0-15,32-47      0
GPU2    PXB     PIX      X      NODE    SYS     NODE    0-15,32-47      0
GPU3    NODE    NODE    NODE     X      SYS     PHB     0-15,32-47      0
GPU4    SYS     SYS     SYS     SYS      X      SYS     16-31,48-63     1
NIC0    NODE    NODE    NODE    PHB     SYS      X
""") + LEGEND + """
NIC Legend:

  NIC0: mlx5_0
"""


def hgx_answer() -> dict[str, Any]:
    """What parse_topo(HGX) should return, worked out from how the board is wired."""
    gpus = [f"GPU{i}" for i in range(8)]
    nics = [f"NIC{n}" for n in range(4)]

    def label(a: str, b: str) -> str:
        i, j = int(a[3:]), int(b[3:])
        if a.startswith("GPU") and b.startswith("GPU"):
            return "NV18"
        if a.startswith("NIC") and b.startswith("NIC"):
            return "NODE" if i // 2 == j // 2 else "SYS"
        gpu, nic = (i, j) if a.startswith("GPU") else (j, i)
        return "PIX" if gpu // 2 == nic else "NODE" if gpu // 4 == nic // 2 else "SYS"

    socket0 = [*range(0, 56), *range(112, 168)]
    socket1 = [*range(56, 112), *range(168, 224)]
    return {
        "gpus": gpus,
        "nics": nics,
        "links": {a: {b: label(a, b) for b in gpus + nics if b != a} for a in gpus + nics},
        "cpu_affinity": {g: socket0 if int(g[3:]) < 4 else socket1 for g in gpus},
        "numa_affinity": {g: 0 if int(g[3:]) < 4 else 1 for g in gpus},
    }


def pcie_answer() -> dict[str, Any]:
    """What parse_topo(PCIE) should return."""
    rows = {
        "GPU0": "X PXB PXB NODE SYS NODE",
        "GPU1": "PXB X PIX NODE SYS NODE",
        "GPU2": "PXB PIX X NODE SYS NODE",
        "GPU3": "NODE NODE NODE X SYS PHB",
        "GPU4": "SYS SYS SYS SYS X SYS",
        "NIC0": "NODE NODE NODE PHB SYS X",
    }
    devices = list(rows)
    node0 = [*range(0, 16), *range(32, 48)]
    node1 = [*range(16, 32), *range(48, 64)]
    return {
        "gpus": devices[:5],
        "nics": ["NIC0"],
        "links": {a: {b: cell for b, cell in zip(devices, rows[a].split(), strict=True)
                      if b != a} for a in devices},
        "cpu_affinity": {"GPU0": node0, "GPU1": node0, "GPU2": node0, "GPU3": node0,
                         "GPU4": node1},
        "numa_affinity": {"GPU0": 0, "GPU1": 0, "GPU2": 0, "GPU3": 0, "GPU4": 1},
    }


KEYS = ("gpus", "nics", "links", "cpu_affinity", "numa_affinity")


def compare_parsed(got: Any, want: dict[str, Any], sample: str) -> None:
    """Key by key, device by device, with a message that points at the first difference."""
    assert isinstance(got, dict), f"parse_topo({sample}) returned {got!r:.120}, not a dict"
    missing = [key for key in KEYS if key not in got]
    assert not missing, (f"parse_topo({sample}) has no {', '.join(missing)}: "
                         f"it returned the keys {sorted(got)}")
    for key in ("gpus", "nics"):
        assert got[key] == want[key], (
            f"parse_topo({sample})[{key!r}] is {got[key]!r}, want {want[key]!r}: the header "
            "names every device once, in matrix order; GPU... are GPUs, everything else "
            "(NIC0 ..., or mlx5_0 ... from older drivers) goes to 'nics'")
    links = got["links"]
    assert isinstance(links, dict), f"parse_topo({sample})['links'] is {links!r:.120}"
    for row, cells in want["links"].items():
        mine = links.get(row)
        assert isinstance(mine, dict), (
            f"parse_topo({sample})['links'] has no row {row!r} (it has {sorted(links)}): "
            "one dict per device row, NIC rows included")
        assert mine == cells, _first_difference(sample, row, mine, cells)
    extra = sorted(set(links) - set(want["links"]))
    assert not extra, (f"parse_topo({sample})['links'] has rows {extra} that are no devices: "
                       "stop at the empty line before the legend")
    for key, what in (("cpu_affinity", "the CPU list of the 'CPU Affinity' column"),
                      ("numa_affinity", "the int of the 'NUMA Affinity' column")):
        for gpu, value in want[key].items():
            mine = got[key].get(gpu, "(missing)") if isinstance(got[key], dict) else got[key]
            assert mine == value, (
                f"parse_topo({sample})[{key!r}][{gpu!r}] is {_short(mine)}, want {_short(value)}:"
                f" {what} of {gpu}'s row" + (", expanded with parse_cpulist"
                                             if key == "cpu_affinity" else ""))
        assert isinstance(got[key], dict) and sorted(got[key]) == sorted(want[key]), (
            f"parse_topo({sample})[{key!r}] is {_short(got[key])}, want a dict keyed by "
            f"{sorted(want[key])}: one entry per GPU, none for NICs")


def _first_difference(sample: str, row: str, mine: dict[str, Any], want: dict[str, str]) -> str:
    for column, label in want.items():
        if mine.get(column) != label:
            return (f"parse_topo({sample})['links'][{row!r}][{column!r}] is "
                    f"{mine.get(column, '(missing)')!r}, but the matrix says {label!r}: "
                    "cell k of a row belongs to the k-th device of the header")
    extra = sorted(set(mine) - set(want))
    return (f"parse_topo({sample})['links'][{row!r}] has the extra columns {extra}: only "
            "devices, and not the device itself (the X on the diagonal)")


def _short(value: Any) -> str:
    if isinstance(value, list) and len(value) > 8:
        return f"[{value[0]!r}, {value[1]!r}, ... {value[-1]!r}] ({len(value)} CPUs)"
    return repr(value)


def raised_value_error(learner: Any, function: str, *args: Any) -> tuple[bool, str]:
    """Did the call raise ValueError, judged by the exception's type (not its message)? And
    what it did, in words (for the hidden checks)."""
    try:
        got = learner.call(function, *args)
    except LearnerError as exc:
        if exc.raised_as(NotImplementedError):
            raise
        first = str(exc).splitlines()[0]  # "while calling f(): TypeError: message"
        did = f"raised {first.split(': ', 1)[-1]}"
        if exc.raised_as(ValueError):
            return True, did
        return False, did + ", which is not a ValueError (its type decides, not its message)"
    return False, f"returned {got!r:.80}"


# -- part 3 on recorded machines ----------------------------------------------------------
# NVML sessions of other machines (gpulab/grading/checks/machines/nvml/, its README says what each
# is): while read_topology() runs, `pynvml` answers from the recording, so it is checked on
# an eight-GPU board and on PCIe GPUs on any machine, without a GPU.
RECORDED = ("hgx-8", "pcie-pair")
PART3_CALLS = ("nvmlInit, nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex, nvmlDeviceGetPciInfo, "
               "nvmlDeviceGetNvLinkState, nvmlDeviceGetNvLinkRemotePciInfo, "
               "nvmlDeviceGetTopologyCommonAncestor and nvmlShutdown")
NOT_SMI = ("a recorded session answers NVML's calls only: a program that runs nvidia-smi "
           "reads the machine the checks run on, or finds no nvidia-smi at all. Ask NVML, "
           "as part 3 says")
PCIE_LABELS = ("PIX", "PXB", "PHB", "NODE", "SYS")


def on_recording(learner: Any, session: str) -> str | None:
    """Why read_topology() is wrong on the recorded NVML session `session`; None if right."""
    want = nvml_expected(session, "gpu-topology")
    source = f"the recorded NVML session {session!r} ({want['about']})"
    try:
        got = learner.call_with_nvml(session, "read_topology")
    except LearnerError as exc:
        if exc.raised_as(NotImplementedError):
            raise
        said = str(exc)
        if REFUSED in said:
            hint = ""
        elif "NotRecorded" in said:
            hint = (f"the recording answers the calls part 3 names ({PART3_CALLS}), for the "
                    "GPUs and link numbers its driver lists")
        elif "NVMLError" in said:
            hint = ("NVMLError_NotSupported (a GPU without NVLink, a far end NVML cannot name) "
                    "and NVMLError_InvalidArgument (a link number the GPU does not have) are "
                    "answers: catch them where part 3 says what they mean")
        else:
            hint = NOT_SMI
        return f"read_topology() on {source} failed: {said}" + (f"\n{hint}" if hint else "")
    return judge_topology(got, want["read_topology"], source)


def judge_topology(got: Any, want: dict[str, Any], source: str) -> str | None:
    """Why `got` is not the topology `want` read from `source`; None when it is."""
    call = f"read_topology() on {source}"
    if not (isinstance(got, dict) and isinstance(got.get("gpus"), list)
            and isinstance(got.get("links"), dict)):
        return (f"{call} returned {got!r:.120}: want a dict with 'gpus' (a list) and 'links' "
                "(a dict of dicts)")
    gpus, links = got["gpus"], got["links"]
    if len(gpus) != len(want["gpus"]):
        return (f"{call} returned {len(gpus)} GPU(s), {gpus!r:.80}, but its driver lists "
                f"{len(want['gpus'])}: it must ask NVML (nvmlDeviceGetCount, "
                "nvmlDeviceGetHandleByIndex), not nvidia-smi, which shows the machine the "
                "checks run on")
    if gpus != want["gpus"]:
        return (f"{call}: 'gpus' is {gpus!r:.80}: name the GPUs GPU0, GPU1, ... by NVML's "
                "index, in that order")
    for a, row in want["links"].items():
        mine = links.get(a)
        if not isinstance(mine, dict):
            return (f"{call}: 'links' has no row {a!r}: one dict per GPU, even with one GPU "
                    "({'GPU0': {}})")
        for b, label in row.items():
            if mine.get(b) != label:
                back = links.get(b)
                other_side = back.get(a) if isinstance(back, dict) else None
                return (f"{call} labels {a}-{b} {mine.get(b, '(missing)')!r}, but NVML's "
                        f"answers there make it {label!r}: "
                        + _label_hint(mine.get(b), label, other_side))
        extra = sorted(set(mine) - set(row), key=str)
        if extra:
            return (f"{call}: 'links'[{a!r}] has the columns {extra!r:.80} besides the other "
                    "GPUs: every other GPU, not the GPU itself")
    return None


def _label_hint(got: Any, want: str, other_side: Any) -> str:
    """What a wrong label suggests, in the terms of part 3's text."""
    if not isinstance(got, str):
        return "every GPU's row labels every other GPU with a string such as 'NV4' or 'PIX'"
    if want.startswith("NV") and other_side == want:
        return (f"the other GPU's row says {want!r}: a pair's label does not depend on the GPU "
                "you start from. One GPU may be unable to name the far ends of its links "
                "(NotSupported), so count the links from both sides and take the larger")
    if want.startswith("NV") and got in PCIE_LABELS:
        return ("these GPUs have NVLinks, which come before any PCIe path. A link that ends at "
                "no GPU of this machine (an NVSwitch, or an end NVML cannot name) joins the "
                "switch fabric, through which two GPUs reach each other over the smaller of "
                "their two counts of such links")
    if want.startswith("NV"):
        return ("count every active link of each GPU, link numbers 0 to "
                "NVML_NVLINK_MAX_LINKS - 1, skipping only those NVML says are missing or "
                "inactive")
    if got.startswith("NV"):
        return ("these GPUs share no active NVLink: a link whose state is not "
                "NVML_FEATURE_ENABLED, or one NVML does not support, carries nothing")
    return ("without NVLinks the label is the PCIe level NVML gives for the pair "
            "(nvmlDeviceGetTopologyCommonAncestor), in nvidia-smi's words (PCIE_LABEL); "
            "'SYS' only where NVML cannot say")


# -- part 4 (the checks' own copies: gpulab.grading.checks.reference.gpu_topology) ---------------
def cuda_gpus() -> int:
    return int(importlib.import_module("cupy").cuda.runtime.getDeviceCount())


def need_two_gpus() -> int:
    count = cuda_gpus()
    if count < 2:
        pytest.skip(f"needs two GPUs: this machine has {count}")
    return count


def check_copy(learner: Any, src: int, dst: int, nbytes: int) -> None:
    call = f"measure_peer_copy({src}, {dst}, {nbytes})"
    got = learner.call("measure_peer_copy", src, dst, nbytes)
    want = own_copy(src, dst, nbytes)
    assert isinstance(got, int | float) and not isinstance(got, bool) and got > 0, (
        f"{call} returned {got!r}: return the bandwidth in GB/s, a positive number")
    ratio = got / want
    hint = ""
    if 1.7 < ratio < 2.3:
        hint = ": did you count the bytes twice (read + written)? Count each byte once"
    elif 700 < ratio < 1300:
        hint = ": is it MB/s? Divide bytes per second by 1e9"
    elif ratio < 0.5:
        hint = (": is peer access enabled from both sides before the timing, and are the "
                "copies timed with events on the stream they run on, after a warm-up?")
    assert 0.75 <= ratio <= 1.33, (
        f"{call} says {got:.1f} GB/s, but the check's own cudaMemcpyPeer of the same size "
        f"between the same GPUs measured {want:.1f} GB/s just now{hint}")


# -- part 1: parse_topo -------------------------------------------------------------------
@pytest.mark.points(3)
def test_parse_hgx_board(learner: Any) -> None:
    """parse_topo reads an HGX board: eight GPUs on NVSwitches, four NICs"""
    compare_parsed(learner.call("parse_topo", HGX), hgx_answer(), "HGX sample")


@pytest.mark.points(3)
def test_parse_pcie_server(learner: Any) -> None:
    """parse_topo reads a PCIe server: PIX, PXB, PHB, NODE, SYS and a NIC row"""
    compare_parsed(learner.call("parse_topo", PCIE), pcie_answer(), "PCIe sample")


# -- part 2: rank and fastest_pair --------------------------------------------------------
ORDER = ["SYS", "NODE", "PHB", "PXB", "PIX", "NV1", "NV2", "NV4", "NV8", "NV12", "NV18"]


@pytest.mark.points(2)
def test_rank_orders_the_labels(learner: Any) -> None:
    """rank puts SYS < NODE < PHB < PXB < PIX < NV1 < NV2 < ... < NV18"""
    ranks = {}
    for label in ORDER:
        value = learner.call("rank", label)
        assert isinstance(value, int | float) and not isinstance(value, bool), (
            f"rank({label!r}) returned {value!r}: return a number, larger for a faster path")
        ranks[label] = value
    for slower, faster in itertools.pairwise(ORDER):
        hint = (": compare the link counts as numbers, not as text ('NV12' < 'NV2' as text)"
                if faster.startswith("NV") and slower.startswith("NV") else
                ": any NVLink beats any PCIe path" if faster.startswith("NV") else
                ": the PCIe paths, fastest first, are PIX, PXB, PHB, NODE, SYS")
        assert ranks[faster] > ranks[slower], (
            f"rank({faster!r}) = {ranks[faster]!r} should be larger than "
            f"rank({slower!r}) = {ranks[slower]!r}{hint}")


def matrix(gpus: list[str], cells: dict[tuple[str, str], str]) -> dict[str, Any]:
    """A parsed matrix of GPUs only, from the labels of the pairs (both directions)."""
    links: dict[str, dict[str, str]] = {gpu: {} for gpu in gpus}
    for (a, b), label in cells.items():
        links[a][b] = links[b][a] = label
    return {"gpus": gpus, "nics": [], "links": links,
            "cpu_affinity": dict.fromkeys(gpus), "numa_affinity": dict.fromkeys(gpus)}


def pairs_of(gpus: list[str], default: str, **special: str) -> dict[tuple[str, str], str]:
    cells = {(a, b): default for i, a in enumerate(gpus) for b in gpus[i + 1:]}
    for key, label in special.items():
        a, b = key.split("_")
        cells[(a, b)] = label
    return cells


FOUR = ["GPU0", "GPU1", "GPU2", "GPU3"]
PAIR_CASES = [
    ("a PCIe box whose only switch pair is GPU2, GPU3",
     matrix(FOUR, pairs_of(FOUR, "SYS", GPU0_GPU1="NODE", GPU2_GPU3="PIX")), ["GPU2", "GPU3"]),
    ("a box where one bridged pair beats every PCIe path",
     matrix(FOUR, pairs_of(FOUR, "PIX", GPU1_GPU3="NV4")), ["GPU1", "GPU3"]),
    ("a tie: every pair NV18 (the first pair in order wins)",
     matrix(FOUR, pairs_of(FOUR, "NV18")), ["GPU0", "GPU1"]),
    ("PXB against PHB", matrix(FOUR, pairs_of(FOUR, "PHB", GPU0_GPU2="PXB")), ["GPU0", "GPU2"]),
]


@pytest.mark.points(2)
def test_fastest_pair(learner: Any) -> None:
    """fastest_pair picks the best-ranked GPU pair, the first in order on a tie"""
    for what, parsed, want in PAIR_CASES:
        got = learner.call("fastest_pair", parsed)
        assert got == want, (
            f"fastest_pair on {what} returned {got!r}, want {want!r}: look at every pair "
            "a, b with a before b in parsed['gpus'], rank links[a][b], keep the first best")


@pytest.mark.points(1)
def test_fastest_pair_on_the_samples(learner: Any) -> None:
    """fastest_pair on the two samples, as parsed by the check's answers"""
    for name, parsed, want in (("HGX sample", hgx_answer(), ["GPU0", "GPU1"]),
                               ("PCIe sample", pcie_answer(), ["GPU1", "GPU2"])):
        got = learner.call("fastest_pair", parsed)
        assert got == want, (f"fastest_pair on the {name} returned {got!r}, want {want!r}: "
                             "NIC columns are no GPUs, and only GPU pairs count")


# -- part 3: read_topology ----------------------------------------------------------------
@pytest.mark.points(3)
def test_read_topology_on_recorded_machines(learner: Any) -> None:
    """read_topology() on recorded NVML sessions: an eight-GPU HGX board, two PCIe GPUs"""
    problems = [why for session in RECORDED if (why := on_recording(learner, session))]
    assert not problems, "\n".join(problems)


@pytest.mark.gpu
@pytest.mark.points(1)
def test_read_topology_matches_this_machine(learner: Any) -> None:
    """read_topology() here finds every GPU and labels every pair as NVML does"""
    want = own_topology()
    why = judge_topology(learner.call("read_topology"), want,
                         "this machine (the checks' own NVML reading of it)")
    assert why is None, why


# -- part 4: measure_peer_copy ------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.points(3)
def test_peer_copy_bandwidth(learner: Any) -> None:
    """measure_peer_copy(0, 1, 256 MiB) agrees with the check's own timing"""
    need_two_gpus()
    check_copy(learner, 0, 1, COPY_BYTES)


@pytest.mark.gpu
@pytest.mark.points(3)
def test_prediction_holds(learner: Any) -> None:
    """the pair fastest_pair(read_topology()) predicts is within 10 % of the best measured"""
    need_two_gpus()
    topology = learner.call("read_topology")
    predicted = learner.call("fastest_pair", topology)
    truth = own_topology()
    assert isinstance(predicted, list) and len(predicted) == 2 and \
        all(name in truth["gpus"] for name in predicted), (
            f"fastest_pair(read_topology()) returned {predicted!r}: with two or more GPUs, "
            f"want two of {truth['gpus']!r}")
    cuda_of = cuda_index_by_bus()
    devices = []
    for name in predicted:
        bus = truth["buses"][truth["gpus"].index(name)]
        if bus not in cuda_of:
            pytest.skip(f"{name} ({bus}) is not visible to CUDA here (CUDA_VISIBLE_DEVICES)")
        devices.append(cuda_of[bus])
    scores = {}
    visible = sorted(cuda_of.values())
    for i, a in enumerate(visible):
        for b in visible[i + 1:]:
            scores[(a, b)] = (own_copy(a, b) + own_copy(b, a)) / 2
    best_pair = max(scores, key=lambda pair: scores[pair])
    mine = scores[(min(devices), max(devices))]
    table = ", ".join(f"{a}-{b}: {gbps:.0f}" for (a, b), gbps in sorted(scores.items()))
    assert mine >= 0.9 * scores[best_pair], (
        f"you predicted {predicted[0]}-{predicted[1]} (CUDA devices {devices[0]} and "
        f"{devices[1]}), which moved {mine:.1f} GB/s each way on average, but CUDA devices "
        f"{best_pair[0]}-{best_pair[1]} moved {scores[best_pair]:.1f} GB/s (all pairs, GB/s: "
        f"{table}). Is your ranking right, and does read_topology see the NVLinks?")
