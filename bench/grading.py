"""`gpulab grade` against `nbgrader autograde`: one synthetic class graded by both, timed.

The class is --learners learners (default 50) times four CPU exercises:
roofline, env-report, namespaces and cgroup-limits. Each learner's notebook
for an exercise is drawn with random.Random(--seed):

- right: the solution's answer cells;
- wrong: the stub as shipped, or the solution with one constant changed;
- broken: the solution with a SyntaxError in one answer cell;

and one learner each hands in one adversarial notebook (ATTACKS): sys.exit(0)
in an answer, an endless loop, fake "All tests passed" output, answers that
return an object equal to anything, a deleted answer cell.

gpulab grades SUBMISSIONS/<learner>/<exercise>.ipynb with ``python -m gpulab
grade --workers N``. nbgrader grades the same answers in its own format
(bench/nbgrader/: the same exercises with the same checks as test cells,
see bench/nbgrader/assignment.py) with ``nbgrader autograde``, run from its
own virtual environment, bench/.venv-nbgrader, which this script makes
(bench/requirements-nbgrader.txt); its kernels run this project's Python.
nbgrader's cell timeout is the exercises' time limit in lessons/course.toml.

Printed: each tool's wall time and mean per notebook, the ratio nbgrader /
gpulab (target >= 6, PASS or FAIL), each tool's points on the adversarial
notebooks against what they deserve, and whether the tools agree on the
right, wrong and broken notebooks. A missed target is reported, not fatal:
the script exits 1 only when a tool could not run.

    python bench/grading.py [--learners 50] [--seed N] [--workers 2] [--keep DIR]
                            [--skip-nbgrader] [--skip-gpulab]

--skip-nbgrader times gpulab alone; --skip-gpulab times nbgrader alone (for
work on nbgrader's half). --keep DIR builds the class in DIR and leaves it
there: the submissions, gpulab's gradebook and CSV, nbgrader's course with
its autograde.log.
"""

from __future__ import annotations

import argparse
import ast
import csv
import importlib.util
import random
import shutil
import sys
import tempfile
import textwrap
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import nbformat

from gpulab.errors import GpulabError
from gpulab.grading.checks.cells import BEGIN, END, part, role
from gpulab.grading.checks.notebook import read_notebook

BENCH = Path(__file__).resolve().parent
TARGET = 6.0  # issue 28: six times nbgrader's autograde (5.0 before the sandbox grew)
SEED = 20261203


def _load(name: str) -> ModuleType:
    """bench/nbgrader/<name>.py as a module (bench/ is no package)."""
    path = BENCH / "nbgrader" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_nbgrader_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


assignment = _load("assignment")  # nbgrader's copy of the exercises
autograde = _load("autograde")  # nbgrader's run

# One constant changed in the solution: (part, text, replacement). Each must fail the same
# checks on every run, whatever the hidden checks draw, or the tools disagree by chance
# (quota / 100000 failed test_changed_machines only when a drawn period was not 100000).
CONSTANTS = {
    "roofline": ("kernels", '"saxpy": (2 * n, 3 * 4 * n)', '"saxpy": (2 * n, 2 * 4 * n)'),
    "env-report": ("parse_os_release", "value[1:-1]", "value[1:-2]"),
    "namespaces": ("ns_inode", "int(rest[:-1])", "int(rest[:-2])"),
    "cgroup-limits": ("parse_cpu_max", "int(quota) / int(period)", "int(period) / int(quota)"),
}
BROKEN = '\nprint("unfinished"\n'  # appended to an answer cell: a SyntaxError
KINDS = (("right", 5), ("wrong", 3), ("broken", 2))


@dataclass(frozen=True)
class Attack:
    name: str
    exercise: str
    what: str
    deleted: str | None = None  # the answer part whose cell is deleted


ATTACKS = (
    Attack("sys-exit", "cgroup-limits", "sys.exit(0) in the first answer, the rest as shipped"),
    Attack("endless-loop", "namespaces", "while True: pass in the first answer"),
    Attack("fake-pass", "roofline", "answers print fake 'All tests passed' lines"),
    Attack("always-equal", "env-report", "every answer returns an object whose == is True"),
    Attack(
        "delete-answer",
        "cgroup-limits",
        "the answer cell of allowed_cpus deleted, the other answers right",
        deleted="allowed_cpus",
    ),
)
FAKE_PASS = (
    'print("All tests passed!")\n'
    'print("============================== 9 passed in 0.41s '
    '==============================")\n'
)
ALWAYS_EQUAL = '''class AlwaysEqual:
    """Equal to anything: a check that compares with == is fooled."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__

'''


