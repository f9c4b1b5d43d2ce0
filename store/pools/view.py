"""Read-only views of a store: what `list`, `list --json` and the dashboard show.

Built from one snapshot and the clock; computing a view never writes anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from store.model import (
    STATUS_FIELDS,
    STRATEGIES,
    Doc,
    Row,
    as_int,
    is_owned,
    pools,
    priority_of,
    row_secrets,
    sorted_rows,
)
from store.pools import generations, policy, rule_words
from store.redaction.fingerprints import fingerprint, redact

# How every surface (CLI, console, probe report) shows a missing value.
NULL = "—"

JSON_SCHEMA_VERSION = 1


def row_fingerprint(pool: str, row: Row, env: Mapping[str, str] | None = None) -> str | None:
    """The display fingerprint: of the stored secret, else of the backing env value,
    else the stored `secret_fingerprint` (a hash, safe to show shortened)."""
    token = row.get("access_token")
    if isinstance(token, str) and token:
        return fingerprint(token)
    source = str(row.get("source") or "")
    if env and source.startswith("env:"):
        value = env.get(source[4:])
        if value:
            return fingerprint(value)
    fp = row.get("secret_fingerprint")
    if isinstance(fp, str) and fp:
        return fp[:15] + "…" if len(fp) > 15 else fp
    return None


@dataclass(frozen=True, slots=True)
class CredentialView:
    pool: str
    index: int                      # 1-based position in priority order
    row: Row = field(repr=False)       # holds the secret: never in a repr or a log
    effective: policy.Effective
    fingerprint: str | None
    next: bool
    backed: bool | None             # env:VAR rows: is VAR set in .env/environment?
    env: Mapping[str, str] | None = field(default=None, repr=False)
    # The pool's rows and the TTLs it was judged with, for :attr:`rule` (asked on demand).
    pool_rows: list[Row] | None = field(default=None, repr=False, compare=False)
    ttls: policy.Ttls = field(default=policy.DEFAULT_TTLS, repr=False, compare=False)

    @property
    def id(self) -> str:
        return str(self.row.get("id") or "")

    @property
    def label(self) -> str:
        return str(self.row.get("label") or "")

    @property
    def rule(self) -> str | None:
        """Which rule gave the countdown, naming the Hermes generation (None: not benched).
        Computed when asked (the detail view), not for every row of every build."""
        row, ttls = self.row, self.ttls
        if self.effective.status == policy.OK and row.get("last_status") is None:
            return None
        if ttls.told.admin and generations.renewed(row, self.env):
            return RENEWED
        return rule_words.explain(row, self.pool_rows or [row], ttls)

    @property
    def error_message(self) -> str | None:
        """last_error_message with any secret the provider echoed back fingerprinted."""
        msg = self.row.get("last_error_message")
        return redact(msg, row_secrets(self.row, self.env)) if isinstance(msg, str) else msg

    @property
    def key(self) -> tuple[str, str]:
        """Stable row key for reconciling tables: (pool, id)."""
        return (self.pool, self.id)

    def to_json(self) -> dict[str, Any]:
        r = self.row
        eff = self.effective
        out: dict[str, Any] = {
            "id": self.id,
            "label": self.label,
            "auth_type": r.get("auth_type"),
            "source": r.get("source"),
            "priority": r.get("priority"),
            "index": self.index,
            "status": eff.status,
            "available_at": eff.available_at if eff.available_at not in (None, float("inf")) else None,
            "seconds_left": round(eff.seconds_left, 3) if eff.seconds_left is not None else None,
        }
        for f in STATUS_FIELDS:
            out[f] = r.get(f)
        out["last_error_message"] = self.error_message
        out["failure_reason"] = r.get("failure_reason")
        out["request_count"] = as_int(r.get("request_count"))
        out["fingerprint"] = self.fingerprint
        out["next"] = self.next
        out["model_cooldowns"] = dict(eff.model_benches)
        out["data_error"] = eff.data_error
        out["status_cleared_at"] = r.get("status_cleared_at")
        out["base_url"] = r.get("base_url")
        out["has_secret"] = bool(r.get("access_token")) or bool(self.backed)
        return out


@dataclass(frozen=True)
class PoolView:
    key: str
    strategy: str                    # as configured (may be unknown)
    credentials: list[CredentialView]
    # The row list it was built from, in file order: the next build compares with it.
    source: list[Any] | None = field(default=None, compare=False, repr=False)

    @property
    def strategy_known(self) -> bool:
        return str(self.strategy).strip().lower() in STRATEGIES

    @property
    def strategy_effective(self) -> str:
        """What Hermes actually runs for the configured name."""
        return policy.known_strategy(self.strategy)

    @property
    def counts(self) -> dict[str, int]:
        c = {policy.OK: 0, policy.COOLING: 0, policy.READY: 0, policy.DEAD: 0}
        for cv in self.credentials:
            c[cv.effective.status] += 1
        return c

    @property
    def next_available_at(self) -> float | None:
        """When the pool gets a usable row again, if none is usable now."""
        if any(cv.effective.usable for cv in self.credentials):
            return None
        times = [cv.effective.available_at for cv in self.credentials if cv.effective.status == policy.COOLING]
        return min(times) if times else None


def build_pools(
    doc: Doc | None, *, strategies: Mapping[str, str] | None = None, now: float,
    ttls: policy.Ttls = policy.DEFAULT_TTLS, env: Mapping[str, str] | None = None,
    only: str | None = None,
) -> list[PoolView]:
    """One PoolView per pool (sorted by key), rows in priority order."""
    if doc is None:
        return []
    strategies = strategies or {}
    return [build_pool(key, pools(doc)[key], strategy=strategies.get(key) or "fill_first",
                       now=now, ttls=ttls, env=env)
            for key in sorted(pools(doc)) if only is None or key == only]


def build_pool(
    key: str, raw_rows: list[Any], *, strategy: str, now: float,
    ttls: policy.Ttls = policy.DEFAULT_TTLS, env: Mapping[str, str] | None = None,
    previous: PoolView | None = None,
) -> PoolView:
    """The view of one pool. *previous* is this pool's view built from the same strategy,
    TTLs and environment, whose statuses are still current at *now*: each of its credential
    views is reused for a row that is the same object at the same place with the same
    "next" mark (a write to one row of 500 then builds one view, not 500)."""
    if previous is not None:
        patched = _patch(key, raw_rows, previous, strategy, now, ttls, env)
        if patched is not None:
            return patched
    rows = sorted_rows(r for r in raw_rows if isinstance(r, dict))
    reuse: dict[int, CredentialView] = {}
    if previous is not None and _live(previous.credentials) == sum(not policy.is_dead(r) for r in rows):
        # A row's TTL depends on the pool only through "is it the only live row", which
        # cannot change for an unchanged row while the number of live rows stays the same.
        reuse = {id(cv.row): cv for cv in previous.credentials}
    # Each row's status once: the strategy's pick and the row's view share it.
    effs = {id(row): old.effective if (old := reuse.get(id(row))) is not None and old.row is row
            else judge(row, rows, now, ttls, env) for row in rows}
    nxt = policy.pick(rows, strategy, now, ttls, known=effs, ordered=True)
    creds = []
    for i, row in enumerate(rows, start=1):
        old = reuse.get(id(row))
        if old is not None and old.row is row and old.index == i and old.next == (row is nxt):
            creds.append(old)
            continue
        creds.append(_view(key, i, row, effs[id(row)], row is nxt, env, rows, ttls))
    return PoolView(key, strategy, creds, raw_rows)


PATCH_MAX = 64
"""More rows written in one pool than this: build its view whole."""


def _patch(key: str, raw_rows: list[Any], previous: PoolView, strategy: str, now: float,
           ttls: policy.Ttls, env: Mapping[str, str] | None) -> PoolView | None:
    """*previous* with the rows written in place swapped in, or None (build whole).

    In place: the same number of rows, and each written row keeps its priority and its
    dead-or-alive state, so the order is the same and so is every other row's TTL (which
    depends on the pool only through "is it the only live row"). Only the written rows
    are judged again; the strategy's pick is looked for over the known statuses.
    """
    src = previous.source
    if src is None or len(src) != len(raw_rows):
        return None
    moved = [(a, b) for a, b in zip(src, raw_rows, strict=True) if a is not b]
    if len(moved) > PATCH_MAX:
        return None
    for a, b in moved:
        if not (isinstance(a, dict) and isinstance(b, dict)) or priority_of(a) != priority_of(b) \
                or policy.is_dead(a) != policy.is_dead(b):
            return None
    old = previous.credentials
    rows = [cv.row for cv in old]
    effs = [cv.effective for cv in old]
    if moved:
        where = {id(cv.row): i for i, cv in enumerate(old)}
        at = []
        for a, b in moved:
            i = where.get(id(a))
            if i is None:
                return None
            rows[i] = b
            at.append(i)
        for i in at:
            effs[i] = judge(rows[i], rows, now, ttls, env)
    nxt = policy.pick(rows, strategy, now, ttls, known={id(r): e for r, e in zip(rows, effs, strict=True)},
                      ordered=True)
    creds = list(old)
    for i, (row, cv) in enumerate(zip(rows, old, strict=True)):
        if cv.row is not row or cv.next != (row is nxt):
            creds[i] = _view(key, i + 1, row, effs[i], row is nxt, env, rows, ttls)
    return PoolView(key, strategy, creds, raw_rows)


RENEWED = ("a new credential: its .env value no longer matches the stored secret_fingerprint, so the "
           "stored bench was the old key's (admin-era rule)")


def judge(row: Row, rows: list[Row], now: float, ttls: policy.Ttls,
          env: Mapping[str, str] | None) -> policy.Effective:
    """The row's effective status, a renewed secret-less row (admin era) judged afresh."""
    if ttls.told.admin and generations.renewed(row, env):
        return policy.effective(generations.fresh(row), rows, now, ttls)
    return policy.effective(row, rows, now, ttls)


def _view(key: str, index: int, row: Row, eff: policy.Effective, nxt: bool,
          env: Mapping[str, str] | None, rows: list[Row], ttls: policy.Ttls) -> CredentialView:
    source = str(row.get("source") or "")
    backed = None
    if source.startswith("env:") and not is_owned(key, row):
        backed = bool(env and env.get(source[4:]))
    return CredentialView(pool=key, index=index, row=row, effective=eff, fingerprint=row_fingerprint(key, row, env),
                          next=nxt, backed=backed, env=env, pool_rows=rows, ttls=ttls)


def _live(creds: list[CredentialView]) -> int:
    return sum(cv.effective.status != policy.DEAD for cv in creds)


def to_json(home: str, pool_views: list[PoolView], now: float) -> dict[str, Any]:
    """The stable `list --json` document (schema in the README)."""
    return {
        "schema": JSON_SCHEMA_VERSION,
        "home": home,
        "generated_at": now,
        "pools": {
            pv.key: {
                "strategy": pv.strategy,
                "strategy_known": pv.strategy_known,
                "strategy_effective": pv.strategy_effective,
                "counts": pv.counts,
                "credentials": [cv.to_json() for cv in pv.credentials],
            }
            for pv in pool_views
        },
    }
