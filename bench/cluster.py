"""`gpulab grade` on this machine against the same class through a local Dask cluster: timed.

The class is bench/grading.py's (`make_class`, `write_gpulab`): --learners learners
(default 24) times four CPU exercises, right, wrong, broken and adversarial notebooks
drawn with random.Random(--seed). It is graded

- locally: ``python -m gpulab grade SUBMISSIONS --out OUT --workers N`` (N: --slots);
- through a Dask cluster on this machine: a ``dask scheduler`` on 127.0.0.1 and one
  ``gpulab worker tcp://127.0.0.1:PORT --gpus none --cpu-slots N``, then the same
  command with ``--cluster tcp://127.0.0.1:PORT``;
- for throughput, through clusters of other shapes: one worker with one CPU slot, and N
  workers with one slot each (each shape a fresh scheduler and fresh workers, started
  before the clock starts).

Every process gets GPULAB_CHECK_SEED=--seed, so the hidden checks draw the same
values everywhere. Printed: each run's wall time and throughput (notebooks/s), the
ratio cluster / local for N slots (target <= 1.2, PASS or FAIL), and whether each
cluster run's grades.csv is the local one byte for byte.

Then a projection on paper for 100 GPU nodes of 4 GPUs and one coordinator (the
`gpulab grade` process): what a job costs the coordinator (its CPU time per job in
cluster mode: the class against a class of one learner, so its start-up cancels out),
what a task costs the scheduler (its CPU time per task, and one task's round trip, from
no-op tasks sent to the same worker), hence the most jobs/s one coordinator sustains,
against the jobs/s 400 GPUs ask for at the mean job time measured here (CPU
exercises on this machine, not GPU jobs: labelled as such); and which is the
bottleneck. A missed target is reported, not fatal: the script exits 1 when the grades
differ or a run fails.

    python bench/cluster.py [--learners 24] [--seed N] [--slots 2] [--keep DIR]

--keep DIR builds the class in DIR and leaves it there, with each run's output folder
and the logs of the graders, the schedulers and the workers. Every process the script
starts is ended by its pid when it ends, ctrl-c included, and it says if one is left.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import grading
from gpulab.errors import GpulabError
from gpulab.grading import sandbox
from gpulab.grading.classrun.cluster.node import CPU_SLOT
from gpulab.grading.classrun.outdir import _tagged

TARGET = 1.2  # cluster wall / local wall, the same slots
NODES, GPUS_PER_NODE = 100, 4  # the projection's cluster
ROUND_TRIPS, BURST = 200, 1000  # no-op tasks: one at a time, then all at once
MARK = "GPULAB_BENCH_CLUSTER"  # in the environment of every process this script starts


@dataclass
class Timed:
    """One `gpulab grade` run."""

    how: str
    slots: int
    seconds: float
    cpu: float  # user + system CPU seconds of the grade process and its
    out: Path  # children (locally the grading itself; on a cluster, none)


@dataclass
class Trips:
    """No-op tasks through the scheduler to a gpulab worker's CPU slots."""

    round_trip: float  # one task at a time: submit to result, seconds
    burst: float  # BURST tasks at once: wall seconds per task
    scheduler_cpu: float  # the scheduler process's CPU seconds per task in the burst


