"""The learner's own probe results, kept on their machine: one file per probe, latest wins.

Every probe result that ran (status ok or partial, never a recording) is saved,
from ``gpulab probe run`` and from the app, as the document that
``gpulab probe run NAME --json`` prints (`run_document`, `gpulab probe schema`):
the one result with the `Machine` that measured it. A `ResultStore` keeps them
in one folder, ``<probe>.json`` each, written to a temporary file and renamed
over the old one, so a reader never sees half a file.

A result is used only on the machine that made it (`Machine.same_as`): its
GPUs by NVML UUID, or where NVML gave no UUID their names and the hostname; a
machine without a GPU (host probes still run there) by its hostname. A result
from another machine is set aside with a note (`Loaded.notes`), never mixed
with this one's: figures never mix machines. A file that cannot be read or is
not such a document is skipped with a note naming it (and for a field, where:
``$.results[0].status``), and left where it is: only ``gpulab probe forget``
removes files.

Layering: probes import no other gpulab package but kernels, so the store does
not know where the user's state folder is (`gpulab.course.progress.state_dir`);
the command line and the app, which may ask, give it that folder
(`ResultStore.under`).
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from gpulab.files import atomic_write
from gpulab.probes.model import PROBE_NAME, SCHEMA_VERSION, Gpu, Machine, ProbeResult, RunDocument

__all__ = [
    "RESULTS_FOLDER",
    "Loaded",
    "ResultStore",
    "Saved",
    "run_document",
    "this_machine",
    "worth_saving",
]

RESULTS_FOLDER = "results"
"""The store's folder inside the user's state folder."""

MAX_BYTES = 16 * 2**20
"""A saved file larger than this is not a probe result (they are a few kB): skipped."""

_NAME = re.compile(PROBE_NAME)  # a probe's name: its file's name


def this_machine(backend: Any = None) -> Machine:
    """This machine: its hostname and the GPUs NVML lists (through `backend`, a `Replay` in
    tests); none where NVML cannot start. Blocking (NVML starts): call it from a thread in
    the app."""
    from gpulab.probes.device import open_gpus
    from gpulab.probes.nvml import NvmlUnavailable

    gpus: list[Gpu] = []
    try:
        with open_gpus(backend) as here:
            gpus = [Gpu(*here.identity(index)) for index in here.indices()]
    except NvmlUnavailable:
        pass  # no library, driver or GPU: known by its hostname alone
    return Machine(socket.gethostname(), tuple(gpus))


def worth_saving(result: ProbeResult) -> bool:
    """Whether a result is the learner's to keep: it ran (ok or partial), and is no recording."""
    return result.status in ("ok", "partial") and result.recorded is None


def run_document(results: Sequence[ProbeResult], machine: Machine | None) -> dict[str, Any]:
    """What ``gpulab probe run --json`` prints, and a saved file holds (one result): the
    results with the machine that measured them (None for recorded readings)."""
    from gpulab import __version__

    return RunDocument(
        gpulab=__version__,
        schema=SCHEMA_VERSION,
        results=tuple(results),
        machine=msgspec.UNSET if machine is None else machine,
    ).to_dict()


@dataclass(frozen=True)
class Saved:
    """One saved result, the machine that measured it, and its file."""

    result: ProbeResult
    machine: Machine
    path: Path


@dataclass(frozen=True)
class Loaded:
    """The saved results sorted out for one machine: its own by probe, those of other
    machines (not to be used), and the files skipped (each note names its file)."""

    here: Machine
    mine: dict[str, ProbeResult]
    others: tuple[Saved, ...] = ()
    skipped: tuple[str, ...] = ()

    def notes(self) -> list[str]:
        """What the learner is told: which results are not used here and why, by machine,
        and which files were skipped."""
        by_machine: dict[str, list[str]] = {}
        for saved in self.others:
            by_machine.setdefault(saved.machine.label, []).append(saved.result.probe)
        lines = [
            f"Saved results of {', '.join(probes)} were measured on another machine "
            f"({label}), not this one ({self.here.label}): not used here. "
            "`gpulab probe forget NAME` removes one."
            for label, probes in by_machine.items()
        ]
        return lines + list(self.skipped)


