"""Diagrams drawn from real data: every number in one comes from gpulab's H200 recording,
specs.toml or the course, and the tests read each back from its source.

The diagrams are built from the shipped recording, the real specs.toml and the
real course, as the book and the app build them; a diagram whose source is
absent says why instead of drawing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

from gpulab.course import load_course
from gpulab.course.catalog import Course
from gpulab.figures import DIAGRAMS, FIGURE_IDS, FIGURES
from gpulab.figures.common import binary_size
from gpulab.figures.diagram_data import Diagram, DiagramInputs, build_diagram
from gpulab.figures.diagram_model import Box, DiagramData, Drawing, Link
from gpulab.figures.diagrams_course import markdown_table
from gpulab.figures.diagrams_host import EXAMPLE_SERVER
from gpulab.probes.model import ProbeResult
from gpulab.probes.recorded import recorded_results

RECORDED = "NVIDIA H200, gpulab's recording of 2026-12-03"


@cache
def _course() -> Course:
    return load_course()


def _inputs(**changes: object) -> DiagramInputs:
    course = _course()
    inputs = DiagramInputs(recorded=recorded_results(), specs=course.specs, course=course)
    return replace(inputs, **changes)  # type: ignore[arg-type]


@cache
def _built(diagram_id: str) -> DiagramData:
    return build_diagram(DIAGRAMS[diagram_id], _inputs())


def _box(data: DiagramData, label: str) -> Box:
    found = [b for b in data.boxes() if b.label == label]
    assert len(found) >= 1, f"no box {label!r} in {data.id}"
    return found[0]


def _reading(probe: str, key: str) -> float:
    reading = recorded_results()[probe].reading(key)
    assert reading is not None and isinstance(reading.value, int | float)
    return float(reading.value)


def _spec(ref: str) -> str:
    value = _course().specs.get(ref)
    assert value is not None, ref
    return value.shown


def test_diagram_ids_are_figure_ids_of_their_own() -> None:
    assert len(DIAGRAMS) == 7
    assert not set(DIAGRAMS) & set(FIGURES)
    assert set(DIAGRAMS) <= FIGURE_IDS
    assert all(d.id == key and d.title and d.caption for key, d in DIAGRAMS.items())


@pytest.mark.parametrize("diagram_id", list(DIAGRAMS))
def test_every_diagram_is_drawn_from_the_recording_specs_and_course(diagram_id: str) -> None:
    data = _built(diagram_id)
    assert data.drawable, data.missing
    assert data.source
    keys = [b.key for b in data.boxes() if b.key]
    assert len(keys) == len(set(keys))
    assert {end for link in data.links for end in (link.start, link.end)} <= set(keys)


def test_the_sm_counts_come_from_the_recording_and_specs_toml() -> None:
    data = _built("sm-layout")
    sms = _reading("cuda_properties", "multiProcessorCount")
    assert sms == 132 == _course().specs.get("h200.sms").value  # type: ignore[union-attr]
    assert data.root is not None and data.root.label == "NVIDIA H200: 132 SMs"
    specs = _course().specs
    parts = specs.get("sm-units.warp_schedulers_per_sm").value  # type: ignore[union-attr]
    sm = _box(data, "One SM of 132")
    partitions = [b for b in sm.walk() if b.label.startswith("Partition ")]
    assert len(partitions) == parts == 4
    per = {
        ref: int(specs.get(ref).value / parts)  # type: ignore[union-attr,operator]
        for ref in (
            "sm-units.int32_lanes",
            "sm-units.fp64_lanes_cc90",
            "sm-units.sfus_per_sm",
            "sm-units.tensor_cores_per_sm",
        )
    }
    fp32 = specs.get("sm-units.fp32_lanes_per_partition_cc90").value  # type: ignore[union-attr]
    registers = specs.get("cc-limits.registers_per_partition").value  # type: ignore[union-attr]
    for partition in partitions:
        text = "\n".join(part for b in partition.walk() for part in (b.label, *b.lines))
        assert f"{fp32:g} FP32" in text
        assert f"{per['sm-units.int32_lanes']} INT32" in text
        assert f"{per['sm-units.fp64_lanes_cc90']} FP64" in text
        assert f"{per['sm-units.sfus_per_sm']} SFUs" in text
        assert f"{per['sm-units.tensor_cores_per_sm']} Tensor Core" in text
        assert f"{registers:,.0f} × 32-bit" in text and binary_size(registers * 4) in text
        warps = _reading("cuda_properties", "maxWarpsPerMultiProcessor") / parts
        assert f"up to {warps:g} warps" in text
    register_file = binary_size(_reading("cuda_properties", "registerFilePerMultiprocessor"))
    assert register_file == "256 KiB" and register_file in sm.lines[0]
    shared = binary_size(_reading("cuda_properties", "sharedMemPerMultiprocessor"))
    memory = _box(data, "L1 data cache and shared memory")
    assert memory.lines == (
        f"{_spec('sm-units.l1_shared_cc90')} of SRAM, up to {shared} as shared memory",
    )
    l2 = _box(data, "L2 cache, shared by all 132 SMs")
    assert l2.lines == (
        f"{binary_size(_reading('cuda_properties', 'l2CacheSize'))} as CUDA "
        f"reports it; {_spec('h200.l2_cache')} on the datasheet",
    )
    assert l2.lines[0].startswith("60 MiB") and "50 MB" in l2.lines[0]
    hbm = _box(data, "HBM3e")
    assert hbm.lines == (
        f"{_spec('h200.memory')}, {_spec('h200.memory_bandwidth')} on the datasheet",
    )
    assert data.source == (f"{RECORDED}; specs.toml: topics.sm-units, topics.cc-limits, gpus.h200")


def test_the_ladder_is_the_recordings_latencies_and_sizes() -> None:
    data = _built("memory-ladder")
    assert data.root is not None
    rungs = data.root.children
    assert [r.label.split(":")[0] for r in rungs] == [
        "Registers",
        "Shared memory",
        "L1",
        "L2",
        "HBM3e",
    ]
    widths = [r.width for r in rungs]
    assert widths == sorted(widths) and widths[-1] == 1
    latencies = [
        ("smem_latency", "smem_latency"),
        ("pointer_chase_latency", "l1_latency"),
        ("pointer_chase_latency", "l2_latency"),
        ("pointer_chase_latency", "hbm_latency"),
    ]
    cycles = []
    for rung, (probe, key) in zip(rungs[1:], latencies, strict=True):
        value, ns = _reading(probe, f"{key}_cycles"), _reading(probe, f"{key}_ns")
        assert rung.lines[-1] == f"{value:g} cycles, {ns:.1f} ns per load"
        cycles.append(value)
    assert cycles == sorted(cycles) == [28.6, 32.0, 280.6, 663.4]
    assert rungs[0].lines[0] == "256 KiB per SM (65,536 × 32-bit)"
    assert rungs[1].lines[0] == "up to 228 KiB per SM"
    assert rungs[3].lines[0] == "60 MiB as CUDA reports it, 50 MB on the datasheet"
    copy = _reading("hbm_bandwidth", "memcpy_bandwidth")
    assert rungs[4].lines[0] == (
        f"141 GB and 4.8 TB/s on the datasheet; cudaMemcpy {copy:,.0f} GB/s, read + written"
    )
    assert data.source.startswith(RECORDED)


def test_the_recorded_server_is_what_the_probes_recorded() -> None:
    data = _built("recorded-server")
    system = recorded_results()["system"]
    nodes = next(t for t in system.tables if t.title == "NUMA nodes")
    assert len(nodes.rows) == 1
    node = _box(data, "NUMA node 0")
    cpus = next(b for b in node.walk() if b.label == "CPUs")
    assert cpus.lines == (f"{nodes.rows[0][1]} ({nodes.rows[0][2]} CPUs)",) == ("0-15 (16 CPUs)",)
    gpu = _box(data, "GPU0")
    assert gpu.lines == ("NVIDIA H200", "00000000:00:06.0", "PCIe 32.0 GT/s x16")
    assert not any(b.label == "Inter-socket link" for b in data.boxes())
    assert data.notes[0] == (
        "one NUMA node and one GPU recorded; the NUMA node nearest "
        "each GPU: 0 (NVML memory affinity)"
    )
    assert "numa_node is -1" in data.notes[1]
    assert data.source == RECORDED


def _lesson_matrix() -> dict[str, dict[str, str]]:
    """The numa lesson's illustrative `nvidia-smi topo -m`, row by row."""
    lesson = _course().lesson("numa")
    block = next(
        note.markdown
        for node in lesson.nodes
        for note in node.notes
        if note.kind == "code" and "CPU Affinity" in note.markdown
    )
    lines = [line for line in block.splitlines() if line.strip() and not line.startswith("`")]
    header = lines[0].split()[:5]
    rows = {}
    for line in lines[1:]:
        cells = line.split()
        rows[cells[0]] = dict(zip([*header, "cpus", "node"], cells[1:], strict=False))
    return rows


