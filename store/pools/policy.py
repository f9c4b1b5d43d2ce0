"""Cooldown arithmetic and pool decisions, as pure functions with the clock passed in.

`until` follows spec section 4 exactly (TTL table, the only-row rule, billing,
billing_unverified, dead reasons, reset times in s/ms/ISO). The display, the
CLI and the agent runtime all ask these functions, so they cannot disagree.
"""

from __future__ import annotations

import math
import random as _random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

from store import outside
from store.model import (
    DEFAULT_STRATEGY,
    STATUS_DEAD,
    STATUS_EXHAUSTED,
    STATUS_OK,
    STRATEGIES,
    Row,
    as_int,
    parse_epoch,
    priority_of,
    sorted_rows,
)
from store.pools import generations, times
from store.pools.least_used import Weigh, least_used_key

# Effective statuses (what an operator sees), distinct from the stored last_status.
OK = "ok"
COOLING = "cooling"
READY = "ready"
DEAD = "dead"

DEAD_REASONS = frozenset({
    "token_invalidated", "token_revoked", "invalid_token", "invalid_grant",
    "unauthorized_client", "refresh_token_reused",
})
BILLING_REASONS = frozenset({"billing"})
# A bench lasts at least this long, whatever the provider says (``Retry-After: 0``, a reset
# time already past): a row benched "until now" would be picked again at once, and the
# same request would go back to the key that just refused it (RELIABILITY 33).
BENCH_FLOOR = 5.0


@dataclass(frozen=True)
class Ttls:
    """Cooldown lengths in seconds. Defaults are Hermes's code; config may override."""

    auth_401: float = 300.0
    rate_limit_429: float = 3600.0
    default: float = 3600.0
    only_row_cap: float = 60.0
    billing_unverified: float = 60.0
    entitlement: float = generations.ENTITLEMENT_TTL       # the admin-era entitlement bench
    told: generations.Told = generations.UNTOLD            # which Hermes's rules hold

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> Ttls:
        """Build from config (`hermes_admin.cooldown_ttls`); raise ValueError naming a bad key."""
        if not data:
            return cls()
        names = {"401": "auth_401", "429": "rate_limit_429", "default": "default",
                 "only_row": "only_row_cap", "billing_unverified": "billing_unverified",
                 "entitlement": "entitlement"}
        kwargs: dict[str, float] = {}
        for key, value in data.items():
            attr = names.get(str(key))
            if attr is None:
                raise ValueError(f"unknown TTL {key!r} (known: {', '.join(names)})")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"TTL {key!r} must be a number of seconds >= 0, got {value!r}")
            kwargs[attr] = float(value)
        return cls(**kwargs)


DEFAULT_TTLS = Ttls()


@dataclass(frozen=True, slots=True)
class Effective:
    """What a row's state means right now."""

    status: str                      # ok | cooling | ready | dead
    available_at: float | None       # epoch seconds the row is usable again (None: now/never)
    seconds_left: float | None       # > 0 only while cooling
    model_benches: dict[str, float] = field(default_factory=dict)  # model -> until, still future
    data_error: str | None = None    # stored times Hermes cannot use or no calendar shows (times.data_problem)

    @property
    def usable(self) -> bool:
        return self.status in (OK, READY)

    def usable_for(self, model: str | None = None) -> bool:
        """Usable by a caller asking for *model*. Newer Hermes treats any active per-model
        cooldown as blocking a caller that names no model."""
        if not self.usable:
            return False
        return not self.model_benches if model is None else model not in self.model_benches


_PLAIN_OK = Effective(OK, None, None, {}, None)


def is_dead(row: Row) -> bool:
    return row.get("last_status") == STATUS_DEAD


def is_billing(row: Row) -> bool:
    return as_int(row.get("last_error_code"), -1) == 402 or row.get("failure_reason") in BILLING_REASONS


def terminal_auth_failure(code: int | None, reason: str | None) -> bool:
    """A 401 whose reason means the token will never work again: the row is dead."""
    return code == 401 and (reason or "").strip().lower() in DEAD_REASONS


