"""Diagrams in SVG for the book: drawn by matplotlib's patches, arrows and text (no path
written by hand), well-formed, reproducible, themed by CSS, with ids of their own; and
laid out so that every box sits inside its parent and no two neighbours overlap.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from functools import cache
from itertools import pairwise

import pytest

from gpulab.course import load_course
from gpulab.figures import diagram_layout, diagram_svg
from gpulab.figures.diagram_data import DiagramInputs, build_diagram
from gpulab.figures.diagram_layout import layout, wrap
from gpulab.figures.diagram_model import Box, DiagramData, Link
from gpulab.figures.diagram_svg import WIDTH, render_diagram_svg
from gpulab.figures.diagrams import DIAGRAMS
from gpulab.figures.svg import CLASS
from gpulab.probes.recorded import recorded_results

SVG = "{http://www.w3.org/2000/svg}"


@cache
def _data(diagram_id: str) -> DiagramData:
    course = load_course()
    return build_diagram(
        DIAGRAMS[diagram_id], DiagramInputs(recorded_results(), course.specs, course)
    )


@cache
def _svg(diagram_id: str) -> str:
    return render_diagram_svg(_data(diagram_id))


@pytest.mark.parametrize("diagram_id", list(DIAGRAMS))
def test_every_diagram_draws_well_formed_inline_svg(diagram_id: str) -> None:
    svg = _svg(diagram_id)
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    assert root.get("class") == CLASS and root.get("role") == "img"
    assert root.get("aria-label") == _data(diagram_id).title
    assert root.get("viewBox") and root.get("width") is None and root.get("height") is None
    assert "<metadata" not in svg and "Matplotlib v" not in svg and "<!--" not in svg
    ids = {e.get("id", "") for e in root.iter() if e.get("id")}
    assert all(i.startswith(f"fig-{diagram_id}-") for i in ids), ids
    assert "var(--fg, #1d2127)" in svg and "var(--fig-" in svg
    assert not re.search(r"#0[1-4]0[1-4]0[1-4]\b|#0a0a0[1-6]\b", svg), "a stand-in colour"
    # Text stays text: every label and line of detail is there, as the layout wrapped it.
    texts = {"".join(e.itertext()) for e in root.iter(f"{SVG}text")}
    data = _data(diagram_id)
    assert data.root is not None
    for placed in layout(data.root, data.links, WIDTH)[0]:
        assert set(placed.label) | set(placed.lines) <= texts
        said = "".join((placed.box.label, *placed.box.lines))
        shown = "".join((*placed.label, *placed.lines))
        assert re.sub(r"[\s-]", "", shown) == re.sub(r"[\s-]", "", said)
    for link in data.links:
        assert not link.label or link.label in texts


def test_the_boxes_are_matplotlib_patches_and_arrows_not_paths_written_by_hand() -> None:
    for module in (diagram_svg, diagram_layout):
        source = inspect.getsource(module)
        assert "<path" not in source and not re.search(r"""\bd=["']M""", source)
    svg = _svg("cuda-layers")
    paths = re.findall(r"<path ", svg)
    framed = [b for b in _data("cuda-layers").boxes() if b.label or b.role != "plain"]
    # a rounded rectangle per framed box, a shaft and a head per arrow, a label's backing
    assert len(paths) >= len(framed) + len(_data("cuda-layers").links)


def test_drawing_is_deterministic_within_and_across_processes() -> None:
    assert render_diagram_svg(_data("sm-layout")) == _svg("sm-layout")
    code = textwrap.dedent("""
        import sys
        from gpulab.course import load_course
        from gpulab.figures.diagram_data import DiagramInputs, build_diagram
        from gpulab.figures.diagrams import DIAGRAMS
        from gpulab.probes.recorded import recorded_results
        course = load_course()
        inputs = DiagramInputs(recorded_results(), course.specs, course)
        data = build_diagram(DIAGRAMS["two-socket-server"], inputs)
        assert "matplotlib" not in sys.modules
        from gpulab.figures.diagram_svg import render_diagram_svg
        assert "matplotlib" not in sys.modules   # imported only when a diagram is drawn
        sys.stdout.write(render_diagram_svg(data))
        assert "matplotlib" in sys.modules
    """)
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == _svg("two-socket-server")


