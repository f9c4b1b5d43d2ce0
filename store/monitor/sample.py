"""What one evaluation of the monitor looks at, and a credential's state at a later time.

A :class:`Sample` holds, per profile, the pools the watcher last read (``HomeState.pools``),
the proxies' status files and the headroom sidecar of that home, plus a root's findings.
The watcher's views are computed at read time; :func:`state_at` ages a credential to any
later instant exactly as a fresh ``list --json`` would (a cooling row past its time is
ready; nothing else about a row changes with the clock alone).

Side files are files other programs wrote: each is opened with :mod:`store.safeio` (no
FIFO or device can block the monitor), capped, and every number passes :mod:`store.outside`.
:class:`SideFiles` re-parses a file only when its stat changed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from store import outside, safeio
from store.agent import headroom
from store.agent.headroom import RowKey, RowReadings
from store.config import settings
from store.config.budgets import PoolBudget
from store.errors import ConfigUnreadable, StoreUnreadable
from store.paths import Home
from store.pools.policy import COOLING, READY
from store.pools.view import CredentialView, PoolView
from store.profiles.findings import Finding
from store.proxy import STATUS_PREFIX
from store.proxy.observing.metrics import Figures, figures_of
from store.proxy.observing.stats import is_live
from store.redaction.redact import Redactor

PROXY_STATUS_CAP = 4 * 1024 * 1024
MAX_PROXIES = 32


def state_at(cv: CredentialView, now: float) -> tuple[str, float | None, float | None]:
    """(status, available_at, seconds_left) of *cv* at *now*, as ``list --json`` would show them."""
    eff = cv.effective
    if eff.status == COOLING:
        t = eff.available_at
        if t is not None and t > now:
            return COOLING, t, t - now
        return READY, t, None
    return eff.status, eff.available_at, None


def usable_at(cv: CredentialView, now: float) -> bool:
    status, _at, _left = state_at(cv, now)
    return status in ("ok", READY)


@dataclass(frozen=True)
class Route:
    name: str
    pool: str | None
    active: bool
    rows: int
    usable: int
    cooling: int
    dead: int


@dataclass(frozen=True)
class ProxyView:
    """One proxy's status file, every value checked; ``live`` says whether it still runs."""

    port: int
    live: bool
    state: str
    started_at: float | None
    updated_at: float | None
    primary: str | None
    active: str | None
    on_fallback_since: float | None
    requests_total: int
    errors_total: int
    stream_failures: int
    in_flight: int
    routes: tuple[Route, ...] = ()
    # pool -> (bucket seconds, requests per bucket, 429s per bucket), oldest bucket first
    pools: Mapping[str, tuple[int, tuple[int, ...], tuple[int, ...]]] = field(default_factory=dict)
    figures: Figures | None = None     # what the proxy's own /metrics shows (store.proxy.observing.metrics)

    @property
    def on_fallback(self) -> bool:
        return self.live and self.active is not None and self.primary is not None and self.active != self.primary


