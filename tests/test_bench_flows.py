"""`bench/flows.py` counts the modules a command runs code of, leaving imports out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOLVED = ROOT / "solutions" / "memory-hierarchy" / "roofline.ipynb"


def flow(*args: str) -> tuple[list[str], str]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "flows.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    *modules, summary = done.stdout.splitlines()
    return modules, summary


def test_a_check_is_counted_from_the_command_line_to_the_record() -> None:
    modules, summary = flow("check", "roofline", "--notebook", str(SOLVED))
    assert modules[0] == "gpulab.cli", modules
    for step in ("gpulab.grading.learn.check", "gpulab.grading.checks.runner"):
        assert step in modules, (step, modules)
    assert len(set(modules)) == len(modules)
    assert summary.endswith(
        f"{len(modules)} modules in this process, 1 processes started, exit status 0"
    ), summary


def test_code_run_while_importing_is_not_a_step() -> None:
    """The probe registry imports every probe module, and some of them call functions of
    their own as they are imported: none of that is the flow of one probe."""
    modules, summary = flow("probe", "run", "hbm_bandwidth")
    assert "gpulab.probes.micro._bandwidth" in modules, modules
    assert "gpulab.probes.micro._p2p_figures" not in modules, modules
    assert "processes started" in summary, summary
