"""A parser of `nvidia-smi topo -m` text, for the tests only.

The GPU topology probe asks NVML (`gpulab.probes.topology.gpu_topology`); it
never reads nvidia-smi's output. The tests do: they parse real outputs posted
in public threads (tests/fixtures/topology/*.txt) and the text recorded next
to the H200's NVML session, and compare them with what the probe builds from
NVML, as the same `TopoMatrix`.
"""

from __future__ import annotations

import re

from gpulab.probes.topology import AFFINITY_COLUMNS, TopoMatrix

__all__ = ["parse_topo_matrix"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CELL = re.compile(r"X|NV\d+|PIX|PXB|PHB|NODE|SYS")
_GPU = re.compile(r"GPU\d+")


def parse_topo_matrix(text: str) -> TopoMatrix:
    """Read the matrix printed by `nvidia-smi topo -m` (or `-mp`).

    Lines before the header (the first line that starts with the column
    GPU0) are ignored, and so is everything from the first blank line or
    "Legend:" after the rows. NIC and other device rows may follow the GPU
    rows. Raises ValueError naming the line (counted from 1) on anything else.
    """
    lines = [_ANSI.sub("", line).rstrip() for line in text.splitlines()]
    start = next(
        (
            n
            for n, line in enumerate(lines)
            if line.split()[:1] == ["GPU0"] and line.split()[1:2] != ["X"]
        ),
        None,
    )
    if start is None:
        raise ValueError(
            "no header line found: nvidia-smi topo -m starts its matrix with a "
            "line of columns GPU0, GPU1, ..."
        )
    header = lines[start]
    first = min((header.find(name) for name in AFFINITY_COLUMNS if name in header), default=-1)
    devices = (header if first < 0 else header[:first]).split()
    extra = tuple(re.findall("|".join(AFFINITY_COLUMNS), header[first:])) if first >= 0 else ()
    leftover = re.sub("|".join(AFFINITY_COLUMNS), "", header[first:]).strip() if first >= 0 else ""
    if leftover:
        raise ValueError(f"line {start + 1}: unknown column text {leftover!r} after the devices")
    gpus = [d for d in devices if _GPU.fullmatch(d)]
    rows: dict[str, tuple[list[str], list[str]]] = {}
    for n in range(start + 1, len(lines)):
        tokens = lines[n].split()
        if not tokens or tokens[0].startswith("Legend"):
            break
        name, cells, rest = tokens[0], tokens[1 : len(devices) + 1], tokens[len(devices) + 1 :]
        where = f"line {n + 1}"
        if name not in devices:
            raise ValueError(f"{where}: row {name!r} is not a column of the header")
        if len(cells) < len(devices):
            raise ValueError(
                f"{where}: row {name} has {len(cells)} cells, the header names "
                f"{len(devices)} devices"
            )
        for device, cell in zip(devices, cells, strict=True):
            if not _CELL.fullmatch(cell):
                raise ValueError(
                    f"{where}: {cell!r} in column {device} is not a path label "
                    "(NV#, PIX, PXB, PHB, NODE, SYS, or X for the device itself)"
                )
            if (cell == "X") != (device == name):
                raise ValueError(
                    f"{where}: row {name} has {cell!r} in column {device}; X "
                    "belongs in a device's own column and nowhere else"
                )
        if _GPU.fullmatch(name) and len(rest) != len(extra):
            raise ValueError(
                f"{where}: row {name} has {len(rest)} affinity values, the "
                f"header names {len(extra)} ({', '.join(extra) or 'none'})"
            )
        rows[name] = (cells, rest)
    missing = [gpu for gpu in gpus if gpu not in rows]
    if missing:
        raise ValueError(f"no row for {', '.join(missing)} below the header (line {start + 1})")
    at = [devices.index(gpu) for gpu in gpus]

    def column(name: str) -> tuple[str | None, ...]:
        if name not in extra:
            return (None,) * len(gpus)
        k = extra.index(name)
        return tuple(None if rows[g][1][k] == "N/A" else rows[g][1][k] for g in gpus)

    return TopoMatrix(
        tuple(gpus),
        tuple(tuple(rows[g][0][a] for a in at) for g in gpus),
        column("CPU Affinity"),
        column("NUMA Affinity"),
        column("GPU NUMA ID"),
        extra,
        tuple(d for d in devices if d not in gpus),
    )
