"""``A``: the monitor view, what ``hermes-admin monitor`` running on this home says.

It reads only the monitor's status file (``tui.services.monitor_feed``), once a second while it
is open: the monitor's header (on which home or root, since when, its pid, the metrics URL,
where its rules came from, its delivery targets in Apprise's privacy form), the open alerts
(severity in words, rule, profile, pool, credential, fingerprint, since, title) and the last
deliveries (time, rule, alert or recovery, target, result, attempts, error). With no monitor
running (never started, stopped, or its pid gone) it says how to start one.

Read-only: it writes nothing, and it never wakes the store watcher. Every text from the file
passes ``shown`` (the one redaction boundary, then inert controls) before it is drawn.

:class:`screens.status_watch.MonitorWatch`, owned by the dashboard, gives the status bar its
words (``monitor · 2 alerts``) and opens the view.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static

from store.paths import Home
from tui.services import monitor_feed as feed
from tui.services.host import host
from tui.text.paths import tilde
from tui.text.shown import shown
from tui.widgets.footer import KeysFooter
from tui.widgets.plain_table import PlainTable

POLL_SECONDS = 1.0          # while the view is open


class MonitorScreen(Screen[None]):
    """The monitor view; Escape, q or A closes it. Focus starts on the open alerts."""

    DEFAULT_CSS = """
    MonitorScreen > .monitor-line { height: auto; padding: 0 1; }
    MonitorScreen > #monitor-header { text-style: bold; }
    MonitorScreen > #monitor-errors { color: $warning; }
    MonitorScreen > #monitor-none { height: auto; padding: 1 1; }
    MonitorScreen > .monitor-title { height: 1; padding: 0 1; text-style: bold; }
    MonitorScreen > #monitor-alerts { height: auto; max-height: 8; }
    MonitorScreen > #monitor-alert-text { color: $text-muted; max-height: 3; }
    MonitorScreen > #monitor-deliveries { height: 1fr; min-height: 3; }
    """

    BINDINGS = [
        Binding("escape", "close", "Back", id="monitor.close"),
        Binding("q", "close", "Back", show=False, id="monitor.close_q"),
        Binding("A", "close", "Back", show=False, id="monitor.close_a"),
    ]

    def __init__(self, home: Home, *, start_hint: str) -> None:
        """*home* holds the status file; *start_hint* is the command that starts a monitor there."""
        super().__init__(id="monitor")
        self.home = home
        self.start_hint = start_hint
        self.status: dict[str, Any] | None = None
        self.shown_once = False
        self.alerts: list[dict[str, Any]] = []     # the open alerts in the table's order

    def compose(self) -> ComposeResult:
        yield Static(id="monitor-header", classes="monitor-line")
        yield Static(id="monitor-metrics", classes="monitor-line")
        yield Static(id="monitor-rules", classes="monitor-line")
        yield Static(id="monitor-targets", classes="monitor-line")
        yield Static(id="monitor-errors", classes="monitor-line")
        yield Static(id="monitor-none")
        yield Static(id="monitor-alerts-title", classes="monitor-title")
        yield PlainTable(id="monitor-alerts", cursor_type="row", zebra_stripes=True)
        yield Static(id="monitor-alert-text", classes="monitor-line")
        yield Static(id="monitor-deliveries-title", classes="monitor-title")
        yield PlainTable(id="monitor-deliveries", cursor_type="row", zebra_stripes=True)
        yield KeysFooter(compact=True)

    def on_mount(self) -> None:
        for wid, columns in (("#monitor-alerts", feed.ALERT_COLUMNS), ("#monitor-deliveries", feed.DELIVERY_COLUMNS)):
            table = self.query_one(wid, DataTable)
            for c in columns:
                table.add_column(c, key=c)
        self.poll()
        self.set_interval(POLL_SECONDS, self.poll, name="monitor-poll")
        self.query_one("#monitor-alerts", DataTable).focus()

    def poll(self) -> None:
        """Read the status file and show it (or that no monitor runs here)."""
        st = feed.live_status(self.home)
        if self.shown_once and st == self.status:
            return      # the monitor writes only on events: most polls find the same document
        self.shown_once = True
        self.show(st)

    def show(self, st: dict[str, Any] | None) -> None:
        self.status = st
        live = st is not None
        for wid in ("#monitor-header", "#monitor-metrics", "#monitor-rules", "#monitor-targets",
                    "#monitor-alerts-title", "#monitor-alerts", "#monitor-alert-text", "#monitor-deliveries-title",
                    "#monitor-deliveries"):
            self.query_one(wid).display = live
        none = self.query_one("#monitor-none", Static)
        none.display = not live
        errors = feed.data_errors(st) if st is not None else []
        self.query_one("#monitor-errors").display = bool(errors)
        self.query_one("#monitor-errors", Static).update(Text("\n".join(shown(e) for e in errors)))
        if st is None:
            self.alerts = []
            none.update(Text(f"No monitor is running on {shown(tilde(self.home.root))}.\n"
                             f"Start one with: {shown(self.start_hint)}\n"
                             "This view fills in by itself when it starts. Esc: back.", no_wrap=False))
            return
        now = host(self).clock()
        self.query_one("#monitor-header", Static).update(Text(shown(feed.header_line(st, now))))
        self.query_one("#monitor-metrics", Static).update(Text(shown(feed.metrics_line(st))))
        self.query_one("#monitor-rules", Static).update(Text(shown(feed.rules_line(st))))
        self.query_one("#monitor-targets", Static).update(Text(shown(feed.targets_line(st))))
        self.alerts = feed.open_alerts(st)
        alerts = [feed.alert_row(a, now) for a in self.alerts]
        deliveries = feed.delivery_rows(st)
        self.query_one("#monitor-alerts-title", Static).update(
            Text(f"Open alerts: {len(alerts)}" if alerts else "Open alerts: none, all quiet"))
        self.query_one("#monitor-deliveries-title", Static).update(
            Text(f"Last deliveries, newest first: {len(deliveries)}" if deliveries else "Last deliveries: none yet"))
        self._fill("#monitor-alerts", alerts)
        self._fill("#monitor-deliveries", deliveries)
        self._show_alert_text()

    def _show_alert_text(self) -> None:
        row = self.query_one("#monitor-alerts", DataTable).cursor_row
        line = feed.alert_line(self.alerts[row]) if 0 <= row < len(self.alerts) else ""
        self.query_one("#monitor-alert-text").display = bool(line)
        self.query_one("#monitor-alert-text", Static).update(Text(shown(line), overflow="ellipsis"))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "monitor-alerts" and self.status is not None:
            self._show_alert_text()

    def _fill(self, wid: str, rows: list[tuple[str, ...]]) -> None:
        table = self.query_one(wid, DataTable)
        cursor = table.cursor_row
        table.clear()
        for i, row in enumerate(rows):
            table.add_row(*(Text(shown(c), no_wrap=True) for c in row), key=str(i))
        if rows:
            table.move_cursor(row=min(cursor, len(rows) - 1), animate=False)

    def action_close(self) -> None:
        self.dismiss()
