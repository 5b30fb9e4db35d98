"""The recorded machines' old name, kept on purpose: their home is `gpulab.grading.checks.machines`.

Until grading was split into sub-packages, the explore cells of the system exercises
(``namespaces``, ``cgroup-limits``, ``numa-topology``) imported
``gpulab.grading.machines``. A learner's workspace keeps the notebooks they have worked
on as they are: when gpulab is upgraded, `gpulab.course.workspace.Workspace.sync`
renews only the files the learner never touched, and reports the others as changed
upstream without rewriting them (``gpulab reset NAME`` would, keeping theirs as a
backup). So a notebook started before the move still says ``from gpulab.grading.machines
import load_machine, machine_names, materialize``, and would fail on it.

This module gives those notebooks the same public names, and nothing else: it defines
nothing, holds no state of its own (each name is the very object of its home), and no
module of gpulab imports it. New code, the course's notebooks and check files included,
imports `gpulab.grading.checks.machines`.
"""

from __future__ import annotations

from gpulab.grading.checks.machines import (
    FOLDER,
    Machine,
    MachineError,
    NotRecorded,
    changed,
    load_machine,
    machine_names,
    materialize,
    nvml_expected,
    nvml_names,
    nvml_recording,
    pynvml_from,
)

__all__ = [
    "FOLDER",
    "Machine",
    "MachineError",
    "NotRecorded",
    "changed",
    "load_machine",
    "machine_names",
    "materialize",
    "nvml_expected",
    "nvml_names",
    "nvml_recording",
    "pynvml_from",
]
