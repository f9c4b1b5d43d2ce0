"""What an agent process does with a pool, built on the same locked store as the console.

- :class:`PoolClient`, one per (agent, pool): ``select()`` (strategy from config, counts
  the request, one transaction), ``lease()``/``release()`` (in memory, never blocking),
  ``report(result)`` for a request's outcome (spec section 6, "Errors").
- :class:`AgentRuntime`, one per agent: the primary pool plus the effective fallback chain;
  moves down the chain when a pool is out, and each turn decides whether to go back to
  the primary (``maybe_restore_primary``, spec section 6 "Restore to the primary").

Every decision is a function of the store, the config and an injectable clock, so tests
drive each one with a fake clock. No network call happens under the lock: the refresh
hook and the reopen probes run before the transaction that records their result.
"""

from __future__ import annotations

import math
import random as _random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

from . import policy, probe, refresh
from .authfile import read_store
from .lock import DEFAULT_LOCK_TIMEOUT
from .model import AUTH_OAUTH, Row, as_int, ensure_pool, parse_epoch, pool_rows, pools
from .paths import Home
from .secrets import fingerprint
from .transaction import skip_write, transaction

RESTORE_INTERVAL = 300.0
LEASE_CAP = 1
SERVER_ERRORS = frozenset({500, 502, 503, 504, 529})

# Action words of a Decision.
OK = "ok"              # the request succeeded
RETRY = "retry"        # send it again with the same row (first 429, or token refreshed)
ROTATED = "rotated"    # the row was benched; use the next row of the same pool
FALLBACK = "fallback"  # the pool is out; use the next entry of the fallback chain
OUT = "out"            # nothing left anywhere
FAILED = "failed"      # the request failed for a reason no rotation fixes (e.g. 400)

_USAGE_LIMIT = re.compile(
    r"usage.?limit|plan.?limit|insufficient.?quota|quota.?exceeded|exceeded your.*quota|"
    r"monthly limit|weekly limit|daily limit", re.IGNORECASE)
_RETRY_IN_MESSAGE = re.compile(r"retry\s+(?:after\s+|in\s+)?(\d+(?:\.\d+)?)\s*(?:s\b|sec|seconds)",
                               re.IGNORECASE)
_RESETS_IN = re.compile(r"resets?\s+in\s+(?:(\d+)\s*h(?:ou)?rs?\s*)?(?:(\d+)\s*min(?:ute)?s?)?",
                        re.IGNORECASE)
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?"
                       r"(?:(\d+(?:\.\d+)?)ms)?$")


# --- inputs and outputs ---------------------------------------------------------------------

