"""Per-model benches written by the proxy (newer Hermes's ``model_cooldowns``, spec section 3).

A 429 the provider scopes to one model benches the (row, model) pair, not the key; which
429s those are is the verdict's (:func:`store.agent.judge.model_scoped`). Token counting is
limited apart: a 429 on ``/v1/messages/count_tokens`` benches ``count_tokens:<model>``,
never the model itself.

The bench goes on the row and on every row holding the same secret, with the provider's
reset time or a 429's TTL (:func:`store.pools.model_cooldowns.bench_until`); the row's status
fields are untouched, so every other model keeps using the key. It is applied to the
proxy's view at once (:class:`store.proxy.routing.overlay.Overlay` keeps it there until the store
shows it) and written through one transaction (:func:`record`), which also chooses the next
row for the same model.
"""

from __future__ import annotations

from collections.abc import Callable

from store.agent.outcomes import Selection
from store.model import Row, ensure_pool, pools, row_by_id
from store.paths import Home
from store.pools import model_cooldowns
from store.transaction import skip_write, transaction


def record(home: Home, sel: Selection, model: str, until_at: float, now: float, *, lock_timeout: float,
           choose: Callable[[list[Row], float], Row | None], selection: Callable[[Row], Selection]
           ) -> Selection | None:
    """Write the bench of *sel*'s row for *model* (and its twins) and choose the next row
    for the same request (*choose*, on the fresh rows), in one transaction."""
    chosen: Selection | None = None
    with transaction(home, lock_timeout=lock_timeout) as doc:
        if sel.pool not in pools(doc):
            skip_write()
        rows = ensure_pool(doc, sel.pool)
        dict_rows = [r for r in rows if isinstance(r, dict)]
        row = row_by_id(dict_rows, sel.row_id)
        if row is not None:
            model_cooldowns.bench_model(dict_rows, row, model, now, until_at)
        nxt = choose(dict_rows, now)
        rows[:] = dict_rows + [r for r in rows if not isinstance(r, dict)]
        chosen = selection(nxt) if nxt is not None else None
    return chosen


def describe_bench(sel: Selection, model: str, until_at: float, now: float) -> str:
    left = max(0, round(until_at - now))
    return f"{sel.pool}/{sel.row_id} benched for model {model} for {left} s; other models keep the key"



