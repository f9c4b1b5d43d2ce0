"""Everything about one credential: every stored field, secrets masked, times explained, and
what it spent (screens.detail_usage)."""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from screens.detail_usage import DetailUsage
from store.config import settings as settings_file
from store.dialects.readings import Reading
from store.errors import HermesAdminError
from store.model import parse_epoch
from store.pools.times import on_calendar
from store.pools.view import CredentialView
from store.redaction.fingerprints import fingerprint
from store.watch.home import HomeState
from tui.services import proxy_feed
from tui.services.host import host
from tui.text import headroom as headroom_words
from tui.text.format import BAD_TIME, NULL, STATUS_STYLE, full_time, relative, status_word
from tui.text.shown import shown
from tui.widgets import table_spend
from tui.widgets.footer import KeysFooter

# Fields holding a time, and how to read them.
TIME_FIELDS = frozenset({
    "last_status_at", "last_error_reset_at", "status_cleared_at", "expires_at", "expires_at_ms",
    "last_refresh", "agent_key_expires_at", "model_cooldowns", "model_cooldown_observed_at",
})
MEANING = {
    "last_error_reset_at": "provider-declared reset; wins over every TTL",
    "last_status_at": "when the status was set",
    "status_cleared_at": "operator reset tombstone",
    "last_error_code": "HTTP status of the last error",
    "request_count": "requests counted by agents (a reset keeps it)",
    "priority": "0 is tried first",
    "secret_fingerprint": "hash of the borrowed secret",
}


def is_secret_field(name: str) -> bool:
    """Fields masked in the detail view: tokens, keys, secrets (but not the fingerprint)."""
    n = name.lower()
    if n == "secret_fingerprint":
        return False
    return "token" in n or "key" in n or "secret" in n


def mask(value: Any) -> Any:
    """A secret's display form: its fingerprint (nested mappings masked field by field)."""
    if isinstance(value, str):
        return fingerprint(value) or NULL
    if isinstance(value, dict):
        return {k: mask(v) for k, v in value.items()}
    if value is None:
        return None
    return "•••"