@dataclass(frozen=True)
class Result:
    """One request's result as the agent saw it."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    reason: str | None = None       # provider error code/type, e.g. "token_revoked"
    message: str | None = None      # provider error message
    reset_at: Any = None            # provider-declared reset (s, ms or ISO)

    @classmethod
    def success(cls) -> Result:
        return cls(200)


@dataclass(frozen=True)
class Selection:
    """The row to send a request with. The secret stays in memory and out of repr."""

    pool: str
    row_id: str
    label: str
    token: str = field(repr=False)
    base_url: str | None = None
    model: str | None = None

    @property
    def fingerprint(self) -> str | None:
        return fingerprint(self.token)


@dataclass(frozen=True)
class Decision:
    action: str
    selection: Selection | None = None
    note: str | None = None


@dataclass(frozen=True)
class Notice:
    """Something the agent would tell its user (restores, fallbacks)."""

    at: float
    kind: str      # restore | fallback | restore_failed | restore_check_failed
    text: str


def is_usage_limit(result: Result) -> bool:
    """A usage or plan limit: retrying the same key will not clear it."""
    text = f"{result.reason or ''} {result.message or ''}"
    return bool(_USAGE_LIMIT.search(text))


def _duration_seconds(text: str) -> float | None:
    m = _DURATION.match(text.strip().lower())
    if not m or not any(m.groups()):
        return None
    h, mi, s, ms = (float(g) if g else 0.0 for g in m.groups())
    return h * 3600 + mi * 60 + s + ms / 1000


def reset_time(result: Result, now: float) -> float | None:
    """The provider's reset time as epoch seconds, from the body, the headers or the message.

    ``Retry-After`` (seconds or HTTP date), ``x-ratelimit-reset`` (epoch s/ms, or seconds
    from now when small), ``x-ratelimit-reset-requests``/``-tokens`` (``6m0s``), then
    "retry after N seconds" / "resets in 4hr 5min" in the message.
    """
    explicit = parse_epoch(result.reset_at)
    if explicit is not None:
        return explicit
    headers = {str(k).lower(): str(v) for k, v in (result.headers or {}).items()}
    ra = headers.get("retry-after")
    if ra:
        try:
            return now + max(0.0, float(ra))
        except ValueError:
            try:
                return parsedate_to_datetime(ra).timestamp()
            except (TypeError, ValueError):
                pass
    for name in ("x-ratelimit-reset", "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"):
        raw = headers.get(name)
        if not raw:
            continue
        try:
            value = float(raw)
        except ValueError:
            seconds = _duration_seconds(raw)
            if seconds is not None:
                return now + seconds
            iso = parse_epoch(raw)
            if iso is not None:
                return iso
            continue
        if math.isfinite(value) and value > 0:
            # Small numbers are "seconds from now"; large ones are epoch s or ms.
            return parse_epoch(value) if value > 1e9 else now + value
    msg = result.message or ""
    m = _RETRY_IN_MESSAGE.search(msg)
    if m:
        return now + float(m.group(1))
    m = _RESETS_IN.search(msg)
    if m and (m.group(1) or m.group(2)):
        return now + int(m.group(1) or 0) * 3600 + int(m.group(2) or 0) * 60
    return None


# --- config ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Route:
    """One entry of the agent's chain: a pool (or a key taken from the environment)."""

    pool: str | None
    model: str | None = None
    base_url: str | None = None
    key_env: str | None = None
    provider: str | None = None

    @property
    def name(self) -> str:
        return self.pool or f"{self.provider or 'custom'}:{self.base_url or self.key_env}"


class ConfigView:
    """The parts of config.yaml the runtime needs, re-read when the file changes.

    A config that cannot be read keeps the last good one (or defaults): an agent keeps
    working on a half-written config.yaml, as Hermes does.
    """

    def __init__(self, home: Home, loader: Callable[[Home], Any] | None = None) -> None:
        self.home = home
        self.loader = loader or _read_config
        self._cfg: Any = None
        self._stamp: tuple[int, int] | None = None
        self.error: str | None = None

    def get(self) -> Any:
        try:
            st = self.home.config.stat()
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = (0, 0)
        if stamp != self._stamp or self._cfg is None:
            try:
                self._cfg = self.loader(self.home)
                self.error = None
            except Exception as exc:
                self.error = str(exc)
            self._stamp = stamp
        return self._cfg

    def strategy_for(self, pool: str) -> str:
        cfg = self.get()
        try:
            return str(cfg.strategy_for(pool)) if cfg is not None else policy.DEFAULT_STRATEGY
        except Exception:
            return policy.DEFAULT_STRATEGY

    @property
    def ttls(self) -> policy.Ttls:
        cfg = self.get()
        ttls = getattr(cfg, "ttls", None)
        return ttls if isinstance(ttls, policy.Ttls) else policy.DEFAULT_TTLS

    def fallback_routes(self) -> list[Route]:
        cfg = self.get()
        chain = list(getattr(cfg, "fallback_chain", None) or [])
        customs = list(getattr(cfg, "custom_providers", None) or [])
        routes = []
        for entry in chain:
            provider = str(_field(entry, "provider") or "").strip().lower()
            model = _field(entry, "model")
            if not provider or not model:
                continue
            base_url = _field(entry, "base_url")
            pool = pool_for(provider, base_url, customs)
            routes.append(Route(pool, str(model), base_url, _field(entry, "key_env"), provider))
        return routes


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def pool_for(provider: str, base_url: str | None, custom_providers: list[Any]) -> str | None:
    """The pool key a fallback entry draws from: the provider id, or for ``custom`` the
    ``custom:<name>`` whose base_url matches; None when only a key_env can serve it."""
    if provider.startswith("custom:"):
        return provider
    if provider != "custom":
        return provider
    want = (base_url or "").rstrip("/").lower()
    for cp in custom_providers:
        name, url = _field(cp, "name"), _field(cp, "base_url")
        if name and want and str(url or "").rstrip("/").lower() == want:
            return "custom:" + str(name).strip().lower().replace(" ", "-")
    return None