def ttl_for(row: Row, only_row: bool, ttls: Ttls = DEFAULT_TTLS) -> float:
    """Cooldown length for *row* when no provider reset time is known (spec section 4)."""
    code = as_int(row.get("last_error_code"), -1) if row.get("last_error_code") is not None else None
    if ttls.told.admin and row.get("failure_reason") == generations.ENTITLEMENT:
        return ttls.entitlement
    if code == 401:
        return ttls.auth_401
    base = ttls.rate_limit_429 if code == 429 else ttls.default
    if row.get("failure_reason") == "billing_unverified" and code != 402:
        return min(base, ttls.billing_unverified)
    if only_row and not is_billing(row) and ttls.told.only_row_rule:
        return min(base, ttls.only_row_cap)
    return base


def is_only_live_row(row: Row, pool_rows: Iterable[Row]) -> bool:
    """True when *row* is the pool's only non-dead row. Stops at the first other live row
    (views ask this for every benched row: a full scan made 10,000 rows quadratic)."""
    if is_dead(row):
        return False
    seen = False
    for r in pool_rows:
        if r is row:
            seen = True
        elif not is_dead(r):
            return False
    return seen


def until(row: Row, pool_rows: Iterable[Row], now: float, ttls: Ttls = DEFAULT_TTLS) -> float | None:
    """Epoch second an exhausted row becomes usable; None if usable with no timestamp (or
    not exhausted); +inf for a dead row. The admin-era rules hold when ``ttls.told`` says so."""
    status = row.get("last_status")
    if status == STATUS_DEAD:
        return math.inf
    if status != STATUS_EXHAUSTED:
        return None
    reset = parse_epoch(row.get("last_error_reset_at"))
    at = parse_epoch(row.get("last_status_at"))
    if ttls.told.admin and at is not None and is_billing(row) and (parse_epoch(row.get("status_cleared_at")) or 0) > at:
        return None        # clear_billing_benches stamped status_cleared_at after this bench
    if reset is not None:
        if ttls.told.admin and at is not None and not is_billing(row) and is_only_live_row(row, pool_rows):
            return min(reset, at + ttl_for(row, True, ttls))      # #119163
        return reset
    if at is None:
        return None
    return at + ttl_for(row, is_only_live_row(row, pool_rows), ttls)


def model_benches(row: Row, now: float) -> dict[str, float]:
    """Per-model cooldowns (newer Hermes) still in the future. Like newer Hermes, a bench
    observed at or before the row's ``status_cleared_at`` (an operator reset) is ignored."""
    mc = row.get("model_cooldowns")
    if not isinstance(mc, dict):
        return {}
    observed = row.get("model_cooldown_observed_at")
    observed = observed if isinstance(observed, dict) else {}
    cleared = parse_epoch(row.get("status_cleared_at"))
    out: dict[str, float] = {}
    for model, value in mc.items():
        t = parse_epoch(value)
        if t is None or t <= now:
            continue
        seen = parse_epoch(observed.get(model))
        if cleared is not None and seen is not None and seen <= cleared:
            continue
        out[str(model)] = t
    return out


def effective(row: Row, pool_rows: Iterable[Row], now: float, ttls: Ttls = DEFAULT_TTLS) -> Effective:
    """The effective status of *row* at *now*."""
    benches = model_benches(row, now)
    if is_dead(row):
        return Effective(DEAD, None, None, benches, times.data_problem(row))
    if row.get("last_status") != STATUS_EXHAUSTED:
        problem = times.data_problem(row)
        # Most rows of a large pool: one shared value (an Effective is never changed).
        return _PLAIN_OK if not benches and problem is None else Effective(OK, None, None, benches, problem)
    t = until(row, pool_rows, now, ttls)
    problem = times.data_problem(row, t)
    if t is not None and t > now:
        return Effective(COOLING, t, t - now, benches, problem)
    return Effective(READY, t, None, benches, problem)


def has_available(rows: Iterable[Row], now: float, ttls: Ttls = DEFAULT_TTLS) -> bool:
    """Hermes's ``has_available(any_model=True)``: the admin era ignores per-model benches;
    before it (and when the generation is not told) a row with one does not count."""
    rows = list(rows)
    effs = (effective(r, rows, now, ttls) for r in rows)
    return any(e.usable if ttls.told.admin else e.usable_for(None) for e in effs)