def test_an_id_prefix_keeps_two_placements_apart() -> None:
    one = render_diagram_svg(_data("memory-ladder"), id_prefix="figure-memory-ladder-")
    two = render_diagram_svg(_data("memory-ladder"), id_prefix="figure-memory-ladder-2-")
    ids_one = set(re.findall(r' id="([^"]+)"', one))
    ids_two = set(re.findall(r' id="([^"]+)"', two))
    assert not ids_one & ids_two
    assert all(i.startswith("figure-memory-ladder-") for i in ids_one)


def test_a_diagram_with_nothing_to_draw_is_refused() -> None:
    empty = build_diagram(DIAGRAMS["sm-layout"], DiagramInputs())
    assert not empty.drawable
    with pytest.raises(ValueError, match="sm-layout"):
        render_diagram_svg(empty)


@pytest.mark.parametrize("diagram_id", list(DIAGRAMS))
def test_every_box_sits_inside_its_parent_and_beside_its_neighbours(diagram_id: str) -> None:
    data = _data(diagram_id)
    assert data.root is not None
    placed, arrows, height = layout(data.root, data.links, WIDTH)
    where = {id(p.box): p for p in placed}
    for parent in placed:
        for child in (where[id(c)] for c in parent.box.children):
            assert parent.x - 1e-6 <= child.x and child.x + child.w <= parent.x + parent.w + 1e-6
            assert parent.y - 1e-6 <= child.y and child.y + child.h <= parent.y + parent.h + 1e-6
        kids = [where[id(c)] for c in parent.box.children]
        for one, two in pairwise(kids):
            if parent.box.layout == "row":
                assert one.x + one.w < two.x
            else:
                assert one.y + one.h < two.y
    assert height > 0 and all(p.y + p.h <= height + 1e-6 for p in placed)
    assert len(arrows) == len(data.links)


def test_an_arrow_joins_the_facing_edges_of_its_boxes() -> None:
    root = Box(
        "",
        children=(
            Box("", layout="row", children=(Box("a", key="a"), Box("b", key="b"))),
            Box("c", key="c"),
        ),
    )
    links = (Link("a", "b"), Link("a", "c", "down"), Link("c", "b"))
    placed, arrows, _ = layout(root, links, 200)
    box = {p.box.key: p for p in placed if p.box.key}
    across, down, up = arrows
    assert across.start == (box["a"].x + box["a"].w, across.start[1])
    assert across.end == (box["b"].x, across.end[1])
    assert down.start[1] == box["a"].y + box["a"].h and down.end[1] == box["c"].y
    assert up.start[1] == box["c"].y and up.end[1] == box["b"].y + box["b"].h
    # a labelled link between two neighbours leaves more room than a bare one
    bare = layout(root, (), 200)[0]
    assert next(p for p in bare if p.box.key == "c").y < box["c"].y
    with pytest.raises(ValueError, match="inside"):
        layout(Box("outer", key="o", children=(Box("in", key="i"),)), (Link("o", "i"),), 100)


def test_text_is_wrapped_to_fit_and_long_words_are_hyphenated() -> None:
    assert wrap("", 100, 7) == ()
    assert wrap("kernels and compilers", 200, 7) == ("kernels and compilers",)
    lines = wrap("distributed training and collectives", 60, 6.8)
    assert len(lines) > 1 and all(len(line) * 6.8 * 0.58 <= 60 for line in lines)
    assert wrap("observability", 41, 6.8) == ("observabi-", "lity")
    assert wrap("gpu-architecture", 60, 6.8) == ("gpu-", "architecture")