def _read_config(home: Home) -> Any:
    from .config import read_config

    return read_config(home)


# --- one pool -------------------------------------------------------------------------------

class PoolClient:
    """An agent's handle on one pool: select, lease, report."""

    def __init__(
        self, home: Home, pool: str, *, clock: Callable[[], float] = time.time,
        config: ConfigView | None = None, strategy: str | None = None,
        ttls: policy.Ttls | None = None, env: Mapping[str, str] | None = None,
        refresh_hook: Callable[[Home, str, str], Any] | None = None,
        rng: _random.Random | None = None, lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        lease_cap: int = LEASE_CAP, model: str | None = None,
    ) -> None:
        self.home = home
        self.pool = pool
        self.clock = clock
        self.config = config or ConfigView(home)
        self._strategy = strategy
        self._ttls = ttls
        self.env = dict(env) if env is not None else probe.home_env(home)
        self.refresh_hook = refresh_hook
        self.rng = rng or _random.Random()
        self.lock_timeout = lock_timeout
        self.lease_cap = lease_cap
        self.model = model
        self.current: Selection | None = None
        self.has_retried_429 = False
        self.selections = 0            # requests counted in the store by this client
        self._leases: dict[str, int] = {}
        self._lease_lock = threading.Lock()

    @property
    def strategy(self) -> str:
        return self._strategy or self.config.strategy_for(self.pool)

    @property
    def ttls(self) -> policy.Ttls:
        return self._ttls or self.config.ttls

    # -- selection --

    def _selection(self, row: Row) -> Selection:
        return Selection(self.pool, str(row.get("id")), str(row.get("label") or ""),
                         probe.row_secret(row, self.env) or "",
                         row.get("inference_base_url") or row.get("base_url"), self.model)

    def _choose(self, rows: list[Row], now: float) -> Row | None:
        """Clear elapsed cooldowns, pick by strategy among rows with a live secret, count
        the request, and for round_robin move the pick last. Mutates *rows*."""
        ttls = self.ttls
        policy.clear_elapsed(rows, now, ttls)
        usable = [r for r in policy.available(rows, now, ttls) if probe.row_secret(r, self.env)]
        if not usable:
            return None
        strategy = policy.known_strategy(self.strategy)
        chosen = policy.pick(usable, strategy, now, ttls, rng=self.rng)
        if chosen is None:
            return None
        chosen["request_count"] = as_int(chosen.get("request_count")) + 1
        if strategy == "round_robin" and len(usable) > 1:
            policy.renumber(rows)
            rows.remove(chosen)
            rows.append(chosen)
            for i, row in enumerate(rows):
                row["priority"] = i
        return chosen

    def _pool_list(self, doc: dict) -> list[Row] | None:
        if self.pool not in pools(doc):
            return None
        rows = ensure_pool(doc, self.pool)
        if not all(isinstance(r, dict) for r in rows):
            # Leave junk entries alone but out of the way of priority arithmetic.
            junk = [r for r in rows if not isinstance(r, dict)]
            rows[:] = [r for r in rows if isinstance(r, dict)] + junk
        return rows

    def _rows_only(self, rows: list[Row]) -> list[Row]:
        return [r for r in rows if isinstance(r, dict)]

    def select(self) -> Selection | None:
        """Choose and count a row (one transaction); None when the pool has nothing usable."""
        now = self.clock()
        chosen: Selection | None = None
        with transaction(self.home, lock_timeout=self.lock_timeout) as doc:
            rows = self._pool_list(doc)
            row = None
            if rows is not None:
                dict_rows = self._rows_only(rows)
                row = self._choose(dict_rows, now)
                if row is not None:
                    rows[:] = dict_rows + [r for r in rows if not isinstance(r, dict)]
            if row is None:
                skip_write()
            chosen = self._selection(row)
        if chosen is not None:
            self.selections += 1
            if self.current is None or self.current.row_id != chosen.row_id:
                self.has_retried_429 = False
            chosen = self._refresh_if_expiring(chosen, now)
        self.current = chosen
        return chosen

    def _refresh_if_expiring(self, sel: Selection, now: float) -> Selection:
        """Refresh an OAuth token about to expire (the provider's skew) before using it,
        rather than waiting for a 401. Runs after the selection's transaction: no lock."""
        if self.refresh_hook is None:
            return sel
        snap = read_store(self.home)
        row = next((r for r in pool_rows(snap.doc or {}, self.pool)
                    if str(r.get("id")) == sel.row_id), None)
        if row is None or not refresh.needs_refresh(self.pool, row, now):
            return sel
        outcome = self.refresh_hook(self.home, self.pool, sel.row_id)
        if getattr(outcome, "ok", False):
            fresh = self._reload(sel.row_id)
            if fresh is not None and fresh.token:
                return fresh
        return sel

    # -- leases (in memory, per agent, as in Hermes) --

    def lease(self) -> Selection | None:
        """Lend a row to a subagent: fewest leases below the cap, never blocking; if every
        row is at the cap, the least-leased one anyway. Reads the store; writes nothing."""
        snap = read_store(self.home)
        rows = pool_rows(snap.doc or {}, self.pool)
        now = self.clock()
        usable = [r for r in policy.available(rows, now, self.ttls) if probe.row_secret(r, self.env)]
        if not usable:
            return None
        with self._lease_lock:
            chosen = policy.pick(usable, self.strategy, now, self.ttls, rng=self.rng,
                                 leases=self._leases, lease_cap=self.lease_cap)
            if chosen is None:
                return None
            rid = str(chosen.get("id"))
            self._leases[rid] = self._leases.get(rid, 0) + 1
        return self._selection(chosen)

    def release(self, row_id: str) -> None:
        with self._lease_lock:
            n = self._leases.get(row_id, 0)
            if n <= 1:
                self._leases.pop(row_id, None)
            else:
                self._leases[row_id] = n - 1

    def leases(self) -> dict[str, int]:
        with self._lease_lock:
            return dict(self._leases)

    # -- outcomes --

    def report(self, result: Result) -> Decision:
        """Record one request's result for the current selection and say what to do next."""
        sel = self.current
        if sel is None:
            raise RuntimeError("report() called before select()")
        code = result.status
        if 200 <= code < 300:
            self.has_retried_429 = False
            return Decision(OK, sel)
        if code == 429:
            if is_usage_limit(result):
                return self._bench_and_rotate(sel, result, "rate_limit", note="usage limit")
            if not self.has_retried_429:
                self.has_retried_429 = True
                return Decision(RETRY, sel, "429: retrying the same key once")
            return self._bench_and_rotate(sel, result, "rate_limit", note="second 429")
        if code == 402:
            return self._bench_and_rotate(sel, result, "billing")
        if code == 401:
            return self._unauthorized(sel, result)
        if code in SERVER_ERRORS or 500 <= code < 600:
            return self._bench_and_rotate(sel, result, "server_error")
        if code == 403:
            return self._bench_and_rotate(sel, result, "auth")
        return Decision(FAILED, sel, f"HTTP {code}: not a credential problem")

    def _unauthorized(self, sel: Selection, result: Result) -> Decision:
        reason = result.reason
        if self.refresh_hook is not None and not policy.terminal_auth_failure(401, reason):
            snap = read_store(self.home)
            row = next((r for r in pool_rows(snap.doc or {}, self.pool)
                        if str(r.get("id")) == sel.row_id), None)
            if row is not None and row.get("auth_type") == AUTH_OAUTH:
                # Outside the lock: a token request can take many seconds.
                outcome = self.refresh_hook(self.home, self.pool, sel.row_id)
                if getattr(outcome, "ok", False):
                    fresh = self._reload(sel.row_id)
                    if fresh is not None and fresh.token and fresh.token != sel.token:
                        self.current = fresh
                        return Decision(RETRY, fresh, "token refreshed")
                elif getattr(outcome, "terminal", False):
                    reason = "invalid_grant"
        return self._bench_and_rotate(sel, Result(401, result.headers, reason, result.message,
                                                  result.reset_at), "auth")

    def _reload(self, row_id: str) -> Selection | None:
        snap = read_store(self.home)
        row = next((r for r in pool_rows(snap.doc or {}, self.pool) if str(r.get("id")) == row_id), None)
        return self._selection(row) if row is not None else None

    def _bench_and_rotate(self, sel: Selection, result: Result, failure_reason: str,
                          note: str | None = None) -> Decision:
        """Bench the row (and rows sharing its secret) and choose the next, in one transaction."""
        now = self.clock()
        reset_at = reset_time(result, now)
        chosen: Selection | None = None
        with transaction(self.home, lock_timeout=self.lock_timeout) as doc:
            rows = self._pool_list(doc)
            if rows is None:
                skip_write()
            dict_rows = self._rows_only(rows)
            row = next((r for r in dict_rows if str(r.get("id")) == sel.row_id), None)
            if row is not None:
                policy.mark_exhausted(dict_rows, row, now, code=result.status, reason=result.reason,
                                      message=result.message, reset_at=reset_at,
                                      failure_reason=failure_reason)
            nxt = self._choose(dict_rows, now)
            rows[:] = dict_rows + [r for r in rows if not isinstance(r, dict)]
            chosen = self._selection(nxt) if nxt is not None else None
        self.has_retried_429 = False
        self.current = chosen
        if chosen is None:
            return Decision(OUT, None, note)
        self.selections += 1
        return Decision(ROTATED, chosen, note)


