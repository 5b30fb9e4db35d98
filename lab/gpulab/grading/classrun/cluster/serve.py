"""`gpulab worker`'s body: check this node, start its Dask workers, serve until interrupted.

`serve` tries the guards (`sandbox.available`) and refuses to serve without
bubblewrap unless ``--unsafe``; checks that each GPU can be read by NVML
(unless ``--fake-gpus``); then holds, in one event loop, a Dask worker per GPU
(one thread, resource ``GPU=1``) and one for the CPU slots (N threads,
``CPU_SLOT=N``), each a `gpulab.grading.classrun.cluster.node.Station`, until
interrupted or retired. It needs no course: each grader sends its own with
every job. What the Dask workers do for the grader is in
`gpulab.grading.classrun.cluster.node`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from gpulab.grading import sandbox
from gpulab.grading.checks.runner import remove_stale_folders
from gpulab.grading.classrun.cluster.node import (
    _STATIONS,
    CPU_SLOT,
    GPU,
    Node,
    Station,
    WorkerError,
)
from gpulab.grading.classrun.gpupool import GpuPool, GpuPoolError, visible_gpus
from gpulab.grading.gradebook.verdict import failure

__all__ = ["serve"]

PREFIX = "gpulab-cluster-"  # this worker's folder: gpulab-cluster-<pid>-...


def serve(
    address: str,
    *,
    gpus: list[str] | None,
    cpu_slots: int,
    unsafe: bool = False,
    fake_gpus: bool = False,
    name: str = "",
    death_timeout: float = 60.0,
    local_directory: str | None = None,
    recovery_s: float = 15.0,
) -> int:
    """`gpulab worker`'s body: check this node, then serve until interrupted."""
    from gpulab.grading.classrun.cluster.client import need_distributed

    need_distributed()
    guards = sandbox.available()
    if not guards.bubblewrap and not unsafe:
        raise WorkerError(
            sandbox.refusal(guards, "serve")
            + " (a grader that has bubblewrap refuses a worker without it)"
        )
    if gpus is None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")  # a batch system's choice
        gpus = [g for g in visible.split(",") if g] if visible else visible_gpus()
    if fake_gpus and not gpus:
        raise WorkerError("--fake-gpus needs --gpus: the fake GPUs' indices")
    if not gpus and cpu_slots < 1:
        raise WorkerError("nothing to serve: no GPU and no CPU slot (--cpu-slots N)")
    try:
        pools = {g: None if fake_gpus else GpuPool([g], recovery_s) for g in gpus}
    except GpuPoolError as exc:
        raise WorkerError(
            f"{exc} (--fake-gpus serves them without NVML, for trying a "
            "cluster on a machine without GPUs)"
        ) from None
    remove_stale_folders()
    sandbox.remove_stale_cgroups(guards.cgroup)
    _remove_stale_roots(Path(local_directory or tempfile.gettempdir()))
    node = Node(
        guards, Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=local_directory))
    )
    prefix = name or f"{node.host}-{os.getpid()}"
    stations = [Station(node, f"{prefix}-gpu{g}", g, 1, pools[g]) for g in gpus]
    if cpu_slots > 0:
        stations.append(Station(node, f"{prefix}-cpu", "", cpu_slots))
    _STATIONS.update((s.name, s) for s in stations)
    try:
        return asyncio.run(_serve(address, stations, death_timeout))
    finally:
        for station in stations:
            _STATIONS.pop(station.name, None)
        node.close()


async def _serve(address: str, stations: list[Station], death_timeout: float) -> int:
    import logging

    from distributed import Worker

    logging.getLogger("distributed").setLevel(logging.WARNING)
    workers = [
        Worker(
            address,
            name=s.name,
            nthreads=s.slots,
            memory_limit=0,
            resources={GPU: 1} if s.gpu else {CPU_SLOT: s.slots},
            death_timeout=death_timeout,
            local_directory=str(s.node.root / "dask"),
        )
        for s in stations
    ]
    try:
        await asyncio.gather(*workers)
    except Exception as exc:
        await asyncio.gather(*(w.close() for w in workers), return_exceptions=True)
        raise WorkerError(f"cannot serve the Dask scheduler at {address}: {failure(exc)}") from None
    node = stations[0].node
    lanes = [
        f"GPU {s.gpu}" + ("" if s.pool else " (fake: no NVML check)") for s in stations if s.gpu
    ]
    slots = sum(s.slots for s in stations if not s.gpu)
    print(
        f"gpulab worker: serving {address} from {node.host} (pid {os.getpid()}): "
        f"{', '.join(lanes) or 'no GPU'}; CPU slots: {slots}; the courses graders send "
        f"unpacked under {node.shelf.folder}; "
        f"{'bubblewrap' if node.guards.bubblewrap else 'NO bubblewrap (--unsafe)'}",
        file=sys.stderr,
        flush=True,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    stopping = asyncio.ensure_future(stop.wait())
    ended = asyncio.ensure_future(asyncio.gather(*(w.finished() for w in workers)))
    await asyncio.wait([stopping, ended], return_when=asyncio.FIRST_COMPLETED)
    if stop.is_set():
        print("gpulab worker: stopping", file=sys.stderr, flush=True)
        await asyncio.gather(
            *(w.close(reason="gpulab worker stopped") for w in workers), return_exceptions=True
        )
    else:
        print(
            "gpulab worker: every Dask worker of this process has closed (retired by a "
            "grader, or the scheduler went away)",
            file=sys.stderr,
            flush=True,
        )
    for task in (stopping, ended):
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
    return 0


def _remove_stale_roots(base: Path) -> None:
    """Remove the folders of workers that were killed (their pid is gone)."""
    for folder in base.glob(f"{PREFIX}*-*"):
        pid = folder.name.removeprefix(PREFIX).partition("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)
