"""The system probe: its parsers on exact and odd input, fake /proc and /sys trees with
known answers (cgroup v1 in a container, cgroup v2 with two NUMA nodes and GPUs, hybrid,
nothing at all), and this very machine, checked against what the test reads itself."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpulab.probes.model import ProbeResult, Reading, run_schema
from gpulab.probes.registry import run_probe
from gpulab.probes.system import (
    compact_cpu_list,
    parse_cgroup_file,
    parse_cpu_list,
    parse_cpu_max,
    parse_meminfo,
    parse_ns_link,
    parse_os_release,
    system,
)

INITIAL = {
    "cgroup": 4026531835,
    "ipc": 4026531839,
    "mnt": 4026531832,
    "net": 4026531833,
    "pid": 4026531836,
    "time": 4026531834,
    "user": 4026531837,
    "uts": 4026531838,
}


# ---- parsers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("0-3,8", [0, 1, 2, 3, 8]),
        ("0", [0]),
        ("", []),
        ("\n", []),
        (" 2-3 , 0 \n", [0, 2, 3]),
        ("0-1,1-2,0", [0, 1, 2]),
        ("5,3,4", [3, 4, 5]),
        ("0-3,,8,", [0, 1, 2, 3, 8]),
        ("0-7:2/4", [0, 1, 4, 5]),
        ("0-6:2/4", [0, 1, 4, 5]),
        ("0-5:2/4", [0, 1, 4, 5]),
        ("0-4:2/4", [0, 1, 4]),
    ],
)
def test_parse_cpu_list(text: str, cpus: list[int]) -> None:
    assert parse_cpu_list(text) == cpus


@pytest.mark.parametrize("text", ["3-1", "a", "-1", "1-", "0-3:2", "0-3:0/4", "1.5", "0-3:2/x"])
def test_parse_cpu_list_refuses_nonsense(text: str) -> None:
    with pytest.raises(ValueError, match="CPU"):
        parse_cpu_list(text)


@pytest.mark.parametrize(
    ("cpus", "text"),
    [
        (range(16), "0-15"),
        ([*range(16), 32], "0-15,32"),
        ([], ""),
        ([7], "7"),
        ([0, 1], "0-1"),
        ([5, 3, 4, 4, 9], "3-5,9"),
        ({0, 2, 4}, "0,2,4"),
        ([0, 1, 2, 10, 11, 20], "0-2,10-11,20"),
    ],
)
def test_compact_cpu_list(cpus: list[int], text: str) -> None:
    assert compact_cpu_list(cpus) == text
    assert parse_cpu_list(text) == sorted(set(cpus))


def test_compact_cpu_list_refuses_negative() -> None:
    with pytest.raises(ValueError, match="negative"):
        compact_cpu_list([-1, 0])


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("max 100000", None),
        ("max 100000\n", None),
        ("max", None),
        ("200000 100000", 2.0),
        ("150000 100000", 1.5),
        ("50000 100000", 0.5),
        ("1000 1000", 1.0),
        ("50000", 0.5),
    ],
)
def test_parse_cpu_max(text: str, cpus: float | None) -> None:
    assert parse_cpu_max(text) == cpus


@pytest.mark.parametrize(
    "text", ["", "a b", "1 2 3", "100000 0", "-1 100000", "0 100000", "max max"]
)
def test_parse_cpu_max_refuses_nonsense(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cpu_max(text)


def test_parse_os_release() -> None:
    text = """
# a comment
NAME="Ubuntu"
VERSION_ID='24.04'
PRETTY_NAME="Ubuntu 24.04.1 LTS"
ID=ubuntu
QUOTED="say \\"hi\\" for \\$5 \\\\ ok"
  SPACED = "x"
