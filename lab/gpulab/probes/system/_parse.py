"""Pure parsers for the system probe: kernel CPU lists, cgroup files, os-release, meminfo.

Also cgroup v2's `cpu.max`, the lines of /proc/<pid>/cgroup and namespace
link targets. Each is a function of text, so tests give it exact and odd
input; malformed input raises ValueError or is skipped, as each function
says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "compact_cpu_list",
    "parse_cgroup_file",
    "parse_cpu_list",
    "parse_cpu_max",
    "parse_meminfo",
    "parse_ns_link",
    "parse_os_release",
]


# ---- pure parsers ---------------------------------------------------------------------------


def parse_cpu_list(text: str) -> list[int]:
    """CPU numbers in a kernel CPU list ("0-3,8", "0-7:2/4"), sorted and unique.

    Surrounding whitespace and empty items are ignored ("" is no CPU); a
    reversed range, a negative number or other text raises ValueError.
    """
    cpus: set[int] = set()
    for item in text.strip().split(","):
        item = item.strip()
        if not item:
            continue
        span, _, stride = item.partition(":")
        first_text, dash, last_text = span.partition("-")
        first = _cpu_number(first_text, item)
        last = _cpu_number(last_text, item) if dash else first
        if last < first:
            raise ValueError(f"reversed CPU range {item!r}")
        if not stride:
            cpus.update(range(first, last + 1))
            continue
        used_text, slash, group_text = stride.partition("/")
        used, group = _cpu_number(used_text, item), _cpu_number(group_text, item)
        if not slash or used < 1 or group < 1:
            raise ValueError(f"bad CPU range stride {item!r} (expected a-b:used/group)")
        for start in range(first, last + 1, group):
            cpus.update(range(start, min(start + used, last + 1)))
    return sorted(cpus)


def _cpu_number(text: str, item: str) -> int:
    if not text.strip().isdigit():
        raise ValueError(f"not a CPU list item: {item!r}")
    return int(text)


def compact_cpu_list(cpus: Iterable[int]) -> str:
    """The kernel's compact form of a set of CPUs: {0..15, 32} -> "0-15,32"."""
    numbers = sorted(set(cpus))
    if numbers and numbers[0] < 0:
        raise ValueError(f"negative CPU number {numbers[0]}")
    parts: list[str] = []
    index = 0
    while index < len(numbers):
        end = index
        while end + 1 < len(numbers) and numbers[end + 1] == numbers[end] + 1:
            end += 1
        first, last = numbers[index], numbers[end]
        parts.append(str(first) if first == last else f"{first}-{last}")
        index = end + 1
    return ",".join(parts)


def parse_cpu_max(text: str) -> float | None:
    """CPUs allowed by a cgroup v2 `cpu.max` ("quota period"); None for "max" (no limit).

    "150000 100000" is 1.5 CPUs. A lone quota uses the default period of
    100000 µs; anything else raises ValueError.
    """
    fields = text.split()
    if len(fields) not in (1, 2):
        raise ValueError(f"cpu.max should read 'quota period', not {text.strip()!r}")
    period = int(fields[1]) if len(fields) == 2 else 100_000
    if period <= 0:
        raise ValueError(f"cpu.max period must be positive: {text.strip()!r}")
    if fields[0] == "max":
        return None
    quota = int(fields[0])
    if quota <= 0:
        raise ValueError(f"cpu.max quota must be positive or 'max': {text.strip()!r}")
    return quota / period


_OS_RELEASE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_os_release(text: str) -> dict[str, str]:
    """The KEY=value pairs of an os-release file (shell-style quoting, # comments).

    Double-quoted values lose their quotes and backslash escapes, single-quoted
    values their quotes; lines without a valid key are skipped.
    """
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, equals, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not equals or not _OS_RELEASE_KEY.fullmatch(key):
            continue
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = re.sub(r'\\(["\\$`])', r"\1", value[1:-1])
        elif len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1]
        values[key] = value
    return values


_MEMINFO_LINE = re.compile(r"^(?:Node\s+\d+\s+)?([^\s:]+):\s*(\d+)(?:\s*(kB))?\s*$")


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo or a NUMA node's meminfo as {name: value}, "kB" values in bytes.

    Values without a unit (HugePages_Total) stay counts; other lines are skipped.
    """
    values: dict[str, int] = {}
    for line in text.splitlines():
        match = _MEMINFO_LINE.match(line.strip())
        if match:
            name, number, kb = match.groups()
            values[name] = int(number) * (1024 if kb else 1)
    return values


def parse_cgroup_file(text: str) -> list[tuple[int, tuple[str, ...], str]]:
    """The lines of /proc/<pid>/cgroup as (hierarchy id, controllers, path).

    "0::/user.slice" is the cgroup v2 line (no controllers); "4:memory:/a" a
    v1 one. A path may itself hold colons; malformed lines are skipped.
    """
    entries: list[tuple[int, tuple[str, ...], str]] = []
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3 or not parts[0].isdigit() or not parts[2].startswith("/"):
            continue
        controllers = tuple(name for name in parts[1].split(",") if name)
        entries.append((int(parts[0]), controllers, parts[2]))
    return entries


def parse_ns_link(target: str) -> int:
    """The inode number in a namespace link's target: "pid:[4026531836]" -> 4026531836."""
    match = re.fullmatch(r"[a-z_]+:\[(\d+)\]", target.strip())
    if not match:
        raise ValueError(f"not a namespace link target: {target!r}")
    return int(match.group(1))