def masked_row(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        if is_secret_field(k):
            out[k] = mask(v)
        elif isinstance(v, dict):
            out[k] = masked_row(v)
        else:
            out[k] = v
    return out


def when(epoch: float, now: float) -> tuple[str, str]:
    """(local time, how far from *now*) of a time the row's state gives."""
    if not on_calendar(epoch):
        return BAD_TIME, "no calendar shows it (see the data error)"
    return full_time(epoch), relative(epoch, now)


def time_meaning(value: Any, now: float) -> str:
    t = parse_epoch(value)
    if t is None:
        return NULL if value is None else "unparseable time"
    if not on_calendar(t):
        return f"{BAD_TIME}: no calendar shows it (see the data error)"
    return f"{full_time(t)} local · {relative(t, now)}"


def render_value(value: Any) -> str:
    if value is None or value == "":
        return NULL
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def detail_lines(cv: CredentialView, now: float, readings: list[Reading] | None = None,
                 threshold: float | None = None, budget: str | None = None,
                 usage: Sequence[tuple[str, str, str]] = ()) -> list[tuple[str, str, str]]:
    """(field, value, meaning) for every field of the row, then nothing hidden; with
    *readings* (the row's, bound to its secret) every window and the rules they follow; with
    *budget* the words of a running proxy that holds the row over its budget; *usage*: its
    spend and burn lines (screens.detail_usage, #29)."""
    eff = cv.effective
    lines: list[tuple[str, str, str]] = []
    status_meaning = {"ok": "usable", "cooling": "benched until the time below",
                      "ready": "cooldown elapsed; usable on the next pick",
                      "dead": "never expires; only a reset or a new token clears it"}
    lines.append(("effective status", status_word(eff.status), status_meaning.get(eff.status, "")))
    if eff.available_at is not None and math.isfinite(eff.available_at):
        lines.append(("available at", *when(eff.available_at, now)))
    if cv.rule:
        lines.append(("countdown rule", cv.rule, "which Hermes rule gave the status above"))
    lines.append(("next pick", "yes ←" if cv.next else "no", "what the pool's strategy picks next"))
    if budget:
        lines.append(("budget", budget, "the running proxy skips this key (hermes-admin.yaml budgets:); "
                                         "auth.json is unchanged, Hermes agents keep their own rules"))
    if eff.data_error:
        lines.append(("data error", eff.data_error, "the raw value, shown as stored; fix or reset the row"))
    lines.append(("fingerprint", cv.fingerprint or NULL, "the secret, shortened"))
    if readings:
        lines.extend(headroom_words.window_lines(readings, now))
        lines.append(headroom_words.rules_line(threshold or 0.0))
    lines.extend(usage)
    if cv.backed is not None:
        lines.append(("env backing", "set" if cv.backed else "unset",
                      "is the variable in the home's .env"))
    for model, until in sorted(eff.model_benches.items()):
        lines.append((f"bench: {model}", *when(until, now)))
    row = masked_row(cv.row)
    for key, value in row.items():
        if key in ("model_cooldowns", "model_cooldown_observed_at") and isinstance(value, dict):
            if not value:
                lines.append((key, "{}", ""))
            for model, t in value.items():
                lines.append((f"{key}.{model}", render_value(t), time_meaning(t, now)))
            continue
        meaning = MEANING.get(key, "")
        if key in TIME_FIELDS and value is not None:
            tm = time_meaning(value, now)
            meaning = f"{tm} · {meaning}" if meaning else tm
        if is_secret_field(key):
            meaning = "masked (fingerprint)"
        lines.append((key, render_value(value), meaning))
    return lines


class DetailScreen(Screen):
    """One credential, live: follows the store and the clock until closed."""

    BINDINGS = [
        Binding("escape", "close", "Back", id="detail.close"),
        Binding("q", "close", "Back", show=False, id="detail.close_q"),
    ]

    def __init__(self, key: tuple[str, str], clock: Callable[[], float]) -> None:
        super().__init__(id="detail")
        self.key = key
        self.clock = clock
        self.cv: CredentialView | None = None
        self.removed = False
        self.title_text = ""
        self.lines: list[tuple[str, str, str]] = []
        self.readings: list[Reading] = []      # the row's headroom windows (the sidecar's)
        self.threshold = 0.0
        self.budget: str | None = None         # a running proxy's words when it holds the row over budget
        self.usage = DetailUsage(self, key, clock, self.render_fields)     # spend and burn (#29)

    def compose(self) -> ComposeResult:
        yield Static(id="detail-title")
        with VerticalScroll(id="detail-body"):
            yield Static(id="detail-fields")
        yield KeysFooter()

    def on_mount(self) -> None:
        app = host(self)
        app.state_signal.subscribe(self, self.show_state, immediate=True)
        state = app.state
        if state is not None:
            self.show_state(state)
        self.set_interval(1.0, self.render_fields, name="detail-tick")
        self.usage.start(app.home)

    def show_state(self, state: HomeState) -> None:
        found = None
        for pv in state.pools:
            if pv.key == self.key[0]:
                found = next((cv for cv in pv.credentials if cv.id == self.key[1]), None)
        if found is None and self.cv is not None:
            self.removed = True
        elif found is not None:
            self.cv, self.removed = found, False
        if self.cv is not None:
            self.budget = proxy_feed.over_budget(proxy_feed.live_status(state.home)).get(self.key)
            self.usage.observe(state.headroom)
            self.readings = headroom_words.lookup(state.headroom, self.key[0], self.key[1], self.cv.fingerprint)
            if self.readings:
                try:
                    self.threshold = settings_file.read(state.home).threshold_for(self.key[0])
                except HermesAdminError:       # the proxy and the agents use the default too
                    self.threshold = settings_file.DEFAULTS.threshold_for(self.key[0])
        self.render_fields()

    def render_fields(self) -> None:
        cv = self.cv
        title = self.query_one("#detail-title", Static)
        body = self.query_one("#detail-fields", Static)
        if cv is None:
            self.title_text = shown(f"{self.key[0]} · {self.key[1]}: not in the store")
            title.update(Text(self.title_text))
            body.update("")
            return
        t = Text()
        t.append(f" {shown(cv.pool)} #{cv.index} ", style="bold reverse")
        t.append(f" {shown(cv.label or NULL)}  id {shown(cv.id)}  ")
        t.append(status_word(cv.effective.status), style=STATUS_STYLE.get(cv.effective.status, ""))
        if self.budget:
            t.append("  over budget", style="bold yellow")
        if self.removed:
            t.append("  REMOVED from the store (showing the last copy)", style="bold red")
        self.title_text = t.plain
        title.update(t)
        now = self.clock()
        included = table_spend.included(self.readings, now) if table_spend.subscription(cv.pool, cv.row) else None
        usage = [*self.usage.spend(included), *self.usage.burn(self.readings, now)]
        self.lines = detail_lines(cv, now, self.readings, self.threshold, self.budget, usage)
        table = Table(box=None, expand=True, show_edge=False, pad_edge=False)
        table.add_column("field", style="bold", no_wrap=True, ratio=3)
        table.add_column("value", overflow="fold", ratio=4)
        table.add_column("meaning", overflow="fold", style="dim", ratio=4)
        for name, value, meaning in self.lines:
            # Text, not str: a Rich table would read "[...]" in a stored value as markup.
            # Through the funnel before the column folds it: a key never shows even in part.
            table.add_row(Text(shown(name)), Text(shown(value)), Text(shown(meaning)))
        body.update(table)

    def action_close(self) -> None:
        self.app.pop_screen()
