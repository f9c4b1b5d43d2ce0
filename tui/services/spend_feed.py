"""Today's spend per key for the console (#29), read from the usage ledger off the UI thread.

:class:`SpendReader` is called on a thread worker (``screens.dashboard_spend``). Each call
looks at the ledger's files (a stat of the database and its ``-wal``: the proxy writes
behind, into the WAL) and reads the ledger again only when they changed, the UTC day turned,
or :data:`REREAD_SECONDS` passed; then it is one aggregate query (:func:`store.usage.report.spend_today`),
never one per row or per render. ``sqlite3``, the report module and the settings schema are
imported on the first read, not at the console's start.

A missing ledger (no proxy has recorded anything yet) makes every cell ``—`` quietly; a
locked, corrupt or unreadable one is a notice (its words, once until it changes) and every
cell ``—``: never an old figure shown as current.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any, Callable

from store.errors import HermesAdminError, StoreUnreadable
from store.paths import Home
from store.usage.record import ACTUAL, ESTIMATED, INCLUDED, LEDGER_FILE, UNKNOWN
from tui.text.shown import shown

REREAD_SECONDS = 60.0      # at most this long between reads of a ledger whose files look the same
Key = tuple[str, str]
Spend = tuple[str, float | None, int]      # (cost status, known dollars, requests): tui.widgets.table_spend's
STATUSES = frozenset((ACTUAL, ESTIMATED, INCLUDED, UNKNOWN))


def spent(group: Any) -> Spend | None:
    """A ledger group (:class:`store.usage.report.Group`) as the cell needs it; None for
    one that says nothing (no request, or not a group at all)."""
    try:
        status, usd, requests = group.cost_status, group.known_usd, group.requests
    except AttributeError:
        return None
    if not isinstance(requests, int) or isinstance(requests, bool) or requests <= 0:
        return None
    if isinstance(usd, bool) or not isinstance(usd, int | float) or not math.isfinite(usd) or usd < 0:
        usd = None
    return (status if status in STATUSES else UNKNOWN), (None if usd is None else float(usd)), requests


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class SpendReader:
    """Reads a home's ledger for today's spend, only when something may have changed."""

    def __init__(self, home: Home, clock: Callable[[], float] = time.time) -> None:
        self.home = home
        self.clock = clock
        self.path = home.root / LEDGER_FILE
        self._seen: tuple[Any, ...] | None = None
        self._read_at = -float("inf")
        self.notice: str | None = None        # the last read's trouble, in words; None when fine
        self.reads = 0                        # ledger queries made (a test counts them)

    def _look(self, now: float) -> tuple[Any, ...]:
        return _stat(self.path), _stat(Path(f"{self.path}-wal")), int(now // 86400)

    def changed(self, now: float) -> bool:
        """Whether the ledger's files, the UTC day or the reread bound moved since the last read."""
        return self._look(now) != self._seen or now - self._read_at >= REREAD_SECONDS

    def _settle(self, before: tuple[Any, ...], now: float) -> None:
        """What the next look compares with: the files as after this read when only the read
        itself touched them (opening a WAL database makes an empty ``-wal``), else as before
        it (a write landed meanwhile: the next look reads again)."""
        after = self._look(now)
        ours = before[0] == after[0] and before[1] is None and after[1] is not None and after[1][1] == 0
        self._seen = after if after == before or ours else before

    def read(self) -> dict[Key, Spend] | None:
        """Per (pool, row id) what each key spent today; None when nothing changed since the
        last read (the caller keeps what it shows). Never raises for the ledger's sake."""
        now = self.clock()
        if not self.changed(now):
            return None
        before = self._look(now)
        self._read_at = now
        import sqlite3  # on the first read, not at start-up

        from store.config import settings as settings_file  # the whole settings schema: with the first read too
        from store.usage import report
        try:
            keep = settings_file.read(self.home).usage.keep_requests
        except HermesAdminError:
            keep = settings_file.DEFAULTS.usage.keep_requests
        self.reads += 1
        try:
            groups = report.spend_today(self.path, now, keep)
        except FileNotFoundError:
            self.notice = None
            return {}
        except (StoreUnreadable, OSError, sqlite3.Error) as exc:
            self.notice = shown(f"usage ledger unreadable, spend shows —: {exc}")
            return {}
        finally:
            self._settle(before, now)
        self.notice = None
        return {k: s for k, g in groups.items() if (s := spent(g)) is not None}
