"""What the chain looks like from outside: per route its rows by status for the status
file (and ``proxy status``), and when each pool can serve again for a 503.

Pure functions of a :class:`RoutesView` (the chain's routes, what each speaks, and each
row's state by the one eligibility check: :meth:`store.proxy.routing.chain.Chain.states`)
and the clock: the chain is one such view, and nothing here needs more of it. Route names
may hold a base URL (a custom fallback): they are shown without any user or password in it
(:func:`store.proxy.routing.upstreams.route_name`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from store.config.agent_view import Route
from store.model import pool_rows
from store.pools import policy
from store.proxy.routing.eligibility import BREAKER, HEADROOM, Check, describe_refusals
from store.proxy.routing.protocols import OPENAI, Want, served_paths
from store.proxy.routing.upstreams import route_name


class RoutesView(Protocol):
    """What the reports and the proxy's "no key" answer read of the chain."""

    clock: Callable[[], float]

    @property
    def routes(self) -> Sequence[Route]: ...

    def protocols(self, index: int) -> frozenset[str]: ...

    def speaks(self, index: int, protocol: str) -> bool: ...

    def states(self, want: Want | None = None) -> Sequence[tuple[int, Route, Sequence[Check]]]: ...


class ChainView(RoutesView, Protocol):
    """A :class:`RoutesView` that says which route serves now (``runtime.active``)."""

    runtime: Any


def describe(chain: ChainView) -> list[dict[str, Any]]:
    """The chain for the status file: per route its pool, model, the paths it serves and
    row counts, all from the eligibility filters (``usable``: no filter refuses it;
    ``down``: refused by an open breaker or by headroom; ``model_benched``: rows benched for
    one model or more, still serving others; ``refused``: rows per refusing filter; ``budget``:
    the pool's budget state, :meth:`store.proxy.routing.budget_rules.BudgetRules.describe`)."""
    active = chain.runtime.active
    now, budgets = chain.clock(), chain.eligibility.budgets
    return [{"name": route_name(route.name), "pool": route.pool, "model": route.model if i else None,
             "active": i == active, "paths": served_paths(chain.protocols(i)), "rows": len(states),
             "model_benched": sum(1 for e, _r in states if e.usable and e.model_benches),
             "usable": sum(1 for _e, refusal in states if refusal is None),
             "down": sum(1 for _e, r in states if r is not None and r.filter in (BREAKER, HEADROOM)),
             "refused": describe_refusals(states),
             "cooling": sum(1 for e, _d in states if e.status == policy.COOLING),
             "dead": sum(1 for e, _d in states if e.status == policy.DEAD),
             "budget": budgets.describe(route.pool, pool_rows(chain.last_doc, route.pool) if route.pool else [], now)}
            for i, route, states in chain.states()]


def affinity(chain: Any) -> dict[str, Any]:
    """Conversation affinity for the status file (#30): per pool whose conversations are pinned,
    how many live conversations each row holding one holds (a row not named holds none), and
    how often a pin yielded (``share``: it would take more than its share; ``refused``: the
    row could not serve)."""
    held = chain.pins.held(chain.clock())
    pools = {r.pool: held.get(r.pool, {}) for r in chain.routes if r.pool and chain.pins.applies(r.pool)}
    return {"conversations": pools, "pins": len(chain.pins), "moved": dict(chain.pins.moved)}


def reopen_times(chain: RoutesView, want: Want | None = None) -> dict[str, float | None]:
    """Per pool of the chain (of the routes that speak *want*'s protocol): when its soonest
    cooling row reopens, its failing upstream is tried again, or a bench for the model asked
    for ends (None: never by itself)."""
    protocol = want.protocol if want is not None else OPENAI
    out: dict[str, float | None] = {}
    for i, route, states in chain.states(want):
        key = route_name(route.pool or route.name)
        if key in out or not chain.speaks(i, protocol):
            continue
        times = [refusal.until for _e, refusal in states if refusal is not None and refusal.until is not None]
        out[key] = min(times) if times else None
    return out


def retry_after(reopen: Mapping[str, float | None], now: float) -> int | None:
    """Whole seconds until the soonest of *reopen* (at least 1), None when nothing reopens."""
    soonest = [t for t in reopen.values() if t is not None and math.isfinite(t)]
    if not soonest:
        return None
    return max(1, math.ceil(min(soonest) - now))
