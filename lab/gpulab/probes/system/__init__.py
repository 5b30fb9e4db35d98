"""The system probe: what the kernel, the container and the cgroups give this process.

Everything here is read from files (/proc, /sys, /etc, /dev) plus three system
calls (uname, sched_getaffinity and a PATH search), so it runs on any Linux
machine, with or without a GPU. Each file that cannot be read becomes a
reading with status `not_supported` (the machine has no such thing),
`unknown` (it may, but this process may not look) or `error`, whose detail
names the file; nothing raises.

`system(root)` reads every file under `root` instead of "/", so tests can
build a small fake /proc and /sys tree; the system calls still describe this
process. The probe and its kernel section are in `_probe`; its other
sections in `_namespaces` (containers and namespaces), `_cgroup` (cgroup
version and limits; where the cgroups are in `_cgroup_paths`) and `_devices`
(NUMA, GPUs in sysfs, NVIDIA files); reading files under the root in
`_files`. The small parsers exported here (CPU lists, cgroup files,
os-release, meminfo, namespace links) are pure functions of text (`_parse`);
`is_nvidia_gpu` is the one rule for telling a GPU on the PCI bus.
"""

from gpulab.probes.system._devices import NVIDIA_VENDOR, is_nvidia_gpu
from gpulab.probes.system._parse import (
    compact_cpu_list,
    parse_cgroup_file,
    parse_cpu_list,
    parse_cpu_max,
    parse_meminfo,
    parse_ns_link,
    parse_os_release,
)
from gpulab.probes.system._probe import system

__all__ = [
    "NVIDIA_VENDOR",
    "compact_cpu_list",
    "is_nvidia_gpu",
    "parse_cgroup_file",
    "parse_cpu_list",
    "parse_cpu_max",
    "parse_meminfo",
    "parse_ns_link",
    "parse_os_release",
    "system",
]
