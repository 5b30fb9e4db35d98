"""The commands that measure this machine: probe list/run/schema/saved/forget, image check,
doctor.

`probe run` saves every result that ran (ok or partial) in the learner's state
folder (`gpulab.probes.saved`), where the app finds it; `probe saved` lists
what is kept, and on which machine it was measured; `probe forget` removes it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gpulab.errors import ExitCode

if TYPE_CHECKING:
    from gpulab.probes import ProbeResult

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    """Add the measuring commands to the `gpulab` parser's subcommands."""
    probe = commands.add_parser(
        "probe",
        help="measure this machine: system, NVML, CUDA, microbenchmarks",
        description="Run the probes that measure the lessons' claims on this machine.",
    )
    probe_commands = probe.add_subparsers(title="commands", metavar="COMMAND", required=True)
    probe_list = probe_commands.add_parser(
        "list", help="the probes, what each needs and does", description="List the probes."
    )
    probe_list.set_defaults(handler=_probe_list)
    probe_run = probe_commands.add_parser(
        "run",
        help="run probes by name",
        description="Run probes and print their results as tables, or as JSON with --json "
        "(the format is `gpulab probe schema`). Each result that ran is saved for "
        "this machine, over the probe's last one: the app draws your figures "
        "from them (`gpulab probe saved` lists them).",
    )
    probe_run.add_argument(
        "names", metavar="NAME", nargs="*", help="probe names from `gpulab probe list`"
    )
    probe_run.add_argument("--all", action="store_true", help="run every probe")
    probe_run.add_argument("--json", action="store_true", help="print JSON for scripts")
    probe_run.add_argument(
        "--recorded",
        action="store_true",
        help="show the readings recorded on gpulab's H200 instead of "
        "measuring this machine (labelled as such)",
    )
    probe_run.add_argument(
        "--recording",
        choices=("h200", "h100"),
        help="with --recorded: which of gpulab's recordings (default h200)",
    )
    probe_run.set_defaults(handler=_probe_run)
    probe_schema = probe_commands.add_parser(
        "schema",
        help="print the JSON schema of `probe run --json`",
        description="Print the JSON schema that `gpulab probe run --json` output follows.",
    )
    probe_schema.set_defaults(handler=_probe_schema)
    probe_saved = probe_commands.add_parser(
        "saved",
        help="list the results `probe run` and the app saved, and their machines",
        description="List the probe results saved on this machine (the latest of each probe): "
        "when each was measured, and on which machine. Only this machine's are "
        "used, by the app's figures; files that cannot be read are named.",
    )
    probe_saved.set_defaults(handler=_probe_saved)
    probe_forget = probe_commands.add_parser(
        "forget",
        help="remove saved results by name, or all of them",
        description="Remove saved probe results (`gpulab probe saved` lists them), whichever "
        "machine measured them; the app then draws those figures from gpulab's "
        "recording until you measure again.",
    )
    probe_forget.add_argument(
        "names", metavar="NAME", nargs="*", help="probe names from `gpulab probe saved`"
    )
    probe_forget.add_argument("--all", action="store_true", help="remove every saved result")
    probe_forget.set_defaults(handler=_probe_forget)

    image = commands.add_parser(
        "image",
        help="check a container image you built for this machine",
        description="Check a container image you built (docker or podman): run it with the "
        "GPUs passed in and see that the GPU is visible inside and that the "
        "driver, the image's CUDA, its nvcc and PyTorch's CUDA agree. Nothing is "
        "pulled. Exit status 1 if they do not, or the check cannot run.",
    )
    image_commands = image.add_subparsers(dest="image_command", metavar="COMMAND", required=True)
    image_check = image_commands.add_parser(
        "check",
        help="run IMAGE with the GPUs and check its versions",
        description="Run IMAGE (on this machine already: docker build -t IMAGE .) with the "
        "GPUs passed in, and check what it holds against the driver.",
    )
    image_check.add_argument("image", metavar="IMAGE", help="the image's name or id")
    image_check.add_argument("--json", action="store_true", help="print JSON for scripts")
    image_check.set_defaults(handler=_image_check)

    doctor = commands.add_parser(
        "doctor",
        help="check this machine for the course: driver, CUDA, CuPy, cgroups, NUMA, "
        "and gpulab's own tools",
        description="The environment check of days 1 and 2 as a checklist, then what the "
        "course tools need (pytest, JupyterLab, your workspace, bubblewrap for "
        "grading), with a fix for each item that fails. Exit status 1 if a check "
        "fails.",
    )
    doctor.add_argument("--json", action="store_true", help="print JSON for scripts")
    doctor.set_defaults(handler=_doctor)