@dataclass
class Processes:
    """What this script starts: each in a session of its own, ended by its pid."""

    folder: Path
    env: dict[str, str]
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: int = 0  # logs written: each process's is numbered in order

    def start(
        self, name: str, argv: list[str], extra: dict[str, str] | None = None
    ) -> tuple[subprocess.Popen[bytes], Path]:
        self.logs += 1
        log = self.folder / f"{self.logs:02d}-{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**self.env, **(extra or {})},
                start_new_session=True,
            )
        self.started.append(process)
        return process, log

    def scheduler(self) -> tuple[str, int]:
        """A `dask scheduler` on 127.0.0.1: its address and pid."""
        where = self.folder / f"scheduler-{uuid.uuid4().hex[:8]}.json"
        process, log = self.start(
            "scheduler",
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--dashboard-address",
                "127.0.0.1:0",
                "--scheduler-file",
                str(where),
            ],
            {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "2"},
        )
        address: list[str] = []

        def ready() -> bool:
            with contextlib.suppress(OSError, ValueError, KeyError):
                address.append(str(json.loads(where.read_text())["address"]))
            return bool(address)

        _until(ready, 60, process, log, "the scheduler")
        return address[0], process.pid

    def worker(self, address: str, slots: int, unsafe: bool) -> None:
        """`gpulab worker ADDRESS --gpus none --cpu-slots SLOTS`, once it serves."""
        process, log = self.start(
            "worker",
            [
                sys.executable,
                "-m",
                "gpulab",
                "worker",
                address,
                "--gpus",
                "none",
                "--cpu-slots",
                str(slots),
                *(["--unsafe"] if unsafe else []),
            ],
        )
        _until(
            lambda: "gpulab worker: serving" in log.read_text(errors="replace"),
            120,
            process,
            log,
            "gpulab worker",
        )

    def stop(self) -> None:
        """SIGINT to a grader that runs, as ctrl-c, and then SIGTERM to the workers and the
        scheduler (the grader cancels its jobs through them); SIGKILL to what is left of
        each one's session after 15 s."""
        graders = [p for p in self.started if isinstance(p.args, list) and "grade" in p.args]
        for group, sig in (
            (graders, signal.SIGINT),
            ([p for p in self.started if p not in graders], signal.SIGTERM),
        ):
            for process in group:
                if process.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        process.send_signal(sig)
            deadline = time.monotonic() + 15
            for process in group:
                try:
                    process.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        for process in self.started:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # what it left in its session
        self.started.clear()

    def grade(self, how: str, slots: int, submissions: Path, out: Path, *args: str) -> Timed:
        """`python -m gpulab grade SUBMISSIONS --out OUT ARGS`, timed to its end."""
        command = [
            sys.executable,
            "-m",
            "gpulab",
            "grade",
            str(submissions),
            "--out",
            str(out),
            *args,
        ]
        start = time.perf_counter()
        process, log = self.start("grade", command)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            said = log.read_text(errors="replace").strip().splitlines()
            raise grading.BenchError(
                f"{how}: gpulab grade exited {process.returncode}:\n    " + "\n    ".join(said[-8:])
            )
        return Timed(how, slots, seconds, usage.ru_utime + usage.ru_stime, out)


def _until(
    done: Callable[[], bool], seconds: float, process: subprocess.Popen[bytes], log: Path, what: str
) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        if process.poll() is not None:
            raise grading.BenchError(
                f"{what} ended (exit {process.returncode}):\n    "
                + "\n    ".join(log.read_text(errors="replace").splitlines()[-8:])
            )
        if time.monotonic() > deadline:
            raise grading.BenchError(f"{what} was not ready in {seconds:g} s (its log: {log})")
        time.sleep(0.1)


# -- the scheduler's cost per task --------------------------------------------------------


def _noop(n: int) -> int:
    return n


def _cpu_seconds(pid: int) -> float:
    """A live process's user + system CPU seconds, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def round_trips(address: str, scheduler_pid: int) -> Trips:
    """No-op tasks on the CPU slots, as the grader sends its jobs: one at a time, then a
    burst; the scheduler's CPU time for the burst."""
    from distributed import Client

    resources = {CPU_SLOT: 1}
    with Client(address, timeout=30, set_as_default=False) as client:
        for n in range(20):  # warm: connections, the function pickled
            client.submit(_noop, n, resources=resources, pure=False).result()
        start = time.perf_counter()
        for n in range(ROUND_TRIPS):
            client.submit(_noop, n, resources=resources, pure=False).result()
        trip = (time.perf_counter() - start) / ROUND_TRIPS
        cpu = _cpu_seconds(scheduler_pid)
        start = time.perf_counter()
        futures = client.map(_noop, range(BURST), resources=resources, pure=False)
        client.gather(futures)
        burst = (time.perf_counter() - start) / BURST
        scheduler = (_cpu_seconds(scheduler_pid) - cpu) / BURST
        client.cancel(futures)
    return Trips(trip, burst, scheduler)