class BenchError(Exception):
    """The benchmark cannot go on: what went wrong, in words."""


# -- the exercises and the class ---------------------------------------------------------


@dataclass(frozen=True)
class Exercise:
    name: str
    time_limit: float
    template: Path  # the released exercise notebook
    parts: tuple[str, ...]
    right: dict[str, str]  # part -> the solution's answer, without markers
    stub: dict[str, str]  # part -> the answer as shipped
    functions: dict[str, tuple[str, ...]]  # part -> the public functions it defines


@dataclass(frozen=True)
class Submission:
    learner: str
    exercise: str
    kind: str  # right, wrong, broken, or an attack's name
    detail: str
    answers: dict[str, str | None]  # part -> source; None: the cell is deleted


def _answers(path: Path) -> dict[str, str]:
    cells = read_notebook(path).cells
    return {str(part(c)): c.source for c in cells if c.cell_type == "code" and role(c) == "answer"}


def load_exercises() -> list[Exercise]:
    exercises = []
    for entry in assignment.entries():
        solution = _answers(assignment.solution_path(entry))
        right = {
            p: "\n".join(line for line in text.split("\n") if line.strip() not in (BEGIN, END))
            for p, text in solution.items()
        }
        functions = {
            p: tuple(
                node.name
                for node in ast.parse(text).body
                if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
            )
            for p, text in right.items()
        }
        stub = _answers(entry.notebook)
        part_name, old, _ = CONSTANTS[entry.name]
        if right.get(part_name, "").count(old) != 1:
            raise BenchError(
                f"{entry.name}: the answer {part_name!r} of the solution does not "
                f"hold {old!r} exactly once: update CONSTANTS in bench/grading.py"
            )
        exercises.append(
            Exercise(
                entry.name,
                float(entry.time_limit),
                entry.notebook,
                tuple(solution),
                right,
                stub,
                functions,
            )
        )
    return exercises


def _attacked(attack: Attack, ex: Exercise) -> dict[str, str | None]:
    first = ex.parts[0]
    answers: dict[str, str | None] = dict(ex.stub)
    if attack.name == "sys-exit":
        answers[first] = "import sys\n\nsys.exit(0)\n\n" + ex.stub[first]
    elif attack.name == "endless-loop":
        answers[first] = "while True:\n    pass\n\n" + ex.stub[first]
    elif attack.name == "fake-pass":
        answers = {p: FAKE_PASS + "\n" + text for p, text in ex.stub.items()}
    elif attack.name == "always-equal":
        answers = {
            p: "\n\n".join(
                f"def {name}(*args, **kwargs):\n    return AlwaysEqual()" for name in names
            )
            + "\n"
            for p, names in ex.functions.items()
        }
        answers[first] = ALWAYS_EQUAL + "\n" + str(answers[first])
    elif attack.name == "delete-answer":
        answers = {**ex.right, str(attack.deleted): None}
    return answers


def make_class(exercises: list[Exercise], learners: int, seed: int) -> list[Submission]:
    """Every learner's notebook for every exercise, the same for the same seed."""
    rng = random.Random(seed)
    width = len(str(learners))
    names = [f"learner-{n:0{width}d}" for n in range(1, learners + 1)]
    attackers = dict(zip(rng.sample(names, min(len(ATTACKS), learners)), ATTACKS, strict=False))
    by_name = {ex.name: ex for ex in exercises}
    for attack in ATTACKS:
        if attack.exercise not in by_name:
            raise BenchError(f"attack {attack.name}: no exercise {attack.exercise!r}")
    kinds, weights = zip(*KINDS, strict=True)
    out = []
    for learner in names:
        attack = attackers.get(learner)
        for ex in exercises:
            if attack is not None and attack.exercise == ex.name:
                out.append(
                    Submission(
                        learner,
                        ex.name,
                        attack.name,
                        attack.what,
                        _attacked(attack, by_name[ex.name]),
                    )
                )
                continue
            kind = rng.choices(kinds, weights)[0]
            answers: dict[str, str | None] = dict(ex.right)
            if kind == "right":
                detail = "the solution's answers"
            elif kind == "broken":
                broken = rng.choice(ex.parts)
                answers[broken] = ex.right[broken] + BROKEN
                detail = f"SyntaxError in the answer {broken}"
            elif rng.random() < 0.5:
                answers, detail = dict(ex.stub), "the stub as shipped"
            else:
                changed, old, new = CONSTANTS[ex.name]
                answers[changed] = ex.right[changed].replace(old, new)
                detail = f"{old} -> {new} in {changed}"
            out.append(Submission(learner, ex.name, kind, detail, answers))
    return out