EMPTY=
not a line
9BAD=x
LONE="
HALF="open
"""
    assert parse_os_release(text) == {
        "NAME": "Ubuntu",
        "VERSION_ID": "24.04",
        "PRETTY_NAME": "Ubuntu 24.04.1 LTS",
        "ID": "ubuntu",
        "QUOTED": 'say "hi" for $5 \\ ok',
        "SPACED": "x",
        "EMPTY": "",
        "LONE": '"',
        "HALF": '"open',
    }
    assert parse_os_release("") == {}


def test_parse_meminfo() -> None:
    node = (
        "Node 0 MemTotal:       65536000 kB\nNode 0 MemFree:  1 kB\n"
        "Node 0 HugePages_Total:     4\nbroken line\nNode 0 Weird: x kB\n"
    )
    assert parse_meminfo(node) == {
        "MemTotal": 65536000 * 1024,
        "MemFree": 1024,
        "HugePages_Total": 4,
    }
    assert parse_meminfo("MemTotal:  2048 kB\nDirectMap1G:  0 kB") == {
        "MemTotal": 2097152,
        "DirectMap1G": 0,
    }
    assert parse_meminfo("") == {}


def test_parse_cgroup_file() -> None:
    text = (
        "12:memory:/docker/abc\n11:cpu,cpuacct:/docker/abc\n1:name=systemd:/init.scope\n"
        "0::/user.slice/a:b.scope\n\ngarbage\nx:cpu:/\n3:pids:relative\n"
    )
    assert parse_cgroup_file(text) == [
        (12, ("memory",), "/docker/abc"),
        (11, ("cpu", "cpuacct"), "/docker/abc"),
        (1, ("name=systemd",), "/init.scope"),
        (0, (), "/user.slice/a:b.scope"),
    ]


def test_parse_ns_link() -> None:
    assert parse_ns_link("pid:[4026531836]") == 4026531836
    assert parse_ns_link("pid_for_children:[4026532290]\n") == 4026532290
    for bad in ("pid:4026531836", "pid:[]", "", "[12]"):
        with pytest.raises(ValueError, match="namespace"):
            parse_ns_link(bad)


# ---- fake machines --------------------------------------------------------------------------


def write(root: Path, name: str, text: str) -> Path:
    path = root / name.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def namespaces(root: Path, pid: str, inodes: dict[str, int]) -> None:
    folder = root / "proc" / pid / "ns"
    folder.mkdir(parents=True)
    for name, inode in inodes.items():
        (folder / name).symlink_to(f"{name}:[{inode}]")
    for name in ("pid", "time"):
        if name in inodes:
            (folder / f"{name}_for_children").symlink_to(f"{name}:[{inodes[name]}]")


def kernel(root: Path, release: str, pretty: str) -> None:
    write(root, "/proc/sys/kernel/osrelease", release + "\n")
    write(root, "/proc/sys/kernel/version", "#115-Ubuntu SMP PREEMPT_DYNAMIC\n")
    write(root, "/etc/os-release", f'NAME="Ubuntu"\nPRETTY_NAME="{pretty}"\n')


def readings(result: ProbeResult) -> dict[str, Reading]:
    return {r.key: r for r in result.readings}


def table(result: ProbeResult, title: str) -> list[tuple[object, ...]]:
    return [row for t in result.tables if t.title == title for row in t.rows]


@pytest.fixture
def docker_v1(tmp_path: Path) -> Path:
    """A Docker container on a cgroup v1 host: own pid namespace, PID 1's ns unreadable."""
    kernel(tmp_path, "5.15.0-105-generic", "Ubuntu 22.04.4 LTS")
    write(tmp_path, "/.dockerenv", "")
    namespaces(
        tmp_path, "self", {**INITIAL, "pid": 4026532290, "mnt": 4026532288, "net": 4026532293}
    )
    (tmp_path / "proc/1").mkdir()  # no proc/1/ns: not readable
    write(
        tmp_path,
        "/proc/self/cgroup",
        "12:memory:/docker/abc123\n"
        "11:cpu,cpuacct:/docker/abc123\n10:pids:/docker/abc123\n9:cpuset:/docker/abc123\n"
        "1:name=systemd:/docker/abc123\n",
    )
    mounts = [
        ("memory", "memory"),
        ("cpu,cpuacct", "cpu,cpuacct"),
        ("pids", "pids"),
        ("cpuset", "cpuset"),
        ("systemd", "xattr,name=systemd"),
    ]
    write(
        tmp_path,
        "/proc/self/mountinfo",
        "1000 900 0:50 / / rw - overlay overlay rw\n"
        "1001 1000 0:52 / /sys/fs/cgroup ro - tmpfs tmpfs ro\n"
        + "".join(
            f"{1002 + i} 1001 0:{60 + i} /docker/abc123 /sys/fs/cgroup/{folder} ro,nosuid "
            f"master:{i} - cgroup cgroup rw,{options}\n"
            for i, (folder, options) in enumerate(mounts)
        ),
    )
    cg = "/sys/fs/cgroup"
    write(tmp_path, f"{cg}/memory/memory.limit_in_bytes", "2147483648\n")
    write(tmp_path, f"{cg}/cpu,cpuacct/cpu.cfs_quota_us", "150000\n")
    write(tmp_path, f"{cg}/cpu,cpuacct/cpu.cfs_period_us", "100000\n")
    write(tmp_path, f"{cg}/pids/pids.max", "512\n")
    write(tmp_path, f"{cg}/cpuset/cpuset.effective_cpus", "0-3,8\n")
    write(tmp_path, f"{cg}/cpuset/cpuset.cpus", "0-15\n")
    write(tmp_path, "/sys/devices/system/cpu/online", "0-15\n")
    write(tmp_path, "/sys/devices/system/node/node0/cpulist", "0-15\n")
    write(tmp_path, "/sys/devices/system/node/node0/meminfo", "Node 0 MemTotal: 1024 kB\n")
    write(tmp_path, "/sys/devices/system/node/node0/distance", "10\n")
    (tmp_path / "sys/bus/pci/devices").mkdir(parents=True)
    (tmp_path / "dev").mkdir()
    return tmp_path


