"""The dashboard's spend column (#29): today's cost per key, read off the UI thread.

:class:`SpendWatch` is owned by the dashboard. Every :data:`SPEND_POLL_SECONDS` (and once
after the first paint) it runs :class:`tui.services.spend_feed.SpendReader` on a thread
worker, which reads the ledger only when its files changed (one aggregate query, never one
per row or per render); the figures come back to the event loop and the table makes only
the cells that moved. A ledger that cannot be read is one notice (until its words change)
and every cell ``—``.

On a root of profiles (``screens.profiles_view``) every profile shown has its own ledger:
:attr:`SpendWatch.homes` gives each home with the view's key for its pools
(``<profile>/<pool>``), and the rows a running proxy holds over budget are the acting
profile's (its status file is the one the proxy watch reads).
"""

from __future__ import annotations

from typing import Any, Callable

from textual.css.query import NoMatches
from textual.screen import Screen

from store.paths import Home
from tui.services.host import host
from tui.services.spend_feed import SpendReader
from tui.widgets import CredentialTable
from tui.widgets.table_notes import BUDGET

SPEND_POLL_SECONDS = 3.0     # a look at the ledger's files; a read only when they moved
FIRST_DELAY = 0.5            # after the first paint: the first look imports sqlite3


Homes = Callable[[], list[tuple[Home, Callable[[str], str]]]]     # each home, and its pools' view keys


def same(pool: str) -> str:
    return pool


class SpendWatch:
    """Today's spend per key from the usage ledgers of the homes shown, into the dashboard's table."""

    def __init__(self, screen: Screen, clock: Callable[[], float]) -> None:
        self.screen = screen
        self.clock = clock
        self.homes: Homes = lambda: [(host(screen).home, same)]     # a root's dashboard gives its profiles'
        self.readers: dict[Home, SpendReader] = {}
        self.found: dict[Home, dict[Any, Any]] = {}  # each home's last figures, under the view's keys
        self.notice: str | None = None           # the notice last shown
        self.busy = False

    def start(self, *, follow: bool = True) -> None:
        """Look once the screen has painted (and FIRST_DELAY more) and, with *follow*, every
        SPEND_POLL_SECONDS from then on."""
        self.screen.call_after_refresh(lambda: self.screen.set_timer(FIRST_DELAY, self.poll, name="spend-first"))
        if follow:
            self.screen.set_interval(SPEND_POLL_SECONDS, self.poll, name="spend")

    def poll(self) -> None:
        """Read on a thread worker (one at a time: a slow ledger never piles reads up)."""
        if self.busy:
            return
        self.busy = True
        homes = self.homes()        # on the event loop: the screen's state is read here only
        self.screen.run_worker(lambda: self._read(homes), name="spend", group="spend", thread=True,
                               exit_on_error=False)

    def _read(self, homes: list[tuple[Home, Callable[[str], str]]]) -> None:
        moved, notices = False, []
        try:
            for home, view in homes:
                reader = self.readers.get(home) or self.readers.setdefault(home, SpendReader(home, self.clock))
                got = reader.read()
                if got is not None:
                    self.found[home] = {(view(pool), rid): s for (pool, rid), s in got.items()}
                    moved = True
                notices += [reader.notice] if reader.notice else []
            if {h for h, _ in homes} != set(self.found):
                self.found = {h: f for h, f in self.found.items() if h in {h for h, _ in homes}}
                moved = True
            found = {k: v for f in self.found.values() for k, v in f.items()} if moved else None
            notice = "; ".join(notices) or None
        except Exception as exc:        # noqa: BLE001 - the column shows — and says why, the console lives
            found, notice = {}, f"spend unreadable ({type(exc).__name__}), spend shows —"
        try:
            self.screen.app.call_from_thread(self.show, found, notice)
        except RuntimeError:            # the app closed while reading
            self.busy = False

    def show(self, found: dict[Any, Any] | None, notice: str | None) -> None:
        """Back on the event loop: the figures into the table (None: unchanged), a new notice once."""
        self.busy = False
        if found is not None and (table := self._table()) is not None:
            table.set_spend(found)
        if notice != self.notice:
            self.notice = notice
            if notice:
                self.screen.notify(notice, severity="warning", timeout=8, markup=False)

    def over_budget(self, notes: dict[tuple[str, str], str]) -> None:
        """The rows the proxy on the acting home holds over budget: noted before the reason and
        after the spend figure (the proxy watch's callback)."""
        home = host(self.screen).home
        view = next((v for h, v in self.homes() if h == home), same)
        notes = {(view(pool), rid): word for (pool, rid), word in notes.items()}
        if (table := self._table()) is not None:
            table.set_notes(notes, kind=BUDGET)       # the findings' notes stay (tui.widgets.table_notes)
            table.set_spend(over=list(notes))

    def _table(self) -> CredentialTable | None:
        try:
            return self.screen.query_one(CredentialTable)
        except NoMatches:               # the screen closed while reading
            return None
