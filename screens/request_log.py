"""``l`` on a row: that key's recent requests, from every proxy on the home (k9s's ``l``).

Each proxy keeps its last 50 requests in its status file (``store.proxy.observing.requests``); this
modal lists those the highlighted key served, newest first: time, proxy, route, status, the
latency in ms and the outcome. There is never a body, a header or a query string to show: the
proxy does not keep them. Read when it opens and once a second while open (one small file per
proxy, as the proxy panel reads it); the dashboard's table does no IO for it.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from store.paths import Home
from tui.services.proxy_feed import key_requests
from tui.text.shown import shown
from tui.widgets.plain_table import FittedTable, fill_fitted

COLUMNS = ("time", "proxy", "route", "status", "ms", "outcome")


class RequestLogScreen(ModalScreen[None]):
    """One key's recent requests; Escape, q or l closes."""

    DEFAULT_CSS = """
    #request-log-box { width: 96%; max-width: 120; }
    #request-log-table { height: auto; max-height: 14; margin-top: 1; }
    #request-log-note { height: auto; margin-top: 1; text-style: bold; }
    """

    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="requests.close"),
        Binding("q,l", "dismiss", "Close", show=False, id="requests.close_q"),
    ]

    def __init__(self, home: Home, pool: str, row_id: str, name: str, *, follow: bool = True) -> None:
        super().__init__(id="request-log", classes="modal")
        self.home, self.pool, self.row_id, self.key_name = home, pool, row_id, name
        self.follow = follow
        self.rows: list[tuple[str, ...]] = []
        self.proxies = -1             # not read yet

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="request-log-box"):
            yield Static(Text(shown(f"Recent requests of {self.pool} {self.key_name} (id {self.row_id})")),
                         classes="modal-title")
            yield FittedTable(id="request-log-table", cursor_type="row")
            yield Static(id="request-log-note")
            yield Static("Each proxy keeps its last 50 requests; no body, header or query is kept. "
                         "Esc: close", classes="modal-keys")

    def on_mount(self) -> None:
        self.read()
        self.query_one(DataTable).focus()
        if self.follow:
            self.set_interval(1.0, self.read, name="request-log")

    def read(self) -> None:
        rows, proxies = key_requests(self.home, self.pool, self.row_id)
        if (rows, proxies) == (self.rows, self.proxies):
            return                    # nothing new: no repaint
        self.rows, self.proxies = rows, proxies
        self._fill()
        if not proxies:
            note = "No proxy has run on this home: start one with hermes-admin proxy."
        elif not rows:
            note = f"None of the last requests of {proxies} prox{'y' if proxies == 1 else 'ies'} used this key."
        else:
            note = f"{len(rows)} request{'s' if len(rows) != 1 else ''}, newest first."
        self.query_one("#request-log-note", Static).update(Text(note))

    def on_fitted_table_width_changed(self, event: FittedTable.WidthChanged) -> None:
        self._fill()

    def _fill(self) -> None:
        fill_fitted(self.query_one(FittedTable), COLUMNS, self.rows, "outcome")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