def test_docker_on_cgroup_v1(docker_v1: Path) -> None:
    result = system(docker_v1)
    got = readings(result)
    assert got["kernel_release"].value == "5.15.0-105-generic"
    assert got["os"].value == "Ubuntu 22.04.4 LTS"
    assert got["in_container"].value is True
    assert got["in_container"].detail == (
        "yes: the pid namespace is not the initial one (inode 4026532290); /proc/self/cgroup "
        "path /docker/abc123 names a container runtime; /.dockerenv exists"
    )
    differ = got["namespaces_differ_from_pid1"]
    assert differ.status == "unknown" and differ.value is None
    assert differ.shown == "cannot tell"  # PID 1 may differ: we may not look
    assert differ.detail == "cannot read /proc/1/ns: missing"
    rows = {row[0]: row for row in table(result, "Namespaces")}
    assert rows["pid"] == ("pid", 4026532290, None, None, False)
    assert rows["user"] == ("user", INITIAL["user"], None, None, True)
    assert rows["net"] == ("net", 4026532293, None, None, None)  # before 6.18: unknowable
    assert got["cgroup_version"].value == "v1"
    assert got["cgroup_version"].detail.startswith(
        "v1 controllers: cpu, cpuacct, cpuset, memory, pids (/proc/self/mountinfo)"
    )
    assert (got["cgroup_path"].value, got["cgroup_path"].detail) == (
        "/docker/abc123",
        "from /proc/self/cgroup (memory hierarchy)",
    )
    memory = got["cgroup_memory_limit"]
    assert (memory.value, memory.unit, memory.status) == (2147483648, "bytes", "ok")
    assert memory.detail == "from /sys/fs/cgroup/memory/memory.limit_in_bytes"
    assert (got["cgroup_cpu_limit"].value, got["cgroup_cpu_limit"].unit) == (1.5, "CPUs")
    assert got["cgroup_cpu_limit"].detail == "from /sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"
    assert (got["cgroup_pids_limit"].value, got["cgroup_pids_limit"].unit) == (512, "tasks")
    assert got["cgroup_cpuset"].value == "0-3,8"
    assert got["cgroup_cpuset"].detail == (
        "5 of 16 online CPUs, from /sys/fs/cgroup/cpuset/cpuset.effective_cpus"
    )
    assert got["cpus_online"].value == 16
    assert got["gpus_in_sysfs"].value == 0
    assert got["nvidia_driver"].value is None
    assert got["nvidia_driver"].detail == "not loaded: no /proc/driver/nvidia/version"
    assert got["nvidia_device_nodes"].value is None
    assert result.status == "partial"  # PID 1's namespaces could not be read
    assert result.message.startswith(
        "Linux 5.15 (Ubuntu 22.04.4 LTS), cgroup v1, 1 NUMA node, 16 CPUs"
    )
    assert result.message.endswith(", no NVIDIA GPU, in a container")


