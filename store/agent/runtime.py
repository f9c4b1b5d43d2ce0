"""What an agent process does with a pool, built on the same locked store as the console.

- :class:`PoolClient`, one per (agent, pool): ``select()`` (strategy from config, counts
  the request, one transaction), ``lease()``/``release()`` (in memory, never blocking),
  ``report(result)`` for a request's outcome (spec section 6, "Errors").
- :class:`AgentRuntime`, one per agent: the primary pool plus the effective fallback chain;
  moves down the chain when a pool is out, and each turn decides whether to go back to
  the primary (``maybe_restore_primary``, spec section 6 "Restore to the primary").
- What each answer spent, when the caller's report carries it, goes to the usage ledger
  (:mod:`store.agent.spending`, written behind: never under the lock); ``close()`` writes
  what is queued when the agent ends.

Every decision is a function of the store, the config and an injectable clock, so tests
drive each one with a fake clock. No network call happens under the lock: the refresh
hook and the reopen probes run before the transaction that records their result.

The pieces live in :mod:`store.agent.outcomes` (results, decisions, reset times),
:mod:`store.config.agent_view` (config view, routes) and :mod:`store.agent.pool_client`;
import each name from the module that defines it.
"""

from __future__ import annotations

import random as _random
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from store.agent import probe
from store.agent.headroom import Headroom
from store.agent.judge import judge, usage_in
from store.agent.outcomes import (
    FAILED,
    FALLBACK,
    OK,
    OUT,
    REQUEST,
    ROUTE_DOWN,
    Decision,
    Notice,
    Result,
    Selection,
    Verdict,
)
from store.agent.pool_client import PoolClient
from store.agent.spending import RuntimeUsage
from store.authfile import read_store
from store.config.agent_view import ConfigView, Route
from store.dialects.registry import dialect_for
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.model import pool_rows, pools, row_by_id
from store.paths import Home
from store.pools import policy

RESTORE_INTERVAL = 300.0


class AgentRuntime:
    """An agent: its primary pool, the fallback chain, and the turn-scoped restore gate."""

    def __init__(
        self, home: Home, primary: str, *, model: str | None = None,
        clock: Callable[[], float] = time.time, config_loader: Callable[[Home], Any] | None = None,
        verdict_fn: probe.VerdictFn | None = None, cache: probe.VerdictCache | None = None,
        refresh_hook: Callable[[Home, str, str], Any] | None = None,
        env: Mapping[str, str] | None = None, restore_interval: float = RESTORE_INTERVAL,
        rng: _random.Random | None = None, lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        fallback: list[Route] | None = None, headroom: Headroom | None = None, usage: bool | None = None,
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
        # One home's readings for every pool of the chain (PoolClient.report records them).
        self.headroom = headroom if headroom is not None else Headroom(home, clock)
        primary_route = Route(primary, model, provider=primary)
        self._fixed_fallback = fallback is not None
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
        # The usage ledger (None: as hermes-admin.yaml's usage.ledger says; False: off).
        self.usage = RuntimeUsage(home, clock=clock, enabled=usage, notice=lambda text: self._notice("usage", text))

    def follow_config(self) -> bool:
        """Take the fallback chain from config.yaml again (an operator edited it while this
        runtime runs); True when the routes changed. The active route stays active if it is
        still in the chain; otherwise the runtime is back on its primary, and the ordinary
        fallback moves on from there if the primary is out."""
        if self._fixed_fallback:
            return False
        routes = [self.routes[0]] + self.config.fallback_routes()
        if routes == self.routes:
            return False
        current = self.routes[self.active]
        self.routes = routes
        self.active = next((i for i, r in enumerate(routes) if r == current), 0)
        return True

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
                model=model, headroom=self.headroom)
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

    def report(self, result: Result, verdict: Verdict | None = None, *, body: bytes | None = None) -> Decision:
        """Record *result* for the active route and move down the chain if it is out, or
        if the route itself failed (:func:`~store.agent.outcomes.classify`: the route's
        fault benches no key, and another key had its one try). *verdict*: the answer as
        the caller judged it; *body*: a 2xx's JSON body, read here for its usage. Usage
        either carries goes to the usage ledger (a pool's row; a direct route has none)."""
        route = self.route
        if verdict is None or verdict.read_at is None:
            verdict = judge(result, self.clock(), pool=route.pool)
        client = self._clients.get(route.pool) if route.pool is not None else None
        sent = client.current if client is not None else None
        if body and sent is not None and verdict.fault is None and verdict.usage is None:
            verdict = replace(verdict, usage=usage_in(dialect_for(sent.pool, sent.base_url or ""), body,
                                                      lambda text: self._notice("usage", text)))
        if sent is not None:
            self.usage.answer(sent, verdict, model=route.model)
        if route.pool is None or route.pool not in self._clients:
            if verdict.fault is None:
                return Decision(OK, None)
            if verdict.fault == REQUEST:
                return Decision(FAILED, None, f"HTTP {result.status}: {verdict.kind}")
            return self._fall_from(self.active, "direct route failed")
        client = self._clients[route.pool]
        decision = client.report(result, verdict)
        if self.active == 0 and sent is not None:
            self._check_vouched(sent, result)
        if decision.action == OUT or (decision.action == ROUTE_DOWN and decision.selection is None):
            fell = self._fall_from(self.active, decision.note)
            if fell.action == OUT and decision.action == ROUTE_DOWN:
                return Decision(FAILED, None, decision.note)   # nothing else to try: the error stands
            return fell
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

    def close(self, timeout: float = 5.0) -> None:
        """The agent ends: write the usage still queued for the ledger (bounded)."""
        self.usage.close(timeout)

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
            row = row_by_id(rows, rid)
            if row is not None:
                self._vouched[rid] = probe.row_secret(row, self.env) or ""
        self._restore(f"{self.primary} quota reopened early (probe); back on primary")
        return True

    def _restore(self, text: str) -> None:
        self.active = 0
        client = self.client(self.primary)
        client.has_retried_429 = False
        self._notice("restore", text)
