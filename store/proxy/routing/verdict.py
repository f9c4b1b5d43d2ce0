"""The proxy's side of the one verdict per answer: :func:`judge_attempt` judges a try's
answer once (:func:`store.agent.judge.judge`, with what the chain knows of the try: the
model scope, the endpoint, whether the route's 429s are per model), and
:func:`bench_exhausted` writes the bench a 2xx's readings call for to auth.json through
the agent runtime's own transaction. *chain*: the proxy's
:class:`~store.proxy.routing.chain.Chain` (its clock, protocols, home, headroom gate, env)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from store.agent.judge import judge
from store.agent.outcomes import Result, Verdict
from store.agent.pool_headroom import PoolHeadroom
from store.dialects.readings import Reading
from store.proxy.routing.attempt import Attempt
from store.proxy.routing.protocols import ANTHROPIC

log = logging.getLogger("hermes_admin.proxy")


def judge_attempt(chain: Any, attempt: Attempt, result: Result, readings: Sequence[Reading] | None = None
                  ) -> Verdict:
    """The one verdict on *attempt*'s failed answer: its model scope is the route's model,
    else the request's; its endpoint the request's; *readings*: read off its headers already."""
    want = attempt.want
    return judge(result, chain.clock(), pool=attempt.selection.pool, readings=readings,
                 model=attempt.selection.model or (want.model if want is not None else None),
                 endpoint=want.endpoint if want is not None else None,
                 per_model_429=ANTHROPIC in chain.protocols(attempt.index), notice=log.warning)


def bench_exhausted(chain: Any, attempt: Attempt) -> str | None:
    """A 2xx whose readings said nothing is left until T: the row benched until T in
    auth.json, through the runtime's own transaction (blocking: off the loop)."""
    sel = attempt.selection
    gate = chain.headroom
    room = PoolHeadroom(chain.home, sel.pool, gate.room, chain.env, lambda: gate.settings, enabled=gate.enabled,
                        lock_timeout=chain.lock_timeout, notice=log.warning)
    return room.bench_exhausted(sel, chain.clock())
