"""What a pool client's headroom readings decide (#21), owned by each
:class:`~store.agent.pool_client.PoolClient`: which rows their readings hold back, how
``least_used`` weighs what is left, whether a key said it has nothing left, and the bench a
2xx that said so writes to auth.json (the agent runtime and the proxy alike, one
transaction)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from store import outside
from store.agent.headroom import BENCH_MESSAGE, BENCH_REASON, Headroom, Hold, held_back
from store.agent.outcomes import Selection
from store.errors import HermesAdminError
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.model import STATUS_EXHAUSTED, Row, ensure_pool, parse_epoch, pools, row_by_id
from store.paths import Home
from store.pools import least_used, policy
from store.pools.view import row_fingerprint
from store.transaction import skip_write, transaction


def pool_list(doc: dict, pool: str) -> list[Row] | None:
    """*pool*'s list in *doc* with any junk entries moved last (None: no such pool)."""
    if pool not in pools(doc):
        return None
    rows = ensure_pool(doc, pool)
    if not all(isinstance(r, dict) for r in rows):
        # Leave junk entries alone but out of the way of priority arithmetic.
        junk = [r for r in rows if not isinstance(r, dict)]
        rows[:] = [r for r in rows if isinstance(r, dict)] + junk
    return rows


class PoolHeadroom:
    """One pool's readings, as its client's selection and benches use them."""

    def __init__(self, home: Home, pool: str, headroom: Headroom, env: Mapping[str, str],
                 settings: Callable[[], Any], *, enabled: bool = True,
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT, notice: outside.Notice | None = None) -> None:
        self.home, self.pool, self.headroom, self.env = home, pool, headroom, env
        self._settings = settings
        self.enabled = enabled
        self.lock_timeout = lock_timeout
        self.notice = notice

    def holds(self, rows: list[Row], now: float) -> dict[str, Hold]:
        """Row id -> what its readings hold it back for (rows with readings only)."""
        ids = set(self.headroom.row_ids(self.pool)) if self.enabled else set()
        if not ids:
            return {}
        threshold = self._settings().threshold_for(self.pool)
        out = {}
        for row in rows:
            rid = str(row.get("id"))
            if rid in ids and (h := self.headroom.hold(self.pool, rid, row_fingerprint(self.pool, row, self.env),
                                                       now, threshold)) is not None:
                out[rid] = h
        return out

    def held(self, rows: list[Row], now: float, candidates: Callable[[], list[str]]) -> set[str]:
        """The ids of *rows* a pick must leave out now (*candidates*: the ids it may use)."""
        holds = self.holds(rows, now)
        if not holds:
            return set()
        return held_back(holds, candidates())

    def weigh(self, now: float) -> least_used.Weigh | None:
        if not (self.enabled and self._settings().least_used_weighs_headroom):
            return None
        return lambda r: self.headroom.left(self.pool, str(r.get("id")), row_fingerprint(self.pool, r, self.env),
                                            now)

    def exhausted(self, sel: Selection, now: float) -> Hold | None:
        """The hold on *sel*'s row when its provider said nothing is left until a reset."""
        h = self.headroom.hold(sel.pool, sel.row_id, sel.fingerprint, now) if self.enabled else None
        return h if h is not None and h.exhausted else None

    def bench_exhausted(self, sel: Selection, now: float) -> str | None:
        """A 2xx that said nothing is left until T benches the row until T in the store, the
        way a 429 would (one transaction; nothing written when it is benched that long
        already). A store that cannot take it keeps the hold in memory: a notice, never an
        error for a request that succeeded."""
        held = self.exhausted(sel, now)
        if held is None:
            return None
        reset_at = held.until      # floored at its reading already: the hold's time, to the instant
        try:
            with transaction(self.home, lock_timeout=self.lock_timeout) as doc:
                rows = pool_list(doc, self.pool)
                if rows is None:
                    skip_write()
                dict_rows = [r for r in rows if isinstance(r, dict)]
                row = row_by_id(dict_rows, sel.row_id)
                if row is None or row_fingerprint(self.pool, row, self.env) != sel.fingerprint or (
                        row.get("last_status") == STATUS_EXHAUSTED
                        and (parse_epoch(row.get("last_error_reset_at")) or 0.0) >= reset_at - 1.0):
                    skip_write()
                policy.mark_exhausted(dict_rows, row, now, code=429, reason=BENCH_REASON,
                                      message=BENCH_MESSAGE.format(what=held.describe()), reset_at=reset_at,
                                      failure_reason="rate_limit")
        except HermesAdminError as exc:
            if self.notice is not None:
                self.notice(f"{sel.pool}/{sel.row_id}: the headroom bench was not written ({exc}); "
                            f"held in memory until its reset")
            return None
        return f"headroom: {held.describe()}; benched until the provider's reset"
