"""The proxy's chain: the primary pool then the fallback chain, on an in-memory view.

Selection runs on rows held in memory (``policy.select``, the agent's own rule), so a request costs no file
IO; :mod:`store.watch.home` keeps the view current (``load_doc``). The proxy's changes reach the store two
ways: request counts are written behind (:meth:`Chain.flush`, at most once a second, one transaction per
batch); a state change (bench, rotate, dead) is applied to the view at once, so no other request picks the
row, then written at once through the agent's own :class:`~store.agent.pool_client.PoolClient` outcome code
(spec section 6) in one transaction; an overlay keeps it in the view until the store shows it.

Each answer is judged once (:mod:`store.proxy.routing.verdict`): only a key's fault reaches
:meth:`Chain.outcome` and the store; a route's fault opens the chain's :class:`~store.proxy.routing.upstreams.Breakers`.
Which row may serve is :mod:`store.proxy.routing.eligibility`'s; a conversation's pin (#30) is a preference
among those rows (:mod:`store.proxy.routing.pins`). The runtime's :class:`~store.agent.runtime.AgentRuntime`
owns the chain and the restore gate (turn-scoped restore, probe, distrust after a lying probe); blocking
methods (``outcome``, ``flush``, ``maybe_restore``) do file IO or network in a worker thread.
"""

from __future__ import annotations

import copy
import logging
import random as _random
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from store.agent import probe
from store.agent.outcomes import SUCCEEDED, Decision, Result, Selection, Verdict, scoped
from store.agent.runtime import RESTORE_INTERVAL, AgentRuntime
from store.authfile import read_store
from store.config.agent_view import Route
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.model import Row, pool_rows, pools
from store.paths import Home
from store.pools import model_cooldowns, policy
from store.proxy.routing.attempt import Attempt
from store.proxy.routing.counts import PendingCounts
from store.proxy.routing.direct import DirectBenches
from store.proxy.routing.eligibility import Ask, Check, Eligibility
from store.proxy.routing.headroom_gate import HeadroomGate
from store.proxy.routing.overlay import Overlay, RowIndex, find_row
from store.proxy.routing.picks import Usable, choose, preferred, rotated, usable_rows
from store.proxy.routing.pins import Pins, pinned
from store.proxy.routing.protocols import OPENAI, Want, route_protocols
from store.proxy.routing.request_client import RequestClient
from store.proxy.routing.steering import Steering
from store.proxy.routing.upstreams import Breakers, route_name
from store.proxy.routing.verdict import judge_attempt

log = logging.getLogger("hermes_admin.proxy")


