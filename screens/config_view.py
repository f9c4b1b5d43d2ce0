"""config.yaml as the agent sees it: strategies, fallback chain, provider routing and
auxiliary task chains, with editors for the first three.

Edits go through store.config (its own lock, a fresh read, comments and unknown keys
kept) in the app's writer; the tabs then follow the file like any other change.
Strategies: Enter/e opens the picker. Fallback: a adds, x removes, K/J move.
Routing: Enter/e edits the setting, x removes it.
"""

from __future__ import annotations

from typing import Any, Sequence

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from screens.confirm import ConfirmScreen
from screens.explain import Refusals
from screens.fallback_edit import FallbackAddScreen
from screens.routing_edit import RoutingEditScreen
from screens.strategy import open_strategy_picker
from store.config import edit as cfg
from store.config.read import Config
from store.config.sections import ROUTING_KEYS
from store.model import STRATEGIES
from store.watch.home import HomeState
from tui.services.host import host
from tui.text.format import NULL
from tui.text.paths import tilde
from tui.text.sentences import READ_ONLY
from tui.text.shown import shown
from tui.widgets.flash import FlashLine
from tui.widgets.footer import KeysFooter
from tui.widgets.plain_table import FittedTable, fitted_widths

TABS = {
    "strategies": "Strategies",
    "fallback": "Fallback chain",
    "routing": "Routing",
    "auxiliary": "Auxiliary",
}


def _s(value: Any) -> str:
    if value is None or value == "" or value == []:
        return NULL
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def strategy_rows(state: HomeState | None) -> list[tuple[str, str, str, str]]:
    """(pool, configured, what Hermes uses, note) for every pool in auth.json or config."""
    if state is None:
        return []
    configured = state.strategies
    in_store = {pv.key: len(pv.credentials) for pv in state.pools}
    rows = []
    for pool in sorted(set(configured) | set(in_store)):
        name = configured.get(pool)
        if name is None:
            rows.append((pool, NULL, "fill_first", "not configured: Hermes's default"))
        elif name in STRATEGIES:
            note = "" if pool in in_store else "no credentials in this pool"
            rows.append((pool, name, name, note))
        else:
            rows.append((pool, f"{name} ⚠", "fill_first",
                         f"unknown strategy {name!r}: Hermes falls back to fill_first"))
    return rows


def fallback_rows(config: Config | None) -> list[tuple[str, ...]]:
    """The effective chain, merged and de-duplicated by store.config, in order."""
    rows = []
    for i, entry in enumerate(config.fallback_chain if config is not None else [], start=1):
        if entry.key_env:
            key = f"${entry.key_env}"
        elif entry.has_api_key:
            key = "api_key in config"
        else:
            key = NULL
        origin, idx = entry.origin, entry.origin_index
        where = f"{origin}[{idx}]" if origin and idx is not None else _s(origin)
        rows.append((str(i), _s(entry.provider), _s(entry.model), _s(entry.base_url), key, where))
    return rows


def routing_rows(config: Config | None) -> list[tuple[str, str]]:
    """Every setting Hermes knows (``—`` when unset, so it can be edited), then unknown ones."""
    routing = config.routing if config is not None else {}
    rows = [(k, _s(routing.get(k))) for k in ROUTING_KEYS]
    rows += [(str(k), _s(v)) for k, v in routing.items() if k not in ROUTING_KEYS]
    return rows


def auxiliary_rows(config: Config | None) -> list[tuple[str, str, str, str, str]]:
    """(task, step, provider, model, timeout): the task's own choice, then its chain."""
    rows = []
    chains = config.auxiliary_chains if config is not None else {}
    for task in sorted(chains):
        spec = chains[task] or {}
        rows.append((task, "primary", _s(spec.get("provider")), _s(spec.get("model")), NULL))
        for i, entry in enumerate(spec.get("fallback_chain") or [], start=1):
            rows.append(("", f"fallback {i}", _s(entry.get("provider")),
                         _s(entry.get("model")), _s(entry.get("timeout"))))
    return rows


def _fill(table: FittedTable, columns: Sequence[str], rows: list[tuple[str, ...]],
          shown_rows: dict[str, list[tuple[str, ...]]], cursor: int | None = None, *,
          flexible: str) -> bool:
    """Show *rows*; True when they changed. The cursor stays at its height (or goes to *cursor*).

    *shown_rows* holds what each table (by id) shows now; the screen owns it. The columns fit
    the table's width (``table.fitted`` is the width they were fitted to): *flexible* takes
    what is left and wraps, so nothing runs off the right at 80 columns.
    """
    tid = table.id or ""
    width = table.size.width
    if shown_rows.get(tid) == rows and table.fitted == width and table.columns:
        return False  # an auth.json change: keep these small tables (and their cursor) as they are
    changed = shown_rows.get(tid) != rows
    shown_rows[tid] = rows
    table.fitted = width
    at = cursor if cursor is not None and changed else table.cursor_row
    widths = fitted_widths(columns, rows, width or 200, flexible)
    table.clear(columns=True)
    for c in columns:
        table.add_column(c, key=c, width=widths[c])
    for row in rows:
        # Text, not str: DataTable would parse "[...]" in a model name as markup.
        table.add_row(*(Text(shown(c), overflow="fold") for c in row), height=None)
    if rows:
        table.move_cursor(row=max(0, min(at, len(rows) - 1)), animate=False)
    return changed