@dataclass(frozen=True)
class ProfileSample:
    """One home at one evaluation: the watcher's last read, plus its side files."""

    name: str
    home: Home
    pools: list[PoolView]
    store_error: StoreUnreadable | None
    read_at: float
    headroom: Mapping[RowKey, RowReadings] = field(default_factory=dict)
    proxies: tuple[ProxyView, ...] = ()
    notes: tuple[str, ...] = ()
    redactor: Redactor | None = field(default=None, repr=False)   # knows this home's secrets
    store_linked: StoreUnreadable | None = None    # auth.json is a symlink: every write refused
    budgets: Mapping[str, PoolBudget] = field(default_factory=dict)   # hermes-admin.yaml's budgets:
    # (pool, row id or None for the pool, day|month) -> known spend in USD, None: unknown
    spend: Mapping[tuple[str, str | None, str], float | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Sample:
    """Every profile the monitor follows (one for ``--home``) and, for a root, its findings."""

    profiles: list[ProfileSample]
    findings: list[Finding] = field(default_factory=list)
    generation: int = 0
    root: bool = False


def _text(v: Any, limit: int = 200) -> str | None:
    return v if isinstance(v, str) and 0 < len(v) <= limit and v.isprintable() else None


def _count(v: Any) -> int:
    return outside.count(v, "proxy status count") or 0


def _series(v: Any) -> tuple[int, ...]:
    return tuple(_count(x) for x in v[:600]) if isinstance(v, list) else ()


def proxy_view(data: Any, now: float) -> ProxyView | None:
    """The checked view of one parsed status file; None when it is not one."""
    if not isinstance(data, dict):
        return None
    port = outside.count(data.get("port"), "proxy port", hi=65535)
    if port is None:
        return None

    def when(key: str) -> float | None:
        return outside.epoch(data.get(key), f"proxy {key}", now=now)

    routes = []
    for r in data.get("chain") if isinstance(data.get("chain"), list) else []:
        if isinstance(r, dict) and _text(r.get("name")):
            routes.append(Route(r["name"], _text(r.get("pool")), r.get("active") is True, _count(r.get("rows")),
                                _count(r.get("usable")), _count(r.get("cooling")), _count(r.get("dead"))))
    pools: dict[str, tuple[int, tuple[int, ...], tuple[int, ...]]] = {}
    raw_pools = data.get("pools")
    for name, p in (raw_pools.items() if isinstance(raw_pools, dict) else []):
        if _text(name) and isinstance(p, dict):
            step = outside.count(p.get("bucket_seconds"), "proxy bucket", hi=3600) or 0
            if step:
                pools[name] = (step, _series(p.get("requests")), _series(p.get("rate_limited")))
    state = _text(data.get("state"), 20) or "unknown"
    return ProxyView(
        port=port, live=is_live(data, now), state=state, started_at=when("started_at"),
        updated_at=when("updated_at"), primary=_text(data.get("primary")), active=_text(data.get("active")),
        on_fallback_since=when("on_fallback_since"), requests_total=_count(data.get("requests_total")),
        errors_total=_count(data.get("errors_total")), stream_failures=_count(data.get("stream_failures")),
        in_flight=_count(data.get("in_flight")), routes=tuple(routes), pools=pools, figures=figures_of(data, now))


class SideFiles:
    """The proxies' status files and the headroom sidecar of each home, parsed once per change."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple[int, int, int], Any]] = {}

    def _read(self, path: Any, cap: int, parse: Any) -> Any:
        key = str(path)
        try:
            st = os.stat(path)
        except OSError:
            self._cache.pop(key, None)
            return None
        ident = (st.st_ino, st.st_size, st.st_mtime_ns)
        hit = self._cache.get(key)
        if hit is not None and hit[0] == ident:
            return hit[1]
        value = parse(path, cap)
        self._cache[key] = (ident, value)
        return value

    def proxies(self, home: Home, now: float, notes: list[str]) -> tuple[ProxyView, ...]:
        out = []
        try:
            names = sorted(n for n in os.listdir(home.root) if n.startswith(STATUS_PREFIX) and n.endswith(".json"))
        except OSError:
            return ()
        for name in names[:MAX_PROXIES]:
            try:
                data = self._read(home.root / name, PROXY_STATUS_CAP, _json_file)
            except StoreUnreadable as exc:
                notes.append(str(exc))
                continue
            view = proxy_view(data, now)
            if view is not None:
                out.append(view)
        return tuple(out)

    def headroom(self, home: Home, now: float, notes: list[str]) -> Mapping[RowKey, RowReadings]:
        try:
            got = self._read(headroom.sidecar_path(home), headroom.SIDECAR_CAP,
                             lambda _p, _c: headroom.load(home, now))
        except StoreUnreadable as exc:
            notes.append(str(exc))
            return {}
        return got or {}

    def budgets(self, home: Home, notes: list[str]) -> Mapping[str, PoolBudget]:
        """The ``budgets:`` of the home's hermes-admin.yaml (none when it cannot be read: a notice)."""
        try:
            got = self._read(home.root / settings.SETTINGS_FILE, settings.SETTINGS_CAP,
                             lambda _p, _c: settings.read(home))
        except (ConfigUnreadable, StoreUnreadable) as exc:
            notes.append(f"budgets not read: {exc}")
            return {}
        return got.budgets if got is not None else {}

    def forget(self, keep: set[str]) -> None:
        """Drop what is cached for files of homes no longer followed."""
        for key in [k for k in self._cache if not any(k.startswith(p) for p in keep)]:
            del self._cache[key]


def _json_file(path: Any, cap: int) -> Any:
    got = safeio.read_checked(path, cap)
    if got is None:
        return None
    try:
        return json.loads(got[0], parse_constant=_no_constant)
    except (ValueError, RecursionError, UnicodeDecodeError):
        raise StoreUnreadable(path, "is not valid JSON") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