# -- what the runs left ------------------------------------------------------------------


def _csv(out: Path) -> bytes:
    try:
        return (out / "grades.csv").read_bytes()
    except OSError as exc:
        raise grading.BenchError(
            f"gpulab grade wrote no {out / 'grades.csv'}: {exc.strerror}"
        ) from None


def _gradebook(out: Path, query: str) -> list[tuple[object, ...]]:
    try:
        with contextlib.closing(
            sqlite3.connect(f"file:{out / 'gradebook.sqlite'}?mode=ro", uri=True)
        ) as db:
            return db.execute(query).fetchall()
    except sqlite3.Error as exc:
        raise grading.BenchError(f"{out / 'gradebook.sqlite'}: {exc}") from None


def leftovers(mark: str, outs: list[Path]) -> list[str]:
    """Processes still running that this script started (its mark in their environment) or
    that ran a job of one of its runs (the run's tag: `gpulab.grading.classrun.outdir`)."""
    tags = []
    for out in outs:
        with contextlib.suppress(grading.BenchError):
            tags += [str(row[0]) for row in _gradebook(out, "SELECT tag FROM runs") if row[0]]
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            command = (
                (entry / "cmdline")
                .read_bytes()
                .replace(b"\0", b" ")
                .decode(errors="replace")
                .strip()
            )
        except OSError:
            continue
        if f"{MARK}={mark}".encode() in environ.split(b"\0") or any(
            _tagged(environ, tag) for tag in tags
        ):
            found.append(f"{entry.name} {command[:100]}")
    return found


# -- the report --------------------------------------------------------------------------