# Each tab's columns, and the one that takes the width left (and wraps).
COLUMNS: dict[str, tuple[tuple[str, ...], str]] = {
    "strategies": (("pool", "configured", "Hermes uses", "note"), "note"),
    "fallback": (("#", "provider", "model", "base_url", "key", "from"), "base_url"),
    "routing": (("setting", "value"), "value"),
    "auxiliary": (("task", "step", "provider", "model", "timeout s"), "model"),
}


# What a row key says on a tab with no rows.
EMPTY = {
    "strategies": "no pools: auth.json and config.yaml name none",
    "fallback": "the fallback chain is empty (a adds an entry)",
    "routing": "no routing settings",
}

# action -> the tabs it works in
EDITS: dict[str, tuple[str, ...]] = {
    "edit": ("strategies", "routing"),
    "fallback_add": ("fallback",),
    "remove_entry": ("fallback", "routing"),
    "move_entry": ("fallback",),
}


class ConfigScreen(Screen):
    """Four tabs over config.yaml, three of them editable; follows the file live."""

    BINDINGS = [
        Binding("escape", "close", "Back", id="config.close"),
        Binding("1", "tab('strategies')", "Strategies", id="config.tab_strategies"),
        Binding("2", "tab('fallback')", "Fallback", id="config.tab_fallback"),
        Binding("3", "tab('routing')", "Routing", id="config.tab_routing"),
        Binding("4", "tab('auxiliary')", "Auxiliary", id="config.tab_auxiliary"),
        Binding("e", "edit", "Edit", id="config.edit"),
        Binding("a", "fallback_add", "Add fallback", id="config.fallback_add"),
        Binding("x,delete", "remove_entry", "Remove", key_display="x", id="config.remove"),
        Binding("K,shift+up", "move_entry(-1)", "Move up", key_display="K", id="config.move_up"),
        Binding("J,shift+down", "move_entry(1)", "Move down", key_display="J", id="config.move_down"),
    ]

    def __init__(self, tab: str = "strategies") -> None:
        super().__init__(id="config")
        self.initial = tab if tab in TABS else "strategies"
        self.config: Config | None = None
        self.home_state: HomeState | None = None
        self.note_lines: list[str] = []
        self.shown_rows: dict[str, list[tuple[str, ...]]] = {}   # table id -> the rows it shows
        self._rows: dict[str, list[tuple[str, ...]]] = {}
        self._cursor_to: dict[str, int] = {}   # table id -> row the cursor goes to on refill
        self.refusals = Refusals(self, self.disabled_reason)

    def compose(self) -> ComposeResult:
        yield Static(id="config-note")
        with TabbedContent(initial=self.initial, id="config-tabs"):
            for key, title in TABS.items():
                with TabPane(title, id=key):
                    yield FittedTable(id=f"{key}-table", cursor_type="row")
        yield FlashLine(id="flash")
        yield KeysFooter()

    def on_mount(self) -> None:
        app = host(self)
        app.state_signal.subscribe(self, self.show_state, immediate=True)
        app.writes_signal.subscribe(self, lambda _: self.writes_changed(), immediate=True)
        self.show_state(app.state)
        self._table(self.initial).focus()

    def show_state(self, state: HomeState | None) -> None:
        config = state.config if state is not None else None
        self.config = config
        self.home_state = state
        lines = []
        if state is not None:
            path = state.home.config
            if state.config_error is not None:
                e = state.config_error
                keep = "showing the last good config" if config is not None else "showing defaults"
                lines.append(f"⚠ {e.path}: {e.reason}; {keep}")
            elif config is None:
                lines.append(f"No config at {path}: Hermes uses its defaults "
                             "(fill_first, no fallback).")
            elif host(self).read_only:
                lines.append(f"{path} (read-only: started with --read-only)")
            else:
                lines.append(f"{path} · edits keep your comments")
            lines += [f"⚠ {w}" for w in (config.warnings if config is not None else [])]
        self.note_lines = lines
        self._show_note()
        self._rows = {"strategies": strategy_rows(state), "fallback": fallback_rows(config),
                      "routing": routing_rows(config), "auxiliary": auxiliary_rows(config)}
        self._fill_tabs()

    def _fill_tabs(self) -> None:
        for tab, rows in self._rows.items():
            columns, flexible = COLUMNS[tab]
            cursor = self._cursor_to.get(tab)
            if _fill(self._table(tab), columns, rows, self.shown_rows, cursor,
                     flexible=flexible) and cursor is not None:
                self._cursor_to.pop(tab, None)

    def on_fitted_table_width_changed(self, event: FittedTable.WidthChanged) -> None:
        self._fill_tabs()     # a table laid out at a new width (a tab's table when it shows)

    def _show_note(self) -> None:
        lines = list(self.note_lines)
        busy = host(self).writer.status_text()
        if busy:
            lines.insert(0, f"⟳ {busy}")
        self.query_one("#config-note", Static).update(Text("\n".join(shown(tilde(x)) for x in lines)))

    def writes_changed(self) -> None:
        if self.is_mounted:
            self._show_note()
            self.refresh_bindings()

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def action_close(self) -> None:
        self.app.pop_screen()

    # ------------------------------------------------------------ editing
    @property
    def active_tab(self) -> str:
        return self.query_one(TabbedContent).active or self.initial

    def _table(self, tab: str | None = None) -> FittedTable:
        return self.query_one(f"#{tab or self.active_tab}-table", FittedTable)

    def _row(self) -> tuple[str, ...] | None:
        table = self._table()
        rows = self.shown_rows.get(table.id or "", [])
        return rows[table.cursor_row] if 0 <= table.cursor_row < len(rows) else None

    def edit_reason(self, action: str, step: int = 0) -> str | None:
        """Why *action* cannot run on this tab now (None: it can)."""
        if host(self).read_only:
            return READ_ONLY
        if action == "fallback_add":
            return None
        row = self._row()
        if row is None:
            if not self.shown_rows.get(self._table().id or ""):
                return EMPTY.get(self.active_tab, "this tab is empty")
            return "move the cursor to a row first"
        if action == "move_entry":
            n = len(fallback_rows(self.config))
            at = self._table().cursor_row + step
            if not 0 <= at < n:
                return f"entry #{row[0]} is already {'first' if step < 0 else 'last'}"
        if action == "remove_entry" and self.active_tab == "routing" and row[1] == NULL:
            return f"{row[0]} is not set"
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action not in EDITS:
            return True
        if not self.is_mounted or self.active_tab not in EDITS[action]:
            return False   # not this tab's key: hidden from the footer
        return self.refusals.availability(action, parameters)

    def on_key(self, event: events.Key) -> None:
        """A key bound to an unavailable edit says why, instead of nothing at all."""
        self.refusals.explain_key(event)

    def disabled_reason(self, action: str, parameters: tuple[object, ...] = ()) -> str | None:
        if action not in EDITS:
            return None
        step = parameters[0] if parameters and isinstance(parameters[0], int) else 0
        return self.edit_reason(action, step)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # The tab's table, not the tab bar, takes the keys: ↓ and x act on the highlighted row.
        self._table().focus()
        self.refresh_bindings()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.refresh_bindings()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if self.check_action("edit", ()):
            self.action_edit()

    def _submit(self, what: str, fn: Any, on_done: Any = None) -> None:
        app = host(self)
        app.writer.submit(what, fn, lock=app.home.config_lock, on_done=on_done)

    def action_edit(self) -> None:
        row = self._row()
        if row is None or self.edit_reason("edit"):
            return
        if self.active_tab == "strategies":
            pool = row[0]
            state = self.home_state
            configured = state.strategies.get(pool) if state is not None else None
            open_strategy_picker(host(self), pool, configured)
        elif self.active_tab == "routing":
            key = row[0]
            current = self.config.routing.get(key) if self.config is not None else None
            self.app.push_screen(RoutingEditScreen(key, current))

    def action_fallback_add(self) -> None:
        self.app.push_screen(FallbackAddScreen())

    def action_remove_entry(self) -> None:
        row = self._row()
        if row is None or self.edit_reason("remove_entry"):
            return
        app = host(self)
        home, timeout = app.home, app.lock_timeout
        if self.active_tab == "fallback":
            index = int(row[0])
            title = f"Remove fallback #{index}: {row[2]} via {row[1]}?"
            fn = lambda: cfg.fallback_remove(home, index, lock_timeout=timeout)  # noqa: E731
            what = f"removing fallback #{index}"
        else:
            key = row[0]
            title = f"Remove provider_routing.{key} (now {row[1]})?"
            fn = lambda: cfg.routing_unset(home, key, lock_timeout=timeout)  # noqa: E731
            what = f"removing provider_routing.{key}"

        def answered(yes: bool | None) -> None:
            if yes:
                self._submit(what, fn)

        self.app.push_screen(ConfirmScreen(title, [f"  in {home.config}"],
                                           ["Comments and every other key of config.yaml are kept."]),
                             answered)

    def action_move_entry(self, step: int) -> None:
        if self.edit_reason("move_entry", step):
            return
        app = host(self)
        home, timeout = app.home, app.lock_timeout
        index = self._table().cursor_row + 1
        to = index + step
        self._cursor_to["fallback"] = to - 1

        def done(result: Any) -> bool:
            if not result.ok:
                self._cursor_to.pop("fallback", None)
            return False

        self._submit(f"moving fallback #{index} to #{to}",
                     lambda: cfg.fallback_move(home, index, to, lock_timeout=timeout), done)
