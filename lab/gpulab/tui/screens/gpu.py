"""The GPU screen (`g`): what NVML says about the GPU, and its clocks, power and load, live.

A thread worker reads the inventory once, then samples GPU 0 about once a
second and posts each sample to the screen, which feeds four sparklines (SM
clock, power, GPU busy, memory used). Leaving the screen stops the worker
before its next sample. Without a GPU the screen says why, and shows the
readings recorded on gpulab's own H200 as a static, labelled table: recorded
numbers never move like live ones. The inventory's result goes on up to the
app (`Inventoried` bubbles), which learns from it whether GPU probes can run here.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import getters, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Header, Static
from textual.worker import get_current_worker

from gpulab.tui.measure import CANNOT_RUN, run_probe_for
from gpulab.tui.screens.base import LabScreen
from gpulab.tui.widgets import SensorPanel

if TYPE_CHECKING:
    from gpulab.probes.model import ProbeResult

__all__ = ["SAMPLE_INTERVAL", "GpuScreen"]

SAMPLE_INTERVAL = 1.0
"""Seconds between two live samples."""

SENSORS = (
    ("clock_sm", "SM clock"),
    ("power_draw", "Power"),
    ("utilization_gpu", "GPU busy"),
    ("memory_used_mib", "Memory used"),
)
"""The readings of `nvml.sample` drawn as sparklines, with their titles."""

INVENTORY = (
    ("name", "GPU"),
    ("driver_version", "Driver"),
    ("cuda_driver_version", "CUDA (driver)"),
    ("memory_total_mib", "Memory"),
    ("clocks_max_sm", "Max SM clock"),
    ("power_limit", "Power limit"),
    ("pcie", "PCIe (max)"),
    ("compute_mode", "Compute mode"),
    ("ecc_mode_current", "ECC"),
    ("mig_mode_current", "MIG"),
)
"""The inventory readings shown at the top, in order ("pcie" joins generation and width)."""

SAMPLE = (
    ("clock_sm", "SM clock"),
    ("clock_mem", "Memory clock"),
    ("power_draw", "Power"),
    ("temperature", "Temperature"),
    ("utilization_gpu", "GPU busy"),
    ("utilization_memory", "Memory busy"),
    ("memory_used_mib", "Memory used"),
    ("pstate", "P-state"),
    ("clock_event_reasons", "Clock events"),
)
"""The sample readings shown in the recorded (static) table."""


class GpuScreen(LabScreen):
    """GPU 0's inventory and live sparklines, or why there is no GPU and a recorded H200."""

    HELP_GROUP = "GPU"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,g", "back", "Back"),
    ]

    inventory = getters.query_one("#gpu-inventory", Static)
    live = getters.query_one("#gpu-live", Grid)
    conditions = getters.query_one("#gpu-conditions", Static)
    missing = getters.query_one("#gpu-missing", Static)
    recorded = getters.query_one("#gpu-recorded", Static)

    class Inventoried(Message):
        """The inventory was read (or not); `recorded` holds recorded results if not."""

        def __init__(self, result: ProbeResult, recorded: dict[str, ProbeResult]) -> None:
            super().__init__()
            self.result = result
            self.recorded = recorded

    class Sampled(Message, bubble=False):
        """One live sample was read."""

        def __init__(self, result: ProbeResult) -> None:
            super().__init__()
            self.result = result

    def __init__(self, nvml_backend: Any = None) -> None:
        super().__init__()
        self.nvml_backend = nvml_backend
        self.samples = 0
        self.sampler_done = threading.Event()
        """Set when the sampling thread has returned (after the screen is left)."""
        self._stop = threading.Event()
        self.title = "GPU"
        self.sub_title = "looking for an NVIDIA GPU…"

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="gpu-body"):
            yield Static(Text("Asking NVML about the GPU…", style="dim italic"), id="gpu-inventory")
            with Grid(id="gpu-live"):
                for key, title in SENSORS:
                    yield SensorPanel(title, id=f"sensor-{key.replace('_', '-')}")
            yield Static(id="gpu-conditions")
            yield Static(id="gpu-missing")
            yield Static(id="gpu-recorded")
        yield Footer()

    def on_mount(self) -> None:
        self.inventory.border_title = "inventory"
        for widget in (self.live, self.conditions, self.missing, self.recorded):
            widget.display = False
        self._sample()

    def on_unmount(self) -> None:
        self._stop.set()

    def sensor(self, key: str) -> SensorPanel:
        """The sparkline panel of one sample reading."""
        return self.query_one(f"#sensor-{key.replace('_', '-')}", SensorPanel)

    @work(thread=True, exclusive=True, group="gpu-sampler", exit_on_error=False)
    def _sample(self) -> None:
        """Read the inventory, then sample until the screen is left (runs in a thread)."""
        worker = get_current_worker()
        try:
            inventory = run_probe_for("nvml_inventory", self.nvml_backend)
            recorded: dict[str, ProbeResult] = {}
            if inventory.status in CANNOT_RUN:
                from gpulab.probes.recorded import recorded_results

                recorded = recorded_results()
            self.post_message(self.Inventoried(inventory, recorded))
            if inventory.status not in ("ok", "partial"):
                return
            while not (worker.is_cancelled or self._stop.is_set()):
                self.post_message(self.Sampled(run_probe_for("nvml_sample", self.nvml_backend)))
                self._stop.wait(SAMPLE_INTERVAL)
        finally:
            self.sampler_done.set()

    def on_gpu_screen_inventoried(self, event: Inventoried) -> None:
        result = event.result  # not stopped: the app notes it too
        panel = self.inventory
        if result.status in CANNOT_RUN:
            panel.display = False
            self.sub_title = "no GPU here"
            self._show_missing(result, event.recorded)
            return
        if result.status == "error":
            self.sub_title = "NVML failed"
            panel.update(Text(result.message, style="bold red"))
            return
        name = result.reading("name")
        count = result.reading("gpu_count")
        panel.border_title = name.shown if name is not None else "GPU 0"
        if count is not None and isinstance(count.value, int) and count.value > 1:
            panel.border_subtitle = f"GPU 0 of {count.value}"
        panel.update(_readings_table(result, INVENTORY))
        self.sub_title = "live · about one sample a second"
        power, memory = result.reading("power_limit"), result.reading("memory_total_mib")
        if power is not None and power.status == "ok":
            self.sensor("power_draw").limit = power.shown
        if memory is not None and memory.status == "ok":
            self.sensor("memory_used_mib").limit = memory.shown
        self.live.display = True
        self.conditions.display = True

    def on_gpu_screen_sampled(self, event: Sampled) -> None:
        result = event.result
        self.samples += 1
        conditions = self.conditions
        if result.status not in ("ok", "partial"):
            conditions.update(Text(f"sample {self.samples}: {result.message}", style="yellow"))
            return
        for key, _ in SENSORS:
            self.sensor(key).add(result.reading(key))
        text = Text()
        for key, label in (
            ("pstate", "P-state"),
            ("temperature", "temperature"),
            ("clock_mem", "memory clock"),
            ("clock_event_reasons", "clock events"),
            ("compute_processes", "running"),
        ):
            reading = result.reading(key)
            if reading is not None:
                text.append(f"{label} ", style="dim")
                text.append(reading.shown, style="bold")
                text.append("   ")
        text.append(f"sample {self.samples}", style="dim")
        conditions.update(text)

    def action_back(self) -> None:
        self.app.pop_screen()

    def _show_missing(self, result: ProbeResult, recorded: dict[str, ProbeResult]) -> None:
        missing = self.missing
        headline = (
            "No NVIDIA GPU found"
            if result.status == "no_gpu"
            else "The GPU cannot be read: NVML is not available"
        )
        text = Text(headline, style="bold")
        text.append(f"\n\n{result.message}")
        text.append(
            "\n\nOn a machine with an NVIDIA GPU and its driver, this screen shows the "
            "GPU's inventory and its clocks, power and load, live.",
            style="dim",
        )
        missing.update(text)
        missing.border_title = "no GPU"
        missing.display = True
        panel = self.recorded
        panel.display = True
        shown = [recorded[name] for name in ("nvml_inventory", "nvml_sample") if name in recorded]
        if not shown:
            panel.border_title = "recorded readings"
            panel.update(Text("No recorded readings in this copy of gpulab.", style="dim italic"))
            return
        first = shown[0].recorded
        panel.border_title = first.label if first is not None else "recorded"
        parts: list[RenderableType] = [
            Text(
                "Readings recorded on gpulab's own GPU, for reference: they are not this "
                "machine's, and they do not change.",
                style="italic",
            )
        ]
        for found in shown:
            rows = INVENTORY if found.probe == "nvml_inventory" else SAMPLE
            title = "inventory" if found.probe == "nvml_inventory" else "a sample, at rest"
            label = found.recorded.label if found.recorded is not None else "recorded"
            parts.append(Text(f"\n{title} · {label}", style="bold"))
            parts.append(_readings_table(found, rows))
        panel.update(Group(*parts))


