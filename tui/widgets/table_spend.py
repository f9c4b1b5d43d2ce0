"""The credential table's spend cells (#29): what each key cost today, in words.

:class:`SpendCells` holds what the usage ledger says each row spent since 00:00 UTC (per
(view pool key, row id): its cost status, the known dollars and the requests, as
:func:`tui.services.spend_feed.spent` makes them from the ledger) and which rows a running
proxy holds over their budget. A cell reads:

- ``$0.42`` (the provider's own figure), ``~$0.42`` (an estimate from the price table),
  ``<$0.01`` for a cost under a cent (never ``$0.00``), ``≥$0.42`` when some answers were
  priced and some not (the known part is a floor);
- ``incl.`` for a subscription (OAuth) row, with its window's use when the row has a
  headroom reading (``incl. 5h 42%``): from its ledger line, and as well when it has none
  today (:func:`subscription` says which rows are: as the proxy prices their answers);
- ``—`` when nothing is known (no ledger, no answer recorded today, no price);
- ``over budget`` after the figure when the proxy holds the row over its budget: words,
  never colour alone.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

from store.model import AUTH_OAUTH
from store.usage.record import ESTIMATED, INCLUDED, UNKNOWN
from tui.text import headroom as headroom_words
from tui.text.format import NULL, ellipsize

Key = tuple[str, str]            # (view pool key, row id): as a row's marks and notes
Spend = tuple[str, float | None, int]      # (cost status, known dollars, requests)
OVER = "over budget"
BIG = 1e9                        # dollars beyond this read as such, not as 13 digits
# store.usage.cost's SUBSCRIPTION_POOLS (that module loads the price table: not at start-up);
# tests/console/test_tui_spend_included.py holds the two to the same answers.
SUBSCRIPTION_POOLS = frozenset({"openai-codex"})
WIDEST_INCLUDED = "incl. 5h 100%"


def subscription(pool: str, row: Mapping[str, Any]) -> bool:
    """Whether *row* of *pool* (a root's ``<profile>/<pool>`` too) is a subscription login,
    whose answers the ledger records as ``included``: as the proxy decides it (an OAuth row,
    an Anthropic OAuth token) and as :class:`store.usage.cost.Pricer` prices it (any row of a
    subscription pool)."""
    pool = pool.rpartition("/")[2]
    auth_type = row.get("auth_type")
    if auth_type == AUTH_OAUTH or pool in SUBSCRIPTION_POOLS:
        return True
    token = row.get("access_token")
    if pool != "anthropic" or not isinstance(token, str) or not token or token.startswith("sk-ant-api"):
        return False                  # an Anthropic API key is never a login (uses_oauth agrees)
    from store.dialects.anthropic import uses_oauth  # an Anthropic row's only: no first paint waits on it

    return uses_oauth(pool, auth_type, token)


def dollars(usd: float) -> str:
    """``$0.42``, ``<$0.01`` under a cent (never ``$0.00``), ``$0`` for nothing at all."""
    if usd == 0:
        return "$0"
    if usd < 0.01:
        return "<$0.01"
    if usd >= BIG:
        return ">$1e9"
    return f"${usd:,.2f}"


def window_use(readings: Iterable[Any], now: float) -> str:
    """``5h 42%``: the used share of a subscription window (the 5h one when there is one,
    else the most used), from the row's headroom readings; "" when none says."""
    best = None
    for r in readings:
        used = getattr(r, "utilization", None)
        if not isinstance(used, float | int) or not math.isfinite(used) or r.stale(now):
            continue
        rank = (r.window == "5h", used)
        if best is None or rank > best[0]:
            best = (rank, r.window, used)
    if best is None:
        return ""
    return f"{best[1]} {max(0, min(100, round(best[2] * 100)))}%"


def included(readings: Iterable[Any], now: float) -> str:
    """``incl. 5h 42%``, or ``incl.`` when no fresh reading says the window's use."""
    use = window_use(readings, now)
    return f"incl. {use}" if use else "incl."


def spend_text(spend: Spend | None, readings: Iterable[Any] = (), now: float = 0.0, over: bool = False,
               subscribed: bool = False) -> str:
    """A spend cell's text (see the module's docstring); *subscribed*: the row is a
    subscription's (:func:`subscription`), which reads ``incl.`` with no ledger line too."""
    text = NULL
    if spend is None:
        if subscribed:
            text = included(readings, now)
    else:
        status, usd, _requests = spend
        if status == INCLUDED:
            text = included(readings, now)
        elif usd is not None:
            mark = {ESTIMATED: "~", UNKNOWN: "≥"}.get(status, "")
            text = mark + dollars(usd)
    return f"{text} {OVER}" if over else text


def fit(text: str, width: int) -> str:
    """*text* in *width* cells: a figure whole before its ``over budget`` (the reason column
    says it too), and only then cut."""
    if len(text) > width and text.endswith(" " + OVER):
        text = text[:-len(OVER) - 1]
    return ellipsize(text, width)


class SpendCells:
    """Each row's spend today, the rows over budget, and the column's widest text."""

    def __init__(self) -> None:
        self.spend: Mapping[Key, Spend] = {}
        self.over: frozenset[Key] = frozenset()
        self.in_use: frozenset[Key] = frozenset()   # subscription rows with headroom readings
        self.need = 0                 # the longest text a row may show (0: no row has a figure)

    def of(self, key: Key) -> tuple[Spend | None, bool]:
        """What the row's cell depends on, but its headroom readings (part of its signature)."""
        return self.spend.get(key), key in self.over

    def cell(self, key: Key, headroom: Any, cv: Any, now: float) -> tuple[str, str]:
        """The (text, style) of the row *key* showing the credential *cv* (a
        :class:`store.pools.view.CredentialView`; *headroom*: the row's sidecar readings,
        shown only when they are its secret's)."""
        spend, over = self.of(key)
        text = spend_text(spend, headroom_words.bound(headroom, cv.fingerprint), now, over,
                          spend is None and subscription(cv.pool, cv.row))
        return text, ("bold" if over else "")

    def subscribed(self, rows: Iterable[tuple[Key, Any, Any]]) -> bool:
        """Take the rows that have headroom readings ((key, credential view, its readings)): a
        subscription's window use is a figure (the column joins for it) even with no answer
        recorded today. Readings of another secret say nothing. Whether the column's width moved."""
        keys = frozenset(k for k, cv, h in rows
                         if headroom_words.bound(h, cv.fingerprint) and subscription(cv.pool, cv.row))
        if keys == self.in_use:
            return False
        need, self.in_use = self.need, keys
        self._measure()
        return need != self.need

    def set(self, spend: Mapping[Key, Spend] | None, over: Iterable[Key] | None) -> set[Key]:
        """Take new figures and/or rows over budget (None: as before); the rows whose cell moved."""
        old = (self.spend, self.over)
        if spend is not None:
            self.spend = spend
        if over is not None:
            self.over = frozenset(over)
        moved = {k for k in old[0].keys() | self.spend.keys() if old[0].get(k) != self.spend.get(k)}
        moved |= old[1] ^ self.over
        if moved:
            self._measure()
        return moved

    def _measure(self) -> None:
        # "incl. 5h 100% over budget" is the longest a row says; a dollar figure is shorter
        self.need = max((len(spend_text(s, (), 0.0, k in self.over)) for k, s in self.spend.items()), default=0)
        if self.in_use or any(s[0] == INCLUDED for s in self.spend.values()):
            self.need = max(self.need, len(WIDEST_INCLUDED))
        if self.over:
            self.need = max(self.need, len(f"{NULL} {OVER}"))
