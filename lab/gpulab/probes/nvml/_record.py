"""Record NVML's answers on a machine with a GPU; replay them on one without.

`Recorder` wraps pynvml: it forwards every call and writes down the function,
its arguments and its answer (ctypes structs field by field, bytes as text,
device handles as numbered placeholders) or the `NVMLError` it raised.
`Replay` serves such a recording as a pynvml stand-in: the same call gets the
same answer (the n-th call the n-th answer, then the last one again), structs
come back as objects with the same attributes, and errors come back as real
pynvml exceptions, so `except pynvml.NVMLError_NotSupported` still works.
The few files the probes read beside NVML (a process's name in /proc, a
GPU's NUMA node and local CPUs in sysfs) are recorded and replayed the same
way.

The command that records a machine, ``python -m gpulab.probes.nvml OUT.json``,
is `gpulab.probes.machine_record`: it runs the topology probe as well, which
reads NVML through this package, so it sits above both.
"""

from __future__ import annotations

import ctypes
import datetime as dt
import importlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from gpulab.errors import GpulabError
from gpulab.probes.model import Recorded
from gpulab.probes.sysfs import sysfs_text

__all__ = [
    "FORMAT",
    "Handle",
    "Recorder",
    "Replay",
    "ReplayMismatch",
    "from_plain",
    "to_plain",
]

FORMAT = "gpulab-nvml-recording/1"


class ReplayMismatch(GpulabError):
    """The code asked a recording for a call it does not hold."""


class Handle:
    """A device handle in a replay: a placeholder for the recorded pointer."""

    def __init__(self, number: int) -> None:
        self.number = number

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Handle) and other.number == self.number

    def __hash__(self) -> int:
        return hash(("Handle", self.number))

    def __repr__(self) -> str:
        return f"<handle {self.number}>"


def _pynvml() -> Any:
    return importlib.import_module("pynvml")


# ---- encoding answers as plain JSON --------------------------------------------------------


def to_plain(value: Any, handles: dict[int, int] | None = None) -> Any:
    """Plain JSON for what pynvml takes or returns.

    Structs become {"__struct__": type name, field: value, ...}; device handles
    become {"__handle__": n}, numbered in `handles` by address as first seen.
    """
    handles = {} if handles is None else handles
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, Handle):
        return {"__handle__": value.number}
    if isinstance(value, ctypes._Pointer):
        address = ctypes.cast(value, ctypes.c_void_p).value or 0
        return {"__handle__": handles.setdefault(address, len(handles))}
    if isinstance(value, ctypes.Structure | ctypes.Union):
        fields = {name: to_plain(getattr(value, name), handles) for name, *_ in value._fields_}
        return {"__struct__": type(value).__name__, **fields}
    if isinstance(value, ctypes.Array):
        return [to_plain(item, handles) for item in value]
    if isinstance(value, ctypes._SimpleCData):
        return to_plain(value.value, handles)
    if isinstance(value, list | tuple):
        return [to_plain(item, handles) for item in value]
    if isinstance(value, dict):
        return {str(k): to_plain(v, handles) for k, v in value.items()}
    if hasattr(value, "__dict__"):  # pynvml's nvmlFriendlyObject (process info)
        return {
            "__struct__": type(value).__name__,
            **{k: to_plain(v, handles) for k, v in vars(value).items()},
        }
    raise TypeError(f"cannot record a {type(value).__name__} from NVML: {value!r}")


def from_plain(value: Any) -> Any:
    """The replayed form of a recorded answer: structs as attribute objects."""
    if isinstance(value, list):
        return [from_plain(item) for item in value]
    if isinstance(value, dict):
        if "__handle__" in value:
            return Handle(int(value["__handle__"]))
        fields = {k: from_plain(v) for k, v in value.items() if k != "__struct__"}
        return SimpleNamespace(**fields) if "__struct__" in value else fields
    return value


def _key(call: str, args: Sequence[Any]) -> str:
    return json.dumps([call, list(args)], sort_keys=True)


def _describe(call: str, args: Sequence[Any]) -> str:
    shown = ", ".join(
        f"<handle {a['__handle__']}>" if isinstance(a, dict) and "__handle__" in a else repr(a)
        for a in args
    )
    return f"{call}({shown})"


# ---- recording -----------------------------------------------------------------------------


