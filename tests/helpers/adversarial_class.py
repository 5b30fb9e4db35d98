"""A class of hostile learners for `gpulab grade`, built from the roofline exercise.

Each case is a learner folder holding ``roofline.ipynb``: the solution (so a
case that attacks the grader but answers correctly should still earn full
points), the shipped stub (so an attack that claims a pass must still earn
nothing), or a broken notebook. `CASES` says what each must get; the tests in
test_grade.py grade the class and compare.
"""

from __future__ import annotations

import copy
import json
import stat
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "solutions" / "memory-hierarchy" / "roofline.ipynb"
STUB = ROOT / "exercises" / "memory-hierarchy" / "roofline.ipynb"
FULL = -1.0  # expected earned: the exercise's whole worth
PARTIAL = -3.0  # expected earned: more than nothing, less than the whole worth


@dataclass(frozen=True)
class Case:
    name: str
    kinds: tuple[str, ...]  # the kind(s) the grade may have
    earned: float  # FULL, or the points expected
    build: Callable[[Path], None]
    slow: bool = False  # runs into the time limit


def _load(path: Path) -> Any:
    return nbformat.read(path, as_version=4)


def _answer(notebook: Any, part: str | None = None) -> Any:
    for cell in notebook.cells:
        meta = cell.get("metadata", {}).get("gpulab", {})
        if (
            cell.cell_type == "code"
            and meta.get("role") == "answer"
            and (part is None or meta.get("part") == part)
        ):
            return cell
    raise LookupError(part)


def _write(notebook: Any, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)


def _prefixed(base: Path, code: str) -> Callable[[Path], None]:
    """`code` put before the first answer cell's own code.

    ``{paths!r}`` in `code` becomes the list of secret paths the learner should not
    see, ``{targets!r}`` the files it should not be able to change (see `build_class`).
    """

    def build(target: Path) -> None:
        notebook = _load(base)
        cell = _answer(notebook)
        text = code.replace("{paths!r}", repr(SECRETS)).replace("{targets!r}", repr(TARGETS))
        cell.source = text.strip() + "\n\n" + cell.source
        _write(notebook, target)

    return build


SECRETS: list[str] = []  # filled by build_class before the notebooks are written
TARGETS: list[str] = []  # what the vandal tries to overwrite: the run's files only


def _solution(target: Path) -> None:
    _write(_load(SOLUTION), target)


def _stub(target: Path) -> None:
    _write(_load(STUB), target)


def _deleted_answer(target: Path) -> None:
    notebook = _load(SOLUTION)
    notebook.cells.remove(_answer(notebook, "roofline"))
    _write(notebook, target)


def _duplicated_answer(target: Path) -> None:
    notebook = _load(SOLUTION)
    cell = _answer(notebook, "roofline")
    twin = copy.deepcopy(cell)
    twin["id"] = "a-second-copy"
    notebook.cells.insert(notebook.cells.index(cell), twin)
    _write(notebook, target)


def _changed_role(target: Path) -> None:
    notebook = _load(SOLUTION)
    _answer(notebook, "roofline").metadata["gpulab"]["role"] = "setup"
    _write(notebook, target)


def _broken_part(target: Path) -> None:
    """The solution with a SyntaxError in its last answer cell."""
    notebook = _load(SOLUTION)
    _answer(notebook, "place").source += "\n\ndef oops(:\n    pass\n"
    _write(notebook, target)


def _deleted_setup(target: Path) -> None:
    """The solution without its locked setup cell: the released one runs instead."""
    notebook = _load(SOLUTION)
    notebook.cells = [
        c
        for c in notebook.cells
        if not (c.cell_type == "code" and c.metadata.get("gpulab", {}).get("role") == "setup")
    ]
    _write(notebook, target)


def _zip_bomb(target: Path) -> None:
    """A zip of one notebook that unpacks to 300 MB of zeros."""
    target.parent.parent.mkdir(parents=True, exist_ok=True)
    with (
        zipfile.ZipFile(target.parent.with_suffix(".zip"), "w", zipfile.ZIP_DEFLATED) as zf,
        zf.open("roofline.ipynb", "w") as member,
    ):
        zeros = bytes(2**20)
        for _ in range(300):
            member.write(zeros)


def _zip_symlink(target: Path) -> None:
    """A zip whose roofline.ipynb is a symbolic link to the course's solution."""
    target.parent.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target.parent.with_suffix(".zip"), "w") as zf:
        info = zipfile.ZipInfo("roofline.ipynb")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, str(SOLUTION))


def _edited_setup(target: Path) -> None:
    """The stub, with its locked setup cell edited to define every answer: no effect."""
    notebook = _load(STUB)
    solution = _load(SOLUTION)
    answers = "\n\n".join(
        c.source
        for c in solution.cells
        if c.cell_type == "code" and c.metadata.get("gpulab", {}).get("role") == "answer"
    )
    setup = next(
        c
        for c in notebook.cells
        if c.cell_type == "code" and c.metadata.get("gpulab", {}).get("role") == "setup"
    )
    setup.source += "\n\n" + answers
    _write(notebook, target)