def test_cpu_period_and_local_distance_on_v1(docker_v1: Path) -> None:
    got = readings(system(docker_v1))
    period = got["cgroup_cpu_period"]
    assert (period.value, period.unit, period.status) == (100.0, "ms", "ok")
    assert period.detail == "100000 µs, from /sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us"
    (docker_v1 / "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us").write_text("250000\n")
    assert readings(system(docker_v1))["cgroup_cpu_period"].value == 250.0
    local = got["numa_local_distance"]
    assert (local.value, local.unit) == (10, "SLIT units")
    assert local.detail == "the diagonal of the distance table: node0 10"


def test_v1_without_limits_says_no_limit(docker_v1: Path) -> None:
    cg = docker_v1 / "sys/fs/cgroup"
    (cg / "memory/memory.limit_in_bytes").write_text("9223372036854771712\n")
    (cg / "cpu,cpuacct/cpu.cfs_quota_us").write_text("-1\n")
    (cg / "pids/pids.max").unlink()
    got = readings(system(docker_v1))
    for key, names in (
        ("cgroup_memory_limit", "memory.limit_in_bytes"),
        ("cgroup_cpu_limit", "cpu.cfs_quota_us and cpu.cfs_period_us"),
        ("cgroup_pids_limit", "pids.max"),
    ):
        folder = {"cgroup_cpu_limit": "cpu,cpuacct", "cgroup_pids_limit": "pids"}.get(key, "memory")
        assert (got[key].value, got[key].status, got[key].shown) == (None, "ok", "–")
        assert got[key].detail == (
            f"no limit: no {names} sets one in /sys/fs/cgroup/{folder} or its parents"
        )


def test_unreadable_limit_is_an_error_naming_the_file(docker_v1: Path) -> None:
    (docker_v1 / "sys/fs/cgroup/pids/pids.max").write_text("lots\n")
    got = readings(system(docker_v1))["cgroup_pids_limit"]
    assert got.status == "error"
    assert got.detail.startswith("/sys/fs/cgroup/pids/pids.max: invalid literal")


