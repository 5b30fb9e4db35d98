"""The app's base layer: the learner's own probe results, and the figures drawn from them.

`ResultsApp` is the base of the app (`GpuHereApp`, then `LearnerApp`). It keeps the
learner's own probe results (`measured`, by probe): those saved on this
machine (by ``gpulab probe run`` or an earlier session), read once after
first paint, and every result that runs in this session (`keep_result`),
which is saved in its turn. Figures (`figure`) are drawn from them once they
hold what a figure needs, and from gpulab's recording of its H200 until then.

Saved results live in the user's state folder (`gpulab.probes.saved`); only
those measured on this machine are used: its GPUs are asked through the app's
NVML backend (a `Replay` in tests), in a thread, the first time they are
needed. The learner is told of results from another machine, and of files
that cannot be read (by name); neither is used, and nothing is removed.
Reading and saving run in thread workers and report back by message.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.message import Message
from textual.reactive import var

if TYPE_CHECKING:
    from gpulab.course import Course
    from gpulab.figures import FigureData
    from gpulab.probes import ProbeResult
    from gpulab.probes.model import Machine
    from gpulab.probes.saved import ResultStore
    from gpulab.tui.figures import FigureSource, Measured

__all__ = ["ResultsApp"]

NOTES_TITLE = "Your saved results"


class ResultsApp(App[None]):
    """The learner's own probe results, saved and read back, and the figures drawn from them
    (see the module's docstring)."""

    measured: var[Measured] = var(dict, init=False)
    """The learner's own probe results on this machine, by probe (those that ran, never a
    recording): saved ones and this session's; replaced, never changed in place, when one
    comes in."""

    course: Course | None
    """The course (set by `LearnerApp`)."""
    nvml_backend: Any
    """What NVML calls go through (set by `LearnerApp`): None for the real library."""

    class SavedResultsRead(Message):
        """The results saved on this machine were read (posted from a thread): `results`
        to use, `notes` to tell the learner (another machine's, a file skipped)."""

        def __init__(self, results: dict[str, ProbeResult], notes: list[str]) -> None:
            super().__init__()
            self.results = results
            self.notes = notes

    class ResultNotSaved(Message):
        """A result could not be saved (posted from a thread); `problem` says why."""

        def __init__(self, problem: str) -> None:
            super().__init__()
            self.problem = problem

    def __init__(self) -> None:
        super().__init__()
        self._figures: FigureSource | None = None
        self._store: ResultStore | None = None
        self._machine: Machine | None = None
        self._machine_lock = threading.Lock()

    def on_mount(self) -> None:
        self.call_after_refresh(self.read_saved_results)

    # -- saved results -------------------------------------------------------------------------
    @property
    def result_store(self) -> ResultStore:
        """Where the learner's results are saved (the state folder's ``results``)."""
        if self._store is None:
            from gpulab.probes.saved import ResultStore
            from gpulab.state import state_dir

            self._store = ResultStore.under(state_dir())
        return self._store

    def this_machine(self) -> Machine:
        """This machine, as NVML (the app's backend) and its hostname tell it; found once.
        Blocking: call it from a thread worker."""
        with self._machine_lock:
            if self._machine is None:
                from gpulab.probes.saved import this_machine

                self._machine = this_machine(self.nvml_backend)
            return self._machine

    def read_saved_results(self) -> None:
        """Read this machine's saved results into `measured`, in a thread."""
        self.run_worker(
            self._read_saved,
            thread=True,
            group="saved-results",
            exit_on_error=False,
            description="read your saved probe results",
        )

    def _read_saved(self) -> None:
        store = self.result_store
        if not store.files():
            return  # nothing saved: NVML is not even asked
        try:
            loaded = store.load(self.this_machine())
        except Exception as exc:  # not knowing the machine: nothing saved can be used
            self.post_message(
                self.SavedResultsRead(
                    {},
                    [
                        "gpulab could not tell which machine this is "
                        f"({type(exc).__name__}: {exc}), so the results saved in "
                        f"{store.folder} are not used"
                    ],
                )
            )
            return
        self.post_message(self.SavedResultsRead(loaded.mine, loaded.notes()))

    def on_results_app_saved_results_read(self, event: SavedResultsRead) -> None:
        if event.results:  # what this session measured meanwhile is newer
            self.measured = {**event.results, **self.measured}
        if event.notes:
            self.notify(
                "\n\n".join(event.notes),
                title=NOTES_TITLE,
                severity="warning",
                timeout=20,
                markup=False,
            )

    def keep_result(self, result: ProbeResult) -> None:
        """Keep a probe result measured here (one that ran: ok or partial, no recording) for
        the figures it feeds, and save it for later sessions, in a thread."""
        from gpulab.probes.saved import worth_saving

        if worth_saving(result):
            self.measured = {**self.measured, result.probe: result}
            self.run_worker(
                partial(self._save, result),
                thread=True,
                group="save-result",
                exit_on_error=False,
                description=f"save {result.probe}'s result",
            )

    def _save(self, result: ProbeResult) -> None:
        store = self.result_store
        try:
            store.save(result, self.this_machine())
        except Exception as exc:  # a result not saved is said, never raised
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.post_message(
                self.ResultNotSaved(
                    f"The result of {result.probe} could not be saved in {store.folder}: {why}. "
                    "It is used in this session only."
                )
            )

    def on_results_app_result_not_saved(self, event: ResultNotSaved) -> None:
        self.notify(event.problem, title=NOTES_TITLE, severity="error", timeout=10, markup=False)

    # -- figures -------------------------------------------------------------------------------
    def figure(self, figure_id: str) -> FigureData:
        """The figure drawn from the learner's results where they cover it, else from gpulab's
        recording; its `source` says which, its `missing` why nothing can be drawn."""
        if self._figures is None:
            from gpulab.tui.figures import FigureSource

            self._figures = FigureSource(self.course)
        return self._figures.data(figure_id, self.measured)
