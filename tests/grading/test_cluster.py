"""`gpulab grade --cluster` and `gpulab worker` on a real Dask scheduler and real workers.

Everything runs on loopback: a `dask scheduler` process and `gpulab worker`
processes (real TCP, real processes, bubblewrap), started here and ended by
their pid whatever happens. This machine has no GPU, so GPU workers serve
fake GPUs (``--fake-gpus``: indices as labels, no NVML check): a job sent to
one runs without a GPU device, which is what "one job per GPU" needs to be
shown. The class is built from the solutions and released notebooks of
env-report and roofline, and a hostile answer whose messages no encoder takes.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from adversarial_class import SOLUTION as ROOFLINE
from adversarial_class import _answer, _write
from gpulab.course.catalog import Course
from gpulab.grading import sandbox
from gpulab.grading.classrun.cluster.client import run_on_cluster
from gpulab.grading.classrun.cluster.slurm import slurm_cluster
from gpulab.grading.classrun.fingerprint import checks_hash
from gpulab.grading.classrun.grade import grade_class
from gpulab.grading.classrun.grade_model import GradeOptions, GradeSummary, Target
from gpulab.grading.classrun.run import Done, GpuEvent, Job
from gpulab.grading.gradebook import Gradebook
from gpulab.grading.gradebook.verdict import ExerciseGrade
from run_attacks import _raises_in_a_check, graded_count, sha, tagged_processes

ROOT = Path(__file__).resolve().parents[2]
ENV_REPORT = ROOT / "solutions" / "landscape" / "env-report.ipynb"
WRONG_ENV_REPORT = (
    ROOT / "tests" / "fixtures" / "wrong_answers" / "env-report" / "wrong1-split-every-equals.ipynb"
)
STUBS = {
    "env-report": ROOT / "exercises" / "landscape" / "env-report.ipynb",
    "roofline": ROOT / "exercises" / "memory-hierarchy" / "roofline.ipynb",
}
TIMEOUT = 30.0
SEED = "20260807"  # the hidden checks' draws (GPULAB_CHECK_SEED): the same here and there

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("distributed") is None,
        reason="gpulab[cluster] is not installed (distributed, dask-jobqueue): "
        "make test installs it",
    ),
    pytest.mark.skipif(
        not sandbox.available().bubblewrap,
        reason="bubblewrap cannot make a sandbox on this machine: "
        + sandbox.available().bubblewrap_problem,
    ),
]


class Processes:
    """The processes a test starts, each ended by its pid at the end, whatever happened."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.started: list[subprocess.Popen[bytes]] = []

    def start(
        self, name: str, *argv: str, env: dict[str, str] | None = None
    ) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.folder / f"{name}-{uuid.uuid4().hex[:6]}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, *argv], stdout=out, stderr=out, env={**os.environ, **(env or {})}
            )
        self.started.append(process)
        return process, log

    def scheduler(self) -> str:
        """A scheduler on 127.0.0.1; its address."""
        where = self.folder / f"scheduler-{uuid.uuid4().hex[:6]}.json"
        process, log = self.start(
            "scheduler",
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
            env={"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "2"},
        )
        _until(lambda: where.is_file() and where.stat().st_size > 0, 30, process, log)
        return str(json.loads(where.read_text())["address"])

    def worker(
        self, address: str, *args: str, env: dict[str, str] | None = None, ready: bool = True
    ) -> tuple[subprocess.Popen[bytes], Path]:
        """`gpulab worker ADDRESS ARGS`; with `ready`, once it serves."""
        process, log = self.start("worker", "-m", "gpulab", "worker", address, *args, env=env)
        if ready:
            _until(lambda: "gpulab worker: serving" in log.read_text(), 60, process, log)
        return process, log

    def end(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in self.started:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _until(done: object, seconds: float, process: subprocess.Popen[bytes], log: Path) -> None:
    assert callable(done)
    deadline = time.monotonic() + seconds
    while not done():
        assert process.poll() is None, f"it ended:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"not ready in {seconds} s:\n{log.read_text()}"
        time.sleep(0.1)


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    started = Processes(tmp_path)
    try:
        yield started
    finally:
        started.end()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A scheduler with one node: two fake GPUs and two CPU slots. Its address."""
    started = Processes(tmp_path_factory.mktemp("cluster"))
    try:
        address = started.scheduler()
        started.worker(
            address,
            "--gpus",
            "0,1",
            "--fake-gpus",
            "--cpu-slots",
            "2",
            env={"GPULAB_CHECK_SEED": SEED},
        )
        yield address
    finally:
        started.end()


def _target(address: str) -> Target:
    return Target(address, wait_s=30.0)


def _class(folder: Path) -> None:
    """good: both solved; stub: both as released; wrong: a wrong env-report, and a roofline
    whose messages hold text no encoder takes; late: roofline only."""
    for exercise, source in (("env-report", ENV_REPORT), ("roofline", ROOFLINE)):
        _write(nbformat.read(source, as_version=4), folder / "good" / f"{exercise}.ipynb")
        _write(nbformat.read(STUBS[exercise], as_version=4), folder / "stub" / f"{exercise}.ipynb")
    _write(nbformat.read(WRONG_ENV_REPORT, as_version=4), folder / "wrong" / "env-report.ipynb")
    _raises_in_a_check(folder / "wrong" / "roofline.ipynb")
    _write(nbformat.read(ROOFLINE, as_version=4), folder / "late" / "roofline.ipynb")


def _grades(summary: GradeSummary) -> dict[tuple[str, str], ExerciseGrade]:
    return {
        (learner.slug, grade.exercise): grade
        for learner in summary.learners
        for grade in learner.exercises
    }


def _seen(grade: ExerciseGrade) -> tuple[object, ...]:
    return (
        grade.kind,
        grade.earned,
        grade.possible,
        grade.notebook_hash,
        grade.guards,
        tuple((c.check, c.outcome, c.earned, c.hidden) for c in grade.checks),
    )


def test_a_cluster_grades_a_class_as_this_machine_does(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPULAB_CHECK_SEED", SEED)
    folder = tmp_path / "class"
    _class(folder)
    here = grade_class(GradeOptions(folder, tmp_path / "here", workers=2, timeout=TIMEOUT))
    there = grade_class(
        GradeOptions(
            folder, tmp_path / "there", workers=2, timeout=TIMEOUT, cluster=_target(cluster)
        )
    )
    local, remote = _grades(here), _grades(there)
    assert len(local) == 8 and set(local) == set(remote)
    assert {key: _seen(g) for key, g in remote.items()} == {
        key: _seen(g) for key, g in local.items()
    }
    kinds = {key: g.kind for key, g in remote.items()}
    assert kinds[("good", "roofline")] == kinds[("good", "env-report")] == "right"
    assert kinds[("stub", "roofline")] == kinds[("wrong", "env-report")] == "wrong"
    assert kinds[("late", "env-report")] == "missing"
    hostile = remote[("wrong", "roofline")]
    message = next(c.message for c in hostile.checks if c.check == "test_arithmetic_intensity")
    assert "\ufffd lone \ufffd" in message  # made storable, as locally
    assert there.graded == here.graded == 7 and not there.problems
    assert any("graded on the Dask cluster at" in note for note in there.notes)
    with Gradebook(tmp_path / "there" / "gradebook.sqlite") as book:
        runs = book.db.execute("SELECT status FROM runs").fetchall()
    assert runs == [("finished",)]


def test_no_two_jobs_overlap_on_one_gpu(cluster: str, tmp_path: Path) -> None:
    """Jobs of a CPU exercise sent as GPU jobs: each fake GPU runs one at a time."""
    from gpulab.course import load_course

    course = load_course()
    jobs = _gpu_jobs(course, tmp_path, 6)
    timeline: list[tuple[str, str, float, float]] = []
    policy = sandbox.Policy(tag=uuid.uuid4().hex[:12])
    results = list(
        run_on_cluster(
            _target(cluster),
            jobs,
            course=course,
            policy=policy,
            timeout=TIMEOUT,
            recovery_s=1.0,
            notes=[],
            problems=[],
            timeline=timeline,
        )
    )
    done = [r for r in results if isinstance(r, Done)]
    assert len(done) == len(results) == 6
    assert sorted(d.job.slug for d in done) == [f"l{n}" for n in range(6)]
    assert all(d.grade.kind == "right" for d in done), [d.grade.message for d in done]
    gpus = {gpu for gpu, *_ in timeline}
    assert len(timeline) == 6 and len(gpus) == 2 and all(g.endswith((":0", ":1")) for g in gpus)
    assert {d.gpu for d in done} == gpus
    for gpu in gpus:
        spans = sorted((start, end) for g, _, start, end in timeline if g == gpu)
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert end <= start, f"two jobs at once on GPU {gpu}: {spans}"


def _gpu_jobs(course: Course, folder: Path, count: int) -> list[Job]:
    """`count` learners' right env-report notebooks, sent as GPU jobs (l0, l1, ...)."""
    entry = next(e for e in course.exercises() if e.name == "env-report")
    jobs = []
    for n in range(count):
        notebook = folder / f"l{n}" / "env-report.ipynb"
        _write(nbformat.read(ENV_REPORT, as_version=4), notebook)
        jobs.append(
            Job(
                f"l{n}",
                replace(entry, gpu=True),
                notebook,
                sha(notebook),
                checks_hash(entry),
                15.0,
                (),
            )
        )
    return jobs


class _Stuck:
    """A GPU that never recovers: put in a worker's place of its NVML check (`GpuPool`)."""

    recovery_s = 1.0

    def after_job(self, gpu: str) -> str:
        return f"did not recover within {self.recovery_s:g} s after a job (test {gpu})"


def _stick(dask_worker: object) -> str:
    """Run on a worker (pickled by value): its GPU never recovers from now on."""
    from gpulab.grading.classrun.cluster.node import _STATIONS

    _STATIONS[str(dask_worker.name)].pool = _Stuck()  # type: ignore[attr-defined,assignment]
    return str(dask_worker.name)


def test_a_gpu_that_does_not_recover_retires_its_worker(
    processes: Processes, tmp_path: Path
) -> None:
    """Both GPUs stick after their first job: each is retired, with its event, and the jobs
    left run on the CPU slot, as locally when every GPU is out of rotation."""
    import cloudpickle
    from distributed import Client

    from gpulab.course import load_course

    address = processes.scheduler()
    worker, _ = processes.worker(address, "--gpus", "0,1", "--fake-gpus", "--cpu-slots", "1")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        with Client(address, set_as_default=False) as client:
            stuck = client.run(
                _stick,
                workers=[
                    a
                    for a, i in client.scheduler_info()["workers"].items()
                    if i["resources"].get("GPU")
                ],
            )
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert len(stuck) == 2
    course = load_course()
    jobs = _gpu_jobs(course, tmp_path, 4)
    timeline: list[tuple[str, str, float, float]] = []
    notes: list[str] = []
    results = list(
        run_on_cluster(
            _target(address),
            jobs,
            course=course,
            policy=sandbox.Policy(tag=uuid.uuid4().hex[:12]),
            timeout=TIMEOUT,
            recovery_s=1.0,
            notes=notes,
            problems=[],
            timeline=timeline,
        )
    )
    events = [r for r in results if isinstance(r, GpuEvent)]
    done = [r for r in results if isinstance(r, Done)]
    assert sorted(e.gpu[-2:] for e in events) == [":0", ":1"]
    assert all("did not recover within 1 s" in e.text for e in events)
    assert sorted(d.job.slug for d in done) == ["l0", "l1", "l2", "l3"]
    assert all(d.grade.kind == "right" for d in done)
    assert sorted(gpu[-2:] for gpu, *_ in timeline) == ["", "", ":0", ":1"]  # once each
    assert worker.poll() is None  # its CPU slot serves on
    with Client(address, set_as_default=False) as client:
        left = client.scheduler_info()["workers"].values()
    assert [i["resources"] for i in left] == [{"CPU_SLOT": 1}]


def test_a_worker_killed_mid_job_loses_and_duplicates_nothing(
    processes: Processes, tmp_path: Path
) -> None:
    address = processes.scheduler()
    first, _ = processes.worker(address, "--gpus", "", "--cpu-slots", "1")
    second, _ = processes.worker(address, "--gpus", "", "--cpu-slots", "1")
    folder = tmp_path / "class"
    for name in ("a", "b", "c"):
        _write(nbformat.read(ROOFLINE, as_version=4), folder / name / "roofline.ipynb")
    slow = nbformat.read(ROOFLINE, as_version=4)  # right, but slow: killed in the middle
    _answer(slow).source = "import time\ntime.sleep(2)\n\n" + _answer(slow).source
    _write(slow, folder / "slow" / "roofline.ipynb")
    killed: list[int] = []

    def kill_the_slow_ones_worker() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            worker = _grading("/slow/", {first.pid, second.pid})
            if worker:
                time.sleep(0.5)  # its learner code sleeps (2 s)
                os.kill(worker, signal.SIGKILL)
                killed.append(worker)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_slow_ones_worker)
    killer.start()
    try:
        summary = grade_class(
            GradeOptions(folder, tmp_path / "out", timeout=TIMEOUT, cluster=_target(address))
        )
    finally:
        killer.join()
    assert killed and killed[0] in (first.pid, second.pid)
    survivor = second if killed[0] == first.pid else first
    assert survivor.poll() is None
    grades = _grades(summary)
    worth = summary.maxima["roofline"]
    assert {key: (g.kind, g.earned) for key, g in grades.items()} == {
        (name, "roofline"): ("right", worth) for name in ("a", "b", "c", "slow")
    }
    assert summary.graded == 4 and not summary.problems  # each job's grade yielded once
    assert any("left the cluster" in note for note in summary.notes)
    with Gradebook(tmp_path / "out" / "gradebook.sqlite") as book:
        rows = book.db.execute(
            "SELECT learner, count(*) FROM grades GROUP BY learner ORDER BY learner"
        ).fetchall()
    assert rows == [("a", 1), ("b", 1), ("c", 1), ("slow", 1)]
    deadline = time.monotonic() + 15  # the killed worker's jobs died with it
    while tagged_processes(summary.tag) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = tagged_processes(summary.tag)
    assert not left, [_described(pid) for pid in left]


def _grading(part: str, workers: set[int]) -> int | None:
    """Which of `workers` runs the checks of a notebook whose path holds `part`, once its
    learner code runs in bubblewrap (so the kill lands in the middle of the job)."""
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not any(
            item.startswith(b"--gpulab-notebook=") and part.encode() in item for item in argv
        ) or not _sandboxed_below(int(entry.name)):
            continue
        pid = int(entry.name)
        while pid > 1:  # up to the worker that started it
            if pid in workers:
                return pid
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                break
            pid = int(
                next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:"))
            )
    return None


def _sandboxed_below(pid: int) -> bool:
    """Whether a bubblewrap process runs below `pid` (its learner code's sandbox)."""
    todo, seen = [pid], set()
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = {int(c) for c in (task / "children").read_text().split()}
            except OSError:
                continue
            for child in children - seen:
                try:
                    if Path(f"/proc/{child}/comm").read_text().strip() == "bwrap":
                        return True
                except OSError:
                    continue
            todo.extend(children - seen)
            seen |= children
    return False


def _described(pid: int) -> str:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return f"{pid}: gone"
    return f"{pid}: {command[:300]} " + " ".join(
        s for s in status if s.startswith(("PPid", "State"))
    )


def _one_learner(folder: Path) -> None:
    _write(nbformat.read(ROOFLINE, as_version=4), folder / "solo" / "roofline.ipynb")


def _refused(
    cluster: str, tmp_path: Path, worker: subprocess.Popen[bytes], log: Path, reason: str
) -> None:
    """Grading with `worker` on the cluster: it is refused for `reason`, the class graded."""
    _one_learner(tmp_path / "class")
    summary = grade_class(
        GradeOptions(
            tmp_path / "class", tmp_path / "out", timeout=TIMEOUT, cluster=_target(cluster)
        )
    )
    assert [(g.kind, g.earned) for g in _grades(summary).values()] == [
        ("right", summary.maxima["roofline"])
    ]
    refused = [p for p in summary.problems if " refused: " in p]
    assert len(refused) == 1 and reason in refused[0], summary.problems
    worker.wait(timeout=20)  # its only Dask worker was retired
    assert reason in log.read_text()  # and it said why, where it runs


def test_a_worker_with_other_checks_is_refused_and_says_why(
    cluster: str, tmp_path: Path, processes: Processes
) -> None:
    course = tmp_path / "course"
    for part in ("lessons", "exercises", "solutions"):
        shutil.copytree(ROOT / part, course / part)
    hidden = course / "solutions" / "memory-hierarchy" / "test_roofline_hidden.py"
    hidden.write_text(hidden.read_text() + "\n# one line more\n")
    worker, log = processes.worker(
        cluster, "--gpus", "", "--cpu-slots", "1", "--course", str(course)
    )
    _refused(
        cluster,
        tmp_path,
        worker,
        log,
        f"its checks of roofline differ from this grader's (its course at {course})",
    )


def test_a_worker_without_bubblewrap_is_refused(
    cluster: str, tmp_path: Path, processes: Processes
) -> None:
    empty = tmp_path / "bin"  # a PATH without bwrap: bubblewrap is not installed
    empty.mkdir()
    plain, log = processes.worker(
        cluster, "--gpus", "", "--cpu-slots", "1", env={"PATH": str(empty)}, ready=False
    )
    assert plain.wait(timeout=30) == 2
    assert "refusing to serve" in log.read_text() and "--unsafe" in log.read_text()
    worker, log = processes.worker(
        cluster, "--gpus", "", "--cpu-slots", "1", "--unsafe", env={"PATH": str(empty)}
    )
    _refused(
        cluster,
        tmp_path,
        worker,
        log,
        "this grader's jobs run in bubblewrap, which it has not: bubblewrap is not installed",
    )


def test_slurm_pilot_jobs_each_run_gpulab_worker(tmp_path: Path) -> None:
    """What dask-jobqueue would submit (no Slurm here): a pilot job per node, each running
    `gpulab worker` with the node's GPUs, CPU slots and this course, on this scheduler."""
    from gpulab.cli import _parser

    pilots = slurm_cluster(
        Target("slurm", nodes=8, gpus_per_node=4, cpu_slots=8, partition="gpu", walltime="2:00:00"),
        ROOT,
    )
    try:
        script, address = pilots.job_script(), pilots.scheduler_address
    finally:
        pilots.close()
    header = [line for line in script.splitlines() if line.startswith("#SBATCH")]
    assert {
        "#SBATCH -p gpu",
        "#SBATCH -t 2:00:00",
        "#SBATCH --gres=gpu:4",
        "#SBATCH --cpus-per-task=12",
        "#SBATCH -J gpulab-worker",
    } <= set(header)
    command = shlex.split(script.strip().splitlines()[-1])
    assert command[:5] == [sys.executable, "-m", "gpulab", "worker", address]
    args = _parser().parse_args(command[3:])  # gpulab's own parser takes it
    assert (args.cpu_slots, args.course, args.gpus) == (8, str(ROOT), None)
    # the GPUs: those Slurm gives the job, in CUDA_VISIBLE_DEVICES (gpulab worker's default);
    # on nodes asked for no GPU, none, whatever the node has
    pilots = slurm_cluster(Target("slurm", cpu_slots=4), ROOT)
    try:
        script = pilots.job_script()
    finally:
        pilots.close()
    assert "--gres" not in script and "--cpu-slots 4 " in script
    assert _parser().parse_args(shlex.split(script.strip().splitlines()[-1])[3:]).gpus == "none"
    bad = subprocess.run(
        [sys.executable, "-m", "gpulab", "grade", str(tmp_path), "--nodes", "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "go with --cluster slurm" in bad.stderr


def _contents(out: Path) -> dict[str, list[tuple[object, ...]]]:
    """The gradebook's grades and checks, the run's own folder written as OUT."""
    with Gradebook(out / "gradebook.sqlite") as book:
        dump = book.dump()
    return {
        table: [
            tuple(str(v).replace(str(out), "OUT") if isinstance(v, str) else v for v in row)
            for row in dump[table]
        ]
        for table in ("grades", "checks")
    }


@pytest.mark.parametrize("kill_at", [1, 3])
def test_the_coordinator_killed_mid_run_resumes(cluster: str, tmp_path: Path, kill_at: int) -> None:
    """`gpulab grade --cluster` killed (SIGKILL) once the gradebook holds `kill_at` grades:
    the same command again grades only what is left, and the gradebook is the one a run
    on this machine makes; the workers serve on."""
    folder = tmp_path / "class"
    for n in range(5):
        _write(nbformat.read(ROOFLINE, as_version=4), folder / f"l{n}" / "roofline.ipynb")
    _write(nbformat.read(STUBS["roofline"], as_version=4), folder / "stub" / "roofline.ipynb")
    _raises_in_a_check(folder / "hostile" / "roofline.ipynb")
    reference = tmp_path / "reference"
    grade_class(GradeOptions(folder, reference, ("roofline",), workers=2, timeout=TIMEOUT))
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "gpulab",
        "grade",
        str(folder),
        "--out",
        str(out),
        "--exercises",
        "roofline",
        "--timeout",
        str(TIMEOUT),
        "--cluster",
        cluster,
    ]
    log = tmp_path / "killed.log"
    with log.open("wb") as written:
        process = subprocess.Popen(
            command, stdout=written, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 120
        while process.poll() is None and graded_count(out) < kill_at:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.02)
        assert process.poll() is None, f"it finished first:\n{log.read_text()}"
        os.killpg(process.pid, signal.SIGKILL)  # the coordinator, as `kill -9` does
        process.wait()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    kept = graded_count(out)
    assert kill_at <= kept < 7
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "was left running by a grader that was killed: marked killed" in done.stdout
    assert _contents(out) == _contents(reference)
    with Gradebook(out / "gradebook.sqlite") as book:
        runs = book.db.execute("SELECT id, status, tag FROM runs ORDER BY id").fetchall()
        by_run = dict(
            book.db.execute("SELECT run_id, count(*) FROM grades GROUP BY run_id").fetchall()
        )
    assert [status for _, status, _ in runs] == ["killed", "finished"]
    assert by_run == {runs[0][0]: kept, runs[1][0]: 7 - kept}  # nothing graded twice
    deadline = time.monotonic() + 30  # the killed run's jobs end on the workers
    while tagged_processes(runs[0][2]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not tagged_processes(runs[0][2])


def test_what_sbatch_said_reaches_the_message_not_the_screen(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """dask-jobqueue logs a refused sbatch as a traceback through tornado's logger; the
    grader keeps sbatch's own words for its message and prints none of it."""
    import logging

    import distributed  # noqa: F401  (it sets its loggers up as it is imported)

    from gpulab.grading.classrun.cluster.slurm import SbatchErrors, lost_pilots

    error = RuntimeError(
        "Command exited with non-zero exit code.\nstderr:\nsbatch: error: "
        "invalid partition specified: nosuch\nsbatch: error: Batch job "
        "submission failed: Invalid partition name specified\n"
    )
    with SbatchErrors() as sbatch:
        try:
            raise error
        except RuntimeError:
            logging.getLogger("tornado.application").exception("Exception in callback")
    assert sbatch.said == [
        "invalid partition specified: nosuch",
        "Batch job submission failed: Invalid partition name specified",
    ]
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err

    class Pilot:  # a pilot job sbatch refused has no job id
        job_id = None

    pilots = SimpleNamespace(workers={"slurm-0": Pilot()})
    said = lost_pilots(pilots, [], Target("slurm"), sbatch.said)
    assert said == (
        "sbatch refused 1 pilot job: invalid partition specified: nosuch; "
        "Batch job submission failed: Invalid partition name specified"
    )