# --- one agent ------------------------------------------------------------------------------

class AgentRuntime:
    """An agent: its primary pool, the fallback chain, and the turn-scoped restore gate."""

    def __init__(
        self, home: Home, primary: str, *, model: str | None = None,
        clock: Callable[[], float] = time.time, config_loader: Callable[[Home], Any] | None = None,
        verdict_fn: probe.VerdictFn | None = None, cache: probe.VerdictCache | None = None,
        refresh_hook: Callable[[Home, str, str], Any] | None = None,
        env: Mapping[str, str] | None = None, restore_interval: float = RESTORE_INTERVAL,
        rng: _random.Random | None = None, lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        fallback: list[Route] | None = None,
    ) -> None:
        self.home = home
        self.clock = clock
        self.config = ConfigView(home, config_loader)
        self.env = dict(env) if env is not None else probe.home_env(home)
        self.cache = cache if cache is not None else probe.VerdictCache(clock=clock)
        self.verdict_fn = verdict_fn or probe.default_verdict_fn(self.env, self.cache)
        self.refresh_hook = refresh_hook
        self.restore_interval = restore_interval
        self.rng = rng or _random.Random()
        self.lock_timeout = lock_timeout
        primary_route = Route(primary, model, provider=primary)
        self.routes = [primary_route] + (fallback if fallback is not None
                                         else self.config.fallback_routes())
        self.active = 0
        self.notices: list[Notice] = []
        self.last_restore_check: float | None = None
        self._clients: dict[str, PoolClient] = {}
        self._direct: Selection | None = None
        # After a probe-based restore: the tokens the probe vouched for, until the
        # primary answers once. A failure then proves the probe wrong for a while.
        self._vouched: dict[str, str] = {}

    # -- plumbing --

    @property
    def primary(self) -> str:
        return self.routes[0].pool or ""

    @property
    def on_primary(self) -> bool:
        return self.active == 0

    @property
    def route(self) -> Route:
        return self.routes[self.active]

    def client(self, pool: str) -> PoolClient:
        c = self._clients.get(pool)
        if c is None:
            model = next((r.model for r in self.routes if r.pool == pool), None)
            c = self._clients[pool] = PoolClient(
                self.home, pool, clock=self.clock, config=self.config, env=self.env,
                refresh_hook=self.refresh_hook, rng=self.rng, lock_timeout=self.lock_timeout,
                model=model)
        return c

    @property
    def selections(self) -> int:
        """Requests this agent counted in the store, over every pool."""
        return sum(c.selections for c in self._clients.values())

    def _notice(self, kind: str, text: str) -> None:
        self.notices.append(Notice(self.clock(), kind, text))

    def notices_of(self, kind: str) -> list[Notice]:
        return [n for n in self.notices if n.kind == kind]

    # -- requests --

    def _select_route(self, index: int) -> Selection | None:
        route = self.routes[index]
        if route.pool is not None and (route.pool in self._pools_in_store() or not route.key_env):
            return self.client(route.pool).select()
        if route.key_env:
            token = self.env.get(route.key_env)
            if token:
                return Selection(route.name, route.key_env, route.key_env, token,
                                 route.base_url, route.model)
        return None

    def _pools_in_store(self) -> set[str]:
        try:
            return set(pools(read_store(self.home).doc or {}))
        except Exception:
            return set()

    def select(self) -> Selection | None:
        """A row for the next request: the active route, else down the chain."""
        for i in range(self.active, len(self.routes)):
            sel = self._select_route(i)
            if sel is not None:
                if i != self.active:
                    self._notice("fallback", f"{self.route.name} has no usable credential; "
                                             f"falling back to {self.routes[i].name}")
                    self.active = i
                return sel
        return None

    def report(self, result: Result) -> Decision:
        """Record *result* for the active route and move down the chain if it is out."""
        route = self.route
        if route.pool is None or route.pool not in self._clients:
            if 200 <= result.status < 300:
                return Decision(OK, None)
            return self._fall_from(self.active, "direct route failed")
        client = self._clients[route.pool]
        sent = client.current
        decision = client.report(result)
        if self.active == 0 and sent is not None:
            self._check_vouched(sent, result)
        if decision.action == OUT:
            return self._fall_from(self.active, decision.note)
        return decision

    def _fall_from(self, index: int, note: str | None) -> Decision:
        for i in range(index + 1, len(self.routes)):
            sel = self._select_route(i)
            if sel is not None:
                self._notice("fallback", f"{self.routes[index].name} is out; "
                                         f"falling back to {self.routes[i].name}")
                self.active = i
                return Decision(FALLBACK, sel, note)
        return Decision(OUT, None, note)

    def _check_vouched(self, sent: Selection, result: Result) -> None:
        token_pool = self._vouched.pop(sent.row_id, None)
        if token_pool is None:
            return
        if not 200 <= result.status < 300:
            # The probe said reopened but the primary still refuses: distrust it for a
            # full verdict lifetime, so the next turns stay on the fallback.
            self.cache.put(sent.token, probe.Verdict(
                probe.LIMITED, f"primary answered {result.status} after a probe said reopened",
                self.clock()))
            self._notice("restore_failed", f"{self.primary} still limited; back on fallback")
        self._vouched.clear()

    # -- the restore gate --

    def maybe_restore_primary(self) -> bool:
        """At the start of a turn: go back to the primary if it can serve again.

        At most once per *restore_interval*; the throttle is stamped before the pool is
        loaded, and any error keeps the fallback (fail closed).
        """
        if self.on_primary:
            return False
        now = self.clock()
        if self.last_restore_check is not None and now - self.last_restore_check < self.restore_interval:
            return False
        self.last_restore_check = now
        try:
            return self._try_restore(now)
        except Exception as exc:
            self._notice("restore_check_failed",
                         f"could not check {self.primary} ({type(exc).__name__}); staying on fallback")
            return False

    def _try_restore(self, now: float) -> bool:
        snap = read_store(self.home)
        rows = pool_rows(snap.doc or {}, self.primary)
        if not rows:
            return False
        ttls = self.config.ttls
        effs = [(r, policy.effective(r, rows, now, ttls)) for r in rows]
        backed = [(r, e) for r, e in effs if probe.row_secret(r, self.env)]
        if any(e.usable for _, e in backed):
            self._restore(f"{self.primary} is available again")
            return True
        cooling = [e.available_at for _, e in backed if e.status == policy.COOLING]
        if not cooling:
            return False      # only dead rows: nothing to wait for
        # Still cooling: only a probe can say the quota came back early.
        lift = probe.lift_reopened_cooldowns(
            self.home, self.primary, self.verdict_fn, now, ttls=ttls,
            lock_timeout=self.lock_timeout)
        if not (lift.available and (lift.cleared_reopened or lift.cleared_elapsed)):
            return False
        for rid in lift.cleared_reopened:
            row = next((r for r in rows if str(r.get("id")) == rid), None)
            if row is not None:
                self._vouched[rid] = probe.row_secret(row, self.env) or ""
        self._restore(f"{self.primary} quota reopened early (probe); back on primary")
        return True

    def _restore(self, text: str) -> None:
        self.active = 0
        client = self.client(self.primary)
        client.has_retried_429 = False
        self._notice("restore", text)
