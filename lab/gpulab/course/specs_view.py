"""specs.toml as Rich tables, for `gpulab specs`: GPUs side by side, or one in full."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from gpulab.course.problems import CourseError
from gpulab.course.specs_model import Specs, SpecTable

__all__ = ["specs_view"]


def specs_view(specs: Specs, names: list[str]) -> RenderableType:
    """GPUs side by side (all when `names` is empty), or one GPU or topic in full.

    Raises `CourseError` for a name that is neither a GPU nor a topic.
    """
    tables = [_find(specs, name) for name in names]
    if len(tables) == 1:
        return _detail(tables[0])
    gpus = tables or list(specs.gpus.values())
    return _side_by_side(gpus)


def _find(specs: Specs, name: str) -> SpecTable:
    found = specs.gpus.get(name) or specs.topics.get(name)
    if found is None:
        known = ", ".join([*specs.gpus, *specs.topics])
        raise CourseError.unknown(specs.path, f"no GPU or topic named {name!r}", f"known: {known}")
    return found


def _side_by_side(tables: list[SpecTable]) -> RenderableType:
    grid = Table(
        title="Datasheet values (dense unless noted)", title_justify="left", header_style="bold"
    )
    grid.add_column("spec", style="dim")
    for table in tables:
        grid.add_column(
            table.title.removeprefix("NVIDIA ").removeprefix("GeForce "), justify="right"
        )
    keys = list(dict.fromkeys(key for table in tables for key in table.values))
    grid.add_row("architecture", *(t.architecture for t in tables))
    grid.add_row("compute capability", *(t.compute_capability for t in tables))
    for key in keys:
        cells = [t.values[key].shown if key in t.values else "–" for t in tables]
        grid.add_row(key.replace("_", " "), *cells)
    hint = Text("Every value's source and notes: gpulab specs <gpu>", style="dim")
    return Group(grid, hint)


def _detail(table: SpecTable) -> RenderableType:
    heading = table.title
    if table.kind == "gpu":
        heading += f" ({table.architecture}, compute capability {table.compute_capability})"
    grid = Table(title=heading, title_justify="left", header_style="bold", expand=False)
    grid.add_column("spec", style="dim")
    grid.add_column("value", justify="right")
    grid.add_column("note", ratio=1)
    grid.add_column("source", ratio=1, overflow="fold")
    for key, value in table.values.items():
        source = Text(value.source.title)
        source.append("\n" + value.source.location, style="dim")
        grid.add_row(key.replace("_", " "), value.shown, value.note, source)
    return grid