def _table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            "  "
            + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def report(
    notebooks: int,
    local: Timed,
    runs: list[Timed],
    same: dict[str, bool],
    reference: Timed,
    reference_jobs: int,
    trips: Trips,
    durations: list[float],
) -> None:
    main = runs[0]
    print("\ntime to grade the class (wall clock)")
    rows: list[tuple[str, ...]] = [
        ("run", "slots", "total", "notebooks/s", "grader CPU", "grades.csv")
    ]
    for run in [local, *runs]:
        rows.append(
            (
                run.how,
                str(run.slots),
                f"{run.seconds:.1f} s",
                f"{notebooks / run.seconds:.2f}",
                f"{run.cpu:.1f} s",
                "-"
                if run is local
                else "identical to local"
                if same[run.how]
                else "DIFFERS from local",
            )
        )
    _table(rows)
    print(
        "  grader CPU: user + system seconds of the gpulab grade process and its children "
        "(locally: the grading too; on the cluster: the coordinator alone)"
    )
    ratio = main.seconds / max(local.seconds, 1e-9)
    print(
        f"  ratio cluster / local ({main.slots} slots): {ratio:.2f} (target <= {TARGET:g}): "
        f"{'PASS' if ratio <= TARGET else 'FAIL'}"
    )
    print(
        f"  wall time the cluster adds per job: ({main.seconds:.1f} - {local.seconds:.1f}) s "
        f"/ {notebooks} = {_ms((main.seconds - local.seconds) / notebooks)}"
    )

    print(f"\nprojection on paper: {NODES} GPU nodes x {GPUS_PER_NODE} GPUs, one coordinator")
    jobs = notebooks - reference_jobs
    cpus = [run.cpu for run in runs]
    coordinator = max(0.0, (statistics.fmean(cpus) - reference.cpu) / jobs)
    per_job = coordinator + trips.scheduler_cpu
    most = 1 / per_job if per_job > 0 else float("inf")
    mean = statistics.fmean(durations)
    gpus = NODES * GPUS_PER_NODE
    demand = gpus / mean
    rows = [("measured here", "")]
    spread = f" [{min(cpus):.2f}-{max(cpus):.2f}]" if len(cpus) > 1 else ""
    rows.append(
        (
            "coordinator CPU per job",
            f"{_ms(coordinator)}  (gpulab grade --cluster: "
            f"{statistics.fmean(cpus):.2f} s{spread} for {notebooks} jobs, the mean of "
            f"{len(cpus)} run{'s' * (len(cpus) > 1)}, - {reference.cpu:.2f} s for the "
            f"{reference_jobs} of one learner, / {jobs}; its polling while the class "
            f"takes longer, {statistics.fmean(r.seconds for r in runs):.0f} s against "
            f"{reference.seconds:.0f} s, counted in: at most)",
        )
    )
    rows.append(
        (
            "scheduler CPU per task",
            f"{_ms(trips.scheduler_cpu)}  (dask scheduler "
            f"process, {BURST} no-op tasks on {CPU_SLOT} at once)",
        )
    )
    rows.append(
        (
            "task wall time in a burst",
            f"{_ms(trips.burst)}  (the same {BURST}: {1 / trips.burst:.0f} tasks/s end to end)",
        )
    )
    rows.append(
        (
            "round trip of one task",
            f"{_ms(trips.round_trip)}  (submit to result, one at a time, {ROUND_TRIPS} tasks)",
        )
    )
    rows.append(
        (
            "mean job time",
            f"{mean:.2f} s  (measured here: CPU exercises on this "
            f"machine, mean duration of the {len(durations)} jobs of the cluster run; "
            f"median {statistics.median(durations):.2f} s, longest "
            f"{max(durations):.1f} s)",
        )
    )
    _table(rows)
    print(
        f"  one coordinator sustains at most 1 / ({_ms(coordinator)} + "
        f"{_ms(trips.scheduler_cpu)}) = {most:.0f} jobs/s"
    )
    print(
        "    (on Slurm the scheduler runs in the coordinator's process: their CPU adds up "
        "on one core; the round trip does not limit it, two jobs per slot are in flight)"
    )
    print(f"  {gpus} GPUs, one job each at a time of {mean:.2f} s: {demand:.0f} jobs/s")
    if most < demand:
        print(
            f"  bottleneck: the coordinator ({most:.0f} < {demand:.0f} jobs/s): the GPUs "
            f"would be busy {100 * most / demand:.0f} % of the time; one coordinator keeps "
            f"{gpus} GPUs busy only with jobs of {gpus / most:.1f} s or longer"
        )
    else:
        print(
            f"  bottleneck: the GPUs ({demand:.0f} <= {most:.0f} jobs/s): the coordinator "
            f"would be {100 * demand / most:.0f} % busy; it could feed jobs as short as "
            f"{gpus / most:.2f} s"
        )


