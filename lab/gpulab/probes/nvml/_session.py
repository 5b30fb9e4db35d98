"""An NVML session: start NVML through a backend, call it, turn answers into readings.

`nvml_session(backend)` starts NVML, yields a `Session` and shuts NVML down.
Every call goes through the backend: by default the real `pynvml` module,
imported only when a session starts; a `Recorder` or a `Replay` (`_record`)
otherwise. A session tries the newer form of a call first and falls back to
older ones; NVML's `NotSupported` becomes a reading with status
`not_supported`, and a function this nvidia-ml-py lacks (`MissingFunction`)
a failed reading that says so. No library, no driver or no GPU raises
`NvmlUnavailable`, whose status ("no_gpu" or "unavailable") and reason the
caller reports; `no_gpu_text` words the first.

Used by the NVML probes (`_probes`, `_sample`), the telemetry sampler
(`_telemetry`), the GPU topology probe (`gpulab.probes.topology`) and the door
to the GPUs (`gpulab.probes.device`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from gpulab.errors import GpulabError
from gpulab.probes.model import Reading, Value

__all__ = [
    "MissingFunction",
    "NvmlUnavailable",
    "Session",
    "no_gpu_text",
    "nvml_session",
    "pynvml_module",
]


# ---- a session: init, calls, readings, shutdown --------------------------------------------


class NvmlUnavailable(GpulabError):
    """NVML cannot be used here; `status` is "no_gpu" or "unavailable", `reason` says why."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def no_gpu_text(reason: str) -> str:
    """The words for "no NVIDIA GPU or driver": the same wherever it is said."""
    return f"no NVIDIA GPU found: {reason}"


class MissingFunction(Exception):
    """The backend has no such function (an older nvidia-ml-py)."""


class NotInAnswer(Exception):
    """The answer lacks this field (an older form of the call answered)."""


@dataclass(frozen=True)
class Field:
    """One reading taken from a call's answer: how to extract it, and how to label it."""

    key: str
    label: str
    unit: str = ""
    extract: Callable[[Any], Value] = lambda answer: answer
    convention: str = ""


class Session:
    """One NVML session: calls through the backend, answers turned into readings."""

    def __init__(self, backend: Any, pynvml: Any) -> None:
        self.nv = backend
        self.pm = pynvml
        self.count = 0  # GPUs NVML lists, set once it started
        self.last_call = ""  # the call that answered or failed last, for messages

    def call(self, name: str, *args: Any) -> Any:
        """One call through the backend; `MissingFunction` if it has no such function."""
        self.last_call = name
        function = getattr(self.nv, name, None)
        if function is None:
            raise MissingFunction(name)
        return function(*args)

    def first(self, *calls: tuple[str, tuple[Any, ...]]) -> Any:
        """The answer of the first call the library and driver have (newer API first)."""
        for number, (name, args) in enumerate(calls):
            try:
                return self.call(name, *args)
            except (MissingFunction, self.pm.NVMLError) as exc:
                absent = isinstance(exc, MissingFunction) or exc.value in (
                    self.pm.NVML_ERROR_FUNCTION_NOT_FOUND,
                    self.pm.NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
                )
                if not absent or number == len(calls) - 1:
                    raise
        raise AssertionError("no calls given")

    def problem(self, key: str, label: str, call: str, exc: Exception) -> Reading:
        """A reading for a call that did not answer."""
        if isinstance(exc, MissingFunction):
            return Reading.failed(
                key, label, f"this nvidia-ml-py has no {call}; a newer nvidia-ml-py may have it"
            )
        if getattr(exc, "value", None) == self.pm.NVML_ERROR_NOT_SUPPORTED:
            return Reading.not_supported(
                key, label, f"not supported on this GPU or driver ({call})"
            )
        return Reading.failed(key, label, f"{call} failed: {exc} ({type(exc).__name__})")

    def read(
        self,
        calls: str | Sequence[tuple[str, tuple[Any, ...]]],
        args: tuple[Any, ...],
        *fields: Field,
    ) -> list[Reading]:
        """Readings from one call's answer; one error makes all of them say why."""
        alternatives = [(calls, args)] if isinstance(calls, str) else list(calls)
        try:
            answer = self.first(*alternatives)
        except (MissingFunction, self.pm.NVMLError) as exc:
            return [self.problem(f.key, f.label, self.last_call, exc) for f in fields]
        readings = []
        for f in fields:
            try:
                readings.append(Reading(f.key, f.label, f.extract(answer), f.unit, f.convention))
            except NotInAnswer as exc:
                readings.append(Reading.not_supported(f.key, f.label, str(exc)))
        return readings

    def value(self, name: str, *args: Any) -> Any:
        """One answer, or None when NVML cannot give it."""
        return self.first_value((name, args))

    def first_value(self, *calls: tuple[str, tuple[Any, ...]]) -> Any:
        """The answer of `first`, or None when NVML cannot give it."""
        try:
            return self.first(*calls)
        except (MissingFunction, self.pm.NVMLError):
            return None


def _init_failure(pm: Any, exc: Any) -> str:
    reasons = {
        pm.NVML_ERROR_LIBRARY_NOT_FOUND: "the NVIDIA driver's NVML library (libnvidia-ml.so.1) "
        "is not installed or not on the library path",
        pm.NVML_ERROR_DRIVER_NOT_LOADED: "the NVIDIA kernel driver is not loaded",
        pm.NVML_ERROR_NO_PERMISSION: "no permission to open the NVIDIA device files (/dev/nvidia*)",
        pm.NVML_ERROR_LIB_RM_VERSION_MISMATCH: "the NVML library and the loaded kernel driver "
        "are different versions (reload the driver or "
        "reboot)",
    }
    return reasons.get(exc.value, f"NVML did not start: {exc} ({type(exc).__name__})")


def pynvml_module() -> Any:
    """The real ``pynvml`` (nvidia-ml-py), imported here only: the one place gpulab
    imports it (its recorder, `_record`, aside).

    Raises `NvmlUnavailable` ("unavailable") when it is not installed."""
    try:
        return importlib.import_module("pynvml")
    except ImportError as exc:
        raise NvmlUnavailable(
            "unavailable", f"nvidia-ml-py (module pynvml) is not installed: {exc}"
        ) from None


@contextmanager
def nvml_session(backend: Any = None) -> Iterator[Session]:
    """Start NVML through `backend` (default: pynvml), yield a session, shut NVML down.

    Raises `NvmlUnavailable` when pynvml is missing, NVML does not start, or the
    driver lists no GPU.
    """
    pm = pynvml_module()
    session = Session(pm if backend is None else backend, pm)
    try:
        session.call("nvmlInit")
    except pm.NVMLError as exc:
        raise NvmlUnavailable("no_gpu", _init_failure(pm, exc)) from None
    try:
        try:
            count = session.call("nvmlDeviceGetCount")
        except pm.NVMLError as exc:
            raise NvmlUnavailable("no_gpu", f"NVML could not count GPUs: {exc}") from None
        session.count = int(count)
        if not count:
            driver = session.value("nvmlSystemGetDriverVersion")
            raise NvmlUnavailable(
                "no_gpu",
                f"the NVIDIA driver{f' {driver}' if driver else ''} is loaded but lists no GPUs",
            )
        yield session
    finally:
        with suppress(pm.NVMLError):  # nothing more to release
            session.call("nvmlShutdown")