# -- gpulab ------------------------------------------------------------------------------


@dataclass
class Run:
    tool: str
    seconds: float = 0.0
    scores: dict[tuple[str, str], float] = field(default_factory=dict)
    possible: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def write_gpulab(subs: list[Submission], exercises: list[Exercise], folder: Path) -> None:
    templates = {ex.name: ex.template for ex in exercises}
    for sub in subs:
        notebook = nbformat.read(templates[sub.exercise], as_version=4)
        autograde.fill(notebook, sub.answers, lambda c: part(c) if role(c) == "answer" else None)
        path = folder / sub.learner / f"{sub.exercise}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, path)


def run_gpulab(submissions: Path, out: Path, workers: int) -> Run:
    run = Run("gpulab")
    command = [
        sys.executable,
        "-m",
        "gpulab",
        "grade",
        str(submissions),
        "--out",
        str(out),
        "--workers",
        str(workers),
    ]
    for attempt in range(2):
        start = time.perf_counter()
        done = autograde.run(command, "gpulab grade")
        run.seconds = time.perf_counter() - start
        said = (done.stdout + done.stderr).strip()
        if (
            done.returncode != 0
            and attempt == 0
            and "--unsafe" in said
            and "bubblewrap" in said.lower()
        ):
            refusal = next((line for line in said.splitlines() if "--unsafe" in line), said)
            run.notes.append(f"ran with --unsafe: without it gpulab refused ({refusal.strip()})")
            shutil.rmtree(out, ignore_errors=True)
            command.append("--unsafe")
            continue
        if done.returncode != 0:
            raise BenchError(f"gpulab grade exited {done.returncode}:{autograde.tail(said)}")
        guards = said.partition("isolation in force:")[2].partition("gradebook:")[0]
        if guards:
            run.notes.append("isolation in force: " + " ".join(guards.split()))
        break
    path = out / "grades.csv"
    try:
        rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
    except OSError as exc:
        raise BenchError(f"gpulab grade wrote no {path}: {exc.strerror}") from None
    if len(rows) < 2 or rows[0][:2] != ["Learner", "Slug"] or rows[1][0] != "Points possible":
        raise BenchError(
            f"{path}: not the expected header (Learner,Slug,...,Total / "
            f"Points possible): {rows[:2]}"
        )
    columns = rows[0][2:-1]
    for number, row in enumerate(rows[1:], start=2):
        for name, value in zip(columns, row[2:], strict=False):
            try:
                points = float(value) if value != "" else None
            except ValueError:
                raise BenchError(f"{path}:{number}: {value!r} for {name} is no number") from None
            if points is None:
                continue
            if number == 2:
                run.possible[name] = points
            else:  # by the learner's name and by the slug, whichever
                run.scores[(row[0], name)] = run.scores[(row[1], name)] = points
    return run


# -- the report --------------------------------------------------------------------------


def _table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            "  "
            + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )


