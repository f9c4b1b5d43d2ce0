"""What the console shows of a proxy running on the home, read from its status file only.

The proxy (``store.proxy``) rewrites ``<home>/hermes-admin-proxy-<port>.json`` every
second; the console never talks to the proxy, so it needs no network at all. A file
whose proxy is gone (``store.proxy.observing.stats.is_live`` false) shows nothing.

Polled once a second by the dashboard's own tick (the one-line summary) and by the
proxy panel while it is open. Cheaper than waking the store watcher: the watcher's wake
re-reads and re-parses auth.json, config.yaml and .env, while a poll is one glob and
one small JSON parse (``bench/bench_proxy_feed.py`` measures both).
"""

from __future__ import annotations

import math
import time
from typing import Any

from store.paths import Home
from store.proxy.observing.stats import is_live, read_statuses
from tui.text.format import NULL, clock_time


def live_status(home: Home, now: float | None = None) -> dict[str, Any] | None:
    """The most recently updated status of a proxy still running on *home*, else None."""
    now = time.time() if now is None else now
    for st in read_statuses(home):
        if is_live(st, now):
            return st
    return None


def hhmm(ts: Any) -> str:
    """Local HH:MM:SS of an epoch, or ``—``."""
    return clock_time(ts)   # a status file another process wrote: checked, never raised on


def text(value: Any) -> str:
    """A cell: ``—`` for null or empty."""
    return NULL if value is None or value == "" else str(value)


def on_primary(st: dict[str, Any]) -> bool:
    return st.get("active") == st.get("primary")


def requests_per_minute(st: dict[str, Any]) -> int:
    return sum(int(c.get("requests_per_minute") or 0) for c in st.get("credentials") or [])


def summary(st: dict[str, Any] | None) -> str:
    """The dashboard's one-line summary: ``proxy :8645 · 12 req/min · primary`` (and ``· 2
    over budget`` when the proxy holds keys over their budget); "" when none."""
    if st is None:
        return ""
    where = "primary" if on_primary(st) else f"▶ fallback {text(st.get('active'))}"
    over = len(over_budget(st))
    budget = f" · {over} over budget" if over else ""
    return f"proxy :{text(st.get('port'))} · {requests_per_minute(st)} req/min · {where}{budget}"


def chain_line(st: dict[str, Any]) -> str:
    """The chain state in words: on primary, or on fallback since when, next restore check."""
    pin = pinned(st)
    if on_primary(st):
        return f"● on primary {text(st.get('primary'))}" + (" · pinned (u: unpin)" if pin else "")
    if pin:
        return f"▶ pinned to {text(st.get('active'))} since {hhmm(st.get('on_fallback_since'))} · no restore check"
    # The primary is the first route of routes_line; this line stays within 80 columns.
    return (f"▶ on fallback {text(st.get('active'))} since {hhmm(st.get('on_fallback_since'))}"
            f" · next restore check {hhmm(st.get('next_restore_check'))}")


def routes_line(st: dict[str, Any]) -> str:
    """Each route of the chain with its usable/cooling/dead counts; ▶ marks the active one."""
    parts = []
    for r in st.get("chain") or []:
        mark = "▶ " if r.get("active") else ""
        down = f" {text(r.get('down'))} upstream down" if r.get("down") else ""
        over = pool_over(r)
        parts.append(f"{mark}{text(r.get('name'))} {text(r.get('usable'))}/{text(r.get('rows'))} ok"
                     f" {text(r.get('cooling'))} cooling {text(r.get('dead'))} dead{down}"
                     + (f" ({over})" if over else ""))
    return "chain: " + (" → ".join(parts) if parts else NULL)


def header_line(st: dict[str, Any]) -> str:
    auth = "client keys required" if st.get("inbound_auth") else "any bearer (loopback)"
    return (f"Proxy {text(st.get('url'))} · {text(st.get('state'))} since {hhmm(st.get('started_at'))}"
            f" · pid {text(st.get('pid'))} · in flight {text(st.get('in_flight'))}"
            f" · {text(st.get('requests_total'))} requests · {text(st.get('errors_total'))} errors · {auth}")


def conversations(st: dict[str, Any], pool: Any, row: Any) -> int | None:
    """How many conversations *row* of *pool* holds (affinity, #30); None where the pool pins none."""
    pools = (st.get("affinity") or {}).get("conversations")
    held = pools.get(pool) if isinstance(pools, dict) else None
    if not isinstance(held, dict):
        return None
    n = held.get(row, 0)
    return n if isinstance(n, int) and not isinstance(n, bool) else None


MAX_WORDS = 120      # a budget's words from the status file: longer is no budget's


def _words(value: Any) -> str | None:
    return value if isinstance(value, str) and value and len(value) <= MAX_WORDS else None


def pool_over(route: Any) -> str | None:
    """A route's pool over its budget, in words (``pool over budget: $10.00 a day, resets
    00:00 UTC``, ``over budget: every key``); None when nothing is over or no budget is set."""
    budget = route.get("budget") if isinstance(route, dict) else None
    return _words(budget.get("over")) if isinstance(budget, dict) else None


def over_budget(st: dict[str, Any] | None) -> dict[tuple[str, str], str]:
    """Per (pool, row id) the proxy's budget filter refuses: its words (``over budget: $2.00 a
    day, resets 00:00 UTC``, ``over its cap: 5h window at 85%, cap 80%``), from the status file."""
    out: dict[tuple[str, str], str] = {}
    chain = st.get("chain") if isinstance(st, dict) else None
    for r in chain if isinstance(chain, list) else ():
        budget = r.get("budget") if isinstance(r, dict) else None
        rows = budget.get("rows_over") if isinstance(budget, dict) else None
        if isinstance(rows, dict) and isinstance(r.get("pool"), str):
            for rid, words in rows.items():
                if isinstance(rid, str) and (w := _words(words)):
                    out[(r["pool"], rid)] = w
    return out


