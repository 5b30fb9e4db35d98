"""One exercise's checks on one notebook: what the learner's ``gpulab check``, the app, the
notebook's ``check(...)`` and the instructor's ``gpulab grade`` all run.

- `runner`: `run_checks` runs an exercise's checks (pytest, in a process of its
  own) on a notebook and reads back the plugin's report (`CheckReport`);
- `pytest_plugin`: the pytest side: the `learner` fixture, points, the report
  (``-p gpulab.grading.checks.pytest_plugin``);
- `learner` and `worker`: the trusted side's handle on a learner's answers, and
  the process that runs the learner's cells (``python -m
  gpulab.grading.checks.worker``), started in the sandbox;
- `gpu`, `kernel_worker` and `tasks/`: kernel answers compiled, launched,
  compared and timed in a fresh process that runs no learner Python;
- `protocol`: the words and records that cross those processes;
- `notebook` and `cells`: a notebook read as a hostile learner's, and its cells
  by role; `draws`: the hidden checks' fresh inputs; `machines`: recorded
  machines and NVML sessions; `reference/`: the checks' own readings of this
  machine.

The course's check files (``exercises/*/test_*.py``, ``solutions/*/test_*_hidden.py``)
import these modules by name. The rule of this package: it imports the sandbox
and nothing else of grading; it knows nothing of submissions, gradebooks or
class runs. This ``__init__`` imports nothing, so the workers started as its
modules load only what they need.
"""
