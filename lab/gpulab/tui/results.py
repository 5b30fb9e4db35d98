"""The learner's own probe results, saved and read back, and the figures drawn from them.

`SavedResults` is one of the parts the app (`gpulab.tui.app.GpulabApp`) is
composed of. The results themselves are the app's reactive `measured` (by
probe): those saved on this machine (by ``gpulab probe run`` or an earlier
session), read once after first paint, and every result that runs in this
session (`keep`), which is saved in its turn. Figures (`figure`) are drawn from
them once they hold what a figure needs, and from gpulab's recording of its
H200 until then.

Saved results live in the user's state folder (`gpulab.probes.saved`); only
those measured on this machine are used: its GPUs are asked through the app's
NVML backend (a `Replay` in tests), in a thread, the first time they are
needed. The learner is told of results from another machine, and of files
that cannot be read (by name); neither is used, and nothing is removed.
Reading and saving run in thread workers of the app and report back by message
(`SavedResultsRead`, `ResultNotSaved`), which the app hands to `took_in` and
`not_saved`.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import TYPE_CHECKING, Any

from gpulab.tui.lab import as_lab
from gpulab.tui.messages import ResultNotSaved, SavedResultsRead

if TYPE_CHECKING:
    from textual.app import App

    from gpulab.figures import FigureData
    from gpulab.probes import ProbeResult
    from gpulab.probes.model import Machine
    from gpulab.probes.saved import ResultStore
    from gpulab.tui.figures import FigureSource

__all__ = ["NOTES_TITLE", "SavedResults"]

NOTES_TITLE = "Your saved results"
"""The title of what the learner is told about their saved results."""


class SavedResults:
    """The learner's probe results on this machine, saved and read back (see the module's
    docstring); one per app."""

    def __init__(self, app: App[Any]) -> None:
        self._app = app
        self._lab = as_lab(app)
        self._figures: FigureSource | None = None
        self._store: ResultStore | None = None
        self._machine: Machine | None = None
        self._machine_lock = threading.Lock()

    @property
    def store(self) -> ResultStore:
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

                self._machine = this_machine(self._lab.nvml_backend)
            return self._machine

    # -- reading -------------------------------------------------------------------------------
    def read(self) -> None:
        """Read this machine's saved results, in a thread (`SavedResultsRead` when done)."""
        self._app.run_worker(
            self._read,
            thread=True,
            group="saved-results",
            exit_on_error=False,
            description="read your saved probe results",
        )

    def _read(self) -> None:
        store = self.store
        if not store.files():
            return  # nothing saved: NVML is not even asked
        try:
            loaded = store.load(self.this_machine())
        except Exception as exc:  # not knowing the machine: nothing saved can be used
            note = (
                "gpulab could not tell which machine this is "
                f"({type(exc).__name__}: {exc}), so the results saved in "
                f"{store.folder} are not used"
            )
            self._app.post_message(SavedResultsRead({}, [note]))
            return
        self._app.post_message(SavedResultsRead(loaded.mine, loaded.notes()))

    def took_in(self, event: SavedResultsRead) -> None:
        """Add what was read to `measured` (this session's results are newer) and tell the
        learner what was not used."""
        if event.results:
            self._lab.measured = {**event.results, **self._lab.measured}
        if event.notes:
            self._app.notify(
                "\n\n".join(event.notes),
                title=NOTES_TITLE,
                severity="warning",
                timeout=20,
                markup=False,
            )

    # -- saving --------------------------------------------------------------------------------
    def keep(self, result: ProbeResult) -> None:
        """Keep a probe result measured here (one that ran: ok or partial, no recording) for
        the figures it feeds, and save it for later sessions, in a thread."""
        from gpulab.probes.saved import worth_saving

        if worth_saving(result):
            self._lab.measured = {**self._lab.measured, result.probe: result}
            self._app.run_worker(
                partial(self._save, result),
                thread=True,
                group="save-result",
                exit_on_error=False,
                description=f"save {result.probe}'s result",
            )

    def _save(self, result: ProbeResult) -> None:
        store = self.store
        try:
            store.save(result, self.this_machine())
        except Exception as exc:  # a result not saved is said, never raised
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self._app.post_message(
                ResultNotSaved(
                    f"The result of {result.probe} could not be saved in {store.folder}: {why}. "
                    "It is used in this session only."
                )
            )

    def not_saved(self, event: ResultNotSaved) -> None:
        """Tell the learner a result was not saved, and why."""
        self._app.notify(
            event.problem, title=NOTES_TITLE, severity="error", timeout=10, markup=False
        )

    # -- figures -------------------------------------------------------------------------------
    def figure(self, figure_id: str) -> FigureData:
        """The figure drawn from the learner's results where they cover it, else from gpulab's
        recording; its `source` says which, its `missing` why nothing can be drawn."""
        if self._figures is None:
            from gpulab.tui.figures import FigureSource

            self._figures = FigureSource(self._lab.course)
        return self._figures.data(figure_id, self._lab.measured)
