"""An agent's handle on one pool: select, lease, report (spec section 6).

:class:`PoolClient`, one per (agent, pool): ``select()`` (strategy from config, counts the
request, one transaction), ``lease()``/``release()`` (in memory, never blocking),
``report(result)`` for a request's outcome, judged by :func:`store.agent.outcomes.classify`:
a key's fault benches the row (never to be chosen again for the same request), a route's
fault tries another key once and writes nothing, a request's fault is the caller's answer.
No network call happens under the lock: the refresh hook runs before the transaction that
records its result.
"""

from __future__ import annotations

import logging
import random as _random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from store import outside
from store.agent import probe, refresh
from store.agent.headroom import BENCH_MESSAGE, BENCH_REASON, Headroom, Hold, held_back
from store.agent.outcomes import (
    FAILED,
    KEY,
    OK,
    OUT,
    REQUEST,
    RETRY,
    ROTATED,
    ROUTE_DOWN,
    Decision,
    Result,
    Selection,
    Verdict,
    classify,
    is_usage_limit,
    reset_time,
    stored_message,
)
from store.authfile import read_store
from store.config import settings as settings_file
from store.config.agent_view import ConfigView
from store.dialects.registry import read_headers
from store.errors import HermesAdminError
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.model import AUTH_OAUTH, STATUS_EXHAUSTED, Row, ensure_pool, parse_epoch, pool_rows, pools
from store.paths import Home
from store.pools import least_used, policy
from store.pools.view import row_fingerprint
from store.transaction import skip_write, transaction

LEASE_CAP = 1
log = logging.getLogger("hermes_admin.agent")