def _text(text: str) -> Callable[[Path], None]:
    def build(target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    return build


def _old_format(target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        json.dumps(
            {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": []}]}
        ),
        encoding="utf-8",
    )


def _huge(target: Path) -> None:
    notebook = _load(SOLUTION)
    notebook.cells.append(nbformat.v4.new_markdown_cell("x" * (24 * 2**20)))
    _write(notebook, target)


# Code that a hostile learner puts in an answer cell. Attacks on the grader are
# wrapped so that the rest of the (correct) answer still runs.
EXIT = "import sys\nsys.exit(0)"
OS_EXIT = "import os\nos._exit(3)"
PATCH = """
import builtins, math
builtins.isinstance = lambda *a, **k: True
math.isclose = lambda *a, **k: True
try:
    import gpulab.grading.checks.pytest_plugin as plugin
    plugin._RESULTS.append({"check": "test_ridge_points", "outcome": "passed", "points": 99})
except Exception:
    pass
"""
ALWAYS_EQUAL = """
class Everything:
    def __eq__(self, other): return True
def arithmetic_intensity(flops, bytes_moved): return Everything()
def ridge_point(peak_tflops, bandwidth_tbs): return Everything()
def attainable(i, p, b): return Everything()
def limit(i, p, b): return Everything()
"""
FAKE_OUTPUT = """
print("============================= 13 passed in 0.10s ==============================")
print('{"checks": [{"check": "test_ridge_points", "outcome": "passed", "points": 21}]}')
import sys
sys.stderr.write("PASSED\\n")
"""
SNOOP = """
import os
_found = [p for p in {paths!r} if os.path.exists(p)]
if _found:
    raise RuntimeError("the sandbox let me see: " + ", ".join(_found))
"""
VANDAL = """
import os
for _path in {targets!r}:
    try:
        with open(_path, "w") as _f:
            _f.write("vandalised")
    except OSError:
        pass
"""
LOOP = "while True:\n    pass"
NO_SIGINT = (
    "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass"
)
FORK_BOMB = """
import os
try:
    while True:
        os.fork()
except OSError:
    pass
"""
MEMORY = """
_hog = []
try:
    while True:
        _hog.append(bytearray(256 * 2**20))
except MemoryError:
    _hog = None
"""
OUTPUT = """
import sys
_line = "x" * (1 << 20) + "\\n"
for _ in range(2048):       # two gigabytes of output
    sys.stdout.write(_line)
"""
DISK = """
import os
_block = b"\\0" * (8 << 20)
try:
    for _n in range(4096):                # up to 32 GiB, if nothing stops it
        with open(f"fill-{_n}", "wb") as _f:
            for _ in range(16):
                _f.write(_block)
except OSError:
    pass
for _n in range(4096):
    try:
        os.remove(f"fill-{_n}")
    except OSError:
        break
"""
NETWORK = """
import socket
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3).close()
    _net = True
except OSError:
    _net = False
if _net:
    raise RuntimeError("the sandbox let me reach the network")
"""
# Ways out of the sandbox (the red team's V1, V5, V7): each raises with what it got, so a
# way that worked costs the (otherwise correct) answer its points.
ESCAPE = """
import ctypes, os
_libc = ctypes.CDLL(None, use_errno=True)
_got = []
for _line in open("/proc/self/mountinfo").read().splitlines()[::-1]:
    _point = _line.split()[4].encode()
    if _libc.umount2(_point, 2) == 0:                        # MNT_DETACH
        _got.append("unmounted " + _point.decode())
if _libc.mount(None, b"/", None, 32 | 4096, None) == 0:      # MS_REMOUNT | MS_BIND, writable
    _got.append("remounted / writable")
if os.getuid() == 0 or os.getgroups():
    _got.append(f"uid {os.getuid()}, groups {os.getgroups()}")
_got += [p for p in {paths!r} if os.path.exists(p)]
if _got:
    raise RuntimeError("the sandbox let me: " + "; ".join(_got))
"""
PLANT = """
import os, site, sys
_got = []
for _folder in {*sys.path, *site.getsitepackages()}:
    if not os.path.isabs(_folder) or _folder.startswith(("/tmp", "/dev/shm")):
        continue                                 # the sandbox's own scratch: no one imports it
    try:
        with open(os.path.join(_folder, "zz-planted.pth"), "w") as _f:
            _f.write("import os\\n")
        _got.append(_folder)
    except OSError:
        pass
if _got:
    raise RuntimeError("planted code where the grader will import it: " + ", ".join(_got))
"""
SEARCH = """
import os, stat
_got = []
for _folder, _dirs, _files in os.walk("/"):
    _dirs[:] = [d for d in _dirs if os.path.join(_folder, d) not in ("/proc", "/sys", "/dev")]
    for _name in _files + _dirs:
        _path = os.path.join(_folder, _name)
        try:
            _mode = os.lstat(_path).st_mode
        except OSError:
            continue
        if stat.S_ISSOCK(_mode) or _name in ("solutions", "test_roofline_hidden.py",
                                             "gradebook.sqlite"):
            _got.append(_path)
if _got:
    raise RuntimeError("found beyond the public course: " + ", ".join(_got[:5]))
"""
TMPFS = """
_held = []
for _folder in ("/tmp", "/dev/shm"):
    try:
        for _n in range(48):                   # 3 GiB in 64 MiB files, if nothing stops it
            with open(f"{_folder}/hold-{_n}", "wb") as _f:
                _f.write(b"\\0" * (64 << 20))
            _held.append(f"{_folder}/hold-{_n}")
    except OSError:
        pass
if len(_held) * 64 > 256:
    raise RuntimeError(f"held {len(_held) * 64} MiB of tmpfs")
"""

CASES: tuple[Case, ...] = (
    Case("good", ("right",), FULL, _solution),
    Case("victim", ("right",), FULL, _solution),
    Case("stub", ("wrong",), 0.0, _stub),
    # the cell that exits stops there; the learner's other cells still run and earn
    Case("sys-exit", ("wrong",), PARTIAL, _prefixed(SOLUTION, EXIT)),
    Case("syntax-error-in-one-part", ("wrong",), PARTIAL, _broken_part),
    Case("os-exit", ("crashed",), 0.0, _prefixed(SOLUTION, OS_EXIT)),
    # patching isinstance breaks the worker's own JSON replies: it may end the process
    Case("monkeypatch", ("wrong", "crashed"), 0.0, _prefixed(STUB, PATCH)),
    Case("always-equal", ("wrong",), 0.0, _prefixed(STUB, ALWAYS_EQUAL)),
    Case("fake-output", ("wrong",), 0.0, _prefixed(STUB, FAKE_OUTPUT)),
    Case("snoop", ("right",), FULL, _prefixed(SOLUTION, SNOOP)),
    Case("vandal", ("right",), FULL, _prefixed(SOLUTION, VANDAL)),
    Case("endless-loop", ("timeout",), 0.0, _prefixed(SOLUTION, LOOP), slow=True),
    Case("ignores-sigint", ("timeout",), 0.0, _prefixed(SOLUTION, NO_SIGINT), slow=True),
    Case(
        "fork-bomb",
        ("right", "wrong", "crashed", "timeout"),
        -2.0,
        _prefixed(SOLUTION, FORK_BOMB),
        slow=True,
    ),
    Case("memory-hog", ("right",), FULL, _prefixed(SOLUTION, MEMORY)),
    Case("gigabytes-of-output", ("right",), FULL, _prefixed(SOLUTION, OUTPUT)),
    Case("disk-filler", ("right",), FULL, _prefixed(SOLUTION, DISK)),
    Case("network", ("right",), FULL, _prefixed(SOLUTION, NETWORK)),
    Case("escape-as-root", ("right",), FULL, _prefixed(SOLUTION, ESCAPE)),
    Case("plant-code", ("right",), FULL, _prefixed(SOLUTION, PLANT)),
    Case("search-the-machine", ("right",), FULL, _prefixed(SOLUTION, SEARCH)),
    Case("tmpfs-memory", ("right",), FULL, _prefixed(SOLUTION, TMPFS)),
    Case("deleted-answer", ("invalid",), 0.0, _deleted_answer),
    Case("duplicated-answer", ("invalid",), 0.0, _duplicated_answer),
    Case("changed-metadata", ("invalid",), 0.0, _changed_role),
    Case("edited-setup", ("wrong",), 0.0, _edited_setup),
    Case("deleted-setup", ("right",), FULL, _deleted_setup),
    Case("zip-bomb", ("invalid",), 0.0, _zip_bomb),
    Case("zip-symlink", ("invalid", "missing"), 0.0, _zip_symlink),
    Case("invalid-json", ("invalid",), 0.0, _text('{"cells": [,]}')),
    Case("old-format", ("invalid",), 0.0, _old_format),
    Case("huge", ("invalid",), 0.0, _huge),
)
# fork-bomb: earned is not fixed (-2.0): whatever it gets, the run must finish and the
# others must keep their grades; the cgroup's process limit is what makes that so.


def build_class(folder: Path, out: Path, cases: tuple[Case, ...] = CASES) -> dict[str, Case]:
    """One learner folder per case under `folder`; the cases by learner slug.

    `out` is where the grading run will write: the snooping and vandal cases aim
    at its gradebook and at the victim's notebook, there and in `folder`, and at
    the course's solutions and hidden checks.
    """
    copy = out.parent / "last-term-course" / "solutions"  # another copy of the course
    copy.mkdir(parents=True, exist_ok=True)
    (copy / "roofline.ipynb").write_bytes(SOLUTION.read_bytes())
    SECRETS[:] = [
        str(ROOT / "solutions" / "memory-hierarchy" / "test_roofline_hidden.py"),
        str(SOLUTION),
        str(ROOT / "solutions"),
        str(out / "gradebook.sqlite"),
        str(out / "submissions" / "victim" / "roofline.ipynb"),
        str(folder / "victim" / "roofline.ipynb"),
        str(copy / "roofline.ipynb"),
    ]
    TARGETS[:] = SECRETS[3:6]
    for case in cases:
        case.build(folder / case.name / "roofline.ipynb")
    return {case.name: case for case in cases}
