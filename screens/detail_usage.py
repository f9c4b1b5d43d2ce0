"""The detail view's usage lines (#29): what one key spent, and how fast a subscription burns.

- **Spend** today (since 00:00 UTC), in 7 and in 30 days, from the usage ledger: requests,
  the cost as :func:`store.usage.money.money` says it with its status (an estimate names the
  genai-prices version it came from), tokens by kind (input, output, cache read, cache write,
  reasoning) and the cache hit ratio. Read on a thread worker (:class:`DetailUsage`), one query
  per window, again only while the view is open and every :data:`USAGE_POLL_SECONDS`.
- **Burn** for a subscription window (``5h``, ``7d``) with a headroom reading: its use, the
  rate it grows and when it runs out at that rate, by :class:`store.monitor.burn.Trend`'s
  projection (the monitor's ``burn_rate`` rule): the trend of the readings seen while the
  view is open (:class:`store.monitor.burn.BurnHistory`), else the window's average since it
  began (its use over the time it has run).

Every figure not known reads ``—``; a ledger that cannot be read says so in its line. The
module loads with the detail screen (never at the console's first paint), ``sqlite3`` with it.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

from textual.screen import Screen

from store.config import settings as settings_file
from store.dialects.readings import Reading
from store.errors import HermesAdminError, StoreUnreadable
from store.monitor.burn import BurnHistory, Trend
from store.monitor.conditions import span
from store.paths import Home
from store.pools.times import on_calendar
from store.usage import report  # sqlite3: this module loads when a detail view first opens
from store.usage.ledger import ledger_path
from store.usage.money import money, prices_version
from store.usage.record import ESTIMATED, INCLUDED, UNKNOWN
from tui.text.format import NULL, clock_time
from tui.text.shown import shown

USAGE_POLL_SECONDS = 5.0
BURN_WINDOWS = {"5h": 5 * 3600.0, "7d": 7 * 86400.0}
TOKEN_WORDS = (("input_tokens", "input"), ("output_tokens", "output"), ("cache_read_tokens", "cache read"),
               ("cache_write_tokens", "cache write"), ("reasoning_tokens", "reasoning"))
STATUS_MEANING = {"actual": "the provider's own figure", ESTIMATED: "estimated from a price table",
                  INCLUDED: "included in a subscription: no dollars per request",
                  UNKNOWN: "no price known for some answers"}
Line = tuple[str, str, str]


def read_windows(home: Home, pool: str, row_id: str, now: float) -> tuple[dict[str, Any] | None, str]:
    """(the key's usage per window, or None; what to say when there is none). Never raises
    for the ledger's sake: for a thread worker."""
    try:
        keep = settings_file.read(home).usage.keep_requests
    except HermesAdminError:
        keep = settings_file.DEFAULTS.usage.keep_requests
    try:
        return report.key_windows(ledger_path(home.root), pool, row_id, now, keep), ""
    except FileNotFoundError:
        return None, "no usage ledger yet: a proxy on this home records each answer's usage"
    except (StoreUnreadable, OSError) as exc:
        return None, shown(f"the usage ledger cannot be read: {exc}")


def _n(value: int) -> str:
    return f"{value:,}"


def usage_lines(found: dict[str, Any] | None, why: str, version: str | None = None,
                included: str | None = None) -> list[Line]:
    """The spend lines of one key from :func:`read_windows`'s answer. *included*: the row is
    a subscription's (``incl. 5h 42%`` or ``incl.``, as its spend cell reads): a window with
    no answer recorded, or no ledger at all, says that rather than ``—``."""
    if found is None:
        if included is not None:
            return [("spend", included, STATUS_MEANING[INCLUDED] + (f"; {why}" if why else ""))]
        return [("spend", NULL, why)] if why else []
    version = version or prices_version()
    lines: list[Line] = []
    for name, g in found.items():
        if g is None or g.requests <= 0:
            if included is not None:
                lines.append((f"spend {name}", included if name == "today" else "incl.",
                               f"{STATUS_MEANING[INCLUDED]}; no answer recorded"))
            else:
                lines.append((f"spend {name}", NULL, "no answer recorded"))
            continue
        status = g.cost_status
        cost = money(g.cost_usd if status != UNKNOWN else None, status, version)
        if status == UNKNOWN and g.known_usd is not None:
            cost = f"≥{money(g.known_usd, 'actual')}"      # the priced answers' part: a floor
        meaning = f"{status}: {STATUS_MEANING.get(status, '')}" + (" (since 00:00 UTC)" if name == "today" else "")
        lines.append((f"spend {name}", f"{_n(g.requests)} request{'' if g.requests == 1 else 's'} · {cost}", meaning))
        tokens = " · ".join(f"{word} {_n(g.tokens.get(k, 0))}" for k, word in TOKEN_WORDS)
        partial = f"; {_n(g.partial)} streams cut short (counted as far as seen)" if g.partial else ""
        lines.append((f"tokens {name}", tokens, "input counts cache reads and writes; reasoning is part of output"
                      + partial))
        ratio = report.cache_hit_ratio(g)
        lines.append((f"cache hits {name}", NULL if ratio is None else f"{ratio:.0%}",
                      "of input tokens read from the provider's cache"))
    return lines


def average_trend(r: Reading) -> Any:
    """The window's :class:`~store.monitor.burn.Trend` from one reading: its use over the time
    it has run (from its reset less its length); None when that cannot be known."""
    length = r.length or BURN_WINDOWS.get(r.window)
    used = r.utilization
    if used is None or not math.isfinite(used) or r.reset_at is None or not length:
        return None
    ran = r.read_at - (r.reset_at - length)
    if not (math.isfinite(ran) and ran > 0):
        return None
    return Trend(used, r.read_at, used / ran, r.reset_at, r.source)


def burn_lines(readings: Iterable[Reading], now: float, trend_of: Callable[[str], Any]) -> list[Line]:
    """A line per subscription window with a fresh reading: its use, its rate, and when it
    runs out (*trend_of*: the seen trend of a window, or None)."""
    lines: list[Line] = []
    for r in sorted(readings, key=lambda r: BURN_WINDOWS.get(r.window, math.inf)):
        if r.utilization is None or r.window not in BURN_WINDOWS or r.stale(now):
            continue
        seen = trend_of(r.window)
        trend = seen or average_trend(r)
        if trend is None:
            lines.append((f"burn {r.window}", f"{r.utilization:.0%} used", "no rate yet: " + NULL))
            continue
        out = trend.exhausts_at()
        if out is None:
            runs = "not before the window resets"
        elif out <= now:
            runs = "spent now"
        else:
            runs = f"runs out in {span(out - now)} ({clock_time(out)})" if on_calendar(out) else NULL
        how = "the trend of the readings seen" if seen else "its average since the window began"
        lines.append((f"burn {r.window}", f"{trend.used:.0%} used · {trend.rate * 3600:+.1%}/h · {runs}",
                      f"at {how} ({trend.source})"))
    return lines


class DetailUsage:
    """The key's usage per window, read on a thread worker while the detail view is open."""

    def __init__(self, screen: Screen, key: tuple[str, str], clock: Callable[[], float],
                 shown_cb: Callable[[], None]) -> None:
        self.screen = screen
        self.key = key
        self.clock = clock
        self.changed = shown_cb
        self.found: dict[str, Any] | None = None
        self.why = ""
        self.busy = False
        self.history = BurnHistory()

    def start(self, home: Home) -> None:
        self.home = home
        self.poll()
        self.screen.set_interval(USAGE_POLL_SECONDS, self.poll, name="detail-usage")

    def poll(self) -> None:
        if self.busy:
            return
        self.busy = True
        self.screen.run_worker(self._read, name="detail-usage", group="detail-usage", thread=True,
                               exit_on_error=False)

    def _read(self) -> None:
        try:
            got = read_windows(self.home, *self.key, self.clock())
        except Exception as exc:        # noqa: BLE001 - the view says it and lives
            got = None, f"the usage ledger cannot be read ({type(exc).__name__})"
        try:
            self.screen.app.call_from_thread(self.show, *got)
        except RuntimeError:            # the app closed while reading
            self.busy = False

    def show(self, found: dict[str, Any] | None, why: str) -> None:
        self.busy = False
        self.found, self.why = found, why
        self.changed()

    def spend(self, included: str | None) -> list[Line]:
        """The spend lines as last read (*included*: the row is a subscription's, its cell's words)."""
        if self.found is None and not self.why:
            return []                   # not read yet
        return usage_lines(self.found, self.why, included=included)

    def observe(self, headroom: Any) -> None:
        """Note the home's headroom readings (each state): the burn trend's points."""
        self.history.observe("", headroom)

    def burn(self, readings: Iterable[Reading], now: float) -> list[Line]:
        return burn_lines(readings, now, lambda w: self.history.trend("", self.key[0], self.key[1], w))
