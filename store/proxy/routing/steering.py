"""The operator's hand on the proxy's chain: a pinned route, a restore asked for, a reset seen.

Three things an operator does reach the chain (:class:`store.proxy.routing.chain.Chain`) here:

- **an operator's reset, or a lifted bench, of a primary row** (``hermes-admin reset``, an
  undo of a cooldown, a fleet peer's reset): :func:`lifted_rows` compares the primary's rows
  in the proxy's last view with the store it reads now. A row that is benched in the view
  (judged at this moment, so a cooldown that merely ran out does not count) and usable in the
  store, whose bench fields the store changed (``status_cleared_at`` newer than the view's,
  or the bench itself rewritten), was lifted by someone's write: the next request goes back
  to the primary, with no wait for the restore interval. What the store shows decides, never
  a message. A row the proxy's own restore gate cleared (its probe stamps
  ``status_cleared_at`` with the gate's check time) is the probe's, not an operator's: it
  keeps seed 003's throttle (one restore, one failed call, one notice for a lying probe);
- **``proxy restore``**: back to the primary at the next request (and unpinned);
- **``proxy pin ROUTE`` / ``proxy unpin``**: while pinned the chain serves from ROUTE, never
  goes back up (no restore gate, no reset-restore) and, when ROUTE has no usable key, the
  routes after it serve that request without the chain leaving ROUTE.

:class:`Steering` holds that state; the chain consults it on the event loop (a request's
first :meth:`Chain.select`) and :func:`lifted_rows` runs where the chain applies a new read
of the store. Pure: no IO, clock passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from store.agent.outcomes import Notice
from store.model import Row, parse_epoch
from store.pools import policy

# Fields whose change in the store is a bench changed by someone's write (not by the clock).
BENCH_FIELDS = ("last_status", "last_status_at", "last_error_reset_at", "last_error_code", "status_cleared_at")
OPERATOR_RESTORE, CONTROL_RESTORE = "operator_restore", "control_restore"   # notice kinds


def _stamp(row: Row) -> float:
    return parse_epoch(row.get("status_cleared_at")) or 0.0


def lifted_rows(before: Sequence[Row] | None, after: Sequence[Row] | None, now: float, ttls: policy.Ttls,
                own_stamp: float | None) -> list[str]:
    """Ids of the rows of one pool that *before* (the proxy's view) had benched at *now* and
    *after* (the store just read) shows usable, because the store's bench fields changed; a
    row cleared at *own_stamp* (the proxy's own restore gate, its probe) is left out."""
    if not before or not after:
        return []
    old = {str(r.get("id")): r for r in before if isinstance(r, dict)}
    out = []
    for row in after:
        if not isinstance(row, dict):
            continue
        rid = str(row.get("id"))
        prev = old.get(rid)
        if prev is None or all(prev.get(f) == row.get(f) for f in BENCH_FIELDS):
            continue
        if own_stamp is not None and _stamp(row) == own_stamp and _stamp(prev) != own_stamp:
            continue
        if policy.effective(prev, list(before), now, ttls).usable:
            continue      # usable already in the view (a cooldown that ran out): not the operator's doing
        if policy.effective(row, list(after), now, ttls).usable:
            out.append(rid)
    return out


class Steering:
    """The chain's operator state (event loop; :meth:`saw_lifted` runs where the store is read)."""

    def __init__(self) -> None:
        self.pin: str | None = None                 # a route's name as shown (route_name)
        self._pin_at: tuple[Any, int | None] = (None, None)
        self.wanted: str | None = None              # why the next request goes back to the primary

    def pin_index(self, routes: Sequence[Any], name_of: Callable[[str], str]) -> int | None:
        """The pinned route's index in *routes* (None: no pin, or it left the chain)."""
        if self.pin is None:
            return None
        seen, index = self._pin_at
        if seen is not routes:
            index = next((i for i, r in enumerate(routes) if name_of(r.name) == self.pin), None)
            self._pin_at = (routes, index)
        return index

    def saw_lifted(self, pool: str, ids: list[str]) -> None:
        """Rows of the primary *pool* were lifted in the store: the next request goes back."""
        if ids:
            self.wanted = f"operator reset of {pool} {', '.join(ids[:4])}{' …' if len(ids) > 4 else ''}"

    def saw_store(self, runtime: Any, before: Mapping[str, Sequence[Row]], after: Mapping[str, Sequence[Row]],
                  now: float, ttls: policy.Ttls) -> None:
        """A new read of the store (*after*; *before*: the view's rows): a primary row lifted by
        someone's write while on a fallback (and not pinned) brings the next request back."""
        primary = runtime.routes[0].pool
        if primary and not runtime.on_primary and self.pin is None:
            self.saw_lifted(primary, lifted_rows(before.get(primary), after.get(primary), now, ttls,
                                                 runtime.last_restore_check))

    def take(self) -> str | None:
        """Why the chain goes back to its primary now, once; None when it does not."""
        why, self.wanted = self.wanted, None
        return why

    def back_to_primary(self, runtime: Any, now: float) -> bool:
        """Put *runtime* (the chain's AgentRuntime) back on its primary for an operator's reset
        seen in the store, with a notice; False when none was seen, or it is there, or pinned."""
        why = self.take()
        if why is None or runtime.active == 0 or self.pin is not None:
            return False
        runtime.active = 0
        runtime.notices.append(Notice(now, OPERATOR_RESTORE, f"{why}: back on primary {runtime.primary}"))
        return True
