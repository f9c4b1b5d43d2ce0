"""Operator actions on a fresh document inside a transaction (spec section 5).

Each function takes the document a transaction yielded, changes only the rows it
concerns and returns an :class:`Outcome` for the audit log. Bad input raises
BadInput before anything changes, so the transaction writes nothing.
"""

from __future__ import annotations

import difflib
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from store.config.providers import check_base_url, plaintext_note
from store.errors import EXIT_OK, BadInput, HermesAdminError
from store.model import (
    AUTH_API_KEY,
    SOURCE_MANUAL,
    STATUS_FIELDS,
    Doc,
    Row,
    ensure_pool,
    find_target,
    is_manual_source,
    new_id,
    pools,
    row_secrets,
    sorted_rows,
    validate_pool_key,
)
from store.pools import policy, times
from store.redaction.fingerprints import fingerprint, redact


@dataclass
class Change:
    """One row's before/after, with no secret in it."""

    pool: str
    id: str
    label: str
    before: dict[str, Any]
    after: dict[str, Any]


@dataclass
class Outcome:
    action: str
    pool: str
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def status_fields(row: Row | None) -> dict[str, Any]:
    """A row's status fields as a change record shows them: no secret, the message redacted."""
    if row is None:
        return {}
    out = {f: row.get(f) for f in STATUS_FIELDS}
    if isinstance(out.get("last_error_message"), str):
        out["last_error_message"] = redact(out["last_error_message"], row_secrets(row))
    for f in ("priority", "status_cleared_at", "failure_reason"):
        if f in row:
            out[f] = row.get(f)
    return out


def _change(pool: str, row: Row, before: dict[str, Any] | None, after_row: Row | None) -> Change:
    return Change(pool, str(row.get("id")), str(row.get("label") or ""), before or {}, status_fields(after_row))


def did_you_mean(name: str, known: Iterable[str], *, listed: int = 10) -> str:
    """`` (did you mean openrouter? pools: a, b, ...)`` for a name not among *known*."""
    names = sorted(str(k) for k in known)
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    shown = ", ".join(names[:listed]) + (f" and {len(names) - listed} more" if len(names) > listed else "")
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    return f" ({hint}pools: {shown or 'none'})"


def check_pool(pool: str) -> str:
    try:
        return validate_pool_key(pool)
    except ValueError as exc:
        raise BadInput("POOL", str(exc)) from None


def _existing_rows(doc: Doc, pool: str) -> list[Row]:
    check_pool(pool)
    if pool not in pools(doc):
        raise BadInput("POOL", f"no pool {pool!r} in the store{did_you_mean(pool, pools(doc))}")
    rows = ensure_pool(doc, pool)
    return rows


def resolve(doc: Doc, pool: str, target: str) -> Row:
    """TARGET in POOL: id, then unique label (case-insensitive), then 1-based index."""
    ordered = sorted_rows(r for r in _existing_rows(doc, pool) if isinstance(r, dict))
    try:
        return ordered[find_target(ordered, target)]
    except ValueError as exc:
        raise BadInput("TARGET", f"{pool}: {exc}") from None