def known_strategy(name: Any) -> str:
    """The strategy Hermes runs for a configured name: it lower-cases and strips the
    name, and treats anything unknown (e.g. the documented-only `quota_aware`) as fill_first."""
    norm = str(name or "").strip().lower()
    return norm if norm in STRATEGIES else DEFAULT_STRATEGY


def available(rows: Iterable[Row], now: float, ttls: Ttls = DEFAULT_TTLS,
              model: str | None = None, known: Mapping[int, Effective] | None = None) -> list[Row]:
    """Usable rows in the order Hermes tries them, for a caller asking for *model*
    (None: any active per-model cooldown makes a row unavailable, as in newer Hermes).

    *known* maps ``id(row)`` to that row's effective status at *now*, already computed
    (a view reusing its rows); other rows are computed here.
    """
    return list(_usable(rows, now, ttls, model, known))


def _usable(rows: Iterable[Row], now: float, ttls: Ttls, model: str | None,
            known: Mapping[int, Effective] | None, ordered: bool = False) -> Iterator[Row]:
    """:func:`available`, lazily (*ordered*: *rows* are already in Hermes order)."""
    rows = list(rows) if ordered else sorted_rows(rows)
    known = known or {}
    return (r for r in rows if (known.get(id(r)) or effective(r, rows, now, ttls)).usable_for(model))


def pick(
    rows: Iterable[Row],
    strategy: str | None,
    now: float,
    ttls: Ttls = DEFAULT_TTLS,
    rng: _random.Random | None = None,
    leases: Mapping[str, int] | None = None,
    lease_cap: int | None = None,
    model: str | None = None,
    known: Mapping[int, Effective] | None = None,
    ordered: bool = False,
    weigh: Weigh | None = None,
) -> Row | None:
    """The row the strategy chooses next, without changing anything.

    `random` needs *rng*; without one it returns None (no honest "next" exists).
    With *leases*/*lease_cap*, rows at the cap are only used when all are.
    *ordered*: *rows* are already in Hermes order (a view's rows), so no sort.
    *weigh*: ``least_used`` weighs the headroom it reports (:func:`least_used_key`).
    """
    strategy = known_strategy(strategy)
    if leases is None and strategy in ("fill_first", "round_robin"):
        # The first usable row in order: no need to judge the rows after it.
        return next(_usable(rows, now, ttls, model, known, ordered), None)
    candidates = list(_usable(rows, now, ttls, model, known, ordered))
    if not candidates:
        return None
    if leases is not None and lease_cap is not None:
        below = [r for r in candidates if leases.get(str(r.get("id")), 0) < lease_cap]
        pool = below or candidates
        return min(pool, key=lambda r: (leases.get(str(r.get("id")), 0), priority_of(r)))
    if strategy == "random":
        return rng.choice(candidates) if rng is not None else None
    if strategy == "least_used":
        return min(candidates, key=least_used_key(weigh))
    return candidates[0]


def renumber(rows: list[Row]) -> None:
    """Sort *rows* in place by priority (stable) and make priorities 0..n-1."""
    rows.sort(key=priority_of)
    for i, row in enumerate(rows):
        row["priority"] = i


def clear_elapsed(rows: Iterable[Row], now: float, ttls: Ttls = DEFAULT_TTLS) -> list[Row]:
    """Turn exhausted rows whose cooldown has elapsed back to ok (as Hermes does on select)."""
    rows = list(rows)
    cleared = [r for r in rows if effective(r, rows, now, ttls).status == READY]
    for r in cleared:
        r["last_status"] = STATUS_OK
        for f in ("last_status_at", "last_error_code", "last_error_reason",
                  "last_error_message", "last_error_reset_at"):
            r[f] = None
    return cleared


