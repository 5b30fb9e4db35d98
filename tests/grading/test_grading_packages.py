"""grading's sub-packages keep their shape: a name has one home, each facade gives only names
defined in its package, the launcher and the workers stay light, the sandbox's modules stay
short, and what the prose names exists.

Modules list in `__all__` only the names they define; a package's `__init__` is the one
place names of several modules are gathered (the facades of `sandbox`, `intake` and
`gradebook`). Which package may import which is `pyproject.toml`'s import contracts.

One module gives on names on purpose: `gpulab.grading.machines`, the recorded machines'
name before the split. The explore cells of the notebooks learners started then import
it, and a workspace's sync never rewrites a notebook the learner has worked on, so it
stays: exactly `gpulab.grading.checks.machines`'s public names, the same objects, and
imported by no module of gpulab (`ALIASES`).
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import gpulab.grading

ROOT = Path(__file__).resolve().parents[2]
GRADING = ROOT / "lab" / "gpulab" / "grading"
FACADES = ("sandbox", "intake", "gradebook")
ALIASES = {"gpulab.grading.machines": "gpulab.grading.checks.machines"}
"""Old module paths kept for learners' notebooks (see the module's docstring): the alias and
the home whose public names it gives, and nothing else."""
SANDBOX_MOST_LINES = 400
"""The longest a module of the sandbox may be: security code, each module one job, read whole."""


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(gpulab.grading.__path__, "gpulab.grading."))


@pytest.mark.parametrize("name", FACADES)
def test_a_facade_gives_only_names_defined_in_its_package(name: str) -> None:
    package = importlib.import_module(f"gpulab.grading.{name}")
    exported = package.__all__
    assert len(exported) == len(set(exported)), f"{name}.__all__ repeats a name"
    for attr in exported:
        assert not attr.startswith("_"), f"{name}.__all__ exports the private name {attr}"
        value = getattr(package, attr)  # the sandbox's names resolve here, on first use
        where = getattr(value, "__module__", None)
        if callable(value) and where is not None:
            assert where.startswith(f"gpulab.grading.{name}."), (
                f"gpulab.grading.{name}.{attr} is defined in {where}, not in the package"
            )


def _reexported(path: Path) -> list[str]:
    """Names a module lists in `__all__` that it imports rather than defines."""
    tree = ast.parse(path.read_bytes(), str(path))
    imported: set[str] = set()
    listed: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom | ast.Import):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            listed = [e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant)]
    return sorted(set(listed) & imported)


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(ROOT / "lab").with_suffix("").parts)


def test_no_module_of_grading_gives_a_name_it_does_not_define() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {names}"
        for path in sorted(GRADING.rglob("*.py"))
        if path.name != "__init__.py"
        and _dotted(path) not in ALIASES
        and (names := _reexported(path))
    ]
    assert not found, "import these from their home instead:\n" + "\n".join(found)


@pytest.mark.parametrize(("alias", "home"), sorted(ALIASES.items()))
def test_an_old_path_kept_for_learners_gives_its_home_and_nothing_else(
    alias: str, home: str
) -> None:
    old, new = importlib.import_module(alias), importlib.import_module(home)
    assert sorted(old.__all__) == sorted(new.__all__)
    for name in new.__all__:
        assert getattr(old, name) is getattr(new, name), f"{alias}.{name}"
    path = GRADING.parent.parent / (alias.replace(".", "/") + ".py")
    assert sorted(_reexported(path)) == sorted(new.__all__), f"{alias} defines names of its own"
    own = {
        node.name
        for node in ast.parse(path.read_bytes()).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    assert not own, f"{alias} defines {sorted(own)}: it only gives {home}'s names"


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_no_module_of_gpulab_imports_an_old_path(alias: str) -> None:
    """An alias is for learners' notebooks only: gpulab itself imports the home."""
    users = []
    for path in sorted((ROOT / "lab" / "gpulab").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module is not None:
                named = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                named = [a.name for a in node.names]
            else:
                continue
            if alias in named:
                users.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not users, f"import {ALIASES[alias]} instead: {users}"


def test_no_module_of_the_sandbox_is_longer_than_its_limit() -> None:
    lines = {
        str(path.relative_to(ROOT)): count
        for path in sorted((GRADING / "sandbox").rglob("*.py"))
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > SANDBOX_MOST_LINES
    }
    assert not lines, (
        f"split these along one job each (at most {SANDBOX_MOST_LINES} lines): {lines}"
    )


def test_the_scan_sees_a_name_given_on(tmp_path: Path) -> None:
    path = tmp_path / "module.py"
    path.write_text(
        "from x import a\nfrom y import b as c\ndef d(): pass\n__all__ = ['a', 'c', 'd']\n"
    )
    assert _reexported(path) == ["a", "c"]


def _loaded_after(statement: str) -> list[str]:
    """The modules of gpulab.grading a fresh interpreter holds after `statement`."""
    code = (
        f"import sys\n{statement}\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('gpulab.grading'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.split()


def test_the_launcher_and_the_workers_load_nothing_of_grading_they_do_not_use() -> None:
    """`python -m gpulab.grading.sandbox.jail` starts for every job, and a learner's worker
    imports `jail` inside the sandbox: the sandbox's facade must not load the rest of it."""
    assert _loaded_after("import gpulab.grading.sandbox.jail") == [
        "gpulab.grading",
        "gpulab.grading.sandbox",
        "gpulab.grading.sandbox.jail",
    ]
    for worker in ("worker", "kernel_worker"):
        assert _loaded_after(f"import gpulab.grading.checks.{worker}") == [
            "gpulab.grading",
            "gpulab.grading.checks",
            f"gpulab.grading.checks.{worker}",
        ]


def test_every_module_imports() -> None:
    for name in _modules():
        importlib.import_module(name)
