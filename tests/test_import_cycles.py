"""No import cycle in gpulab, counting imports inside functions and under TYPE_CHECKING.

grimp (import-linter's graph) sees every import statement, wherever it stands.
A cycle is a strongly connected group of two or more modules; the test names
each, with the lines that close it, so a new one is easy to undo.
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

LAB = Path(__file__).resolve().parents[1] / "lab"


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Tarjan's strongly connected components of two or more modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in sorted(graph.find_modules_directly_imported_by(module)):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                group.append(other)
                if other == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for module in sorted(graph.modules):
            if module not in index:
                visit(module)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_gpulab_has_no_import_cycle() -> None:
    sys.path.insert(0, str(LAB))
    try:
        graph = grimp.build_graph("gpulab", include_external_packages=False, cache_dir=None)
    finally:
        sys.path.remove(str(LAB))
    cycles = _cycles(graph)
    where = [
        f"{a} -> {b}: line {d['line_number']}: {d['line_contents']}"
        for group in cycles
        for a in group
        for b in group
        for d in graph.get_import_details(importer=a, imported=b)
    ]
    assert not cycles, "\n".join(where)


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.b", imported="p.c")
    assert _cycles(graph) == [["p.a", "p.b"]]