# -- the run -----------------------------------------------------------------------------


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _folder(keep: str | None) -> tuple[Path, tempfile.TemporaryDirectory[str] | None]:
    if keep is None:
        temporary = tempfile.TemporaryDirectory(prefix="gpulab-bench-cluster-")
        return Path(temporary.name), temporary
    folder = Path(keep).resolve()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise grading.BenchError(
            f"--keep {keep}: the folder is not empty; give a new one "
            "(grades left by an earlier run would be reused, and the "
            "timing spoilt)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    return folder, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=24, help="class size (default 24)")
    parser.add_argument(
        "--seed", type=int, default=grading.SEED, help=f"class seed (default {grading.SEED})"
    )
    parser.add_argument(
        "--slots",
        type=int,
        default=2,
        help="CPU slots: local --workers and the cluster's (default 2)",
    )
    parser.add_argument("--keep", metavar="DIR", help="build the class here and keep it")
    args = parser.parse_args(argv)
    if args.learners < 2 or args.slots < 1:
        parser.error("--learners must be at least 2 and --slots at least 1")
    signal.signal(signal.SIGTERM, _interrupt)  # as ctrl-c: end what was started
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # started in the background
        signal.signal(signal.SIGINT, signal.default_int_handler)
    temporary = None
    mark = uuid.uuid4().hex
    processes = None
    outs: list[Path] = []
    status = 0
    try:
        work, temporary = _folder(args.keep)
        logs = work / "logs"
        logs.mkdir()
        processes = Processes(logs, {**os.environ, MARK: mark, "GPULAB_CHECK_SEED": str(args.seed)})
        exercises = grading.load_exercises()
        subs = grading.make_class(exercises, args.learners, args.seed)
        kinds = Counter(s.kind for s in subs)
        print(
            f"class: {args.learners} learners x {len(exercises)} exercises = {len(subs)} "
            f"notebooks (seed {args.seed}): "
            + ", ".join(
                f"{kind} {kinds[kind]}"
                for kind in [*dict(grading.KINDS), *(a.name for a in grading.ATTACKS)]
                if kinds[kind]
            )
            + f"\nclass folder: {work}"
        )
        cores = os.cpu_count() or 1
        if args.slots > cores:
            print(f"  warning: --slots {args.slots} on {cores} CPU cores: the slots share them")
        grading.write_gpulab(subs, exercises, work / "submissions")
        one = grading.make_class(exercises, 1, args.seed)
        grading.write_gpulab(one, exercises, work / "one-learner")
        guards = sandbox.available()
        unsafe = ["--unsafe"] if not guards.bubblewrap else []
        if unsafe:
            print(f"  no bubblewrap ({guards.bubblewrap_problem}): every run with --unsafe")

        print(f"grading locally (--workers {args.slots}) ...", flush=True)
        local = processes.grade(
            f"local: gpulab grade --workers {args.slots}",
            args.slots,
            work / "submissions",
            work / "out-local",
            "--workers",
            str(args.slots),
            *unsafe,
        )
        outs.append(local.out)
        shapes = [(1, args.slots)] + ([(1, 1), (args.slots, 1)] if args.slots > 1 else [])
        runs: list[Timed] = []
        trips = reference = None
        for workers, slots in shapes:
            how = (
                f"cluster: {workers} worker{'s' * (workers > 1)} x {slots} "
                f"CPU slot{'s' * (slots > 1)}"
            )
            print(f"grading on a local Dask cluster, {how.partition(': ')[2]} ...", flush=True)
            address, scheduler_pid = processes.scheduler()
            for _ in range(workers):
                processes.worker(address, slots, bool(unsafe))
            name = f"out-cluster-{workers}x{slots}"
            run = processes.grade(
                how,
                workers * slots,
                work / "submissions",
                work / name,
                "--cluster",
                address,
                *unsafe,
            )
            outs.append(run.out)
            runs.append(run)
            if trips is None:  # the first shape: the comparison's
                print(
                    "  ... and a class of one learner, and no-op tasks, on the same cluster",
                    flush=True,
                )
                reference = processes.grade(
                    "one learner",
                    workers * slots,
                    work / "one-learner",
                    work / "out-one-learner",
                    "--cluster",
                    address,
                    *unsafe,
                )
                outs.append(reference.out)
                trips = round_trips(address, scheduler_pid)
            processes.stop()
        assert trips is not None and reference is not None
        expected = _csv(local.out)
        same = {run.how: _csv(run.out) == expected for run in runs}
        durations = [
            float(str(row[0])) for row in _gradebook(runs[0].out, "SELECT duration_s FROM grades")
        ]
        report(len(subs), local, runs, same, reference, len(one), trips, durations)
        if not all(same.values()):
            print(
                "grades differ: "
                + ", ".join(h for h, s in same.items() if not s)
                + f" (compare their grades.csv with {local.out / 'grades.csv'})"
            )
            status = 1
    except KeyboardInterrupt:
        print("\nbench/cluster.py: interrupted", file=sys.stderr)
        status = 130
    except (grading.BenchError, GpulabError, OSError) as exc:
        print(f"bench/cluster.py: {exc}", file=sys.stderr)
        status = 1
    finally:
        if processes is not None:
            processes.stop()
            left = leftovers(mark, outs)
            if left:
                print(
                    "bench/cluster.py: processes left running:\n  " + "\n  ".join(left),
                    file=sys.stderr,
                )
                status = status or 1
        if temporary is not None:
            temporary.cleanup()
    return status


if __name__ == "__main__":
    sys.exit(main())