def _points(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def attack_bound(attack: Attack) -> float:
    """The most points the attack's notebook deserves: 0, or what the intact parts earn."""
    if attack.deleted is None:
        return 0.0
    tests = assignment.read_port(attack.exercise).tests
    return sum(t.points for t in tests if t.needs is not None and attack.deleted not in t.needs)


def report(subs: list[Submission], runs: dict[str, Run], workers: int, timeout: float) -> None:
    notebooks = len(subs)
    tools = list(runs)
    print("\ntime to grade the class (wall clock)")
    rows = [("tool", "total", "per notebook", "how")]
    how = {
        "gpulab": f"gpulab grade --workers {workers}",
        "nbgrader": f"nbgrader autograde, one notebook at a time, cell timeout {timeout:g} s",
    }
    for tool in tools:
        run = runs[tool]
        rows.append((tool, f"{run.seconds:.1f} s", f"{run.seconds / notebooks:.2f} s", how[tool]))
    _table(rows)
    for tool in tools:
        for note in runs[tool].notes:
            print(
                textwrap.fill(f"{tool}: {note}", 100, initial_indent="  ", subsequent_indent="    ")
            )
    if len(runs) == 2 and runs["gpulab"].seconds > 0:
        ratio = runs["nbgrader"].seconds / runs["gpulab"].seconds
        print(
            f"  ratio nbgrader / gpulab: {ratio:.2f} (target >= {TARGET:g}): "
            f"{'PASS' if ratio >= TARGET else 'FAIL'}"
        )

    print("\npoints possible per exercise")
    rows = [("exercise", "ported checks", *tools)]
    for name in assignment.EXERCISES:
        ported = sum(t.points for t in assignment.read_port(name).tests)
        rows.append((name, f"{ported:g}", *(_points(runs[t].possible.get(name)) for t in tools)))
    _table(rows)

    print("\nadversarial notebooks: points earned against points deserved")
    rows = [("case", "learner", "exercise", "deserves", *tools)]
    for sub in subs:
        attack = next((a for a in ATTACKS if a.name == sub.kind), None)
        if attack is None:
            continue
        bound = attack_bound(attack)
        cells = []
        for tool in tools:
            got = runs[tool].scores.get((sub.learner, sub.exercise))
            verdict = "" if got is None or got <= bound + 0.005 else f" UNEARNED +{got - bound:g}"
            cells.append(_points(got) + verdict)
        deserves = "0" if attack.deleted is None else f"<= {bound:g} (other parts)"
        rows.append((sub.kind, sub.learner, sub.exercise, deserves, *cells))
    _table(rows)
    for attack in ATTACKS:
        print(f"  {attack.name}: {attack.what}")

    print("\nthe other notebooks: points per notebook")
    both = len(runs) == 2
    rows = [
        (
            "kind",
            "notebooks",
            *(f"{t} full marks" for t in tools),
            *(("tools agree",) if both else ()),
        )
    ]
    differ: dict[str, list[tuple[Submission, float | None, float | None]]] = {}
    for kind, _ in KINDS:
        mine = [s for s in subs if s.kind == kind]
        cells = []
        for tool in tools:
            run = runs[tool]
            full = sum(
                run.scores.get((s.learner, s.exercise)) == run.possible.get(s.exercise)
                for s in mine
            )
            cells.append(f"{full}/{len(mine)}")
        if both:
            for s in mine:
                g = runs["gpulab"].scores.get((s.learner, s.exercise))
                n = runs["nbgrader"].scores.get((s.learner, s.exercise))
                if g is None or n is None or abs(g - n) >= 0.01:
                    differ.setdefault(kind, []).append((s, g, n))
            cells.append(f"{len(mine) - len(differ.get(kind, []))}/{len(mine)}")
        rows.append((kind, str(len(mine)), *cells))
    _table(rows)
    for kind, found in differ.items():
        lower = sum(g is not None and n is not None and g < n for _, g, n in found)
        higher = sum(g is not None and n is not None and g > n for _, g, n in found)
        print(
            f"  {kind}: the tools differ on {len(found)}: gpulab lower on {lower}, higher on "
            f"{higher}, {len(found) - lower - higher} not graded by one of them"
        )
        for s, g, n in found[:3]:
            print(
                f"    e.g. {s.learner} {s.exercise} ({s.detail}): gpulab {_points(g)}, "
                f"nbgrader {_points(n)}"
            )
    if both:
        clean = sorted(
            {s.learner for s in subs if s.kind in dict(KINDS)}
            - {s.learner for s in subs if s.kind not in dict(KINDS)}
        )
        agree = sum(
            abs(
                sum(
                    runs["gpulab"].scores.get((s.learner, s.exercise), 0.0)
                    - runs["nbgrader"].scores.get((s.learner, s.exercise), 0.0)
                    for s in subs
                    if s.learner == learner
                )
            )
            < 0.01
            for learner in clean
        )
        print(
            f"  learner totals agree for {agree} of the {len(clean)} learners without an "
            "adversarial notebook"
        )


# -- the run -----------------------------------------------------------------------------


def _folder(keep: str | None) -> tuple[Path, tempfile.TemporaryDirectory[str] | None]:
    if keep is None:
        temporary = tempfile.TemporaryDirectory(prefix="gpulab-bench-grading-")
        return Path(temporary.name), temporary
    folder = Path(keep).resolve()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise BenchError(
            f"--keep {keep}: the folder is not empty; give a new one (grades "
            "left by an earlier run would be reused, and the timing spoilt)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    return folder, None


def compile_gpulab() -> str:
    """Compile gpulab's modules to bytecode, as pip does when it installs the wheel: from an
    editable checkout every process (a sandboxed learner's worker, which may write nothing,
    above all) would compile them again on every job."""
    import compileall

    import gpulab

    folder = Path(gpulab.__file__).parent
    if not compileall.compile_dir(str(folder), quiet=1):
        raise BenchError(f"gpulab's modules in {folder} did not compile")
    return f"gpulab's modules compiled to bytecode, as a wheel install has them ({folder})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=50, help="class size (default 50)")
    parser.add_argument("--seed", type=int, default=SEED, help=f"class seed (default {SEED})")
    parser.add_argument("--workers", type=int, default=2, help="gpulab's workers (default 2)")
    parser.add_argument("--keep", metavar="DIR", help="build the class here and keep it")
    parser.add_argument("--skip-nbgrader", action="store_true", help="time gpulab only")
    parser.add_argument("--skip-gpulab", action="store_true", help="time nbgrader only")
    args = parser.parse_args(argv)
    if args.learners < 1 or args.workers < 1:
        parser.error("--learners and --workers must be at least 1")
    if args.skip_gpulab and args.skip_nbgrader:
        parser.error("--skip-gpulab and --skip-nbgrader leave nothing to time")
    temporary = None
    try:
        drift = assignment.problems()
        if drift:
            said = "bench/nbgrader is out of step with gpulab's exercises:\n  " + "\n  ".join(drift)
            if not args.skip_nbgrader:
                raise BenchError(said)
            print(f"warning: {said}")
        print(compile_gpulab())
        exercises = load_exercises()
        limits = sorted({ex.time_limit for ex in exercises})
        timeout = limits[-1]  # nbgrader has one cell timeout per run
        work, temporary = _folder(args.keep)
        subs = make_class(exercises, args.learners, args.seed)
        kinds = Counter(s.kind for s in subs)
        plural = "s" * (args.learners != 1)
        print(
            f"class: {args.learners} learner{plural} x {len(exercises)} exercises = {len(subs)} "
            f"notebooks (seed {args.seed}): "
            + ", ".join(
                f"{kind} {kinds[kind]}"
                for kind in [*dict(KINDS), *(a.name for a in ATTACKS)]
                if kinds[kind]
            )
            + f"\nclass folder: {work}"
        )
        if len(limits) > 1:
            print(
                f"  nbgrader's cell timeout is the largest time limit, {timeout:g} s "
                f"(the exercises' limits: {', '.join(f'{t:g}' for t in limits)} s)"
            )
        runs: dict[str, Run] = {}
        if not args.skip_gpulab:
            write_gpulab(subs, exercises, work / "submissions")
            print("grading with gpulab ...", flush=True)
            runs["gpulab"] = run_gpulab(work / "submissions", work / "gpulab-out", args.workers)
        if not args.skip_nbgrader:
            graded = autograde.autograde(
                work / "nbgrader",
                assignment.ASSIGNMENT,
                assignment.SOURCE,
                [(s.learner, s.exercise, s.answers) for s in subs],
                timeout,
            )
            runs["nbgrader"] = Run(
                "nbgrader", graded.seconds, graded.scores, graded.possible, graded.notes
            )
        report(subs, runs, args.workers, timeout)
    except (
        BenchError,
        GpulabError,
        assignment.PortError,
        autograde.AutogradeError,
        OSError,
    ) as exc:
        print(f"bench/grading.py: {exc}", file=sys.stderr)
        return 1
    finally:
        if temporary is not None:
            temporary.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
