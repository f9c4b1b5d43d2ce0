"""One client request's walk along the proxy's chain (:class:`Attempt`): the route and row it
is on, what it asks for, and what it has tried, so the same request never goes back to a row
that refused it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from store.agent.outcomes import Selection
from store.config.agent_view import Route
from store.proxy.routing.protocols import Want
from store.proxy.routing.request_client import RequestClient

if TYPE_CHECKING:
    from store.dialects.dialect import Dialect


@dataclass
class Attempt:
    """One client request's walk along the chain: where it is and what it has tried."""

    index: int
    selection: Selection
    client: RequestClient | None = None
    fresh: bool = False       # chosen from the view just now (no await since): no need to re-check
    route: Route | None = None  # the route at index when chosen (config.yaml may change the chain)
    retried_429: bool = False   # a key from the environment had its one same-key retry
    tried: set[tuple[str, str]] | None = None  # (pool, row) this request failed on: never again
    route_retried: bool = False  # a route failure had its one try of another key
    model_benched: bool = False  # its last key fault benched one model, not the key
    want: Want | None = None     # what the request asks: its protocol and model
    readings: tuple = ()         # the last answer's rate-limit readings, read once (the verdict's)
    pinned: bool = False         # its row is its conversation's pin (routing.pins), not a rotation: a short
    #                              rate limit on it is paced (routing.pace)
    paced: float = 0.0           # seconds this request has waited on rate limits (routing.pace)
    dialect: Dialect | None = None   # the dialect of the last try sent (its answer is read by it)

    def failed_on(self) -> set[tuple[str, str]]:
        """Mark the current row as one this request must not go back to; the set so far."""
        if self.tried is None:
            self.tried = set()
        self.tried.add((self.selection.pool, self.selection.row_id))
        return self.tried