class Chain:
    """The primary pool and its fallback chain, served from an in-memory view."""

    def __init__(
        self, home: Home, primary: str, *, clock: Callable[[], float] = time.time,
        env: Mapping[str, str] | None = None, refresh_hook: Callable[[Home, str, str], Any] | None = None,
        verdict_fn: probe.VerdictFn | None = None, restore_interval: float = RESTORE_INTERVAL,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT, config_loader: Callable[[Home], Any] | None = None,
        headroom: bool = True,
    ) -> None:
        self.home = home
        self.clock = clock
        # Every answer's readings and the rows they hold back (False: a 429 alone benches).
        self.headroom = HeadroomGate(home, clock, enabled=headroom, notice=log.warning)
        self.runtime = AgentRuntime(home, primary, clock=clock, env=env, refresh_hook=refresh_hook,
                                    verdict_fn=verdict_fn, restore_interval=restore_interval, lock_timeout=lock_timeout,
                                    config_loader=config_loader, headroom=self.headroom.room, usage=False)
        self.env = self.runtime.env
        self.rng = _random.Random()
        self.lock_timeout = lock_timeout
        self._lock = threading.Lock()     # view and pending counts; never held over IO
        self._rows: dict[str, list[Row]] = {}
        self.counts = PendingCounts()     # request counts written behind
        self.overlay = Overlay()          # benches in the view the store does not show yet
        self._index = RowIndex()          # the view's rows by id (per generation)
        self._speaks: list[frozenset[str]] = []
        self._generation = 0              # bumped whenever the view's rows or their meaning change
        self._usable: dict[str, Usable] = {}
        self._reads = 0                   # store reads begun (tickets handed out)
        self._applied = 0                 # the ticket of the snapshot in the view
        self.fallback_since: float | None = None
        self._strategies: dict[str, str] = {}
        self._ttls = policy.DEFAULT_TTLS
        self._direct = DirectBenches()   # routes served by a key from the environment
        self.breakers = Breakers()       # upstreams failing now (route faults), in memory only
        self.last_doc: dict[str, Any] = {}   # the store as last applied (for the redactor)
        self.steer = Steering()          # the operator's hand: a pin, a reset seen in the store
        self.eligibility = Eligibility(self.breakers, self.headroom, self.env, lambda: self._ttls)
        self.pins = Pins(lambda: self.headroom.settings.proxy.affinity, lambda: self._strategies)   # #30
        self.refresh_config()

    # -- the view --

    @property
    def routes(self) -> list:
        return self.runtime.routes

    @property
    def pools(self) -> list[str]:
        return [r.pool for r in self.routes if r.pool]

    def load(self) -> None:
        """Read the store now (blocking) and replace the view, unless a later read was applied (:meth:`load_doc`)."""
        ticket = self._ticket()
        self.load_doc(read_store(self.home).doc or {}, ticket)

    def _ticket(self) -> int:
        with self._lock:
            self._reads += 1
            return self._reads

    def load_doc(self, doc: dict[str, Any], ticket: int | None = None) -> None:
        """Replace the view with *doc*'s rows, keeping counts and benches not yet written.

        *ticket* (from before *doc* was read) orders loads from several threads (watcher,
        restore gate, token refresh): every writer replaces the file whole under the lock,
        so a read begun later sees the same or a newer store. A snapshot older than the one
        applied is dropped: that newer one has retired the overlay of a bench it showed, and
        the older one would reopen the benched row until the store next changed.
        """
        ticket = self._ticket() if ticket is None else ticket
        present = pools(doc)
        fresh = {p: copy.deepcopy([r for r in pool_rows(doc, p) if isinstance(r, dict)])
                 for p in self.pools if p in present}
        with self._lock:
            if ticket < self._applied:
                return
            self._applied = ticket
            self.counts.apply(fresh)
            self.overlay.apply(fresh)
            self.steer.saw_store(self.runtime, self._rows, fresh, self.clock(), self._ttls)  # a reset: back now
            self.headroom.cleared(fresh)       # and what its readings held before it is lifted
            self._rows = fresh
            self.last_doc = doc
            self._generation += 1

    def refresh_config(self) -> None:
        """Re-read the fallback chain, strategies and TTLs (at start and when the watcher sees config.yaml
        change): a request costs no stat of it. A pool new to the chain has its rows read now (once per edit)."""
        cfg = self.runtime.config
        if self.runtime.follow_config():
            if self.runtime.active == 0:
                self.fallback_since = None
            if set(self.pools) - set(self._rows):
                self.load()
        got = cfg.get()
        custom = got.custom_providers if got is not None else []
        with self._lock:
            self._strategies = {p: cfg.strategy_for(p) for p in self.pools}
            self._ttls = cfg.ttls
            self._speaks = [route_protocols(r.pool, r.provider, r.base_url, custom) for r in self.routes]
            self._generation += 1

    def protocols(self, index: int) -> frozenset[str]:
        """The protocols route *index* speaks (:func:`store.proxy.routing.protocols.route_protocols`)."""
        speaks = self._speaks
        return speaks[index] if index < len(speaks) else frozenset({OPENAI})

    def speaks(self, index: int, protocol: str) -> bool:
        return protocol == OPENAI or protocol in self.protocols(index)

    def auth_type(self, sel: Selection) -> Any:
        """The ``auth_type`` of *sel*'s row in the view (None: no such row)."""
        with self._lock:
            row = self._index.find(sel.pool, self._rows.get(sel.pool), sel.row_id, self._generation)
            return row.get("auth_type") if row is not None else None

    def row_count(self) -> int:
        """Rows in the chain's pools: bounds how many tries one request may take."""
        return sum(len(rows) for rows in self._rows.values()) + len(self.routes)

    def set_env(self, env: Mapping[str, str]) -> None:
        with self._lock:
            self.env.clear()
            self.env.update(env)
            self._generation += 1       # borrowed secrets decide which rows are eligible

    # -- selection --

    def select(self, start: int | None = None, avoid: set[tuple[str, str]] | None = None, *,
               move: bool = True, want: Want | None = None) -> Attempt | None:
        """The next row to send with: the active route (or the pinned one), else down the chain
        (no IO). Never a row in *avoid* (this request failed on it) or on an upstream whose
        breaker is open. The chain moves to a later route for good (a fallback, restored by the
        gate) only when every route before it is out of credentials (and *move*), not when one
        was skipped for a failing upstream, a row this request already tried, or (*want*) for
        not speaking its protocol or being benched for its model."""
        rt = self.runtime
        pin = self.steer.pin_index(self.routes, route_name) if self.steer.pin is not None else None
        if start is None and self.steer.wanted is not None and self.steer.back_to_primary(rt, self.clock()):
            self.fallback_since = None
        first = (rt.active if pin is None else pin) if start is None else start
        held = not move or pin is not None      # pinned: a later route serves, the chain stays
        protocol = want.protocol if want is not None else OPENAI
        for i in range(first, len(self.routes)):
            if protocol != OPENAI and not self.speaks(i, protocol):
                held = True
                continue
            sel, skipped = self._select_in(i, avoid, want)
            if sel is not None:
                if i > rt.active and not held:
                    rt._notice("fallback", f"{route_name(rt.route.name)} has no usable credential; "
                                           f"falling back to {route_name(self.routes[i].name)}")
                    rt.active = i
                    self.fallback_since = self.clock()
                return Attempt(i, sel, fresh=True, route=self.routes[i], want=want, pinned=pinned(want, sel))
            held = held or skipped
        return self.look_again(avoid, want) if start is None and first > 0 else None

    def look_again(self, avoid: set[tuple[str, str]] | None = None, want: Want | None = None) -> Attempt | None:
        """Before any "no key" answer: any route whose benches have ended serves now, in chain
        order, not only once the restore timer comes round (the chain stays: the gate restores)."""
        protocol = want.protocol if want is not None else OPENAI
        pin = self.steer.pin_index(self.routes, route_name) if self.steer.pin is not None else None
        for i in range(pin or 0, len(self.routes)):       # a pinned route: never one before it
            if protocol == OPENAI or self.speaks(i, protocol):
                sel, _skipped = self._select_in(i, avoid, want)
                if sel is not None:
                    return Attempt(i, sel, fresh=True, route=self.routes[i], want=want, pinned=pinned(want, sel))
        return None

    def _select_in(self, index: int, avoid: set[tuple[str, str]] | None = None, want: Want | None = None
                   ) -> tuple[Selection | None, bool]:
        """Route *index*'s next row, and whether usable rows were held back (avoided, on an
        open upstream, or benched for the request's model only)."""
        route = self.routes[index]
        model = route.model if index > 0 else None
        now = self.clock()
        if route.pool is not None and route.pool in self._rows:
            self.pins.ready(route.pool, want)      # the body parsed for its conversation: not under the lock
            with self._lock:
                row, held = self._pick(route.pool, now, route.base_url, avoid, model, want)
                if row is None:
                    return None, held
                key = (route.pool, str(row.get("id")))
                self.counts.add(*key)
            return Selection(route.pool, key[1], str(row.get("label") or ""),
                             probe.row_secret(row, self.env) or "",
                             row.get("inference_base_url") or row.get("base_url") or route.base_url, model), False
        if route.key_env:
            return self._direct.select(route, self.env, now, self._ttls, avoid, self.breakers, model)
        return None, False

    def _pick(self, pool: str, now: float, route_base: str | None, avoid: set[tuple[str, str]] | None,
              model: str | None = None, want: Want | None = None) -> tuple[Row | None, bool]:
        """``policy.select`` on the view's kept usable rows, less *avoid*, rows on open upstreams and rows
        benched for the model asked for; a conversation's pin first, then ``proxy.prefer``. Hold ``_lock``."""
        rows = self._rows[pool]
        usable = self._usable.get(pool)
        if usable is None or usable.generation != self._generation or now >= usable.until:
            usable = self._usable[pool] = usable_rows(
                rows, self._strategies.get(pool, policy.DEFAULT_STRATEGY), now, self._ttls, self.env,
                self._generation)
        asked = scoped(model or (want.model if want is not None else None),
                       want.endpoint if want is not None else None) if usable.benches else None
        weigh = self.headroom.weigh(pool, self.env, now) if usable.strategy == "least_used" else None
        el = self.eligibility       # the breaker, tried and headroom filters (cooling and model: in usable)
        pin = self.pins.prefer(pool, want, now, len(usable.rows))     # a conversation's pinned row
        chosen, held, reordered = choose(usable, rows, self.rng, asked, el.keep(pool, route_base, now, avoid),
                                         weigh=weigh, hold=el.hold(pool, now, rows, self._generation), pin=pin,
                                         prefer=preferred(self.headroom, pool, self.env, now))
        if reordered:
            rotated(usable, chosen)         # the kept lists follow the priorities again
        return chosen, held

    def usable(self, sel: Selection, want: Want | None = None) -> bool:
        """Whether *sel*'s row may be sent to now: the eligibility filters for the model (and endpoint) asked."""
        scope = scoped(sel.model or (want.model if want is not None else None),
                       want.endpoint if want is not None else None)
        with self._lock:
            # A key taken from the environment: its bench (if any) is in memory.
            rows = self._rows[sel.pool] if sel.pool in self._rows else self._direct.rows(sel.pool)
            if rows is None:
                return True
            row = self._index.find(sel.pool, rows, sel.row_id, self._generation)
            if row is None:
                return False
            return self.eligibility.check(Ask(sel.pool, rows, self.clock(), sel.base_url, scope), row) is None

    def serves_other(self, pool: str, row_id: str, tried: set[str], scope: str | None) -> bool:
        """The reserve rule's question on the view (:meth:`Eligibility.another_serves`), for *scope*."""
        with self._lock:
            return self.eligibility.another_serves(Ask(pool, self._rows.get(pool) or [], self.clock(), None, scope,
                                                       {(pool, t) for t in tried}), row_id)

    # -- outcomes (blocking: run in a worker thread) --

    def outcome(self, attempt: Attempt, result: Result, verdict: Verdict | None = None) -> Decision:
        """Record a request that failed by the key's fault the agent's way; the Decision
        says what to do next (never a row *attempt* already failed on). *verdict*: the
        answer judged once (:func:`store.proxy.routing.verdict.judge_attempt`; judged here when
        not given). A 429 it scopes to the model asked for (and endpoint) benches that scope only."""
        sel = attempt.selection
        if verdict is None or verdict.read_at is None:
            verdict = judge_attempt(self, attempt, result)
        if sel.pool not in self._rows:
            return self._direct.outcome(attempt, result, verdict)
        if attempt.client is None or attempt.client.pool != sel.pool:
            rt = self.runtime
            attempt.client = RequestClient(self, self.home, sel.pool, clock=self.clock, config=rt.config,
                                           env=self.env, refresh_hook=rt.refresh_hook, rng=self.rng,
                                           lock_timeout=self.lock_timeout, notice=log.warning,
                                           headroom=self.headroom.room, settings=self.headroom.settings,
                                           use_headroom=self.headroom.enabled)
        client = attempt.client
        client.current = sel
        client.model = verdict.model
        client.avoid.update(rid for pool, rid in (attempt.tried or ()) if pool == sel.pool)
        decision = client.report(result, verdict)
        attempt.model_benched = client.benched_model is not None
        if decision.selection is not None and decision.selection.row_id == sel.row_id \
                and decision.selection.token != sel.token:
            self.load()    # a refreshed token: the view must not hand out the old one again
        if attempt.index == 0:
            self.runtime._check_vouched(sel, result)   # a probe that lied is distrusted
        return decision

    def bench_in_view(self, sel: Selection, result: Result, verdict: Verdict, failure_reason: str) -> None:
        """Bench *sel*'s row (and its twins) in the view at once, before the store write:
        the verdict's reset time, stamped when the answer was read (as the store's bench)."""
        now = verdict.read_at if verdict.read_at is not None else self.clock()
        with self._lock:
            rows = self._rows.get(sel.pool)
            row = find_row(rows, sel.row_id)
            if row is None:
                return
            changed = policy.mark_exhausted(rows, row, now, code=result.status, reason=result.reason,
                                            message=result.message, reset_at=verdict.reset_at,
                                            failure_reason=failure_reason)
            self._generation += 1
            self.overlay.status(sel.pool, changed, now)

    def bench_model_in_view(self, sel: Selection, model: str, verdict: Verdict) -> float:
        """Bench *sel*'s row (and its twins) for *model* (a scope) in the view at once; when it ends."""
        now = verdict.read_at if verdict.read_at is not None else self.clock()
        with self._lock:
            rows = self._rows.get(sel.pool) or []
            row = find_row(rows, sel.row_id)
            if row is None:
                return verdict.reset_at or now + self._ttls.rate_limit_429
            until_at = model_cooldowns.bench_until(rows, row, now, verdict.reset_at, self._ttls)
            changed = model_cooldowns.bench_model(rows, row, model, now, until_at)
            self.overlay.model(sel.pool, changed, model, now, until_at)
            self._generation += 1
        return until_at

    def success(self, attempt: Attempt) -> None:
        self.pins.served(attempt.selection.pool, attempt.selection.row_id, attempt.want, self.clock())  # its pin
        if attempt.index == 0:
            self.runtime._check_vouched(attempt.selection, SUCCEEDED)

    # -- write-behind counts (blocking) --

    def flush(self) -> int:
        """Write pending request counts in one transaction; returns how many were written."""
        return self.counts.flush(self.home, self.lock_timeout)

    def pending(self) -> int:
        return self.counts.total()

    # -- the restore gate (blocking) --

    def restore_due(self) -> bool:
        rt = self.runtime
        if rt.on_primary or self.steer.pin is not None:
            return False
        last = rt.last_restore_check
        return last is None or self.clock() - last >= rt.restore_interval

    def maybe_restore(self) -> bool:
        """The runtime's turn-scoped restore gate; on success the view is re-read."""
        restored = self.runtime.maybe_restore_primary()
        if restored:
            self.fallback_since = None
            self.load()
        return restored

    # -- what the chain holds, for the status file and a 503 --

    def states(self, want: Want | None = None) -> list[tuple[int, Route, list[Check]]]:
        """Per route: each row's effective status and its first refusing eligibility filter
        (read by :mod:`store.proxy.observing.report` for the status file, ``proxy status``, the panel
        and a 503); *want*: for that request (its model's benches refuse). A key from the
        environment counts as one row, benched in memory or never."""
        now = self.clock()
        out = []
        with self._lock:
            for i, route in enumerate(self.routes):
                rows = self._rows.get(route.pool or "") or []
                pool = route.pool or route.name
                if not rows and route.key_env and self.env.get(route.key_env):
                    rows = self._direct.rows(route_name(route.name)) or [{"id": route.key_env}]
                scope = None if want is None else scoped((route.model if i else None) or want.model, want.endpoint)
                out.append((i, route, self.eligibility.checks(Ask(pool, rows, now, route.base_url, scope))))
        return out
