"""What every probe returns: typed, JSON-serialisable results, defined once.

A probe measures or reads one aspect of the machine and returns a
`ProbeResult`: a status, a one-line message, `Reading`s (one value each, with
its unit and how it counts), optional `Table`s (a sweep, a list of NUMA
nodes, the GPU's processes) and, for GPU work, the `Telemetry` seen while it
ran. `RunDocument` is what ``gpulab probe run --json`` prints, what a saved
result file holds (with the `Machine` that measured it) and what the
recording in `recorded/` is.

The records are frozen msgspec structs: the one definition of the format.
msgspec writes them (`to_dict`, plain JSON data), reads them back
(`from_dict`, `RunDocument.from_json`) and generates the JSON schema that
``gpulab probe schema`` prints (`run_schema`). Reading refuses a field missing,
one of the wrong type, a word outside a vocabulary or an unknown field, and
says where (``$.results[3].readings[0].value``), never guessing. A copy is
made changed with `msgspec.structs.replace`.

A probe never raises for a machine that lacks something: no GPU, no driver,
a counter the GPU does not support. Those are results (`no_gpu`,
`unavailable`, a reading with status `not_supported`, or `unknown` where the
probe cannot tell from here), said in words.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Annotated, Any, Final, Literal, Self

import msgspec
from msgspec import UNSET, Meta, UnsetType

from gpulab.timestamps import utc_now

__all__ = [
    "PROBE_NAME",
    "SCHEMA_VERSION",
    "Gpu",
    "Machine",
    "ProbeResult",
    "Reading",
    "ReadingStatus",
    "Recorded",
    "ResultStatus",
    "RunDocument",
    "Table",
    "Telemetry",
    "Value",
    "run_schema",
]

SCHEMA_VERSION: Final = 1
"""The format's version: every result and every document carries it as ``schema``."""

PROBE_NAME = "^[a-z][a-z0-9_]*$"
"""What a probe's name looks like (a saved result's file is named after it)."""

Value = float | int | str | bool | None
# not_supported: this machine, GPU or driver has no such thing; unknown: it may
# have it, but the probe cannot tell from here (a file it may not read).
ReadingStatus = Literal["ok", "not_supported", "unknown", "error"]
# ok: everything read; partial: some readings not supported or failed;
# no_gpu: no NVIDIA GPU or driver here; unavailable: a needed library is
# missing (e.g. CuPy); error: the probe itself failed.
ResultStatus = Literal["ok", "partial", "no_gpu", "unavailable", "error"]

_NO_VALUE_UNLESS_OK = {  # the rule Reading.__post_init__ keeps, said in the schema
    "if": {"properties": {"status": {"enum": ["not_supported", "unknown", "error"]}}},
    "then": {"properties": {"value": {"type": "null"}}},
}


def _plain(value: Any) -> Any:
    """A subclass of a JSON type (NumPy's float64) as the type itself, as `json` writes it,
    and a NumPy or CuPy scalar (int64, bool_, a 0-d array) as the Python value it holds."""
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        return _plain(item())
    raise NotImplementedError(f"{type(value).__name__} is not a JSON value")


class _Record(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A record of the format: frozen, and read back only with the fields it names."""

    def to_dict(self) -> dict[str, Any]:
        """The record as plain JSON data (dicts, lists, numbers, strings), as it is written."""
        data: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(self, enc_hook=_plain))
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """The record in plain JSON data; msgspec's ValidationError (a ValueError naming
        the field, ``$.readings[0].key``) when it is not one."""
        return msgspec.convert(data, cls)


class Reading(_Record, frozen=True):
    """One value a probe read or measured.

    `key` is stable (claims name it); `label` is for people; `convention`
    says how the value counts ("bytes read + bytes written", "dense"). A
    reading that is not ok has no value: `detail` says why.
    """

    key: Annotated[str, Meta(min_length=1)]
    label: str
    value: Value
    unit: str = ""
    convention: str = ""
    status: ReadingStatus = "ok"
    detail: str = ""

    def __post_init__(self) -> None:
        if self.status != "ok" and self.value is not None:
            raise ValueError(
                f"a reading that is {self.status} has no value (it has {self.value!r:.40})"
            )

    @classmethod
    def not_supported(cls, key: str, label: str, detail: str = "") -> Reading:
        return cls(
            key,
            label,
            None,
            status="not_supported",
            detail=detail or "not supported on this GPU or driver",
        )

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


class Table(_Record, frozen=True):
    """Rows of plain values under named columns: a sweep, a list of devices.

    `units` has one unit per column ("" for none); a table made without them
    gets "" for every column. JSON lists the fields in this order (a recording
    written before these were structs has units before rows: both read alike).
    """

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Value, ...], ...]
    units: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.units:
            msgspec.structs.force_setattr(self, "units", ("",) * len(self.columns))


class Telemetry(_Record, frozen=True):
    """What the GPU did while a probe ran, sampled through NVML (null where the GPU does not
    say)."""

    samples: Annotated[int, Meta(ge=0)]
    sm_clock_mhz: Annotated[
        tuple[float, float] | None, Meta(description="the lowest and highest SM clock seen")
    ] = None
    power_w: Annotated[float | None, Meta(description="the highest power seen")] = None
    temperature_c: Annotated[float | None, Meta(description="the highest temperature seen")] = None
    clock_event_reasons: Annotated[
        tuple[str, ...], Meta(description="every clock-event reason seen")
    ] = ()


class Recorded(_Record, frozen=True):
    """Where a recorded result comes from: never passed off as this machine's."""

    machine: Annotated[str, Meta(description='the GPU it was recorded on, "NVIDIA H200"')]
    date: Annotated[str, Meta(description="the ISO date of the recording")]

    @property
    def label(self) -> str:
        return f"recorded on {self.machine}, {self.date}"


