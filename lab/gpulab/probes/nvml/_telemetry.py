"""What the GPU did while something ran: SM clock, power, temperature, clock events.

    with Sampler() as sampler:
        run_the_benchmark()
    result = msgspec.structs.replace(result, telemetry=sampler.telemetry)

A daemon thread polls NVML every `interval_s` (50 ms by default) from entry
to exit, plus once at each end, so even a short run has samples. The
`Telemetry` it gives is the lowest and highest SM clock, the highest power
and temperature, and every clock-event reason seen (a benchmark that ran at
a power cap or hot says so). Without NVML or a GPU it gives
`Telemetry(samples=0)`; a reading the GPU does not support is left out.

With ``keep=True`` it also keeps every sample as a `Sample` (seconds since
entry, SM clock, power, temperature) in `trace`, for a probe that shows how
the GPU changes over a long run (`sustained_matmul`).
"""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from gpulab.probes.model import Telemetry
from gpulab.probes.nvml._decode import decode_clock_event_reasons
from gpulab.probes.nvml._session import NvmlUnavailable, nvml_session

__all__ = ["Sample", "Sampler"]


@dataclass(frozen=True)
class Sample:
    """One poll that NVML answered: when, and what it said (None where it could not read)."""

    t_s: float  # seconds since the sampler started
    sm_clock_mhz: float | None
    power_w: float | None
    temperature_c: float | None


class Sampler:
    """Poll one GPU through NVML on a background thread while a `with` block runs.

    `telemetry` is what was seen so far (all of it after the block);
    `unavailable` says why nothing was sampled; `error` holds a failure of the
    polling thread itself, which ends the sampling but never the block.
    """

    def __init__(
        self, index: int = 0, interval_s: float = 0.05, backend: Any = None, *, keep: bool = False
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, not {interval_s}")
        self.index = index
        self.interval_s = interval_s
        self.backend = backend
        self.keep = keep
        self.unavailable = ""
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stack = ExitStack()
        self._reset()

    def _reset(self) -> None:
        self._polls = 0  # times NVML was asked, answered or not
        self._samples = 0
        self._clock: tuple[float, float] | None = None
        self._power: float | None = None
        self._temperature: float | None = None
        self._reasons = 0
        self._trace: list[Sample] = []
        self._began = time.monotonic()

    @property
    def polls(self) -> int:
        """How many times the thread has asked NVML so far (a sample needs an answer)."""
        with self._lock:
            return self._polls

    @property
    def trace(self) -> tuple[Sample, ...]:
        """Every sample so far, oldest first (empty unless the sampler was made with keep)."""
        with self._lock:
            return tuple(self._trace)

    @property
    def telemetry(self) -> Telemetry:
        with self._lock:
            return Telemetry(
                self._samples,
                self._clock,
                self._power,
                self._temperature,
                decode_clock_event_reasons(self._reasons),
            )

    def __enter__(self) -> Sampler:
        if self._thread is not None:
            raise RuntimeError("this Sampler is already running")
        self._reset()
        self.unavailable, self.error = "", None
        self._stop.clear()
        try:
            session = self._stack.enter_context(nvml_session(self.backend))
        except NvmlUnavailable as exc:
            self.unavailable = exc.reason
            return self
        try:
            handle = session.call("nvmlDeviceGetHandleByIndex", self.index)
        except session.pm.NVMLError as exc:
            self._stack.close()
            self.unavailable = f"GPU {self.index} could not be opened: {exc}"
            return self
        self._thread = threading.Thread(
            target=self._run, args=(session, handle), name="gpulab-telemetry", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._stack.close()

    def _run(self, session: Any, handle: Any) -> None:
        try:
            self._poll(session, handle)
            while not self._stop.wait(self.interval_s):
                self._poll(session, handle)
            self._poll(session, handle)  # the state at the end of the block
        except Exception as exc:  # the thread must end quietly; the caller reads .error
            self.error = exc

    def _poll(self, session: Any, handle: Any) -> None:
        """One sample; a field NVML cannot read is left out of it."""
        with self._lock:
            self._polls += 1
        pm = session.pm
        clock = session.value("nvmlDeviceGetClockInfo", handle, pm.NVML_CLOCK_SM)
        power = session.value("nvmlDeviceGetPowerUsage", handle)
        temperature = session.first_value(
            ("nvmlDeviceGetTemperatureV", (handle, pm.NVML_TEMPERATURE_GPU)),
            ("nvmlDeviceGetTemperature", (handle, pm.NVML_TEMPERATURE_GPU)),
        )
        reasons = session.first_value(
            ("nvmlDeviceGetCurrentClocksEventReasons", (handle,)),
            ("nvmlDeviceGetCurrentClocksThrottleReasons", (handle,)),
        )
        if clock is None and power is None and temperature is None and reasons is None:
            return
        with self._lock:
            self._samples += 1
            if self.keep:
                self._trace.append(
                    Sample(
                        time.monotonic() - self._began,
                        None if clock is None else float(clock),
                        None if power is None else power / 1000,
                        None if temperature is None else float(temperature),
                    )
                )
            if clock is not None:
                low, high = self._clock or (float(clock), float(clock))
                self._clock = (min(low, float(clock)), max(high, float(clock)))
            if power is not None:
                self._power = max(self._power or 0.0, power / 1000)
            if temperature is not None:
                self._temperature = max(self._temperature or float("-inf"), float(temperature))
            if reasons is not None:
                self._reasons |= int(reasons)
