"""What every probe returns: typed, JSON-serialisable results.

A probe measures or reads one aspect of the machine and returns a
`ProbeResult`: a status, a one-line message, `Reading`s (one value each, with
its unit and how it counts), optional `Table`s (a sweep, a list of NUMA
nodes, the GPU's processes) and, for GPU work, the `Telemetry` seen while it
ran. `to_dict()` gives plain JSON data that matches `result.schema.json`;
`ProbeResult.from_dict` reads it back (for recorded results).

A probe never raises for a machine that lacks something: no GPU, no driver,
a counter the GPU does not support. Those are results (`no_gpu`,
`unavailable`, a reading with status `not_supported`, or `unknown` where the
probe cannot tell from here), said in words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from gpulab.timestamps import utc_now

__all__ = [
    "SCHEMA_VERSION",
    "ProbeResult",
    "Reading",
    "ReadingStatus",
    "Recorded",
    "ResultStatus",
    "Table",
    "Telemetry",
    "Value",
]

SCHEMA_VERSION = 1

Value = float | int | str | bool | None
# not_supported: this machine, GPU or driver has no such thing; unknown: it may
# have it, but the probe cannot tell from here (a file it may not read).
ReadingStatus = Literal["ok", "not_supported", "unknown", "error"]
# ok: everything read; partial: some readings not supported or failed;
# no_gpu: no NVIDIA GPU or driver here; unavailable: a needed library is
# missing (e.g. CuPy); error: the probe itself failed.
ResultStatus = Literal["ok", "partial", "no_gpu", "unavailable", "error"]


@dataclass(frozen=True)
class Reading:
    """One value a probe read or measured.

    `key` is stable (claims name it); `label` is for people; `convention`
    says how the value counts ("bytes read + bytes written", "dense").
    """

    key: str
    label: str
    value: Value
    unit: str = ""
    convention: str = ""
    status: ReadingStatus = "ok"
    detail: str = ""

    @classmethod
    def not_supported(cls, key: str, label: str, detail: str = "") -> Reading:
        return cls(key, label, None, status="not_supported",
                   detail=detail or "not supported on this GPU or driver")

    @classmethod
    def unknown(cls, key: str, label: str, detail: str) -> Reading:
        """A reading the probe cannot make from here; `detail` says why."""
        return cls(key, label, None, status="unknown", detail=detail)

    @classmethod
    def failed(cls, key: str, label: str, detail: str) -> Reading:
        return cls(key, label, None, status="error", detail=detail)

    @property
    def shown(self) -> str:
        """The value as a person reads it: "4262 GB/s", "not supported", "cannot tell"."""
        if self.status == "not_supported":
            return "not supported"
        if self.status == "unknown":
            return "cannot tell"
        if self.status == "error":
            return "error"
        value = self.value
        if isinstance(value, bool):
            text = "yes" if value else "no"
        elif isinstance(value, float):
            text = f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
        elif value is None:
            text = "–"
        else:
            text = str(value)
        return f"{text} {self.unit}".strip()

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "value": self.value, "unit": self.unit,
                "convention": self.convention, "status": self.status, "detail": self.detail}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reading:
        return cls(str(data["key"]), str(data["label"]), data.get("value"),
                   str(data.get("unit", "")), str(data.get("convention", "")),
                   cast(ReadingStatus, data.get("status", "ok")), str(data.get("detail", "")))


@dataclass(frozen=True)
class Table:
    """Rows of plain values under named columns: a sweep, a list of devices."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Value, ...], ...]
    units: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "columns": list(self.columns),
                "units": list(self.units) or [""] * len(self.columns),
                "rows": [list(row) for row in self.rows]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Table:
        return cls(str(data["title"]), tuple(data["columns"]),
                   tuple(tuple(row) for row in data["rows"]), tuple(data.get("units", ())))


@dataclass(frozen=True)
class Telemetry:
    """What the GPU did while a probe ran, sampled through NVML."""

    samples: int
    sm_clock_mhz: tuple[float, float] | None = None      # min, max
    power_w: float | None = None                         # max
    temperature_c: float | None = None                   # max
    clock_event_reasons: tuple[str, ...] = ()            # every reason seen

    def to_dict(self) -> dict[str, Any]:
        return {"samples": self.samples,
                "sm_clock_mhz": list(self.sm_clock_mhz) if self.sm_clock_mhz else None,
                "power_w": self.power_w, "temperature_c": self.temperature_c,
                "clock_event_reasons": list(self.clock_event_reasons)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Telemetry:
        clocks = data.get("sm_clock_mhz")
        return cls(int(data["samples"]),
                   (float(clocks[0]), float(clocks[1])) if clocks else None,
                   data.get("power_w"), data.get("temperature_c"),
                   tuple(data.get("clock_event_reasons", ())))


@dataclass(frozen=True)
class Recorded:
    """Where a recorded result comes from: never passed off as this machine's."""

    machine: str      # "NVIDIA H200"
    date: str         # ISO date of the recording

    @property
    def label(self) -> str:
        return f"recorded on {self.machine}, {self.date}"


@dataclass(frozen=True)
class ProbeResult:
    """Everything one probe found."""

    probe: str
    title: str
    status: ResultStatus
    message: str
    readings: tuple[Reading, ...] = ()
    tables: tuple[Table, ...] = ()
    telemetry: Telemetry | None = None
    device: str = ""                      # the GPU it ran on, "" for the host
    started: str = field(default_factory=utc_now)
    seconds: float = 0.0
    recorded: Recorded | None = None

    def reading(self, key: str) -> Reading | None:
        return next((r for r in self.readings if r.key == key), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "probe": self.probe, "title": self.title, "status": self.status,
            "message": self.message,
            "readings": [r.to_dict() for r in self.readings],
            "tables": [t.to_dict() for t in self.tables],
            "telemetry": self.telemetry.to_dict() if self.telemetry else None,
            "device": self.device, "started": self.started,
            "seconds": round(self.seconds, 3),
            "recorded": ({"machine": self.recorded.machine, "date": self.recorded.date}
                         if self.recorded else None),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProbeResult:
        telemetry = data.get("telemetry")
        recorded = data.get("recorded")
        return cls(
            probe=str(data["probe"]), title=str(data["title"]),
            status=cast(ResultStatus, data["status"]), message=str(data["message"]),
            readings=tuple(Reading.from_dict(r) for r in data.get("readings", ())),
            tables=tuple(Table.from_dict(t) for t in data.get("tables", ())),
            telemetry=Telemetry.from_dict(telemetry) if telemetry else None,
            device=str(data.get("device", "")), started=str(data.get("started", "")),
            seconds=float(data.get("seconds", 0.0)),
            recorded=Recorded(str(recorded["machine"]), str(recorded["date"]))
            if recorded else None,
        )


def summarise(readings: Sequence[Reading]) -> ResultStatus:
    """ok when every reading is ok, partial when some are not."""
    return "ok" if all(r.status == "ok" for r in readings) else "partial"
