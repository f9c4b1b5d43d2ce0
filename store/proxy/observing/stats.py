"""Traffic counters and the status file the console (and ``proxy status``) read.

Counters live in memory on the event loop (no lock needed: one thread touches them).
Per credential: in-flight requests and requests in the last minute (1 s buckets, so a
request costs O(1) and a snapshot O(60), whatever the rate). Per pool: requests and the
answers judged a rate limit (:meth:`Stats.judged`: the verdict's kind, the key's
``rate_limit`` or the upstream's ``upstream_rate_limit``; never the status read again) in
10 s buckets over the last 10 minutes. The status file
``<home>/hermes-admin-proxy-<port>.json`` (one per proxy) is written atomically, mode 0600, without fsync (it is
a view, rebuilt every second: rewritten when it changed, at least every :data:`HEARTBEAT` s,
:mod:`store.proxy.observing.status_file`) as compact JSON, and holds ids, labels and counts,
never a secret.

The file's keys (what a console panel reads): ``pid host port url state`` (running |
draining | stopped) ``started_at updated_at`` (epoch s), ``primary``, ``active`` (the
route serving now), ``on_fallback_since`` and ``next_restore_check`` (epoch s or null),
``chain`` (per route: name, pool, model, active, rows, usable, down, cooling, dead; ``down``
counts usable rows whose upstream's circuit breaker is open), ``upstreams`` (each upstream
that failed since it last answered: upstream, state open | half-open | closed, open_until,
times_opened, strikes, down_since, last_error), ``in_flight``, ``pending_counts``,
``inbound_auth``, ``credentials`` (per row: pool, id, label, in_flight, requests_per_minute),
``pools`` (per pool: bucket_seconds, and ``requests`` / ``rate_limited``: 60 counts, oldest
first, the last one the current 10 s), ``pool_totals`` (per pool: ``requests`` and
``rate_limited`` since the proxy started, exact), ``requests_total``, ``errors_total``,
``stream_failures``; and what :mod:`store.proxy.observing.requests` and :mod:`store.proxy.control`
add: ``recent_requests`` (the last 50: at, rid, path, route, pool, id, status, ms,
upstream_ms, tries, outcome, class, kind, pinned), ``counters`` (route_requests, fallbacks, restores,
restore_failures, answers: class, kind, n), ``latency`` (added_seconds, upstream_seconds: le, cumulative counts, sum,
count), ``pinned`` (a route name or null) and ``control`` (the last answers to operator
commands), ``affinity`` (#30: ``conversations``: per pinning pool, per row id the live
conversations it holds; ``pins``; ``moved``: pins that yielded, by why). Use
:func:`is_live` to tell a running proxy from a stale file.

The file is hermes-admin's own: it is written without following a link (a symlink or
special file at its name is refused, and the store it may point at is left alone), and
read the same way, so a link planted there never makes ``proxy status`` print another
file (RELIABILITY 40).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store.agent.outcomes import Verdict
from store.authfile import atomic_write_bytes
from store.paths import Home
from store.pids import process_exists
from store.proxy import STATUS_PREFIX

BUCKET_SECONDS = 10
BUCKETS = 60          # 10 minutes
STALE_AFTER = 5.0     # a status file older than this belongs to a proxy that is gone
STATUS_CAP = 4 * 1024 * 1024   # a status file larger than this is not one of ours
HEARTBEAT = 3.0       # an unchanged status file is still rewritten this often (s of updated_at)
RATE_LIMITED = frozenset({"rate_limit", "upstream_rate_limit"})   # verdict kinds the 429 counters count


@dataclass
class _Series:
    """Counts per 10 s bucket, keyed by bucket start; trimmed to the last BUCKETS."""

    buckets: dict[int, list[int]] = field(default_factory=dict)

    def add(self, now: float, index: int) -> None:
        start = int(now // BUCKET_SECONDS) * BUCKET_SECONDS
        slot = self.buckets.get(start)
        if slot is None:
            slot = self.buckets[start] = [0, 0]
            oldest = start - BUCKETS * BUCKET_SECONDS
            for k in [k for k in self.buckets if k <= oldest]:
                del self.buckets[k]
        slot[index] += 1

    def windows(self, now: float) -> tuple[list[int], list[int]]:
        """Requests and 429s of the last BUCKETS buckets, oldest first, the current one last:
        one pass over the buckets there are (a few, mostly), not BUCKETS look-ups each."""
        first = (int(now // BUCKET_SECONDS) - BUCKETS + 1) * BUCKET_SECONDS
        requests, limited = [0] * BUCKETS, [0] * BUCKETS
        for start, (n, r) in self.buckets.items():
            i, off = divmod(start - first, BUCKET_SECONDS)
            if not off and 0 <= i < BUCKETS:
                requests[i], limited[i] = n, r
        return requests, limited


class _Minute:
    """Requests per second over the last 60 s, in a ring of 60 one-second slots."""

    __slots__ = ("counts", "seconds")

    def __init__(self) -> None:
        self.counts = [0] * 60
        self.seconds = [-1] * 60      # the second each slot counts; a stale one is reused

    def add(self, now: float) -> None:
        second = int(now)
        i = second % 60
        if self.seconds[i] != second:
            self.seconds[i] = second
            self.counts[i] = 0
        self.counts[i] += 1

    def total(self, now: float) -> int:
        second = int(now)
        return sum(c for c, s in zip(self.counts, self.seconds, strict=True) if second - 60 < s <= second)


class Stats:
    """What the proxy did, for the console."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.in_flight: dict[tuple[str, str], int] = {}
        self.labels: dict[tuple[str, str], str] = {}
        self._recent: dict[tuple[str, str], _Minute] = {}
        self._pools: dict[str, _Series] = {}
        self.total = 0
        self.errors = 0
        self.stream_failures = 0
        self.pool_totals: dict[str, list[int]] = {}   # pool -> [requests, 429s] since start (exact)

    def begin(self, pool: str, row_id: str, label: str) -> None:
        key = (pool, row_id)
        self.in_flight[key] = self.in_flight.get(key, 0) + 1
        self.labels[key] = label
        now = self.clock()
        recent = self._recent.get(key)
        if recent is None:
            recent = self._recent[key] = _Minute()
        recent.add(now)
        series = self._pools.get(pool)
        if series is None:
            series = self._pools[pool] = _Series()
        series.add(now, 0)
        totals = self.pool_totals.get(pool)
        if totals is None:
            totals = self.pool_totals[pool] = [0, 0]
        totals[0] += 1
        self.total += 1

    def end(self, pool: str, row_id: str) -> None:
        key = (pool, row_id)
        n = self.in_flight.get(key, 0)
        self.in_flight[key] = max(0, n - 1)

    def judged(self, pool: str, verdict: Verdict) -> None:
        """*pool*'s answer was judged *verdict*: a rate limit (the key's or the upstream's) counts."""
        if verdict.kind in RATE_LIMITED:
            self.rate_limited(pool)

    def rate_limited(self, pool: str) -> None:
        self._pools.setdefault(pool, _Series()).add(self.clock(), 1)
        self.pool_totals.setdefault(pool, [0, 0])[1] += 1

    def in_flight_total(self) -> int:
        return sum(self.in_flight.values())

    def snapshot(self) -> dict[str, Any]:
        now = self.clock()
        creds = []
        for key in sorted(set(self.in_flight) | set(self._recent)):
            recent = self._recent.get(key)
            creds.append({"pool": key[0], "id": key[1], "label": self.labels.get(key, ""),
                          "in_flight": self.in_flight.get(key, 0),
                          "requests_per_minute": recent.total(now) if recent is not None else 0})
        pools = {}
        for name, series in sorted(self._pools.items()):
            requests, limited = series.windows(now)
            pools[name] = {"bucket_seconds": BUCKET_SECONDS, "requests": requests, "rate_limited": limited}
        totals = {name: {"requests": t[0], "rate_limited": t[1]} for name, t in sorted(self.pool_totals.items())}
        return {"credentials": creds, "pools": pools, "pool_totals": totals, "requests_total": self.total,
                "errors_total": self.errors, "stream_failures": self.stream_failures}


