"""Benches of keys the proxy takes from the home's ``.env`` (a fallback entry with
``key_env`` and no pool row): the agent's outcome rules, the bench kept in memory.

Each such route gets a row-shaped record benched by :func:`store.pools.policy.mark_exhausted`
and read by :func:`store.pools.policy.effective`, as a pool row is, so the chain can skip it
until it reopens and count it in a 503's ``Retry-After``. Nothing is written: there is
no row to write to, and a restarted proxy tries the key once more.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from store.agent.outcomes import (
    FAILED,
    KEY,
    OK,
    OUT,
    RETRY,
    Decision,
    Result,
    Selection,
    Verdict,
    is_usage_limit,
)
from store.agent.triage import QUOTA
from store.config.agent_view import Route
from store.model import Row
from store.pools import policy
from store.proxy.routing.upstreams import Breakers, base_for, route_name


class DirectBenches:
    """Per route name, the in-memory record of a key taken from the environment."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, Row] = {}

    def rows(self, name: str) -> list[Row] | None:
        """The route's record as a one-row pool, or None while it never failed."""
        with self._lock:
            row = self._rows.get(name)
        return [row] if row is not None else None

    def usable(self, name: str, now: float, ttls: policy.Ttls) -> bool:
        rows = self.rows(name)
        return rows is None or policy.effective(rows[0], rows, now, ttls).usable

    def select(self, route: Route, env: Mapping[str, str], now: float, ttls: policy.Ttls,
               avoid: set[tuple[str, str]] | None, breakers: Breakers, model: str | None
               ) -> tuple[Selection | None, bool]:
        """The route's key when it is set and not benched, and whether it was held back
        (this request failed on it, or its upstream's breaker is open)."""
        token = env.get(route.key_env or "")
        # Named as it may be shown (a custom base URL without its userinfo): the name
        # reaches headers, the status file and the log.
        name = route_name(route.name)
        if not token or not route.key_env or not self.usable(name, now, ttls):
            return None, False
        if (avoid and (name, route.key_env) in avoid) or \
                (breakers and breakers.blocked(base_for(name, route.base_url), now)):
            return None, True
        return Selection(name, route.key_env, route.key_env, token, route.base_url, model), False

    def outcome(self, attempt: Any, result: Result, verdict: Verdict) -> Decision:
        """A request with the route's key failed: one same-key retry of a 429 (not for a
        usage limit), then a bench for the provider's reset time (floored) or the policy
        TTL and ``OUT`` (the chain moves on); what is not the key's fault is ``FAILED``.
        *verdict*: the answer judged once (its reset, stamped when it was read)."""
        sel = attempt.selection
        code = result.status
        now = verdict.read_at if verdict.read_at is not None else 0.0
        if verdict.fault is None:
            return Decision(OK, sel)
        if verdict.kind == "rate_limit" and not attempt.retried_429 and not is_usage_limit(result) \
                and verdict.triage != QUOTA:      # a spent quota: no same-key retry (store.agent.triage)
            attempt.retried_429 = True
            return Decision(RETRY, sel, f"{code}: retrying the same key once")
        if verdict.fault != KEY:
            return Decision(FAILED, sel, f"HTTP {code}: {verdict.kind}, not a credential problem")
        with self._lock:
            row = self._rows.setdefault(sel.pool, {
                "id": sel.row_id, "label": sel.label, "auth_type": "api_key",
                "source": f"env:{sel.row_id}", "priority": 0})
            policy.mark_exhausted([row], row, now, code=code, reason=result.reason,
                                  message=result.message, reset_at=verdict.reset_at,
                                  failure_reason=verdict.failure_reason)
        return Decision(OUT, None, f"{sel.pool}: {sel.row_id} benched (HTTP {code}), kept in memory")
