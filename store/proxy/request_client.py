"""The agent's outcome rules for one proxied request (:class:`RequestClient`).

A :class:`~store.agent.pool_client.PoolClient` whose benches land in the proxy's in-memory
view first (so no other request picks the row while the store write is on its way), that
never picks a row behind an open circuit breaker, and that benches a (row, model) pair
instead of the key when the provider scopes its 429 to the model asked for
(:mod:`store.proxy.model_benches`). Its host is the chain, seen through :class:`ViewHost`.
Blocking (the store's transactions): it runs in a worker thread.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from store.agent.outcomes import OUT, ROTATED, Decision, Result, Selection, classify, reset_time
from store.agent.pool_client import PoolClient
from store.model import Row
from store.pools import policy
from store.proxy.model_benches import describe_bench, model_scoped, record
from store.proxy.upstreams import Breakers, base_for

log = logging.getLogger("hermes_admin.proxy")


class ViewHost(Protocol):
    """What a request client needs of the proxy's view (the chain)."""

    breakers: Breakers

    def bench_in_view(self, sel: Selection, result: Result, failure_reason: str, now: float) -> None: ...

    def bench_model_in_view(self, sel: Selection, model: str, reset_at: float | None, now: float) -> float: ...


class RequestClient(PoolClient):
    """One proxied request's handle on a pool (see the module docstring). The chain sets
    ``model`` (the one asked for) and ``anthropic`` (the pool's 429s are per model) before
    each report; ``benched_model`` says the last fault benched one model, not the key."""

    def __init__(self, host: ViewHost, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.host = host
        self.anthropic = False
        self.benched_model: str | None = None

    def eligible(self, row: Row) -> bool:
        """Also never a row whose upstream's breaker is open."""
        return super().eligible(row) and not self.host.breakers.blocked(
            base_for(self.pool, row.get("inference_base_url") or row.get("base_url")), self.clock())

    def _bench_and_rotate(self, sel: Selection, result: Result, failure_reason: str,
                          note: str | None = None) -> Decision:
        if failure_reason == "rate_limit" and model_scoped(result, classify(result, self.pool), self.model,
                                                           self.anthropic):
            return self._bench_model(sel, result, str(self.model))
        self.host.bench_in_view(sel, result, failure_reason, self.clock())
        return super()._bench_and_rotate(sel, result, failure_reason, note)

    def _bench_model(self, sel: Selection, result: Result, model: str) -> Decision:
        """Bench (row, model) in the view and the store; the next row for the same model."""
        now = self.clock()
        until_at = self.host.bench_model_in_view(sel, model, reset_time(result, now, self.notice), now)
        self.avoid.add(sel.row_id)
        self.benched_model = model

        def choose(rows: list[Row], t: float) -> Row | None:
            return policy.select(rows, self.strategy, t, self.ttls, rng=self.rng, eligible=self.eligible,
                                 model=model)

        chosen = record(self.home, sel, model, until_at, now, lock_timeout=self.lock_timeout, choose=choose,
                        selection=self._selection)
        note = describe_bench(sel, model, until_at, now)
        log.info("%s", note)
        self.has_retried_429 = False
        self.current = chosen
        if chosen is None:
            return Decision(OUT, None, note)
        self.selections += 1
        return Decision(ROTATED, chosen, note)
