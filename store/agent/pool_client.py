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
from store.agent.headroom import Headroom
from store.agent.judge import judge
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
    is_usage_limit,
    stored_message,
)
from store.agent.pool_headroom import PoolHeadroom, pool_list
from store.agent.triage import QUOTA
from store.authfile import read_store
from store.config import settings as settings_file
from store.config.agent_view import ConfigView
from store.errors import HermesAdminError
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.model import AUTH_OAUTH, Row, pool_rows, row_by_id
from store.paths import Home
from store.pools import least_used, policy
from store.transaction import skip_write, transaction

LEASE_CAP = 1
# The owner's hook before a key bench (sel, result, verdict, failure_reason): it benches the
# row in its own view first (the proxy: no other request picks it meanwhile) and returns
# None, or takes the bench over and returns the Decision (a per-model bench).
BenchHook = Callable[[Selection, Result, Verdict, str], Decision | None]
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
        use_headroom: bool = True, also_eligible: Callable[[Row], bool] | None = None,
        on_bench: BenchHook | None = None,
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
        self.room = PoolHeadroom(home, pool, self.headroom, self.env, lambda: self.settings, enabled=use_headroom,
                                 lock_timeout=lock_timeout, notice=self.notice)
        self.also_eligible = also_eligible    # the owner's filter (the proxy: no open breaker)
        self.on_bench = on_bench              # the owner's hook before a key bench (see BenchHook)

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

    def selection_of(self, row: Row) -> Selection:
        """The :class:`Selection` of *row* for this pool."""
        return Selection(self.pool, str(row.get("id")), str(row.get("label") or ""),
                         probe.row_secret(row, self.env) or "",
                         row.get("inference_base_url") or row.get("base_url"), self.model)

    def eligible(self, row: Row) -> bool:
        """Whether *row* may serve the current request: its secret is live here and the
        request has not already failed on it (and the owner's filter, if any, allows it)."""
        return bool(probe.row_secret(row, self.env)) and str(row.get("id")) not in self.avoid and (
            self.also_eligible is None or self.also_eligible(row))

    def choose_for(self, rows: list[Row], now: float, model: str | None = None) -> Row | None:
        """``policy.select`` among eligible rows for *model* (a request's next row after a
        per-model bench). Mutates *rows*."""
        return policy.select(rows, self.strategy, now, self.ttls, rng=self.rng, eligible=self.eligible, model=model)

    def _choose(self, rows: list[Row], now: float) -> Row | None:
        """policy.select among eligible rows, leaving out rows their headroom holds back.
        Mutates *rows*."""
        held = self._held(rows, now)
        eligible = self.eligible if not held else lambda r: self.eligible(r) and str(r.get("id")) not in held
        return policy.select(rows, self.strategy, now, self.ttls, rng=self.rng, eligible=eligible,
                             weigh=self._weigh(now))

    def _held(self, rows: list[Row], now: float) -> set[str]:
        return self.room.held(rows, now, lambda: [str(r.get("id")) for r in policy.available(rows, now, self.ttls)
                                                  if self.eligible(r)])

    def _weigh(self, now: float) -> least_used.Weigh | None:
        return self.room.weigh(now)

    def _pool_list(self, doc: dict) -> list[Row] | None:
        return pool_list(doc, self.pool)

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
            chosen = self.selection_of(row)
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
        row = row_by_id(pool_rows(snap.doc or {}, self.pool), sel.row_id)
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
        return self.selection_of(chosen)

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

    def report(self, result: Result, verdict: Verdict | None = None, *, recorded: bool = False) -> Decision:
        """Record one request's result for the current selection and say what to do next.
        *verdict*: the answer judged once (:func:`store.agent.judge.judge`) by the caller;
        without one (or with :func:`classify`'s alone) it is judged here. Its readings are
        recorded unless *recorded* (the caller did, as it read the answer)."""
        sel = self.current
        if sel is None:
            raise RuntimeError("report() called before select()")
        now = self.clock()
        if result.message:       # the provider's words, checked once at the edge
            result = replace(result, message=stored_message(result.message, sel.token))
        if verdict is None or verdict.read_at is None:
            verdict = judge(result, now, pool=self.pool, model=self.model, notice=self.notice)
        if verdict.readings and self.use_headroom and not recorded:
            self.headroom.record(sel.pool, sel.row_id, sel.fingerprint, verdict.readings)
        try:
            return self._judge(sel, result, verdict, now)
        finally:
            self.headroom.flush()     # at most once a second, and never under the lock

    def _judge(self, sel: Selection, result: Result, verdict: Verdict, now: float) -> Decision:
        code = result.status
        if verdict.fault is None:
            self.has_retried_429 = False
            return Decision(OK, sel, self.room.bench_exhausted(sel, now))
        if verdict.fault == REQUEST:
            return Decision(FAILED, sel, f"HTTP {code}: {verdict.kind}, the request's fault, not the key's")
        if verdict.fault != KEY:
            return self._route_down(sel, verdict)
        if verdict.kind == "rate_limit":
            if is_usage_limit(result):
                return self._bench_and_rotate(sel, result, verdict, "rate_limit", note="usage limit")
            if verdict.triage == QUOTA:     # a spent quota (store.agent.triage): no same-key retry
                return self._bench_and_rotate(sel, result, verdict, "rate_limit", note="spent quota")
            if self.room.exhausted(sel, now) is not None:     # a retry would meet the same 429
                return self._bench_and_rotate(sel, result, verdict, "rate_limit", note="headroom: nothing left")
            if not self.has_retried_429:
                self.has_retried_429 = True
                return Decision(RETRY, sel, f"{code}: retrying the same key once")
            return self._bench_and_rotate(sel, result, verdict, "rate_limit", note=f"second {code}")
        if code == 401:
            return self._unauthorized(sel, result, verdict)
        return self._bench_and_rotate(sel, result, verdict, verdict.failure_reason or verdict.kind)

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

    def _unauthorized(self, sel: Selection, result: Result, verdict: Verdict) -> Decision:
        reason = result.reason
        if self.refresh_hook is not None and not policy.terminal_auth_failure(401, reason):
            snap = read_store(self.home)
            row = row_by_id(pool_rows(snap.doc or {}, self.pool), sel.row_id)
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
                                                  result.reset_at), verdict, "auth")

    def _reload(self, row_id: str) -> Selection | None:
        snap = read_store(self.home)
        row = row_by_id(pool_rows(snap.doc or {}, self.pool), row_id)
        return self.selection_of(row) if row is not None else None

    def _bench_and_rotate(self, sel: Selection, result: Result, verdict: Verdict, failure_reason: str,
                          note: str | None = None) -> Decision:
        """Bench the row (and rows sharing its secret) and choose the next, in one
        transaction, until the verdict's one reset time, stamped when the answer was read
        (the owner's :data:`BenchHook` first: it benches its own view, or takes over)."""
        if self.on_bench is not None and (took := self.on_bench(sel, result, verdict, failure_reason)) is not None:
            return took
        now = verdict.read_at if verdict.read_at is not None else self.clock()
        reset_at = verdict.reset_at
        self.avoid.add(sel.row_id)
        chosen: Selection | None = None
        with transaction(self.home, lock_timeout=self.lock_timeout) as doc:
            rows = self._pool_list(doc)
            if rows is None:
                skip_write()
            dict_rows = self._rows_only(rows)
            row = row_by_id(dict_rows, sel.row_id)
            if row is not None:
                policy.mark_exhausted(dict_rows, row, now, code=result.status, reason=result.reason,
                                      message=result.message, reset_at=reset_at,
                                      failure_reason=failure_reason)
            nxt = self._choose(dict_rows, now)
            rows[:] = dict_rows + [r for r in rows if not isinstance(r, dict)]
            chosen = self.selection_of(nxt) if nxt is not None else None
        self.has_retried_429 = False
        self.current = chosen
        if chosen is None:
            return Decision(OUT, None, note)
        self.selections += 1
        return Decision(ROTATED, chosen, note)