def add_key(
    doc: Doc, pool: str, api_key: str, now: float, *, label: str | None = None,
    priority: int | None = None, base_url: str | None = None,
) -> Outcome:
    """Add a `manual` api_key row; clear the pool's suppressed sources."""
    check_pool(pool)
    api_key = (api_key or "").strip()
    if not api_key:
        raise BadInput("--api-key", "the key is empty")
    if any(c.isspace() for c in api_key):
        raise BadInput("--api-key", "the key contains whitespace; paste it on one line")
    if base_url is not None:
        base_url = check_base_url(base_url)
    rows = ensure_pool(doc, pool)
    dicts = [r for r in rows if isinstance(r, dict)]
    if priority is not None and not (0 <= priority <= len(dicts)):
        raise BadInput("--priority", f"must be between 0 and {len(dicts)} for pool {pool}")
    if any(r.get("access_token") == api_key for r in dicts):
        raise BadInput("--api-key", f"{fingerprint(api_key)} is already in pool {pool}")
    n = len(dicts) + 1
    taken_labels = {str(r.get("label") or "").lower() for r in dicts}
    while f"api-key-{n}" in taken_labels:
        n += 1
    label = (label or "").strip() or f"api-key-{n}"
    if label.lower() in taken_labels:
        raise BadInput("--label", f"label {label!r} is already used in pool {pool}")
    row: Row = {
        "id": new_id(str(r.get("id")) for r in dicts),
        "label": label,
        "auth_type": AUTH_API_KEY,
        "priority": max((int(r.get("priority") or 0) for r in dicts), default=-1) + 1,
        "source": SOURCE_MANUAL,
        "access_token": api_key,
        "last_status": None,
        "last_status_at": None,
        "last_error_code": None,
        "last_error_reason": None,
        "last_error_message": None,
        "last_error_reset_at": None,
        "request_count": 0,
    }
    if base_url:
        row["base_url"] = base_url
    rows.append(row)
    if priority is not None:
        policy.move(rows, row, priority)
    sup = doc.get("suppressed_sources")
    if isinstance(sup, dict) and pool in sup:
        del sup[pool]
        if not sup:
            del doc["suppressed_sources"]
    out = Outcome("add", pool)
    out.changes.append(_change(pool, row, None, row))
    if (note := plaintext_note(base_url)) is not None:
        out.notes.append(note)
    return out


def remove(doc: Doc, pool: str, target: str) -> Outcome:
    """Delete the row, renumber, and suppress a seeded source so seeding won't recreate it."""
    row = resolve(doc, pool, target)
    rows = ensure_pool(doc, pool)
    before = status_fields(row)
    rows.remove(row)
    policy.renumber(rows)
    out = Outcome("remove", pool)
    out.changes.append(_change(pool, row, before, None))
    source = str(row.get("source") or "")
    if source and not is_manual_source(source):
        sup = doc.setdefault("suppressed_sources", {})
        lst = sup.setdefault(pool, [])
        if source not in lst:
            lst.append(source)
        out.notes.append(f"source {source} suppressed so Hermes will not re-seed it")
    out.notes.append("a running agent that still holds this row may write it back until it reloads")
    return out


def needs_reset(row: Row) -> bool:
    """True when a reset would clear something on *row*: a status, an error, a failure
    reason or a per-model bench. A row that is plainly ok has nothing to clear (a reset of
    it changes nothing an agent reads, and is not an operator action worth auditing)."""
    return (any(row.get(f) is not None for f in ("last_status", "last_status_at", "last_error_code",
                                                 "last_error_reason", "last_error_message",
                                                 "last_error_reset_at", "failure_reason"))
            or bool(row.get("model_cooldowns")))


class NothingToChange(HermesAdminError):
    """Raised by an operator action inside its transaction when it would change nothing an
    agent reads: :func:`store.ops.write.perform` then writes nothing, keeps no history and
    appends no audit line, and says why (``Written.unchanged``). Not a failure (exit 0)."""

    exit_code = EXIT_OK


def reset_rows(doc: Doc, targets: Iterable[tuple[str, str | None]], now: float) -> list[Outcome]:
    """Reset each (pool, id-or-label) target, a pool's every row for ``None``, one Outcome per
    pool; :class:`NothingToChange` when no row they name needs it (:func:`needs_reset`).

    The one decision of the CLI's ``reset`` and the console's: a reset of rows that are all
    already ok writes nothing and audits nothing. A missing pool or row is refused first.
    """
    targets = list(targets)
    named = [row for pool, target in targets
             for row in ([resolve(doc, pool, target)] if target is not None else
                         [r for r in _existing_rows(doc, pool) if isinstance(r, dict)])]
    if not any(needs_reset(row) for row in named):
        if len(targets) == 1 and targets[0][1] is None:
            what = f"every credential in {targets[0][0]} is"
        elif len(named) == 1:
            what = f"{targets[0][0]} {named[0].get('label')!r} is"
        else:
            what = f"all {len(named)} credentials are"
        raise NothingToChange(f"{what} already ok")
    out: dict[str, Outcome] = {}
    for pool, target in targets:
        o = reset(doc, pool, target, now)
        agg = out.setdefault(pool, Outcome("reset", pool, notes=list(o.notes)))
        agg.changes.extend(o.changes)
    return list(out.values())