class ProbeResult(_Record, frozen=True, tag_field="schema", tag=SCHEMA_VERSION):
    """Everything one probe found."""

    probe: Annotated[str, Meta(pattern=PROBE_NAME)]
    title: str
    status: ResultStatus
    message: str
    readings: tuple[Annotated[Reading, Meta(extra_json_schema=_NO_VALUE_UNLESS_OK)], ...] = ()
    tables: tuple[Table, ...] = ()
    telemetry: Telemetry | None = None
    device: Annotated[str, Meta(description='the GPU it ran on, "" for the host')] = ""
    started: Annotated[str, Meta(description="when it started: ISO 8601, UTC")] = msgspec.field(
        default_factory=utc_now
    )
    seconds: Annotated[float, Meta(ge=0, description="how long it ran, to the millisecond")] = 0.0
    recorded: Annotated[
        Recorded | None,
        Meta(description="null for a result measured on the machine that reports it"),
    ] = None

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "seconds", round(self.seconds, 3))

    def reading(self, key: str) -> Reading | None:
        return next((r for r in self.readings if r.key == key), None)


class Gpu(_Record, frozen=True, order=True):
    """One GPU as NVML names it: its name, and its UUID ("" where NVML gave none)."""

    name: str
    uuid: str = ""


class Machine(_Record, frozen=True):
    """The machine that measured the results: its hostname and the GPUs NVML lists there.
    A saved result (gpulab probe saved) is used only on this machine."""

    host: str
    gpus: tuple[Gpu, ...] = ()

    @property
    def label(self) -> str:
        """For people: "NVIDIA H200 on node7", "2× NVIDIA A100 on lab", "no NVIDIA GPU on x"."""
        counts = Counter(g.name or "an unnamed NVIDIA GPU" for g in self.gpus)
        gpus = ", ".join(name if n == 1 else f"{n}× {name}" for name, n in counts.items())
        return f"{gpus or 'no NVIDIA GPU'} on {self.host or 'a host without a name'}"

    def same_as(self, other: Machine) -> bool:
        """Whether `other` is this machine: the same GPUs by UUID where both sides have
        them all (a hostname may change), else the same hostname and GPU names."""
        mine, theirs = sorted(self.gpus), sorted(other.gpus)
        if mine and theirs and all(g.uuid for g in (*mine, *theirs)):
            return [g.uuid for g in mine] == [g.uuid for g in theirs]
        return self.host == other.host and mine == theirs


class RunDocument(_Record, frozen=True, kw_only=True):
    """What `gpulab probe run --json` prints: the results of one run of one or more probes,
    and the machine that measured them (absent for recorded readings). A result the
    learner's machine measured is saved in this format too, one file per probe."""

    gpulab: Annotated[str, Meta(description="the version of gpulab that wrote it")]
    schema: Literal[1]  # SCHEMA_VERSION
    machine: Machine | UnsetType = UNSET
    results: tuple[ProbeResult, ...]

    @classmethod
    def from_json(cls, raw: bytes) -> RunDocument:
        """The document in the JSON text `raw`; msgspec's DecodeError (a ValueError) when
        it is not JSON, and its ValidationError, naming where (``$.results[3].status``),
        when it is not such a document."""
        return msgspec.json.decode(raw, type=cls)


def run_schema() -> dict[str, Any]:
    """The JSON schema of `RunDocument`, generated from the types (``gpulab probe schema``)."""
    schema: dict[str, Any] = msgspec.json.schema(
        Annotated[
            RunDocument,
            Meta(
                title="gpulab probe run",
                description=f"Schema version {SCHEMA_VERSION}.",
                extra_json_schema={
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "$id": f"https://gpulab.invalid/schema/probe-run-{SCHEMA_VERSION}.json",
                },
            ),
        ]
    )
    return schema


def summarise(readings: Sequence[Reading]) -> ResultStatus:
    """ok when every reading is ok, partial when some are not."""
    return "ok" if all(r.status == "ok" for r in readings) else "partial"
