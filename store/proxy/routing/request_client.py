"""The agent's outcome rules for one proxied request (:class:`RequestClient`).

A :class:`~store.agent.pool_client.PoolClient` (composed, not subclassed) given two things
by its owner, the chain (seen through :class:`ViewHost`): the eligibility filter the
agent's rules lack (never a row behind an open circuit breaker,
:mod:`store.proxy.routing.eligibility`), and a hook before each key bench, which benches the row in
the proxy's in-memory view first (so no other request picks it while the store write is on
its way), or takes the bench over when the verdict scopes the 429 to one model (and
endpoint): then the (row, scope) pair is benched instead of the key
(:mod:`store.proxy.routing.model_benches`). Every bench takes the answer's one
:class:`~store.agent.outcomes.Verdict`: the same reset time and stamp in the view and in
auth.json. Blocking (the store's transactions): it runs in a worker thread.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from store.agent.outcomes import OUT, ROTATED, Decision, Result, Selection, Verdict
from store.agent.pool_client import PoolClient
from store.proxy.routing.eligibility import Eligibility
from store.proxy.routing.model_benches import describe_bench, record

log = logging.getLogger("hermes_admin.proxy")


class ViewHost(Protocol):
    """What a request client needs of the proxy's view (the chain)."""

    eligibility: Eligibility

    def bench_in_view(self, sel: Selection, result: Result, verdict: Verdict, failure_reason: str) -> None: ...

    def bench_model_in_view(self, sel: Selection, model: str, verdict: Verdict) -> float: ...

    def serves_other(self, pool: str, row_id: str, tried: set[str], scope: str | None) -> bool: ...


class RequestClient:
    """One proxied request's handle on a pool (see the module docstring). The chain sets
    ``model`` (the one asked for) before each report; ``benched_model`` says the last fault
    benched one model (scope), not the key."""

    def __init__(self, host: ViewHost, home: Any, pool: str, **kw: Any) -> None:
        self.host = host
        self.pool = pool
        self.pool_client = PoolClient(home, pool, on_bench=self._bench, **kw)
        # The eligibility filters the agent's rules lack: never a row behind an open breaker
        # or over its budget, nor a reserve row while another row may serve this request.
        pc = self.pool_client
        self.pool_client.also_eligible = host.eligibility.upstream_open(
            pool, pc.clock, lambda row: host.serves_other(pool, str(row.get("id")), pc.avoid, pc.model))
        self.benched_model: str | None = None

    # what the chain sets and reads, kept on the pool client
    @property
    def current(self) -> Selection | None:
        return self.pool_client.current

    @current.setter
    def current(self, sel: Selection | None) -> None:
        self.pool_client.current = sel

    @property
    def model(self) -> str | None:
        return self.pool_client.model

    @model.setter
    def model(self, model: str | None) -> None:
        self.pool_client.model = model

    @property
    def avoid(self) -> set[str]:
        return self.pool_client.avoid

    def report(self, result: Result, verdict: Verdict) -> Decision:
        """The agent's rules for *result*, judged once as *verdict* (its readings recorded
        by the proxy as the answer came in)."""
        self.benched_model = None
        return self.pool_client.report(result, verdict, recorded=True)

    def _bench(self, sel: Selection, result: Result, verdict: Verdict, failure_reason: str) -> Decision | None:
        if failure_reason == "rate_limit" and verdict.scope is not None:
            return self._bench_model(sel, verdict, verdict.scope)
        self.host.bench_in_view(sel, result, verdict, failure_reason)
        return None

    def _bench_model(self, sel: Selection, verdict: Verdict, scope: str) -> Decision:
        """Bench (row, scope) in the view and the store; the next row for the same scope."""
        pc = self.pool_client
        now = verdict.read_at if verdict.read_at is not None else pc.clock()
        until_at = self.host.bench_model_in_view(sel, scope, verdict)
        pc.avoid.add(sel.row_id)
        self.benched_model = scope
        chosen = record(pc.home, sel, scope, until_at, now, lock_timeout=pc.lock_timeout,
                        choose=lambda rows, t: pc.choose_for(rows, t, scope), selection=pc.selection_of)
        note = describe_bench(sel, scope, until_at, now)
        log.info("%s", note)
        pc.has_retried_429 = False
        pc.current = chosen
        if chosen is None:
            return Decision(OUT, None, note)
        pc.selections += 1
        return Decision(ROTATED, chosen, note)
