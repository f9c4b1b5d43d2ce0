"""Benches the proxy applied to its view that the store does not show yet.

A bench is applied to the in-memory view at once (no other request may pick the row) and
written through a transaction right after. A store read that lands in between (the
watcher, a restore) would bring the row back unbenched: :class:`Overlay` puts each such
bench back into every newly read view until the store shows it, or an operator reset
(``status_cleared_at``) came after it. Two kinds:

- a key's bench: its status fields, retired once the row's ``last_status_at`` or
  ``status_cleared_at`` is as new as the bench;
- a model's bench (``model_cooldowns``): retired once the row's
  ``model_cooldown_observed_at`` shows every benched model at least as new, or a reset.

The chain's lock guards it (every method is called holding it).
"""

from __future__ import annotations

from typing import Any

from store.model import Row, parse_epoch, row_by_id
from store.pools import model_cooldowns

STATUS_FIELDS = ("last_status", "last_status_at", "last_error_code", "last_error_reason",
                 "last_error_message", "last_error_reset_at", "failure_reason")


def _num(value: Any) -> float:
    return parse_epoch(value) or 0.0


def find_row(rows: list[Row] | None, rid: str) -> Row | None:
    """The row of *rows* whose id is *rid*, or None."""
    return row_by_id(rows or (), rid)


class RowIndex:
    """Rows by id per pool, kept while the view's generation and the pool's list are the
    same (the rows in a generation never change, only their order and counts): the
    forwarder's per-request questions about its row cost a dict lookup, not a walk of the pool."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[int, list[Row] | None, dict[str, Row]]] = {}

    def find(self, pool: str, rows: list[Row] | None, rid: str, generation: int) -> Row | None:
        """The row of *rows* (*pool*'s, in the view at *generation*) whose id is *rid*: the
        first such, as :func:`find_row`; None: none."""
        got = self._kept.get(pool)
        if got is None or got[0] != generation or got[1] is not rows:
            index: dict[str, Row] = {}
            for r in rows or ():
                if isinstance(r, dict):
                    index.setdefault(str(r.get("id")), r)
            got = self._kept[pool] = (generation, rows, index)
        return got[2].get(rid)


class Overlay:
    """Key and model benches not yet seen in the store, per (pool, row id)."""

    def __init__(self) -> None:
        self._status: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
        self._models: dict[tuple[str, str], tuple[float, dict[str, float]]] = {}

    def status(self, pool: str, changed: list[Row], now: float) -> None:
        """*changed* (benched in the view at *now*) keep their status fields."""
        for r in changed:
            self._status[(pool, str(r.get("id")))] = (now, {f: r.get(f) for f in STATUS_FIELDS if f in r})

    def model(self, pool: str, changed: list[Row], model: str, now: float, until_at: float) -> None:
        """*changed* (benched in the view for *model* until *until_at*) keep that bench."""
        for r in changed:
            key = (pool, str(r.get("id")))
            stamp, models = self._models.get(key, (now, {}))
            models[model] = max(until_at, models.get(model, 0.0))
            self._models[key] = (min(stamp, now), models)

    def apply(self, fresh: dict[str, list[Row]]) -> None:
        """Put every bench the store does not show yet into *fresh* (a newly read view);
        forget those it shows."""
        for key, (stamp, fields) in list(self._status.items()):
            row = find_row(fresh.get(key[0]), key[1])
            if row is None or max(_num(row.get("last_status_at")), _num(row.get("status_cleared_at"))) >= stamp:
                del self._status[key]
            else:
                row.update(fields)
        for key, (stamp, models) in list(self._models.items()):
            row = find_row(fresh.get(key[0]), key[1])
            observed = row.get("model_cooldown_observed_at") if row is not None else None
            observed = observed if isinstance(observed, dict) else {}
            if row is None or _num(row.get("status_cleared_at")) >= stamp or \
                    all(_num(observed.get(m)) >= stamp for m in models):
                del self._models[key]
                continue
            for model, until_at in models.items():
                model_cooldowns.bench_model([row], row, model, stamp, until_at)
