"""The probe sub-packages keep their public surface: what each `__all__` says is there,
defined in the package, and nothing outside a package imports its private modules.

Each of `gpulab.probes.micro`, `.nvml`, `.system` and `.topology` is laid out as httpx
is: private modules (`_name.py`) holding public names, and an `__init__` that re-exports
the package's surface in `__all__`. The registry's targets name these packages, so every
target must resolve to a function on a machine without a GPU.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest

from gpulab.probes import PROBES, ProbeInfo

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("micro", "nvml", "system", "topology")
SCANNED = ("lab", "tests", "bench", "exercises", "solutions")


def package(name: str) -> ModuleType:
    return importlib.import_module(f"gpulab.probes.{name}")


def modules_of(name: str) -> list[str]:
    return sorted(info.name for info in pkgutil.iter_modules(package(name).__path__))


@pytest.mark.parametrize("name", PACKAGES)
def test_every_module_of_a_probe_package_is_private(name: str) -> None:
    modules = modules_of(name)
    assert modules, f"gpulab.probes.{name} has no modules"
    public = [m for m in modules if not m.startswith("_")]
    assert not public, f"gpulab.probes.{name}: rename {public} to _name.py (private modules)"


@pytest.mark.parametrize("name", PACKAGES)
def test_all_names_exist_are_public_and_defined_in_the_package(name: str) -> None:
    pkg = package(name)
    exported = pkg.__all__
    assert len(exported) == len(set(exported)), f"{name}.__all__ repeats a name"
    for attr in exported:
        assert not attr.startswith("_"), f"{name}.__all__ exports the private name {attr}"
        assert hasattr(pkg, attr), f"{name}.__all__ names {attr}, which the package lacks"
        where = getattr(getattr(pkg, attr), "__module__", None)
        if callable(getattr(pkg, attr)) and where is not None:
            assert where.startswith(f"gpulab.probes.{name}."), (
                f"{name}.{attr} is defined in {where}, not in the package"
            )


@pytest.mark.parametrize("name", PACKAGES)
def test_the_package_exports_what_its_modules_export(name: str) -> None:
    """Each private module's `__all__` lists what it gives the package's surface."""
    given: set[str] = set()
    for module in modules_of(name):
        if module.startswith("__"):
            continue
        given |= set(
            getattr(importlib.import_module(f"gpulab.probes.{name}.{module}"), "__all__", ())
        )
    assert set(package(name).__all__) == given


def _private_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) for every import of a private module of a probe package."""
    found = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        private = {
            ".".join(parts[:4])
            for parts in (t.split(".") for t in targets)
            if parts[:2] == ["gpulab", "probes"]
            and len(parts) >= 4
            and parts[2] in PACKAGES
            and parts[3].startswith("_")
            and not parts[3].startswith("__")
        }
        found += [(node.lineno, module) for module in sorted(private)]
    return found


def test_nothing_outside_a_probe_package_imports_its_private_modules() -> None:
    offenders = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if any(part.startswith(".") for part in relative.parts):
                continue  # virtual environments and caches
            for line, module in _private_imports(ast.parse(path.read_bytes(), str(path))):
                home = ROOT / "lab" / Path(*module.split(".")[:3])
                if home not in path.parents:
                    offenders.append(f"{relative}:{line} imports {module}")
    assert not offenders, "import from the package instead:\n" + "\n".join(offenders)


def test_the_scan_sees_private_imports() -> None:
    tree = ast.parse(
        "from gpulab.probes.nvml._session import Session\n"
        "import gpulab.probes.micro._common\n"
        "from gpulab.probes.system import _parse\n"
        "from gpulab.probes.nvml import Session\n"
        "from gpulab.probes.nvml.__main__ import main\n"
    )
    assert [module for _, module in _private_imports(tree)] == [
        "gpulab.probes.nvml._session",
        "gpulab.probes.micro._common",
        "gpulab.probes.system._parse",
    ]


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.name)
def test_every_registry_target_resolves_to_a_public_function(probe: ProbeInfo) -> None:
    module, _, attr = probe.target.partition(":")
    assert not any(part.startswith("_") for part in module.split(".")), (
        f"{probe.target} names a private module: name the package"
    )
    loaded = importlib.import_module(f"gpulab.probes.{module}")
    function = getattr(loaded, attr)
    assert callable(function)
    assert probe.function() is function
    if module in PACKAGES:
        assert attr in loaded.__all__, f"{probe.target}: {attr} is not in {module}.__all__"


def test_each_probe_title_is_written_once_in_the_registry() -> None:
    """A probe's module reads its title from the registry (`title_of`); none spells one."""
    titles = {info.title for info in PROBES}
    spelled = []
    for path in sorted((ROOT / "lab" / "gpulab" / "probes").rglob("*.py")):
        if path.name == "registry.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in titles:
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not spelled, "titles written outside the registry:\n" + "\n".join(spelled)


@pytest.mark.parametrize("info", PROBES, ids=lambda info: info.name)
def test_every_result_carries_the_registry_title(info: ProbeInfo) -> None:
    from gpulab.probes.registry import run_probe

    if info.needs != "host":
        from gpulab.probes.cuda import cannot_run

        if cannot_run(info.needs) is None:
            pytest.skip("runs for real on a GPU: the gpu-marked tests run it there")
    assert run_probe(info.name).title == info.title
