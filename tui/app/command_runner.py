"""The app's side of the ``:`` command line: what it offers now, and running what it returns.

Part of the app shell (only ``tui.app.console`` uses it). The commands are the app's and
the dashboard's bindings (screens.command_words), with their keys as the operator's keymap
has them; the arguments are what the table shows now. A dashboard command runs on the
dashboard (the view goes back to it first, as the palette's do): it moves the cursor to
the row or pool named, then does what the key does, so the same refusal, confirmation and
write follow. The app keeps the history of the session's commands.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import Input

from screens.command_line import CommandLine
from screens.command_words import Parsed, Spec, Target, Vocabulary, specs_from
from screens.config_view import TABS
from screens.dashboard import DashboardScreen
from screens.help import class_bindings
from screens.profile_rows import split_view_key
from screens.profiles_view import ProfilesDashboard
from screens.undo_flow import start_undo
from store.errors import HermesAdminError, StoreUnreadable
from store.ops import undo
from tui.services.export import export_view
from tui.text.paths import tilde
from tui.text.shown import shown
from tui.widgets.rows import SORT_ORDER, ProfileBanner


class CommandRunner:
    """``:`` for one app (a :class:`tui.app.console.HermesAdminApp`)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.history: list[str] = []        # this session's commands, oldest first

    def specs(self) -> list[Spec]:
        app = self.app
        dash = app.views.dashboard
        groups = [("app", class_bindings(type(app))), ("dashboard", class_bindings(type(dash)))]
        return specs_from(groups, lambda b: app.key_of(b.id, b.key) if b.id else b.key,
                          profiles=isinstance(dash, ProfilesDashboard))

    def vocabulary(self) -> Vocabulary:
        app = self.app
        dash = app.views.dashboard
        table = dash.table
        roots = isinstance(dash, ProfilesDashboard)
        targets: list[Target] = []
        for key in table.order:
            entry = table.entry(key)
            if entry is None or isinstance(entry.pool, ProfileBanner):
                continue
            view = entry.pool.key
            if entry.cred is None:
                targets.append(Target(split_view_key(view)[1] if roots else view, view, key))
            else:
                targets.append(Target(entry.cred.pool, view, key, entry.cred.id, entry.cred.label or ""))
        profiles = None
        if roots:
            rs = dash.root_state
            profiles = [p.name for p in rs.profiles] if rs is not None else []
        return Vocabulary(targets, SORT_ORDER, tuple(TABS), profiles, self._history_ids())

    def _history_ids(self) -> list[str]:
        """The kept action ids, newest first, for ``:undo``; a history folder that cannot be
        read is said so (naming it), never offered as one with no action."""
        try:
            return list(reversed(undo.list_ids(self.app.home)))
        except StoreUnreadable as exc:
            self.app.notify(f"history not read: {shown(str(exc))}", severity="error", timeout=10)
            return []

    def open(self) -> None:
        app = self.app
        if isinstance(app.screen, CommandLine):
            return
        app.push_screen(CommandLine(self.specs(), self.vocabulary(), self.history), self.run)

    # ------------------------------------------------------------ running
    def run(self, parsed: Parsed | None) -> None:
        if parsed is None:
            return
        spec, args, app = parsed.spec, parsed.args, self.app
        if spec.target == "line":
            if spec.action == "undo":
                start_undo(app, args[0] if args else None)
            elif spec.action == "export":
                self._export(args[0], args[1])
            else:
                app.views.show_dashboard()
                dash = app.views.dashboard
                if isinstance(dash, ProfilesDashboard):
                    dash.switch_profile("" if args[0] == "all" else args[0])
            return
        if spec.target == "app":
            if spec.action == "help":
                app.views.help(app.keymap, query=" ".join(args))
            else:
                app.call_later(app.run_action, spec.action)
            return
        self._on_dashboard(parsed)

    def _export(self, fmt: str, file: str) -> None:
        """``:export csv|json FILE``: the dashboard's current view, to a file (0600, no link)."""
        app = self.app
        try:
            path, rows = export_view(app.views.dashboard.table, fmt, file)
        except HermesAdminError as exc:
            text = f"export: {exc}"
            text += "" if "nothing was written" in text else "; nothing was written"
            app.notify(text, severity="error", timeout=10, markup=False)
            return
        app.notify(f"exported {rows} rows of the current view as {fmt} to {tilde(path)} (0600)",
                   timeout=6, markup=False)

    def _on_dashboard(self, parsed: Parsed) -> None:
        spec, args, app = parsed.spec, parsed.args, self.app
        if spec.action == "config":
            app.action_show_config(args[0] if args else "strategies")
            return
        app.views.show_dashboard()
        dash: DashboardScreen = app.views.dashboard
        if parsed.target is not None and not dash.table.move_to_key(parsed.target.row_key):
            app.notify(f"{parsed.target.label or parsed.target.view} is not on screen any more",
                       severity="warning", timeout=4, markup=False)
            return
        if spec.action == "sort":
            # `o` from the order before the one asked for: the dashboard's own sort key sorts,
            # redraws and says so, exactly as pressing it would.
            dash.sort = SORT_ORDER[(SORT_ORDER.index(args[0]) - 1) % len(SORT_ORDER)]
            dash.action_sort()
        elif spec.action == "filter":
            dash.action_filter()
            dash.query_one("#filter", Input).value = " ".join(args)
        else:
            # After the cursor's move is handled (the acting profile follows it on a root).
            dash.call_later(self._press, dash, spec)

    def _press(self, dash: DashboardScreen, spec: Spec) -> None:
        """Do what *spec*'s key does on *dash*; an unavailable one says why."""
        if isinstance(dash, ProfilesDashboard):
            dash.sync_acting()
        reason = dash.disabled_reason(spec.action)
        if not reason and not dash.check_action(spec.action, ()):
            reason = f"{spec.name}: not available on this row"
        if reason:
            self.app.notify(reason, severity="warning", timeout=4, markup=False)
            return
        dash.call_later(dash.run_action, spec.action)
