"""The SVG the book inlines: well-formed, reproducible, themed by CSS, ids of its own.

Every figure is drawn from the H200 recording and parsed back as XML. The
same figure drawn twice, and drawn again in a fresh process (a different hash
seed, a fresh matplotlib), gives the same bytes, so building the book twice
changes nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from functools import cache

import pytest

from gpulab.course import load_course
from gpulab.figures import FIGURES, FigureData, Inputs, build_figure, load_baseline
from gpulab.figures.svg import CLASS, render_svg
from gpulab.probes.recorded import recorded_results

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}href"


@cache
def _data(figure_id: str) -> FigureData:
    course = load_course()
    inputs = Inputs(
        recorded=recorded_results(),
        specs=course.specs,
        baseline=load_baseline(course.manifest.path.parent),
    )
    return build_figure(FIGURES[figure_id], inputs)


@cache
def _svg(figure_id: str) -> str:
    return render_svg(_data(figure_id))


@pytest.mark.parametrize("figure_id", list(FIGURES))
def test_every_figure_draws_well_formed_inline_svg(figure_id: str) -> None:
    svg = _svg(figure_id)
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    assert root.get("class") == CLASS and root.get("role") == "img"
    assert root.get("aria-label") == _data(figure_id).title
    assert root.get("viewBox") and root.get("width") is None and root.get("height") is None
    assert not svg.startswith("<?xml") and "<!DOCTYPE" not in svg
    # Reproducible: no date, no creator, no comment.
    assert "<metadata" not in svg and "Matplotlib v" not in svg and "<!--" not in svg
    # Every id is the figure's own, and every reference points at one of them.
    ids = {e.get("id", "") for e in root.iter() if e.get("id")}
    assert all(i.startswith(f"fig-{figure_id}-") for i in ids), ids
    refs = set(re.findall(r"url\(#([^)]+)\)", svg))
    refs |= {e.get(XLINK, "")[1:] for e in root.iter() if e.get(XLINK)}
    assert refs <= ids, refs - ids
    # Colours come from the book's theme, through CSS custom properties.
    assert "var(--fg, #1d2127)" in svg and "var(--fig-1, " in svg
    assert not re.search(r"#0[1-4]0[1-4]0[1-4]\b|#0a0a0[1-6]\b", svg), "a stand-in colour"
    # Text stays text: the axis labels can be found and selected.
    texts = " ".join("".join(e.itertext()) for e in root.iter(f"{SVG}text"))
    y = _data(figure_id).y
    assert y.label in texts


def test_the_stylesheet_inside_the_svg_applies_to_the_figure_only() -> None:
    svg = _svg("roofline")
    for style in ET.fromstring(svg).iter(f"{SVG}style"):
        for rule in re.findall(r"([^{}]+)\{", style.text or ""):
            assert rule.strip().startswith(f"svg.{CLASS}"), rule


def test_drawing_is_deterministic_within_and_across_processes() -> None:
    for figure_id in ("roofline", "bank-conflicts"):
        assert render_svg(_data(figure_id)) == render_svg(_data(figure_id))
    code = textwrap.dedent("""
        import sys
        from gpulab.course import load_course
        from gpulab.figures import FIGURES, Inputs, build_figure, load_baseline
        from gpulab.figures.svg import render_svg
        from gpulab.probes.recorded import recorded_results
        course = load_course()
        inputs = Inputs(recorded_results(), specs=course.specs,
                        baseline=load_baseline(course.manifest.path.parent))
        sys.stdout.write(render_svg(build_figure(FIGURES["latency-footprint"], inputs)))
    """)
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=env,
    )
    assert done.stdout == _svg("latency-footprint")


def test_an_id_prefix_keeps_two_placements_apart() -> None:
    one = render_svg(_data("stride-sweep"), id_prefix="figure-stride-sweep-")
    two = render_svg(_data("stride-sweep"), id_prefix="figure-stride-sweep-2-")
    ids_one = set(re.findall(r' id="([^"]+)"', one))
    ids_two = set(re.findall(r' id="([^"]+)"', two))
    assert ids_one and ids_two and not ids_one & ids_two


def test_a_figure_with_nothing_to_draw_is_refused() -> None:
    empty = build_figure(FIGURES["stride-sweep"], Inputs())
    assert not empty.drawable
    with pytest.raises(ValueError, match="stride-sweep"):
        render_svg(empty)
