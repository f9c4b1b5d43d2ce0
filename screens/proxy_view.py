"""``x``: the proxy panel, live traffic of the proxy running on this home.

It reads only the proxy's status file (``tui.services.proxy_feed``), once a second while it is
open: per credential the in-flight requests and requests per minute, per pool a
sparkline of requests and one of 429s over the last 10 minutes, and the chain state
(on primary, or on fallback since when and the next restore check). When no proxy is
live (never started, stopped, or a stale file) it says so and shows no figures.
"""

from __future__ import annotations

from typing import Any, Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Sparkline, Static

from store.paths import Home
from tui.services import proxy_feed as feed
from tui.services.host import host
from tui.text.paths import tilde
from tui.text.shown import shown

POLL_SECONDS = 1.0     # the proxy rewrites its status file every second
PROXY_FIND_SECONDS = 5.0   # the dashboard's look for a proxy while none is live


class PoolSparks(Horizontal):
    """One line: a label with the 10-minute total, then a sparkline of the 10 s buckets."""

    DEFAULT_CSS = """
    PoolSparks { height: 1; }
    PoolSparks > Static { width: 33; height: 1; }
    PoolSparks > Sparkline { width: 1fr; height: 1; }
    """

    def __init__(self, pool: str, kind: str, data: list[int]) -> None:
        super().__init__(classes=f"-{kind}")
        self.pool, self.kind = pool, kind
        self.label = Static(self._label(data), classes="spark-label")
        self.spark = Sparkline(data, summary_function=max)

    def _label(self, data: list[int]) -> Text:
        # The figure in words beside the bars: the bars' colour is never the only signal.
        name = self.pool if self.kind == "requests" else ""
        word = "requests" if self.kind == "requests" else "429s"
        return Text(f"{name:<14.14} {word:>8} {sum(data):>4}/10m", no_wrap=True, overflow="ellipsis")

    def compose(self) -> ComposeResult:
        yield self.label
        yield self.spark

    def set_data(self, data: list[int]) -> None:
        self.label.update(self._label(data))
        self.spark.data = data