@pytest.fixture
def numa_host_v2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A two-socket cgroup v2 host with two GPUs, the driver and the container toolkit."""
    kernel(tmp_path, "6.8.0-48-generic", "Ubuntu 24.04.1 LTS")
    namespaces(tmp_path, "self", INITIAL)
    namespaces(tmp_path, "1", {**INITIAL, "mnt": 4026532999})
    write(tmp_path, "/proc/1/environ", "HOME=/\0TERM=linux\0")
    write(tmp_path, "/proc/self/cgroup", "0::/user.slice/user-1000.slice/session-3.scope\n")
    write(
        tmp_path,
        "/proc/self/mountinfo",
        "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
        "35 24 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
    )
    cg = "/sys/fs/cgroup"
    write(tmp_path, f"{cg}/cgroup.controllers", "cpuset cpu io memory pids\n")
    write(tmp_path, f"{cg}/cpuset.cpus.effective", "0-31\n")
    levels = {
        "user.slice": ("max", "200000 100000", "max"),
        "user.slice/user-1000.slice": ("8589934592", "max 100000", "10000"),
        "user.slice/user-1000.slice/session-3.scope": ("max", "max 100000", "4915"),
    }
    for folder, (memory, cpu, pids) in levels.items():
        write(tmp_path, f"{cg}/{folder}/memory.max", memory + "\n")
        write(tmp_path, f"{cg}/{folder}/cpu.max", cpu + "\n")
        write(tmp_path, f"{cg}/{folder}/pids.max", pids + "\n")
    write(tmp_path, "/sys/devices/system/cpu/online", "0-31\n")
    for node, cpus, distance in ((0, "0-15", "10 21"), (1, "16-31", "21 10")):
        folder = f"/sys/devices/system/node/node{node}"
        write(tmp_path, f"{folder}/cpulist", cpus + "\n")
        write(
            tmp_path,
            f"{folder}/meminfo",
            f"Node {node} MemTotal:  65536000 kB\nNode {node} MemFree:   1000 kB\n",
        )
        write(tmp_path, f"{folder}/distance", distance + "\n")
    write(tmp_path, "/sys/devices/system/node/online", "0-1\n")
    pci = "/sys/bus/pci/devices"
    devices = {
        "0000:00:00.0": ("0x8086", "0x060000", "0x0d57"),
        "0000:17:00.0": ("0x10de", "0x030200", "0x2335"),  # H200
        "0000:17:00.1": ("0x10de", "0x040300", "0x22e8"),  # its HD audio
        "0000:65:00.0": ("0x10de", "0x030000", "0x2684"),
    }  # a VGA card
    for address, (vendor, pci_class, device) in devices.items():
        write(tmp_path, f"{pci}/{address}/vendor", vendor + "\n")
        write(tmp_path, f"{pci}/{address}/class", pci_class + "\n")
        write(tmp_path, f"{pci}/{address}/device", device + "\n")
    h200 = f"{pci}/0000:17:00.0"
    for name, text in (
        ("numa_node", "1"),
        ("local_cpulist", "16-31"),
        ("current_link_speed", "32.0 GT/s PCIe"),
        ("max_link_speed", "32.0 GT/s PCIe"),
        ("current_link_width", "16"),
        ("max_link_width", "16"),
    ):
        write(tmp_path, f"{h200}/{name}", text + "\n")
    write(tmp_path, f"{pci}/0000:65:00.0/numa_node", "-1\n")
    (tmp_path / "sys/bus/pci/drivers/nvidia").mkdir(parents=True)
    (tmp_path / h200.lstrip("/") / "driver").symlink_to("../../../bus/pci/drivers/nvidia")
    write(
        tmp_path,
        "/proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build"
        "  (dvs-builder@U22)  Thu Oct 30 2025\nGCC version:  gcc version 12.3.0\n",
    )
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"):
        write(tmp_path, f"/dev/{name}", "")
    write(tmp_path, "/usr/bin/nvidia-ctk", "#!/bin/sh\n").chmod(0o755)
    write(tmp_path, "/etc/cdi/nvidia.yaml", "cdiVersion: 0.5.0\n")
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin")
    return tmp_path


def test_numa_host_on_cgroup_v2(numa_host_v2: Path) -> None:
    result = system(numa_host_v2)
    got = readings(result)
    assert got["in_container"].value is False
    assert got["in_container"].detail == (
        "no: this process is in the kernel's initial pid namespace"
    )
    assert got["namespaces_differ_from_pid1"].value == "mnt"
    rows = {row[0]: row for row in table(result, "Namespaces")}
    assert rows["mnt"] == ("mnt", INITIAL["mnt"], 4026532999, False, True)
    assert rows["pid_for_children"] == (
        "pid_for_children",
        INITIAL["pid"],
        INITIAL["pid"],
        True,
        True,
    )
    assert got["cgroup_version"].value == "v2"
    assert got["cgroup_path"].value == "/user.slice/user-1000.slice/session-3.scope"
    memory = got["cgroup_memory_limit"]
    assert (memory.value, memory.unit) == (8589934592, "bytes")
    assert memory.detail == (
        "from /sys/fs/cgroup/user.slice/user-1000.slice/memory.max (a parent cgroup)"
    )
    assert got["cgroup_cpu_limit"].value == 2.0
    assert got["cgroup_cpu_limit"].detail == (
        "from /sys/fs/cgroup/user.slice/cpu.max (a parent cgroup)"
    )
    assert got["cgroup_pids_limit"].value == 4915
    assert got["cgroup_pids_limit"].detail == (
        "from /sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/pids.max"
    )
    assert got["cgroup_cpuset"].value == "0-31"
    assert got["cgroup_cpuset"].detail == (
        "all 32 online CPUs (no restriction), from /sys/fs/cgroup/cpuset.cpus.effective"
    )
    assert got["numa_nodes"].value == 2
    assert table(result, "NUMA nodes") == [
        (0, "0-15", 16, 65536000 * 1024, "10 21"),
        (1, "16-31", 16, 65536000 * 1024, "21 10"),
    ]
    assert got["gpus_in_sysfs"].value == 2
    assert table(result, "NVIDIA GPUs on the PCI bus") == [
        (
            "0000:17:00.0",
            "0x2335",
            "0x030200",
            "nvidia",
            1,
            "16-31",
            "32.0 GT/s PCIe",
            "32.0 GT/s PCIe",
            16,
            16,
        ),
        ("0000:65:00.0", "0x2684", "0x030000", None, None, None, None, None, None, None),
    ]
    assert "sysfs numa_node is -1" in got["gpus_in_sysfs"].detail
    assert got["nvidia_driver"].value == "580.159.04"
    assert got["nvidia_driver"].detail.startswith(
        "/proc/driver/nvidia/version: NVRM version: NVIDIA UNIX Open Kernel Module"
    )
    assert got["nvidia_device_nodes"].value == "nvidia-uvm, nvidia0, nvidia1, nvidiactl"
    assert got["nvidia_ctk"].value == "/usr/bin/nvidia-ctk"
    assert got["nvidia_container_cli"].value is None
    assert got["nvidia_cdi_specs"].value == "/etc/cdi/nvidia.yaml"
    assert result.status == "ok"
    usable = len(os.sched_getaffinity(0))
    assert result.message == (
        "Linux 6.8 (Ubuntu 24.04.1 LTS), cgroup v2, 2 NUMA nodes, 32 CPUs"
        + (f" ({usable} usable here)" if usable != 32 else "")
        + ", 2 NVIDIA GPUs"
    )


def test_v2_process_in_the_root_cgroup_has_no_limits(numa_host_v2: Path) -> None:
    (numa_host_v2 / "proc/self/cgroup").write_text("0::/\n")
    got = readings(system(numa_host_v2))
    for key in ("cgroup_memory_limit", "cgroup_cpu_limit", "cgroup_pids_limit"):
        assert (got[key].value, got[key].status) == (None, "ok")
        assert got[key].detail.startswith("no limit: no ")
        assert got[key].detail.endswith(" in /sys/fs/cgroup or its parents")
    period = got["cgroup_cpu_period"]
    assert (period.status, period.detail) == (
        "not_supported",
        "no cpu.max in /sys/fs/cgroup or its parents (the root cgroup of v2 has none)",
    )


def test_cpu_period_and_local_distance_on_v2(numa_host_v2: Path) -> None:
    cg = numa_host_v2 / "sys/fs/cgroup/user.slice/user-1000.slice"
    got = readings(system(numa_host_v2))
    assert (got["cgroup_cpu_period"].value, got["cgroup_cpu_period"].detail) == (
        100.0,
        "100000 µs, from /sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/cpu.max",
    )
    assert (got["numa_local_distance"].value, got["numa_local_distance"].detail) == (
        10,
        "the diagonal of the distance table: node0 10, node1 10",
    )
    # A leaf without cpu.max (its parent did not enable the cpu controller) reads its parent's.
    (cg / "session-3.scope/cpu.max").unlink()
    (cg / "cpu.max").write_text("max 50000\n")
    period = readings(system(numa_host_v2))["cgroup_cpu_period"]
    assert (period.value, period.detail) == (
        50.0,
        "50000 µs, from /sys/fs/cgroup/user.slice/user-1000.slice/cpu.max (a parent cgroup)",
    )
    (cg / "cpu.max").write_text("lots\n")
    period = readings(system(numa_host_v2))["cgroup_cpu_period"]
    assert (period.status, period.detail) == (
        "error",
        "/sys/fs/cgroup/user.slice/user-1000.slice/cpu.max should give a period in "
        "microseconds, not 'lots'",
    )
    # Firmware may disagree with the ACPI rule; the reading says so and names each node.
    (numa_host_v2 / "sys/devices/system/node/node1/distance").write_text("21 11\n")
    local = readings(system(numa_host_v2))["numa_local_distance"]
    assert (local.value, local.detail) == (
        11,
        "the nodes disagree, the largest is shown: node0 10, node1 11",
    )
    (numa_host_v2 / "sys/devices/system/node/node1/distance").write_text("21\n")
    local = readings(system(numa_host_v2))["numa_local_distance"]
    assert (local.status, local.detail) == (
        "error",
        "node1/distance should list 2 distances, one per node, not '21'",
    )


def test_v2_without_mountinfo_uses_the_layout(numa_host_v2: Path) -> None:
    (numa_host_v2 / "proc/self/mountinfo").unlink()
    got = readings(system(numa_host_v2))
    assert got["cgroup_version"].value == "v2"
    assert "/proc/self/mountinfo is missing" in got["cgroup_version"].detail
    assert got["cgroup_memory_limit"].value == 8589934592


def test_hybrid_layout(docker_v1: Path) -> None:
    (docker_v1 / "proc/self/mountinfo").unlink()
    write(docker_v1, "/sys/fs/cgroup/unified/cgroup.controllers", "\n")
    got = readings(system(docker_v1))
    assert got["cgroup_version"].value == "hybrid"
    assert got["cgroup_version"].detail.startswith(
        "v1 controllers (cpu, cpuacct, cpuset, memory, pids) and a v2 hierarchy at "
        "/sys/fs/cgroup/unified with none"
    )
    # without mountinfo the folders are taken as they are: no /docker/abc123 inside them
    assert got["cgroup_memory_limit"].value == 2147483648


def test_an_empty_root_degrades_without_raising(tmp_path: Path) -> None:
    result = system(tmp_path)
    got = readings(result)
    assert result.status == "partial"
    assert not [r for r in result.readings if r.key.endswith("_failed")]
    assert got["kernel_release"].status == "error"
    assert got["kernel_release"].detail == "cannot read /proc/sys/kernel/osrelease: missing"
    assert got["os"].status == "not_supported"
    assert got["os"].detail == "/etc/os-release is missing; /usr/lib/os-release is missing"
    assert got["cgroup_version"].status == "not_supported"
    assert got["numa_nodes"].detail.startswith("cannot read /sys/devices/system/node: missing")
    assert got["gpus_in_sysfs"].status == "unknown"
    assert got["gpus_in_sysfs"].shown == "cannot tell"
    assert got["namespaces_differ_from_pid1"].detail == "cannot read /proc/1/ns: missing"
    assert got["in_container"].value is False
    assert got["nvidia_device_nodes"].status == "ok"
    assert result.message.startswith("Linux ?")
    assert json.loads(json.dumps(result.to_dict()))["probe"] == "system"


# ---- this machine ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def here() -> ProbeResult:
    return system()


def test_affinity_matches_the_kernel(here: ProbeResult) -> None:
    got = readings(here)
    allowed = os.sched_getaffinity(0)
    assert got["cpu_affinity_count"].value == len(allowed)
    assert parse_cpu_list(str(got["cpu_affinity"].value)) == sorted(allowed)
    online = Path("/sys/devices/system/cpu/online").read_text()
    assert got["cpus_online"].value == len(parse_cpu_list(online))


def test_no_two_readings_share_a_label(here: ProbeResult) -> None:
    labels = [r.label for r in here.readings]
    assert len(labels) == len(set(labels)), sorted(
        label for label in labels if labels.count(label) > 1
    )
    got = readings(here)
    assert got["cpu_affinity"].label == "CPUs this process may run on"
    assert got["cpu_affinity_count"].label == "Number of CPUs this process may run on"


def test_kernel_and_os_here(here: ProbeResult) -> None:
    got = readings(here)
    assert got["kernel_release"].value == os.uname().release
    assert got["kernel_release"].value == Path("/proc/sys/kernel/osrelease").read_text().strip()
    assert got["architecture"].value == os.uname().machine
    assert here.message.startswith("Linux " + ".".join(os.uname().release.split(".")[:2]))


def test_namespaces_here(here: ProbeResult) -> None:
    rows = {row[0]: row for row in table(here, "Namespaces")}
    for name in ("pid", "net"):
        assert rows[name][1] == os.stat(f"/proc/self/ns/{name}").st_ino
        try:
            pid1 = parse_ns_link(os.readlink(f"/proc/1/ns/{name}"))
        except PermissionError:
            assert rows[name][2] is None
            assert "/proc/1/ns" in readings(here)["namespaces_differ_from_pid1"].detail
        else:
            assert rows[name][2] == pid1
            assert rows[name][3] == (pid1 == rows[name][1])


def test_cgroup_version_here(here: ProbeResult) -> None:
    got = readings(here)
    if Path("/sys/fs/cgroup/cgroup.controllers").exists():
        assert got["cgroup_version"].value == "v2"
    else:
        assert got["cgroup_version"].value in ("v1", "hybrid")
    lines = parse_cgroup_file(Path("/proc/self/cgroup").read_text())
    assert got["cgroup_path"].value in [path for _, _, path in lines]


def test_cgroup_limits_here_agree_with_their_files(here: ProbeResult) -> None:
    got = readings(here)
    for key in ("cgroup_memory_limit", "cgroup_cpu_limit", "cgroup_pids_limit"):
        reading = got[key]
        assert reading.status in ("ok", "not_supported"), reading
        if reading.status == "ok" and reading.value is None:
            assert reading.detail.startswith("no limit")
        elif reading.status == "ok":
            path = Path(reading.detail.removeprefix("from ").split(" (")[0])
            text = path.read_text().strip()
            if path.name == "cpu.max":
                assert reading.value == parse_cpu_max(text)
            elif path.name == "cpu.cfs_quota_us":
                period = (path.parent / "cpu.cfs_period_us").read_text()
                assert reading.value == int(text) / int(period)
            else:
                assert reading.value == int(text)
    cpuset = got["cgroup_cpuset"]
    if cpuset.status == "ok":
        path = Path(cpuset.detail.split(", from ")[-1])
        assert cpuset.value == compact_cpu_list(parse_cpu_list(path.read_text()))


def test_cpu_period_here_agrees_with_its_file(here: ProbeResult) -> None:
    period = readings(here)["cgroup_cpu_period"]
    assert period.status in ("ok", "not_supported"), period
    if period.status == "ok":
        path = Path(period.detail.split(", from ")[1].split(" (")[0])
        fields = path.read_text().split()
        micros = int(fields[0] if path.name == "cpu.cfs_period_us" else fields[1])
        assert period.value == micros / 1000


def test_numa_and_gpus_here(here: ProbeResult) -> None:
    got = readings(here)
    nodes = sorted(
        Path("/sys/devices/system/node").glob("node[0-9]*"), key=lambda node: int(node.name[4:])
    )
    assert got["numa_nodes"].value == len(nodes)
    diagonal = [int((node / "distance").read_text().split()[i]) for i, node in enumerate(nodes)]
    assert got["numa_local_distance"].value == max(diagonal)
    gpus = sorted(
        d.name
        for d in Path("/sys/bus/pci/devices").iterdir()
        if (d / "vendor").read_text().strip() == "0x10de"
        and (d / "class").read_text().strip().startswith("0x03")
    )
    assert got["gpus_in_sysfs"].value == len(gpus)
    assert [row[0] for row in table(here, "NVIDIA GPUs on the PCI bus")] == gpus
    version = Path("/proc/driver/nvidia/version")
    if version.exists():
        assert str(got["nvidia_driver"].value) in version.read_text()
    else:
        assert got["nvidia_driver"].value is None


def test_round_trip_through_json(here: ProbeResult) -> None:
    data = json.loads(json.dumps(here.to_dict()))
    assert ProbeResult.from_dict(data) == here


def test_result_matches_the_schema(here: ProbeResult) -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed")
    schema = run_schema()
    jsonschema.validate({"gpulab": "test", "schema": 1, "results": [here.to_dict()]}, schema)


def test_the_registry_runs_it() -> None:
    result = run_probe("system")
    assert result.probe == "system"
    assert result.status in ("ok", "partial")
    assert not [r for r in result.readings if r.key.endswith("_failed")]


@pytest.mark.gpu
def test_sysfs_gpus_are_the_ones_nvml_sees(here: ProbeResult) -> None:
    pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        pytest.skip(f"no NVIDIA GPU or driver here: {exc}")
    try:
        seen = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            bus = pynvml.nvmlDeviceGetPciInfo(handle).busId
            text = bus.decode() if isinstance(bus, bytes) else str(bus)
            seen.append(text.lower()[-12:])  # "00000000:17:00.0" -> "0000:17:00.0"
    finally:
        pynvml.nvmlShutdown()
    assert [row[0] for row in table(here, "NVIDIA GPUs on the PCI bus")] == sorted(seen)
    assert readings(here)["nvidia_driver"].value is not None