def reset(doc: Doc, pool: str, target: str | None, now: float) -> Outcome:
    """Clear status of one row (or the whole pool) and stamp status_cleared_at."""
    rows = [resolve(doc, pool, target)] if target else [r for r in _existing_rows(doc, pool) if isinstance(r, dict)]
    out = Outcome("reset", pool)
    for row in rows:
        before = status_fields(row)
        policy.reset(row, now)
        out.changes.append(_change(pool, row, before, row))
    out.notes.append("a reset is local: it does not give the provider's quota back")
    return out


class LongerBench(BadInput):
    """A manual cooldown would end before the bench the row already has."""

    def __init__(self, label: str, until: float, code: Any, reason: Any) -> None:
        why = " ".join(str(x) for x in (code, reason) if x not in (None, "")) or "a bench"
        super().__init__("--shorten", f"{label!r} is already benched until {_when(until)} ({why}), longer "
                         "than this cooldown; give --shorten to replace it with the shorter one")
        self.until = until


def _when(t: float) -> str:
    # The bench being replaced is a stored time: 1e+284 from an older proxy is said, not raised on.
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if times.on_calendar(t) else times.BAD_TIME


def current_bench(doc: Doc, pool: str, row: Row, now: float) -> float | None:
    """When the row's present bench ends (None: it is not benched, or not past *now*)."""
    end = policy.until(row, _existing_rows(doc, pool), now)
    return end if end is not None and end > now else None


def cooldown(doc: Doc, pool: str, target: str, until_at: float, now: float, reason: str | None = None,
             *, shorten: bool = False) -> Outcome:
    """Bench a row by hand until *until_at*. A cooldown that would end before the row's
    present bench (a provider's 3 h reset, say) is refused unless *shorten*: a manual
    cooldown never hides a longer one. The previous reason and code stay in the audit line."""
    if until_at <= now:
        raise BadInput("--until", "the cooldown end is not in the future")
    row = resolve(doc, pool, target)
    if policy.is_dead(row):
        raise BadInput("TARGET", f"{pool}: {row.get('label')!r} is dead; reset it or add a new key instead")
    longer = current_bench(doc, pool, row, now)
    if longer is not None and longer > until_at and not shorten:
        raise LongerBench(str(row.get("label") or row.get("id")), longer, row.get("last_error_code"),
                          row.get("last_error_reason"))
    before = status_fields(row)
    policy.manual_cooldown(row, until_at, now, reason)
    out = Outcome("cooldown", pool)
    out.changes.append(_change(pool, row, before, row))
    if longer is not None and longer > until_at:
        out.notes.append(f"shortened a bench that ran until {_when(longer)} "
                         f"({before.get('last_error_code') or '—'} {before.get('last_error_reason') or ''})".rstrip())
    return out


def set_priority(doc: Doc, pool: str, target: str, new_priority: int) -> Outcome:
    """Move a row to priority N (0 = tried first) and renumber the pool."""
    row = resolve(doc, pool, target)
    rows = ensure_pool(doc, pool)
    n = len([r for r in rows if isinstance(r, dict)])
    if not 0 <= new_priority < n:
        raise BadInput("N", f"priority must be between 0 and {n - 1} for pool {pool}")
    before = status_fields(row)
    policy.move(rows, row, new_priority)
    out = Outcome("priority", pool)
    out.changes.append(_change(pool, row, before, row))
    return out