class PoolClient:
    """An agent's handle on one pool: select, lease, report."""

    def __init__(
        self, home: Home, pool: str, *, clock: Callable[[], float] = time.time,
        config: ConfigView | None = None, strategy: str | None = None,
        ttls: policy.Ttls | None = None, env: Mapping[str, str] | None = None,
        refresh_hook: Callable[[Home, str, str], Any] | None = None,
        rng: _random.Random | None = None, lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        lease_cap: int = LEASE_CAP, model: str | None = None, notice: outside.Notice | None = None,
        headroom: Headroom | None = None, settings: settings_file.Settings | None = None,
        use_headroom: bool = True,
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
        self.notice: outside.Notice = notice or log.warning   # a provider number we ignored
        self.current: Selection | None = None
        # Rows the current request must not go back to (benched or failed for it); a new
        # select() starts a new request.
        self.avoid: set[str] = set()
        self.route_retried = False     # the current request had its one other-key try
        self.has_retried_429 = False
        self.selections = 0            # requests counted in the store by this client
        self._leases: dict[str, int] = {}
        self._lease_lock = threading.Lock()
        self.headroom = headroom if headroom is not None else Headroom(home, clock)
        self.use_headroom = use_headroom      # False: the reactive rules alone (a 429 benches)
        self._settings = settings

    @property
    def settings(self) -> settings_file.Settings:
        """hermes-admin's own settings (the threshold, the least_used option), read once;
        a file that cannot be used is a notice and the defaults (Hermes's behaviour)."""
        if self._settings is None:
            try:
                self._settings = settings_file.read(self.home)
            except HermesAdminError as exc:
                self.notice(f"{exc}; using the default headroom settings")
                self._settings = settings_file.DEFAULTS
        return self._settings

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

    def eligible(self, row: Row) -> bool:
        """Whether *row* may serve the current request: its secret is live here and the
        request has not already failed on it."""
        return bool(probe.row_secret(row, self.env)) and str(row.get("id")) not in self.avoid

    def _choose(self, rows: list[Row], now: float) -> Row | None:
        """policy.select among eligible rows, leaving out rows their headroom holds back.
        Mutates *rows*."""
        held = self._held(rows, now)
        eligible = self.eligible if not held else lambda r: self.eligible(r) and str(r.get("id")) not in held
        return policy.select(rows, self.strategy, now, self.ttls, rng=self.rng, eligible=eligible,
                             weigh=self._weigh(now))

    def _holds(self, rows: list[Row], now: float) -> dict[str, Hold]:
        """Row id -> what its readings hold it back for (rows with readings only)."""
        ids = set(self.headroom.row_ids(self.pool)) if self.use_headroom else set()
        if not ids:
            return {}
        threshold = self.settings.threshold_for(self.pool)
        out = {}
        for row in rows:
            rid = str(row.get("id"))
            if rid in ids and (h := self.headroom.hold(self.pool, rid, row_fingerprint(self.pool, row, self.env),
                                                       now, threshold)) is not None:
                out[rid] = h
        return out

    def _held(self, rows: list[Row], now: float) -> set[str]:
        holds = self._holds(rows, now)
        if not holds:
            return set()
        return held_back(holds, [str(r.get("id")) for r in policy.available(rows, now, self.ttls)
                                 if self.eligible(r)])

    def _weigh(self, now: float) -> least_used.Weigh | None:
        if not (self.use_headroom and self.settings.least_used_weighs_headroom):
            return None
        return lambda r: self.headroom.left(self.pool, str(r.get("id")), row_fingerprint(self.pool, r, self.env),
                                            now)

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

    def select(self, *, same_request: bool = False) -> Selection | None:
        """Choose and count a row (one transaction); None when the pool has nothing usable.
        A new request unless *same_request* (then rows it failed on are not chosen)."""
        if not same_request:
            self.avoid.clear()
            self.route_retried = False
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
        held = self._held(usable, now)
        usable = [r for r in usable if str(r.get("id")) not in held]
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

    def report(self, result: Result, verdict: Verdict | None = None) -> Decision:
        """Record one request's result for the current selection and say what to do next
        (*verdict*: :func:`classify`'s, when the caller already has it)."""
        sel = self.current
        if sel is None:
            raise RuntimeError("report() called before select()")
        now = self.clock()
        if result.message:       # the provider's words, checked once at the edge
            result = replace(result, message=stored_message(result.message, sel.token))
        readings = read_headers(result.headers, now) if result.headers and self.use_headroom else []
        if readings:
            self.headroom.record(sel.pool, sel.row_id, sel.fingerprint, readings)
        try:
            return self._judge(sel, result, verdict or classify(result, self.pool), now)
        finally:
            self.headroom.flush()     # at most once a second, and never under the lock

    def _judge(self, sel: Selection, result: Result, verdict: Verdict, now: float) -> Decision:
        code = result.status
        if verdict.fault is None:
            self.has_retried_429 = False
            return Decision(OK, sel, self._bench_from_headroom(sel, now))
        if verdict.fault == REQUEST:
            return Decision(FAILED, sel, f"HTTP {code}: {verdict.kind}, the request's fault, not the key's")
        if verdict.fault != KEY:
            return self._route_down(sel, verdict)
        if verdict.kind == "rate_limit":
            if is_usage_limit(result):
                return self._bench_and_rotate(sel, result, "rate_limit", note="usage limit")
            if self._exhausted(sel, now) is not None:     # a retry would meet the same 429
                return self._bench_and_rotate(sel, result, "rate_limit", note="headroom: nothing left")
            if not self.has_retried_429:
                self.has_retried_429 = True
                return Decision(RETRY, sel, f"{code}: retrying the same key once")
            return self._bench_and_rotate(sel, result, "rate_limit", note=f"second {code}")
        if code == 401:
            return self._unauthorized(sel, result)
        return self._bench_and_rotate(sel, result, verdict.failure_reason or verdict.kind)

    def _route_down(self, sel: Selection, verdict: Verdict) -> Decision:
        """The route failed, not the key: bench nothing, write nothing but the count of the
        one other key tried (where one may help); then the caller moves down the chain."""
        note = f"{verdict.kind}: the route's fault, no key benched"
        self.avoid.add(sel.row_id)
        if self.route_retried or not verdict.other_key_may_help:
            return Decision(ROUTE_DOWN, None, note)
        self.route_retried = True
        nxt = self.select(same_request=True)
        if nxt is None:
            return Decision(ROUTE_DOWN, None, note)
        return Decision(ROUTE_DOWN, nxt, note + "; trying another key once")

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
        reset = reset_time(result, now, self.notice)
        if reset is None and (held := self._exhausted(sel, now)) is not None:
            reset = held.until          # a dialect reset_time does not read (Anthropic's RFC 3339)
        reset_at = policy.bench_reset(reset, now)
        self.avoid.add(sel.row_id)
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


    # -- headroom --

    def _exhausted(self, sel: Selection, now: float) -> Hold | None:
        """The hold on *sel*'s row when its provider said nothing is left until a reset."""
        h = self.headroom.hold(sel.pool, sel.row_id, sel.fingerprint, now) if self.use_headroom else None
        return h if h is not None and h.exhausted else None

    def _bench_from_headroom(self, sel: Selection, now: float) -> str | None:
        """A 2xx that said nothing is left until T benches the row until T in the store, the
        way a 429 would (one transaction; nothing written when it is benched that long
        already). A store that cannot take it keeps the hold in memory: a notice, never an
        error for a request that succeeded."""
        held = self._exhausted(sel, now)
        if held is None:
            return None
        reset_at = policy.bench_reset(held.until, now)
        try:
            with transaction(self.home, lock_timeout=self.lock_timeout) as doc:
                rows = self._pool_list(doc)
                if rows is None:
                    skip_write()
                dict_rows = self._rows_only(rows)
                row = next((r for r in dict_rows if str(r.get("id")) == sel.row_id), None)
                if row is None or row_fingerprint(self.pool, row, self.env) != sel.fingerprint or (
                        row.get("last_status") == STATUS_EXHAUSTED
                        and (parse_epoch(row.get("last_error_reset_at")) or 0.0) >= reset_at - 1.0):
                    skip_write()
                policy.mark_exhausted(dict_rows, row, now, code=429, reason=BENCH_REASON,
                                      message=BENCH_MESSAGE.format(what=held.describe()), reset_at=reset_at,
                                      failure_reason="rate_limit")
        except HermesAdminError as exc:
            self.notice(f"{sel.pool}/{sel.row_id}: the headroom bench was not written ({exc}); "
                        f"held in memory until its reset")
            return None
        return f"headroom: {held.describe()}; benched until the provider's reset"