class ResultStore:
    """The learner's saved results in one folder, `<probe>.json` each."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def under(cls, state: Path) -> ResultStore:
        """The store in the user's state folder `state`."""
        return cls(state / RESULTS_FOLDER)

    def path(self, probe: str) -> Path | None:
        """The file of `probe`'s saved result; None for a name no probe can have."""
        return self.folder / f"{probe}.json" if _NAME.match(probe) else None

    def files(self) -> list[Path]:
        """The saved files, by name (none when the folder is absent or cannot be listed)."""
        try:
            return self._listing()
        except OSError:
            return []

    def _listing(self) -> list[Path]:
        try:
            return sorted(
                p for p in self.folder.iterdir() if p.suffix == ".json" and _NAME.match(p.stem)
            )
        except FileNotFoundError:
            return []

    def save(self, result: ProbeResult, machine: Machine) -> Path | None:
        """Save `result` as measured on `machine`, over the probe's last one; None (nothing
        written) when it is not worth saving. Raises OSError when it cannot be written; the
        old file is then left as it was."""
        path = self.path(result.probe)
        if path is None or not worth_saving(result):
            return None
        atomic_write(path, json.dumps(run_document([result], machine), indent=1) + "\n")
        return path

    def read(self) -> tuple[list[Saved], list[str]]:
        """Every saved result, and a note for each file skipped (naming it)."""
        try:
            paths = self._listing()
        except OSError as exc:
            return [], [
                f"{self.folder} cannot be read ({exc.strerror or exc}): your saved "
                "results are not used"
            ]
        found: list[Saved] = []
        skipped: list[str] = []
        for path in paths:
            saved = _read(path)
            if isinstance(saved, str):
                skipped.append(
                    f"{path} was skipped and left as it is: {saved}. "
                    f"`gpulab probe forget {path.stem}` removes it."
                )
            else:
                found.append(saved)
        return found, skipped

    def load(self, here: Machine) -> Loaded:
        """The saved results sorted out for the machine `here` (see `Loaded`)."""
        found, skipped = self.read()
        mine = {s.result.probe: s.result for s in found if s.machine.same_as(here)}
        others = tuple(s for s in found if not s.machine.same_as(here))
        return Loaded(here, mine, others, tuple(skipped))

    def forget(self, probes: Sequence[str] | None = None) -> tuple[list[Path], list[str]]:
        """Remove the saved files of `probes` (None: every one); the files removed, and the
        names that had none. Raises OSError when one cannot be removed."""
        if probes is None:
            paths = self.files()
            for path in paths:
                path.unlink(missing_ok=True)
            return paths, []
        removed: list[Path] = []
        absent: list[str] = []
        for probe in probes:
            found = self.path(probe)
            if found is None or not found.is_file():
                absent.append(probe)
                continue
            found.unlink()
            removed.append(found)
        return removed, absent


def _read(path: Path) -> Saved | str:
    """The saved result in `path`, or why it is not one (where in the file, for a field)."""
    try:
        if path.stat().st_size > MAX_BYTES:
            return f"it is larger than {MAX_BYTES // 2**20} MiB, so not a saved probe result"
        document = RunDocument.from_json(path.read_bytes())
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    except msgspec.ValidationError as exc:  # JSON, but not this format: says where
        return f"it does not follow `gpulab probe schema` (schema {SCHEMA_VERSION}): {exc}"
    except (msgspec.DecodeError, RecursionError) as exc:  # not JSON, nested too deep
        return f"it is not JSON ({exc})"
    if isinstance(document.machine, msgspec.UnsetType):
        return (
            f"it is not a result saved by gpulab (a `gpulab probe run --json` document "
            f"of schema {SCHEMA_VERSION} with its machine)"
        )
    if len(document.results) != 1:
        return "it does not hold exactly one result"
    (result,) = document.results
    if result.probe != path.stem:
        return f"it holds a result of {result.probe!r}, not of {path.stem!r}"
    if not worth_saving(result):
        return (
            f"its result is {result.status}"
            + (", a recording" if result.recorded else "")
            + ", which is never saved"
        )
    return Saved(result, document.machine, path)