def _probe_list(args: argparse.Namespace) -> int:
    from rich.console import Console

    from gpulab.probes.cuda import cannot_run_here
    from gpulab.probes.render import render_probe_list

    Console().print(render_probe_list(cannot_run_here()))
    return ExitCode.OK


def _probe_run(args: argparse.Namespace) -> int:
    import json

    from gpulab.probes import PROBES, get_probe, run_probe
    from gpulab.probes.registry import exit_status
    from gpulab.probes.saved import run_document

    if args.recording and not args.recorded:
        print("gpulab: --recording names a recording to show: give --recorded too", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.all == bool(args.names):
        print("gpulab: name the probes to run, or give --all", file=sys.stderr)
        return ExitCode.BAD_INPUT
    names = [p.name for p in PROBES] if args.all else args.names
    for name in names:
        get_probe(name)  # an unknown name fails before anything runs
    measure: Callable[[str], ProbeResult] = run_probe
    keeper = None
    if args.recorded:
        from gpulab.probes.recorded import recorded_results

        recorded = recorded_results(args.recording or "h200")
        missing = [name for name in names if name not in recorded]
        if missing:
            print(
                f"gpulab: no readings recorded on the {args.recording or 'h200'} for "
                f"{', '.join(missing)}",
                file=sys.stderr,
            )
            return ExitCode.BAD_INPUT
        measure = recorded.__getitem__
    else:
        keeper = _Keeper()
    if args.json:
        results = [measure(name) for name in names]
        for result in results:
            if keeper is not None:
                keeper.keep(result)
        machine = keeper.machine if keeper is not None else None
        print(json.dumps(run_document(results, machine), indent=2))
        return exit_status((r.status for r in results), every=args.all)
    from rich.console import Console
    from rich.rule import Rule

    from gpulab.probes.render import render_result

    console = Console()
    statuses: list[str] = []
    for name in names:
        with console.status(f"running {name}…"):
            result = measure(name)
        console.print(Rule(style="dim"))
        console.print(render_result(result))
        statuses.append(result.status)
        if keeper is not None:
            keeper.keep(result)
    if keeper is not None and keeper.kept:
        console.print(Rule(style="dim"))
        console.print(
            f"Saved for this machine ({keeper.machine.label}): "
            f"{', '.join(keeper.kept)}, in {keeper.store.folder}. "
            "`gpulab probe saved` lists them.",
            style="dim",
            markup=False,
            highlight=False,
        )
    return exit_status(statuses, every=args.all)


class _Keeper:
    """Saves the results of one `probe run` for this machine; a result that cannot be saved
    is said on stderr, and the run goes on."""

    def __init__(self) -> None:
        from gpulab.probes.saved import ResultStore, this_machine
        from gpulab.state import state_dir

        self.store = ResultStore.under(state_dir())
        self.machine = this_machine()
        self.kept: list[str] = []

    def keep(self, result: ProbeResult) -> None:
        try:
            if self.store.save(result, self.machine) is not None:
                self.kept.append(result.probe)
        except OSError as exc:
            print(
                f"gpulab: the result of {result.probe} could not be saved in "
                f"{self.store.folder}: {exc.strerror or exc}",
                file=sys.stderr,
            )


def _probe_saved(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from gpulab.probes.saved import ResultStore, this_machine
    from gpulab.state import state_dir

    store = ResultStore.under(state_dir())
    found, skipped = store.read()
    for note in skipped:
        print(f"gpulab: {note}", file=sys.stderr)
    console = Console()
    if not found:
        console.print(
            f"No saved results in {store.folder}: `gpulab probe run NAME` measures "
            "this machine and saves what it finds.",
            markup=False,
            highlight=False,
        )
        return ExitCode.OK
    here = this_machine()
    table = Table(
        box=None, pad_edge=False, title_justify="left", title=f"Saved results in {store.folder}"
    )
    for column in ("probe", "status", "measured", "machine"):
        table.add_column(column, no_wrap=column != "machine", overflow="fold")
    for saved in found:
        result = saved.result
        if saved.machine.same_as(here):
            machine = Text(f"this machine ({saved.machine.label})")
        else:
            machine = Text(
                f"another machine ({saved.machine.label}): not used here", style="yellow"
            )
        when = result.started[:16].replace("T", " ") + (" UTC" if result.started else "")
        table.add_row(result.probe, result.status, when, machine)
    console.print(table)
    return ExitCode.OK


def _probe_forget(args: argparse.Namespace) -> int:
    from gpulab.probes.saved import ResultStore
    from gpulab.state import state_dir

    if args.all == bool(args.names):
        print("gpulab: name the saved results to forget, or give --all", file=sys.stderr)
        return ExitCode.BAD_INPUT
    store = ResultStore.under(state_dir())
    try:
        removed, absent = store.forget(None if args.all else args.names)
    except OSError as exc:
        print(
            f"gpulab: could not remove {exc.filename or store.folder}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    for path in removed:
        print(f"forgot {path.stem} ({path})")
    if args.all and not removed:
        print(f"nothing saved in {store.folder}")
    if absent:
        print(
            f"gpulab: no saved result of {', '.join(map(repr, absent))} in {store.folder} "
            "(`gpulab probe saved` lists them)",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    return ExitCode.OK


def _image_check(args: argparse.Namespace) -> int:
    import json

    from gpulab.probes.container_image import image_check

    result = image_check(args.image)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        from rich.console import Console

        from gpulab.probes.render import render_result

        Console().print(render_result(result))
    return ExitCode.OK if result.status == "ok" else ExitCode.FAILED


def _probe_schema(args: argparse.Namespace) -> int:
    import json

    from gpulab.probes.model import run_schema

    print(json.dumps(run_schema(), indent=2))
    return ExitCode.OK


def _doctor(args: argparse.Namespace) -> int:
    import json

    from gpulab.grading.learn.readiness import learner_checks
    from gpulab.probes.doctor import doctor

    if args.json:
        checks = doctor() + learner_checks()
        print(json.dumps([c.to_dict() for c in checks], indent=2))
        return ExitCode.FAILED if any(c.status == "fail" for c in checks) else ExitCode.OK
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    with console.status("checking this machine…"):
        checks = doctor() + learner_checks()
    marks = {
        "pass": ("✓", "green"),
        "warn": ("!", "yellow"),
        "fail": ("✗", "bold red"),
        "skip": ("–", "dim"),
    }
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(width=1)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for check in checks:
        mark, style = marks[check.status]
        found = Text(check.found)
        if check.fix:
            found.append(f"\nfix: {check.fix}", style="italic")
        table.add_row(Text(mark, style=style), check.name, found)
    console.print(table)
    counts = {status: sum(c.status == status for c in checks) for status in marks}
    console.print(
        f"\n{counts['pass']} fine, {counts['warn']} to look at, "
        f"{counts['fail']} failed, {counts['skip']} skipped"
    )
    failed = counts["fail"]
    return ExitCode.FAILED if failed else ExitCode.OK