def _readings_table(result: ProbeResult, rows: tuple[tuple[str, str], ...]) -> Table:
    """Label and value for each of `rows` that the result holds, two pairs to a line."""
    cells: list[tuple[str, Text]] = []
    for key, label in rows:
        value = _shown(result, key)
        if value is not None:
            cells.append((label, value))
    grid = Table.grid(padding=(0, 2), expand=True)
    for _ in range(2):
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(ratio=1)
    for start in range(0, len(cells), 2):
        line: list[str | Text] = []
        for label, value in cells[start : start + 2]:
            line += [label, value]
        grid.add_row(*line)
    return grid


def _shown(result: ProbeResult, key: str) -> Text | None:
    """One inventory or sample value as shown, or None when the result lacks it."""
    if key == "pcie":
        gen, width = result.reading("pcie_gen_max"), result.reading("pcie_width_max")
        if gen is None or width is None:
            return None
        if gen.status == width.status == "ok":
            return Text(f"Gen{gen.value} x{width.value}", style="bold")
        return Text("not supported", style="dim")
    reading = result.reading(key)
    if reading is None:
        return None
    value = Text(reading.shown, style="bold" if reading.status == "ok" else "dim")
    if key == "memory_total_mib" and isinstance(reading.value, int):
        value.append(f" ({reading.value / 1024:.1f} GiB)", style="dim")
    return value