def test_the_two_socket_example_is_the_numa_lessons_matrix() -> None:
    data = _built("two-socket-server")
    assert data.source == (
        "an example, not a measurement: the numa lesson's illustrative nvidia-smi topo -m"
    )
    matrix = _lesson_matrix()
    where: dict[str, tuple[int, int, int]] = {}  # device: (node, bridge, group)
    for node in EXAMPLE_SERVER:
        for b, bridge in enumerate(node.bridges):
            for g, group in enumerate(bridge.groups):
                for device in group:
                    where[device.name] = (node.index, b, g)
    assert set(where) == set(matrix)
    for name, row in matrix.items():
        if name.startswith("GPU"):
            node = EXAMPLE_SERVER[where[name][0]]
            assert (row["cpus"], row["node"]) == (node.cpus, str(node.index))
        for other, label in row.items():
            if other not in where or other == name:
                continue
            one, two = where[name], where[other]
            expected = "PIX" if one == two else "NODE" if one[0] == two[0] else "SYS"
            assert label == expected, (name, other)
    labels = [b.label for b in data.boxes()]
    assert labels.count("PCIe switch") == 2 and "Inter-socket link" in labels


def test_the_stacks_follow_their_lessons_and_quote_the_recorded_driver() -> None:
    cuda = _built("cuda-layers")
    lesson = _course().lesson("cuda-stack")
    heading = next(n for n in lesson.nodes if n.label == "The layers, top to bottom")
    taught = [
        c.label.split(":")[0].lower()
        for c in heading.children
        if ":" in c.label and "machine" not in c.label
    ]
    assert taught == ["framework", "libraries", "cuda runtime", "driver api", "kernel-mode driver"]
    drawn = [b.label.lower() for b in cuda.boxes() if not b.children]
    positions = [next(i for i, label in enumerate(drawn) if layer in label) for layer in taught]
    assert positions == sorted(positions)
    assert drawn[-1] == "nvidia h200"
    version = recorded_results()["nvml_inventory"].reading("driver_version")
    assert version is not None and version.value == "580.159.04"
    assert "gpulab's H200: 580.159.04, supports CUDA up to 13.0" in cuda.text()
    assert "gpulab's H200: the open kernel modules" in cuda.text()
    container = _built("container-stack")
    assert "NVIDIA Container Toolkit 1.18: three ways in" in container.text()
    assert "gpulab's H200: 580.159.04, open modules" in container.text()
    assert container.notes[0].startswith(
        "On gpulab's H200 no toolkit was installed (nvidia-ctk: not on PATH"
    )


