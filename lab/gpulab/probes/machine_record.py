"""Record a machine for replay without a GPU: ``python -m gpulab.probes.nvml OUT.json``.

`record` runs the NVML probes and a short telemetry sampling through a
`gpulab.probes.nvml.Recorder` and writes the recording, with the probes'
results beside it for comparison ("results"); then the GPU topology probe,
whose result goes under "topology", with the text of `nvidia-smi topo -m` from
the same machine under "nvidia_smi_topo" (null where nvidia-smi is missing) to
check it against. It uses both `gpulab.probes.nvml` and
`gpulab.probes.topology`, which reads NVML through the first, so it is a module
of its own above the two.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpulab.probes.nvml import Recorder

__all__ = ["main", "record"]


def record(seconds: float = 0.5, inner: Any = None) -> dict[str, Any]:
    """Run inventory(), sample(), a short telemetry sampling and gpu_topology() through a
    Recorder; with the real pynvml, also keep `nvidia-smi topo -m`'s text."""
    from gpulab.probes.nvml import Sampler, inventory, sample
    from gpulab.probes.topology import gpu_topology

    recorder = Recorder(inner)
    results = [inventory(recorder), sample(recorder)]
    with Sampler(backend=recorder) as sampler:
        time.sleep(seconds)
    topology = gpu_topology(recorder)
    return recorder.recording(
        results[0].device or "no NVIDIA GPU",
        results=[r.to_dict() for r in results],
        telemetry=sampler.telemetry.to_dict(),
        topology=topology.to_dict(),
        nvidia_smi_topo=None if inner is not None else _nvidia_smi_topo(),
    )


def _nvidia_smi_topo() -> str | None:
    """What `nvidia-smi topo -m` prints here, or None without nvidia-smi or on failure."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        done = subprocess.run(
            [smi, "topo", "-m"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m gpulab.probes.nvml OUT.json``: record here (`record`) and write OUT.json."""
    parser = argparse.ArgumentParser(
        prog="python -m gpulab.probes.nvml",
        description="Record NVML's answers to gpulab's NVML probes, for replay without a GPU.",
    )
    parser.add_argument("out", type=Path, help="the JSON file to write")
    parser.add_argument(
        "--seconds", type=float, default=0.5, help="how long to sample telemetry (default 0.5)"
    )
    options = parser.parse_args(argv)
    data = record(options.seconds)
    options.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    statuses = ", ".join(
        f"{r['probe']} {r['status']}" for r in [*data["results"], data["topology"]]
    )
    print(
        f"wrote {len(data['calls'])} NVML calls from {data['machine']} to {options.out} "
        f"({statuses})"
    )
    return 0