class Recorder:
    """A pynvml stand-in that forwards every `nvml*` call and records it.

    Other attributes (constants, exception classes) pass straight through.
    Safe to use from several threads (the telemetry sampler polls from one).
    """

    def __init__(self, inner: Any = None) -> None:
        self._inner = _pynvml() if inner is None else inner
        self._lock = threading.Lock()
        self._handles: dict[int, int] = {}
        self.calls: list[dict[str, Any]] = []
        self.missing: list[str] = []

    def __getattr__(self, name: str) -> Any:
        try:
            target = getattr(self._inner, name)
        except AttributeError:
            with self._lock:
                if name.startswith("nvml") and name not in self.missing:
                    self.missing.append(name)
            raise
        if name.startswith("nvml") and callable(target) and not isinstance(target, type):
            return self._recording(name, target)
        return target

    def _recording(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            try:
                answer = function(*args)
            except _pynvml().NVMLError as exc:
                self._add(
                    name,
                    args,
                    error={"class": type(exc).__name__, "value": int(exc.value), "text": str(exc)},
                )
                raise
            self._add(name, args, result=answer)
            return answer

        call.__name__ = name
        return call

    def _add(self, name: str, args: Sequence[Any], **outcome: Any) -> None:
        with self._lock:
            entry = {"call": name, "args": to_plain(list(args), self._handles)}
            if "result" in outcome:
                entry["result"] = to_plain(outcome["result"], self._handles)
            else:
                entry["error"] = outcome["error"]
            self.calls.append(entry)

    def process_name(self, pid: int) -> str | None:
        """The process's name from /proc, recorded like an NVML answer."""
        from gpulab.probes.nvml._sample import process_name

        name = process_name(pid)
        self._add("process_name", [pid], result=name)
        return name

    def sysfs_text(self, path: str) -> str | None:
        """A sysfs file's text (None if unreadable), recorded like an NVML answer."""
        text = sysfs_text(path)
        self._add("sysfs_text", [path], result=text)
        return text

    def recording(self, machine: str, **extra: Any) -> dict[str, Any]:
        """Everything recorded so far, as the JSON a `Replay` reads."""
        try:
            version = metadata.version("nvidia-ml-py")
        except metadata.PackageNotFoundError:
            version = "unknown"
        with self._lock:
            return {
                "format": FORMAT,
                "recorded_by": "python -m gpulab.probes.nvml",
                "machine": machine,
                "date": dt.datetime.now(dt.UTC).date().isoformat(),
                "nvidia_ml_py": version,
                "missing": list(self.missing),
                "calls": list(self.calls),
                **extra,
            }


# ---- replaying -----------------------------------------------------------------------------


class Replay:
    """A pynvml stand-in that answers from a recording.

    A call the recording does not hold raises `ReplayMismatch` naming it; a
    function the recording pynvml lacked is missing here too (AttributeError).
    """

    def __init__(self, recording: Mapping[str, Any], source: str = "the recording") -> None:
        if recording.get("format") != FORMAT:
            raise ReplayMismatch(
                f"{source} is not an NVML recording (format "
                f"{recording.get('format')!r}, expected {FORMAT!r})"
            )
        self.source = source
        self.data = recording
        self._missing = set(recording.get("missing", ()))
        self._answers: dict[str, list[dict[str, Any]]] = {}
        for entry in recording["calls"]:
            self._answers.setdefault(_key(entry["call"], entry["args"]), []).append(entry)
        self._served: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: str | Path) -> Replay:
        path = Path(path)
        return cls(json.loads(path.read_text(encoding="utf-8")), str(path))

    @property
    def recorded(self) -> Recorded:
        """Where the answers come from, to label results made from them."""
        return Recorded(str(self.data.get("machine", "")), str(self.data.get("date", "")))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in self._missing or not name.startswith("nvml"):
            raise AttributeError(f"the recorded pynvml has no {name}")

        def call(*args: Any) -> Any:
            return self._answer(name, args)

        call.__name__ = name
        return call

    def process_name(self, pid: int) -> str | None:
        answer: str | None = self._answer("process_name", (pid,))
        return answer

    def sysfs_text(self, path: str) -> str | None:
        answer: str | None = self._answer("sysfs_text", (path,))
        return answer

    def _answer(self, name: str, args: Sequence[Any]) -> Any:
        encoded = to_plain(list(args), {})
        key = _key(name, encoded)
        with self._lock:
            entries = self._answers.get(key)
            if not entries:
                raise ReplayMismatch(
                    f"{self.source} holds no answer for {_describe(name, encoded)}\n"
                    "    hint: record it again on a GPU machine with "
                    "python -m gpulab.probes.nvml OUT.json"
                )
            served = self._served.get(key, 0)
            self._served[key] = served + 1
            entry = entries[min(served, len(entries) - 1)]
        if "error" in entry:
            raise _pynvml().NVMLError(int(entry["error"]["value"]))
        return from_plain(entry["result"])
