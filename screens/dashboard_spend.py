"""The dashboard's spend column (#29): today's cost per key, read off the UI thread.

:class:`SpendWatch` is owned by the dashboard. Every :data:`SPEND_POLL_SECONDS` (and once
after the first paint) it runs :class:`tui.services.spend_feed.SpendReader` on a thread
worker, which reads the ledger only when its files changed (one aggregate query, never one
per row or per render); the figures come back to the event loop and the table makes only
the cells that moved. A ledger that cannot be read is one notice (until its words change)
and every cell ``—``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from textual.css.query import NoMatches
from textual.screen import Screen

from tui.services.host import host
from tui.widgets import CredentialTable

if TYPE_CHECKING:
    from tui.services.spend_feed import SpendReader

SPEND_POLL_SECONDS = 3.0     # a look at the ledger's files; a read only when they moved
FIRST_DELAY = 0.5            # the first look waits for the first paint (sqlite3 is imported then)


class SpendWatch:
    """Today's spend per key from the home's usage ledger, into the dashboard's table."""

    def __init__(self, screen: Screen, clock: Callable[[], float]) -> None:
        self.screen = screen
        self.clock = clock
        self.reader: SpendReader | None = None
        self.notice: str | None = None           # the notice last shown
        self.busy = False

    def start(self, *, follow: bool = True) -> None:
        """Look after the first paint and, with *follow*, every SPEND_POLL_SECONDS from then on."""
        self.screen.set_timer(FIRST_DELAY, self.poll, name="spend-first")
        if follow:
            self.screen.set_interval(SPEND_POLL_SECONDS, self.poll, name="spend")

    def poll(self) -> None:
        """Read on a thread worker (one at a time: a slow ledger never piles reads up)."""
        if self.busy:
            return
        self.busy = True
        self.screen.run_worker(self._read, name="spend", group="spend", thread=True, exit_on_error=False)

    def _reader(self) -> SpendReader:
        home = host(self.screen).home
        if self.reader is None or self.reader.home != home:
            from tui.services.spend_feed import SpendReader  # not at start-up
            self.reader = SpendReader(home, self.clock)
        return self.reader

    def _read(self) -> None:
        try:
            reader = self._reader()
            found = reader.read()
            notice = reader.notice
        except Exception as exc:        # noqa: BLE001 - the column shows — and says why, the console lives
            found, notice = {}, f"spend unreadable ({type(exc).__name__}), spend shows —"
        try:
            self.screen.app.call_from_thread(self.show, found, notice)
        except RuntimeError:            # the app closed while reading
            self.busy = False

    def show(self, found: dict[Any, Any] | None, notice: str | None) -> None:
        """Back on the event loop: the figures into the table (None: unchanged), a new notice once."""
        self.busy = False
        if found is not None:
            try:
                table = self.screen.query_one(CredentialTable)
            except NoMatches:           # the screen closed while reading
                return
            table.set_spend(found)
        if notice != self.notice:
            self.notice = notice
            if notice:
                self.screen.notify(notice, severity="warning", timeout=8, markup=False)