class ProxyScreen(Screen[None]):
    """The proxy panel; Escape, q or x closes it. Focus starts on the credentials table."""

    DEFAULT_CSS = """
    ProxyScreen > .proxy-line { height: auto; padding: 0 1; }
    ProxyScreen > #proxy-header { text-style: bold; }
    ProxyScreen > #proxy-none { height: auto; padding: 1 1; }
    ProxyScreen > #proxy-creds { height: auto; max-height: 9; }
    ProxyScreen > #proxy-sparks { height: 1fr; min-height: 4; padding: 0 1; }
    ProxyScreen .-rate_limited > Sparkline > .sparkline--max-color { color: $error; }
    """

    BINDINGS = [
        Binding("escape", "close", "Back", id="proxy.close"),
        Binding("q", "close", "Back", show=False, id="proxy.close_q"),
        Binding("x", "close", "Back", show=False, id="proxy.close_x"),
    ]

    def __init__(self, home: Home) -> None:
        super().__init__(id="proxy")
        self.home = home
        self.status: dict[str, Any] | None = None
        self._pools: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static(id="proxy-header", classes="proxy-line")
        yield Static(id="proxy-chain", classes="proxy-line")
        yield Static(id="proxy-routes", classes="proxy-line")
        yield Static(id="proxy-none")
        yield DataTable(id="proxy-creds", cursor_type="row", zebra_stripes=True)
        yield VerticalScroll(id="proxy-sparks")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.query_one("#proxy-creds", DataTable)
        for c in feed.CREDENTIAL_COLUMNS:
            table.add_column(c, key=c)
        self.poll()
        self.set_interval(POLL_SECONDS, self.poll, name="proxy-poll")
        table.focus()

    def poll(self) -> None:
        """Read the status file and show it (or that no proxy runs here)."""
        self.show(feed.live_status(self.home))

    def show(self, st: dict[str, Any] | None) -> None:
        self.status = st
        live = st is not None
        for wid in ("#proxy-header", "#proxy-chain", "#proxy-routes", "#proxy-creds", "#proxy-sparks"):
            self.query_one(wid).display = live
        none = self.query_one("#proxy-none", Static)
        none.display = not live
        if st is None:
            root = tilde(self.home.root)
            none.update(Text(f"No proxy is running on {root}.\n"
                             f"Start one with: hermes-admin --home {root} proxy\n"
                             "This panel fills in by itself when it starts. Esc: back.", no_wrap=False))
            return
        self.query_one("#proxy-header", Static).update(Text(shown(feed.header_line(st))))
        self.query_one("#proxy-chain", Static).update(Text(shown(feed.chain_line(st)), no_wrap=True,
                                                           overflow="ellipsis"))
        self.query_one("#proxy-routes", Static).update(Text(shown(feed.routes_line(st))))
        self._fill_table(feed.credential_rows(st))
        self._fill_sparks(feed.pool_series(st))

    def _fill_table(self, rows: list[tuple[str, ...]]) -> None:
        table = self.query_one("#proxy-creds", DataTable)
        cursor = table.cursor_row
        table.clear()
        for row in rows:
            table.add_row(*(Text(shown(c), no_wrap=True) for c in row), key="/".join(row[:2]))
        if rows:
            table.move_cursor(row=min(cursor, len(rows) - 1), animate=False)

    def _fill_sparks(self, series: list[tuple[str, list[int], list[int]]]) -> None:
        box = self.query_one("#proxy-sparks", VerticalScroll)
        names = [name for name, _r, _l in series]
        if names != self._pools:
            box.remove_children()
            box.mount_all([PoolSparks(name, kind, data) for name, requests, limited in series
                           for kind, data in (("requests", requests), ("rate_limited", limited))])
            self._pools = names
            return
        by_key = {(s.pool, s.kind): s for s in box.query(PoolSparks)}
        for name, requests, limited in series:
            for kind, data in (("requests", requests), ("rate_limited", limited)):
                spark = by_key.get((name, kind))
                if spark is not None:
                    spark.set_data(data)

    def action_close(self) -> None:
        self.dismiss()


class ProxyWatch:
    """The status-bar summary of a proxy live on the screen's home, and `x` to open its panel.

    Owned by the dashboard. The proxy's status file is not watched (a reload each second
    costs 3.5x a stat: bench/bench_feed.py); a slow poll (every PROXY_FIND_SECONDS) finds a
    proxy, then follows it each second while it stays live.
    """

    def __init__(self, screen: Screen, changed: Callable[[], None]) -> None:
        self.screen = screen
        self.changed = changed          # the summary changed: the screen redraws its status bar
        self.summary = ""               # "proxy :8645 · 12 req/min · primary", "" if none
        self.timer: Timer | None = None
        self.pace = 0.0

    def pace_poll(self) -> None:
        """Start (or re-pace) the poll: each second while a proxy is live, else slowly."""
        # With no proxy live a console wakes for it only every PROXY_FIND_SECONDS: idle stays idle.
        pace = POLL_SECONDS if self.summary else PROXY_FIND_SECONDS
        if self.timer is not None:
            if pace == self.pace:
                return
            self.timer.stop()
        self.pace = pace
        self.timer = self.screen.set_interval(pace, self.poll, name="proxy-status")

    def poll(self) -> None:
        """The status-bar summary of a proxy live on this home (its status file only)."""
        line = feed.summary(feed.live_status(host(self.screen).home))
        if line != self.summary:
            self.summary = line
            self.changed()
        if self.timer is not None:
            self.pace_poll()

    def open_panel(self) -> None:
        home = host(self.screen).home
        if feed.live_status(home) is None:
            self.screen.notify(f"No proxy is running on this home. Start one: hermes-admin --home {home.root} proxy",
                               timeout=4)
            return
        host(self.screen).push_screen(ProxyScreen(home))