def status_path(home: Home, port: int) -> Path:
    """The status file of the proxy listening on *port*."""
    return home.root / f"{STATUS_PREFIX}{port}.json"


def encode_status(status: dict[str, Any]) -> bytes:
    """*status* as the file holds it: compact JSON, keys sorted. No ``indent``: with one,
    :mod:`json` runs its pure-Python encoder, about four times the CPU of its C one (the
    status file is written every second, beside the event loop); every reader parses it."""
    return json.dumps(status, sort_keys=True, allow_nan=False, separators=(",", ":")).encode()


def write_status(home: Home, status: dict[str, Any]) -> None:
    """Atomically replace this proxy's status file (0600, no fsync: rebuilt every second).
    Raises :class:`~store.errors.WriteFailed` (nothing written) for a link or special file
    at its name."""
    atomic_write_bytes(status_path(home, int(status["port"])), encode_status(status), sync=False, mode=0o600,
                       follow_link=False)


def _read_own(path: Path) -> bytes | None:
    """*path*'s bytes if it is a regular file of a sane size, never through a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > STATUS_CAP:
            return None
        return os.read(fd, STATUS_CAP + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


LISTS = ("chain", "upstreams", "credentials", "recent_requests")      # of objects, where present
OBJECTS = ("pools", "pool_totals", "counters", "latency", "affinity", "conversations")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")        # NaN, Infinity: no status file of ours holds one


def well_formed(status: dict[str, Any]) -> bool:
    """Whether a status file read back has the shape every reader relies on: a proxy never
    writes another, so one that differs (a wrong type, a pid that is no process id) is a file
    someone else made, skipped as unreadable rather than shown or taken for a live proxy."""
    pid = status.get("pid")
    if pid is not None and (type(pid) is not int or not 0 < pid < 2**31):
        return False
    port = status.get("port")
    if port is not None and (type(port) is not int or not 0 < port < 65536):
        return False
    for key in LISTS:
        v = status.get(key)
        if v is not None and (not isinstance(v, list) or not all(isinstance(e, dict) for e in v)):
            return False
    return all(status.get(key) is None or isinstance(status.get(key), dict) for key in OBJECTS)


def read_statuses(home: Home) -> list[dict[str, Any]]:
    """Every proxy status file on *home*, the most recently updated first; unreadable ones
    (and links, special files, giants, ill-formed ones: :func:`well_formed`) skipped."""
    out = []
    for path in home.root.glob(f"{STATUS_PREFIX}*.json"):
        raw = _read_own(path)
        if raw is None:
            continue
        try:
            data = json.loads(raw, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            continue
        if isinstance(data, dict) and well_formed(data):
            out.append(data)
    return sorted(out, key=lambda d: d.get("updated_at") if isinstance(d.get("updated_at"), (int, float))
                  else 0.0, reverse=True)


def is_live(status: dict[str, Any], now: float) -> bool:
    """True when the proxy that wrote *status* still runs and wrote it recently."""
    if status.get("state") == "stopped":
        return False
    updated = status.get("updated_at")
    if not isinstance(updated, (int, float)) or now - updated > STALE_AFTER:
        return False
    pid = status.get("pid")
    return not isinstance(pid, int) or process_exists(pid)
