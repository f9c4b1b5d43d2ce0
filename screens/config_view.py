"""Read-only views of config.yaml as the agent sees it: strategies, fallback chain,
provider routing and auxiliary task chains. (Editing arrives with the actions.)"""

from __future__ import annotations

from typing import Any, Iterable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane

from store.model import STRATEGIES
from store.watch import HomeState
from tui.format import NULL

TABS = {
    "strategies": "Strategies",
    "fallback": "Fallback chain",
    "routing": "Routing",
    "auxiliary": "Auxiliary",
}


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


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


def fallback_rows(config: Any) -> list[tuple[str, ...]]:
    """The effective chain, merged and de-duplicated by store.config, in order."""
    rows = []
    for i, entry in enumerate(_get(config, "fallback_chain", None) or [], start=1):
        key_env = _get(entry, "key_env")
        if key_env:
            key = f"${key_env}"
        elif _get(entry, "has_api_key"):
            key = "api_key in config"
        else:
            key = NULL
        origin = _get(entry, "origin")
        idx = _get(entry, "origin_index")
        where = f"{origin}[{idx}]" if origin and idx is not None else _s(origin)
        rows.append((str(i), _s(_get(entry, "provider")), _s(_get(entry, "model")),
                     _s(_get(entry, "base_url")), key, where))
    return rows


def routing_rows(config: Any) -> list[tuple[str, str]]:
    routing = _get(config, "routing", None) or {}
    known = ("sort", "only", "ignore", "order", "require_parameters", "data_collection")
    rows = [(k, _s(routing.get(k))) for k in known if k in routing]
    rows += [(str(k), _s(v)) for k, v in routing.items() if k not in known]
    return rows


def auxiliary_rows(config: Any) -> list[tuple[str, str, str, str, str]]:
    """(task, step, provider, model, timeout): the task's own choice, then its chain."""
    rows = []
    chains = _get(config, "auxiliary_chains", None) or {}
    for task in sorted(chains):
        spec = chains[task] or {}
        rows.append((task, "primary", _s(_get(spec, "provider")), _s(_get(spec, "model")), NULL))
        for i, entry in enumerate(_get(spec, "fallback_chain", None) or [], start=1):
            rows.append(("", f"fallback {i}", _s(_get(entry, "provider")),
                         _s(_get(entry, "model")), _s(_get(entry, "timeout"))))
    return rows


def _fill(table: DataTable, columns: Iterable[str], rows: list[tuple[str, ...]]) -> None:
    if not table.columns:
        for c in columns:
            table.add_column(c, key=c)
    if getattr(table, "_shown_rows", None) == rows:
        return  # an auth.json change: keep these small tables (and their cursor) as they are
    table._shown_rows = rows  # type: ignore[attr-defined]
    table.clear()
    for row in rows:
        # Text, not str: DataTable would parse "[...]" in a model name as markup.
        table.add_row(*(Text(c) for c in row))


class ConfigScreen(Screen):
    """Four read-only tabs over config.yaml; follows the file live."""

    BINDINGS = [
        Binding("escape", "close", "Back", id="config.close"),
        Binding("1", "tab('strategies')", "Strategies", id="config.tab_strategies"),
        Binding("2", "tab('fallback')", "Fallback", id="config.tab_fallback"),
        Binding("3", "tab('routing')", "Routing", id="config.tab_routing"),
        Binding("4", "tab('auxiliary')", "Auxiliary", id="config.tab_auxiliary"),
    ]

    def __init__(self, tab: str = "strategies") -> None:
        super().__init__(id="config")
        self.initial = tab if tab in TABS else "strategies"

    def compose(self) -> ComposeResult:
        yield Static(id="config-note")
        with TabbedContent(initial=self.initial, id="config-tabs"):
            for key, title in TABS.items():
                with TabPane(title, id=key):
                    yield DataTable(id=f"{key}-table", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        state = getattr(self.app, "state", None)
        self.show_state(state)

    def show_state(self, state: HomeState | None) -> None:
        config = state.config if state is not None else None
        note = self.query_one("#config-note", Static)
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
            else:
                lines.append(f"{path} (read-only here)")
            lines += [f"⚠ {w}" for w in (getattr(config, "warnings", None) or [])]
        note.update(Text("\n".join(lines)))
        _fill(self.query_one("#strategies-table", DataTable),
              ("pool", "configured", "Hermes uses", "note"), strategy_rows(state))
        _fill(self.query_one("#fallback-table", DataTable),
              ("#", "provider", "model", "base_url", "key", "from"), fallback_rows(config))
        _fill(self.query_one("#routing-table", DataTable), ("setting", "value"),
              routing_rows(config))
        _fill(self.query_one("#auxiliary-table", DataTable),
              ("task", "step", "provider", "model", "timeout s"), auxiliary_rows(config))

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def action_close(self) -> None:
        self.app.pop_screen()
