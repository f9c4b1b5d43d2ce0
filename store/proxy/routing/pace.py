"""Pacing (#30): a pinned conversation's short rate limit is waited out on the same key.

A 429 the one verdict triages as a *rate limit* (:mod:`store.agent.triage`) whose
provider said it passes within ``proxy.pace.max_wait`` costs the conversation its warm
prompt cache if the proxy rotates: the next key has never seen its prefix. So when the
attempt is pinned (conversation affinity), :func:`pace` waits the provider's own time and
the caller sends again on the same key, benching nothing and writing nothing. A request
waits at most ``max_wait`` in all, however many rate limits it meets. An attempt that is
not pinned, a spent quota, a wait the provider did not say or one past the bound: the
caller goes on as before (the agent's rules: a bench as long as the provider said, and
rotation).

The wait is an ``asyncio.sleep`` in the request's own handler: a client that leaves has
its handler cancelled (the server's ``handler_cancellation``), and the wait ends with it.
"""

from __future__ import annotations

import asyncio
import logging

from store.agent.outcomes import Verdict
from store.agent.triage import may_pace
from store.proxy.routing.attempt import Attempt

log = logging.getLogger("hermes_admin.proxy")

PACE_FLOOR = 0.25     # a ``retry-after: 0`` still waits this long (and counts it against max_wait)


def pace_for(attempt: Attempt, verdict: Verdict, max_wait: float) -> float | None:
    """The seconds to wait on *attempt*'s own key before sending again (None: do not pace):
    a pinned attempt, a rate limit whose provider's wait fits what is left of *max_wait*."""
    if not attempt.pinned or verdict.wait is None:
        return None
    wait = max(verdict.wait, PACE_FLOOR)
    if not may_pace(verdict.triage, wait, max_wait - attempt.paced):
        return None
    return wait


async def pace(attempt: Attempt, verdict: Verdict, max_wait: float, rid: str) -> float | None:
    """Wait out a pinned attempt's short rate limit (see the module docstring): the seconds
    it waited, after which the caller sends again on the same key (None: no pace)."""
    wait = pace_for(attempt, verdict, max_wait)
    if wait is None:
        return None
    sel = attempt.selection
    attempt.paced += wait
    log.info("request %s: %s/%s: a rate limit of %g s on a pinned conversation; waiting on the same key",
             rid, sel.pool, sel.row_id, wait)
    await asyncio.sleep(wait)
    attempt.fresh = False         # checked again before it is sent (benched meanwhile: another key)
    return wait