def select(
    rows: list[Row], strategy: str | None, now: float, ttls: Ttls = DEFAULT_TTLS,
    rng: _random.Random | None = None, eligible: Callable[[Row], bool] | None = None,
    model: str | None = None, weigh: Weigh | None = None,
) -> Row | None:
    """Choose a row the way an agent does, mutating *rows*: clear elapsed cooldowns,
    pick by strategy among usable rows (and *eligible* ones, e.g. those whose borrowed
    secret is set), count the request, and for round_robin move the pick to the end.
    *weigh*: see :func:`pick`."""
    clear_elapsed(rows, now, ttls)
    candidates = [r for r in available(rows, now, ttls, model) if eligible is None or eligible(r)]
    strategy = known_strategy(strategy)
    chosen = pick(candidates, strategy, now, ttls, rng=rng or _random.Random(), model=model, weigh=weigh)
    if chosen is None:
        return None
    chosen["request_count"] = as_int(chosen.get("request_count")) + 1
    # Like Hermes: rotating a pool with one usable row would only churn priorities.
    if strategy == "round_robin" and len(candidates) > 1:
        renumber(rows)
        rows.remove(chosen)
        rows.append(chosen)
        for i, row in enumerate(rows):
            row["priority"] = i
    return chosen


def secret_key(row: Row) -> str | None:
    """What identifies a row's secret, to bench every row that holds the same one."""
    token = row.get("access_token")
    if isinstance(token, str) and token:
        return "token:" + token
    fp = row.get("secret_fingerprint")
    if isinstance(fp, str) and fp:
        return "fp:" + fp
    return None


def mark_exhausted(
    rows: list[Row], row: Row, now: float, *, code: int | None, reason: str | None = None,
    message: str | None = None, reset_at: Any = None, failure_reason: str | None = None,
) -> list[Row]:
    """Bench *row* (and every row holding the same secret); return the rows changed.

    A terminal 401 reason makes them dead. A provider reset time is kept and wins
    over every TTL once :mod:`store.outside` has bounded it (an agent's bench passes it
    through :func:`bench_reset` first).
    """
    status = STATUS_DEAD if terminal_auth_failure(code, reason) else STATUS_EXHAUSTED
    key = secret_key(row)
    targets = [r for r in rows if r is row or (key is not None and secret_key(r) == key)]
    # Bounded (a year ahead at most): never an absurd time in auth.json.
    parsed_reset = outside.epoch(reset_at, "reset time", now=now) if reset_at is not None else None
    for r in targets:
        r["last_status"] = status
        r["last_status_at"] = now
        r["last_error_code"] = code
        r["last_error_reason"] = reason
        r["last_error_message"] = message
        r["last_error_reset_at"] = parsed_reset
        if failure_reason:
            r["failure_reason"] = failure_reason
        else:
            r.pop("failure_reason", None)
    return targets


def bench_reset(reset_at: float | None, now: float) -> float | None:
    """When a bench for a provider's reset time *reset_at* ends: never before
    :data:`BENCH_FLOOR` from *now* (``Retry-After: 0``, a reset already past). None (no
    reset time: the TTL applies) stays None."""
    return None if reset_at is None else max(reset_at, now + BENCH_FLOOR)


def reset(row: Row, now: float) -> None:
    """Operator reset (spec section 5): clear status, stamp the tombstone, keep request_count."""
    for f in ("last_status", "last_status_at", "last_error_code", "last_error_reason",
              "last_error_message", "last_error_reset_at"):
        row[f] = None
    for f in ("failure_reason", "model_cooldowns", "model_cooldown_observed_at"):
        row.pop(f, None)
    row["status_cleared_at"] = now


def manual_cooldown(row: Row, until_at: float, now: float, reason: str | None = None) -> None:
    """Bench *row* until *until_at* by hand; a running agent honours last_error_reset_at."""
    row["last_status"] = STATUS_EXHAUSTED
    row["last_status_at"] = now
    row["last_error_code"] = None
    row["last_error_reason"] = reason or "manual_cooldown"
    row["last_error_message"] = "cooldown set by operator (hermes-admin)"
    row["last_error_reset_at"] = until_at


def move(rows: list[Row], row: Row, new_priority: int) -> None:
    """Move *row* to position *new_priority* (0 = tried first) and renumber the pool."""
    renumber(rows)
    rows.remove(row)
    new_priority = max(0, min(new_priority, len(rows)))
    rows.insert(new_priority, row)
    for i, r in enumerate(rows):
        r["priority"] = i
