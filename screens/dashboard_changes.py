"""What the dashboard's operator actions write and say, as pure functions: the store
changes handed to ``store.ops.write.perform`` (rows named by (pool, id) and found again in
the file as it is under the lock) and the words their confirmations list rows with."""

from __future__ import annotations

from typing import Iterable

from store.errors import BadInput
from store.model import pool_rows, row_by_id, sorted_rows
from store.ops import actions
from store.ops.actions import Outcome
from store.pools.view import CredentialView
from tui.text.format import NULL, remaining, status_word
from tui.widgets.cells import error_text

LIST_LIMIT = 8


# ---------------------------------------------------------------- store changes (pure)
def reset_rows(doc: dict, keys: Iterable[tuple[str, str]], now: float) -> list[Outcome]:
    """store.ops.actions.reset_rows for each (pool, id): one Outcome per pool, or nothing
    written and no audit line when every row is already ok (the CLI's decision too)."""
    return actions.reset_rows(doc, keys, now)


def cooldown_rows(doc: dict, keys: Iterable[tuple[str, str]], until: float, now: float,
                  reason: str | None, shorten: bool = False) -> list[Outcome]:
    """store.ops.actions.cooldown for each (pool, id), one Outcome per pool."""
    out: dict[str, Outcome] = {}
    for pool, rid in keys:
        o = actions.cooldown(doc, pool, rid, until, now, reason, shorten=shorten)
        agg = out.setdefault(pool, Outcome("cooldown", pool, notes=list(o.notes)))
        agg.changes.extend(o.changes)
    return list(out.values())


def move_row(doc: dict, pool: str, rid: str, delta: int) -> Outcome:
    """Move a row one place up (-1) or down (+1) in its pool's order, as it is in the file now."""
    rows = sorted_rows(r for r in pool_rows(doc, pool) if isinstance(r, dict))
    row = row_by_id(rows, rid)
    if row is None:
        raise BadInput("TARGET", f"{pool}: no credential with id {rid} any more")
    at = rows.index(row)
    to = at + delta
    if not 0 <= to < len(rows):
        where = "first" if delta < 0 else "last"
        raise BadInput("TARGET", f"{rows[at].get('label')!r} is already {where} in {pool}")
    return actions.set_priority(doc, pool, rid, to)


# ---------------------------------------------------------------- wording
def describe(cv: CredentialView) -> str:
    """``openrouter #2 backup-key (id d4e5f6) ◐ cooling 402 insufficient_credits``."""
    err = error_text(cv.row)
    tail = f" {err}" if err != NULL else ""
    left = cv.effective.seconds_left
    if left:                                       # the time left, so a shorter cooldown shows as such
        tail += f" ({remaining(left)})"
    return f"{cv.pool} #{cv.index} {cv.label or NULL} (id {cv.id}) {status_word(cv.effective.status)}{tail}"


def listing(cvs: list[CredentialView], limit: int = LIST_LIMIT) -> list[str]:
    lines = ["  " + describe(cv) for cv in cvs[:limit]]
    if len(cvs) > limit:
        lines.append(f"  …and {len(cvs) - limit} more")
    return lines


def count(n: int, what: str = "credential") -> str:
    """``2 credentials``, ``1 row``, ``2 longer benches``."""
    if n == 1:
        return f"{n} {what}"
    return f"{n} {what}{'es' if what.endswith(('ch', 'sh', 's', 'x')) else 's'}"
