"""The dashboard's view kept between sessions: sort and its direction, the columns (automatic,
wide or the chooser's), and the folded pools, in hermes-admin's own settings
(:mod:`store.config.console_view`, the ``console:`` section of ``hermes-admin.yaml``).

Read once when the dashboard opens; written in a thread worker after the operator changes the
sort or the columns, and when the dashboard closes (the folds). Never on a tick, never per row.
A section that cannot be used is said once, naming the file and the field, and the console
starts with its defaults; a save that fails says so and leaves the file as it was.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from store.config.console_view import AUTO, WIDE, ConsoleView, read_view, save_view
from store.errors import HermesAdminError, StoreUnreadable
from store.paths import Home
from store.pools.view import PoolView
from tui.services.host import HasApp, host
from tui.widgets import CredentialTable
from tui.widgets.rows import SORT_ORDER
from tui.widgets.table_columns import CUSTOM, ORDER, WIDE_MODE


class Remembers(HasApp, Protocol):
    """What the memory needs of the dashboard."""

    sort: str
    pools: list[PoolView]

    @property
    def table(self) -> CredentialTable: ...


class ViewMemory:
    """Restores the last view on open; saves it after each change of sort, columns or folds."""

    def __init__(self, viewer: Remembers) -> None:
        self.viewer = viewer
        self.home: Home | None = None
        self.last: ConsoleView | None = None     # as read or last saved: no write when unchanged
        self.folds: tuple[str, ...] = ()         # folds still to apply when their pools show
        self.table: CredentialTable | None = None  # kept: on closing it has left the screen

    def restore(self) -> None:
        """Apply the saved view (sort, direction, columns; folds once the pools are there)."""
        app = host(self.viewer)
        try:
            view = read_view(app.home)
        except (HermesAdminError, StoreUnreadable, OSError) as exc:
            # Not used, and never written over: the operator's file stays as it is.
            app.notify(f"the console's saved view is not used: {exc}", severity="warning",
                       timeout=8, markup=False)
            return
        # --read-only writes nothing to the home, this file included.
        self.home = None if app.read_only else app.home
        table = self.table = self.viewer.table
        if view.sort in SORT_ORDER:
            self.viewer.sort = view.sort
        table.reverse = view.reverse
        if view.columns == WIDE:
            table.set_wide(True)
        elif view.columns != AUTO:
            keys = [k for k in view.columns if k in ORDER]
            if keys:
                table.set_columns(keys)
        self.folds = view.folded
        # What the file says, as the console would save it: closing unchanged writes nothing.
        self.last = replace(view, sort=self.viewer.sort)

    def fold_pending(self) -> None:
        """Once pools are on screen: fold the saved ones (each once)."""
        if not self.folds or not self.viewer.pools:
            return
        folds = set(self.folds)
        for pv in self.viewer.pools:
            if pv.key in folds:
                self.viewer.table.fold(pv.key, True)
                folds.discard(pv.key)
        self.folds = tuple(folds)       # pools not (yet) in the store keep their fold

    def current(self) -> ConsoleView:
        table = self.table or self.viewer.table
        layout = table.column_layout
        columns: str | tuple[str, ...] = AUTO
        if layout.mode == WIDE_MODE:
            columns = WIDE
        elif layout.mode == CUSTOM and layout.chosen:
            columns = tuple(layout.chosen)
        folded = [pv.key for pv in self.viewer.pools if table.rows.is_folded(pv.key)]
        return ConsoleView(sort=self.viewer.sort, reverse=table.reverse, columns=columns,
                           folded=tuple([*folded, *self.folds]))

    def remember(self) -> None:
        """Save the view now shown, in a thread worker, if it differs from the last saved."""
        if self.home is None:
            return
        view = self.current()
        if view == self.last:
            return
        self.last = view
        home, app = self.home, host(self.viewer)

        def save() -> None:
            try:
                save_view(home, view)
            except (HermesAdminError, StoreUnreadable, OSError) as exc:
                app.call_from_thread(app.notify, f"the console's view was not saved: {exc}",
                                     severity="warning", timeout=8, markup=False)

        self.viewer.app.run_worker(save, thread=True, group="view-memory", exit_on_error=False)

    def save_now(self) -> None:
        """On closing: save in this thread (the app is ending; no worker would run)."""
        if self.home is None:
            return
        view = self.current()
        if view != self.last:
            self.last = view
            try:
                save_view(self.home, view)
            except (HermesAdminError, StoreUnreadable, OSError):
                pass          # closing: nobody left to tell; the file is left as it was
