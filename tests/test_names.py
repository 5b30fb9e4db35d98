"""Each name has one home: a module's ``__all__`` lists what it defines, not what it imports.

A package's ``__init__`` is its public face and may gather names from its
modules; `gpulab.grading.machines` is the documented alias the learners'
notebooks import. Anywhere else, a name given on by a module that is not its
home sends readers (and importers) to the wrong file.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "lab" / "gpulab"
FACES = {PACKAGE / "grading" / "machines.py"}


def test_no_module_gives_on_a_name_it_imports() -> None:
    given_on = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__init__.py" or path in FACES or "__pycache__" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            alias.asname or alias.name: node.module
            for node in tree.body
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gpulab")
            for alias in node.names
        }
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                given_on += [
                    f"{path.relative_to(PACKAGE.parent)}: {name} (home: {imported[name]})"
                    for name in ast.literal_eval(node.value)
                    if name in imported
                ]
    assert not given_on, "import these from their homes instead:\n" + "\n".join(given_on)