def test_the_stacks_draw_their_structure_without_a_recording() -> None:
    for diagram_id in ("container-stack", "cuda-layers"):
        data = build_diagram(DIAGRAMS[diagram_id], _inputs(recorded={}))
        assert data.drawable and "gpulab's H200" not in data.text()
        assert "recording" not in data.source and not data.notes


def test_the_timeline_is_course_toml_and_the_roadmaps_tables() -> None:
    data = _built("course-timeline")
    course = _course()
    assert data.root is not None
    phases, detail = data.root.children
    assert phases.label == f"The {course.manifest.plan_days} days"
    assert sum(b.span for b in phases.children) == course.manifest.plan_days == 60
    last = max(e.day for e in course.entries)
    assert phases.children[0].label == f"Days 1–{last}" and phases.children[0].span == last
    text = (course.manifest.path.parent / "roadmap.md").read_text(encoding="utf-8")
    table = re.findall(r"^\s*\| ([A-Za-z][^|]*?) \| days (\d+)-(\d+) \|$", text, re.MULTILINE)
    assert len(table) == 5
    for box, (name, low, high) in zip(phases.children[1:], table, strict=True):
        assert box.label == f"Days {low}–{high}" and box.lines == (name, "proposed")
        assert box.span == int(high) - int(low) + 1 and box.role == "proposed"
    listed = [line for box in detail.children for line in box.lines[:-1]]
    assert listed == [e.id for e in sorted(course.entries, key=lambda e: e.day)]
    assert [b.lines[-1] for b in detail.children] == [
        "plan day 1",
        "plan day 2",
        "plan day 3",
        "gpulab's own",
        "kernels and compilers",
    ]
    assert [b.role for b in detail.children] == ["source"] * 3 + ["own"] * 2
    assert data.source == "course.toml and the roadmap lesson's tables"