def short_budget(words: str | None) -> str:
    """A budget's words without when it resets, for a table cell (``over budget: $2.00 a day``)."""
    return NULL if not words else words.split(", resets")[0]


CREDENTIAL_COLUMNS = ("pool", "id", "label", "in flight", "req/min", "convs", "budget")


def credential_rows(st: dict[str, Any]) -> list[tuple[str, ...]]:
    """Per credential: pool, id, label, in-flight requests, requests in the last minute, and
    the conversations pinned to it (``—`` where its pool does not pin), and whether the proxy
    holds it over its budget (in words; ``—`` when not)."""
    over = over_budget(st)
    return [(text(c.get("pool")), text(c.get("id")), text(c.get("label")), text(c.get("in_flight")),
             text(c.get("requests_per_minute")), text(conversations(st, c.get("pool"), c.get("id"))),
             short_budget(over.get((str(c.get("pool")), str(c.get("id"))))))
            for c in st.get("credentials") or []]


def pool_series(st: dict[str, Any]) -> list[tuple[str, list[int], list[int]]]:
    """Per pool: (name, requests per 10 s bucket, 429s per bucket) over the last 10 minutes."""
    out = []
    for name, p in sorted((st.get("pools") or {}).items()):
        if isinstance(p, dict):
            out.append((str(name), [int(x) for x in p.get("requests") or []],
                        [int(x) for x in p.get("rate_limited") or []]))
    return out


SANE_WAIT = 7 * 86400.0      # a breaker open longer than this holds a bad time, said as such
REQUEST_COLUMNS = ("time", "route", "credential", "status", "ms", "upstream", "outcome")


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _ms(value: Any) -> str:
    return f"{value:.1f}" if _finite(value) and abs(value) < 1e9 else NULL


def request_rows(st: dict[str, Any]) -> list[tuple[str, ...]]:
    """The proxy's last requests, newest first: time, route, pool/id, status, ms, upstream ms,
    outcome (the status file keeps no body, header or query: there is nothing else to show)."""
    out = []
    for r in reversed(st.get("recent_requests") or []):
        if not isinstance(r, dict):
            continue
        cred = f"{text(r.get('pool'))}/{text(r.get('id'))}" if r.get("id") else NULL
        out.append((hhmm(r.get("at")), text(r.get("route")), cred, text(r.get("status")), _ms(r.get("ms")),
                    _ms(r.get("upstream_ms")), text(r.get("outcome"))))
    return out


def breaker_text(u: dict[str, Any], now: Any) -> str:
    """One failing upstream's circuit breaker, in words (a route's fault: no key benched)."""
    until, last = u.get("open_until"), u.get("last_error") or NULL
    if u.get("state") == "open" and _finite(until) and _finite(now) and until - now < SANE_WAIT:
        when = f"circuit open, tried again in {max(0, round(until - now))} s"
    elif u.get("state") == "open" and _finite(until):
        when = "circuit open, retry time not a sane time"
    elif u.get("state") == "open":
        when = "circuit open"
    elif u.get("state") == "half-open":
        when = "circuit half-open (the next request tries it)"
    else:
        when = f"{u.get('strikes', 0)} failure(s), circuit closed"
    return f"{when}; failing since {hhmm(u.get('down_since'))}, last: {last}; no key benched"


def breaker_lines(st: dict[str, Any]) -> list[str]:
    """Per failing upstream, its circuit breaker in one line; [] when every upstream answers."""
    return [f"upstream {text(u.get('upstream'))}: {breaker_text(u, st.get('updated_at'))}"
            for u in st.get("upstreams") or [] if isinstance(u, dict)]


def pinned(st: dict[str, Any]) -> str | None:
    """The route an operator pinned the proxy to, or None."""
    value = st.get("pinned")
    return value if isinstance(value, str) else None


def route_choices(st: dict[str, Any]) -> list[tuple[str, str]]:
    """(route name, line) per route of the chain, for ``p``; ▶ marks the active one."""
    out = []
    for r in st.get("chain") or []:
        if isinstance(r, dict) and isinstance(r.get("name"), str):
            mark = "▶" if r.get("active") else " "
            out.append((r["name"], f"{mark} {r['name']:<16} {text(r.get('usable'))}/{text(r.get('rows'))} usable"
                                   f"{'  upstream down' if r.get('down') else ''}"))
    return out


def key_requests(home: Home, pool: str, row_id: str) -> tuple[list[tuple[str, ...]], int]:
    """``l``: the recent requests one key served, from every proxy status file on *home* (each
    keeps its proxy's last 50), newest first: time, proxy, route, status, ms, outcome; and how
    many proxies were read. Read as ``proxy status`` reads them (no link followed, giants and
    broken files skipped); no body, header or query is there to show."""
    statuses = read_statuses(home)
    lines: list[tuple[float, tuple[str, ...]]] = []
    for st in statuses:
        port = f":{text(st.get('port'))}"
        for r in st.get("recent_requests") or []:
            if not isinstance(r, dict) or r.get("pool") != pool or r.get("id") != row_id:
                continue
            at = r.get("at") if _finite(r.get("at")) else 0.0
            lines.append((at, (hhmm(r.get("at")), port, text(r.get("route")), text(r.get("status")),
                               _ms(r.get("ms")), text(r.get("outcome")))))
    lines.sort(key=lambda x: x[0], reverse=True)
    return [row for _, row in lines], len(statuses)