def test_a_diagram_without_its_sources_says_why() -> None:
    sm = build_diagram(DIAGRAMS["sm-layout"], _inputs(recorded={}))
    assert not sm.drawable and sm.root is None
    assert sm.missing == "no result of the cuda_properties probe"
    ladder = build_diagram(DIAGRAMS["memory-ladder"], _inputs(specs=None))
    assert ladder.missing == "specs.toml has no datasheet for NVIDIA H200"
    timeline = build_diagram(DIAGRAMS["course-timeline"], _inputs(course=None))
    assert timeline.missing == "the course is not here"
    other = dict(recorded_results())
    props = other["cuda_properties"].to_dict()
    props["readings"] = [
        {**r, "value": "8.0"} if r["key"] == "computeCapability" else r for r in props["readings"]
    ]
    other["cuda_properties"] = ProbeResult.from_dict(props)
    assert (
        "compute capability 8.0"
        in build_diagram(DIAGRAMS["sm-layout"], _inputs(recorded=other)).missing
    )


def test_a_link_to_no_box_is_a_mistake_in_the_declaration() -> None:
    broken = Diagram(
        "broken",
        "Broken",
        "A link to nowhere.",
        lambda _f: Drawing(Box("a", key="a"), (Link("a", "b"),)),
    )
    with pytest.raises(ValueError, match="links to no box: \\['b'\\]"):
        build_diagram(broken, DiagramInputs())
    with pytest.raises(ValueError, match="span must be positive"):
        Box("x", span=0)


def test_a_result_that_is_not_recorded_is_named_as_measured() -> None:
    own = {
        name: ProbeResult.from_dict(
            {
                **r.to_dict(),
                "recorded": None,
                "device": "NVIDIA Test GPU",
                "started": "2026-12-24T10:00:00Z",
            }
        )
        for name, r in recorded_results().items()
    }
    data = build_diagram(DIAGRAMS["memory-ladder"], _inputs(recorded=own))
    assert data.source.startswith("NVIDIA Test GPU, measured 2026-12-24")


def test_the_data_side_imports_no_drawing_library() -> None:
    code = textwrap.dedent("""
        import sys
        from gpulab.course import load_course
        from gpulab.figures.diagram_data import DiagramInputs, build_diagram
        from gpulab.figures.diagrams import DIAGRAMS
        from gpulab.probes.recorded import recorded_results
        course = load_course()
        inputs = DiagramInputs(recorded_results(), course.specs, course)
        assert all(build_diagram(d, inputs).drawable for d in DIAGRAMS.values())
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in
                       ("matplotlib", "numpy", "textual", "rich", "PIL"))
        assert not heavy, heavy
        print("ok")
    """)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_every_diagram_is_placed_in_its_lesson() -> None:
    course = _course()
    placed = {
        mark.id: entry.id
        for entry in course.entries
        for node in course.lesson(entry.id).nodes
        for mark in node.figures
        if mark.id in DIAGRAMS
    }
    assert placed == {
        "course-timeline": "roadmap",
        "container-stack": "containers",
        "cuda-layers": "cuda-stack",
        "two-socket-server": "numa",
        "recorded-server": "numa",
        "sm-layout": "gpu-architecture",
        "memory-ladder": "memory-hierarchy",
    }


def test_probe_results_are_read_not_changed() -> None:
    before = {name: r.to_dict() for name, r in recorded_results().items()}
    for diagram_id in DIAGRAMS:
        build_diagram(DIAGRAMS[diagram_id], _inputs())
    after: dict[str, ProbeResult] = recorded_results()
    assert {name: r.to_dict() for name, r in after.items()} == before


def test_a_markdown_table_is_read_row_by_row() -> None:
    assert markdown_table("| phase | days |\n| --- | :-: |\n| serving | days 19-26 |\n") == [
        ["phase", "days"],
        ["serving", "days 19-26"],
    ]


def test_the_linter_knows_diagram_ids_and_still_reports_unknown_ones(tmp_path: Path) -> None:
    from gpulab.course.lesson import unknown_figures

    folder = tmp_path / "lessons"
    folder.mkdir()
    (folder / "course.toml").write_text(
        '[course]\ntitle = "C"\n\n[[lessons]]\nid = "t"\nday = 1\ntitle = "T"\n', encoding="utf-8"
    )
    (folder / "t.md").write_text(
        "---\ntitle: T\nday: 1\nobjectives: [x]\n---\n# T\n\n- The SM\n\n"
        "  <!-- figure: sm-layout -->\n- Nothing\n\n  <!-- figure: no-such-diagram -->\n",
        encoding="utf-8",
    )
    course = load_course(folder)
    problems = [p for p in course.lint(figures=FIGURE_IDS) if "unknown figure" in p.message]
    assert [(p.line, p.message) for p in problems] == [(13, "unknown figure 'no-such-diagram'")]
    assert unknown_figures(course.lesson("t"), FIGURE_IDS) == problems
