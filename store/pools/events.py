"""The events timeline: what changed between two successive snapshots of a store.

:func:`diff` compares the *stored* fields of two views (not their effective
status), so a transition is reported once, when the file says so, whoever wrote
it: an agent benching a key, another tool, or this console.

Priority moves are not events: a round_robin pool renumbers on every request,
and the timeline would drown in them. A cooldown that simply runs out changes
nothing in the file. Those "ready"
transitions happen by the clock, so they are not in a diff; the dashboard's
one-second tick reports them with :func:`elapsed` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from store.pools.view import CredentialView, PoolView

# Kinds, in the words the timeline shows.
ADDED = "added"
REMOVED = "removed"
EXHAUSTED = "exhausted"      # benched (again) by an error
DEAD = "dead"
RECOVERED = "recovered"      # status cleared without an operator tombstone (agent saw it elapse)
CLEARED = "cleared"          # status_cleared_at changed: an operator reset
READY = "ready"              # cooldown elapsed by the clock (from the tick, not the file)
NOTICE = "notice"            # about the store itself (unreadable, back to readable)

# Fields whose change means the row's status story moved on.
_STATUS_KEYS = ("last_status", "last_status_at", "last_error_code", "last_error_reason",
                "last_error_reset_at")


@dataclass(frozen=True)
class Event:
    """One line of the timeline. ``old_status``/``new_status`` are stored statuses."""

    time: float
    pool: str
    id: str
    label: str
    index: int | None
    kind: str
    old_status: str | None = None
    new_status: str | None = None
    code: int | None = None
    reason: str | None = None
    message: str | None = None

    @property
    def text(self) -> str:
        """One-line summary like ``openrouter #2 backup exhausted 429 rate_limit``."""
        who = self.pool
        if self.index is not None:
            who += f" #{self.index}"
        if self.label:
            who += f" {self.label}"
        if self.kind == NOTICE:
            return f"{self.pool}: {self.message or ''}".strip()
        parts = [who]
        if self.kind == CLEARED:
            parts.append("cooldown cleared by operator")
        elif self.kind == RECOVERED:
            parts.append(f"recovered ({self.old_status or 'ok'} -> {self.new_status or 'ok'})")
        elif self.kind == READY:
            parts.append("cooldown elapsed, ready")
        else:
            parts.append(self.kind)
        if self.kind in (EXHAUSTED, DEAD):
            if self.code is not None:
                parts.append(str(self.code))
            if self.reason:
                parts.append(self.reason)
        return " ".join(parts)


def _status_key(cv: CredentialView) -> tuple[object, ...]:
    return tuple(cv.row.get(k) for k in _STATUS_KEYS)


def _event(cv: CredentialView, kind: str, at: float, old: str | None, new: str | None) -> Event:
    row = cv.row
    code = row.get("last_error_code")
    return Event(
        time=at, pool=cv.pool, id=cv.id, label=cv.label, index=cv.index, kind=kind,
        old_status=old, new_status=new,
        code=code if isinstance(code, int) and not isinstance(code, bool) else None,
        reason=row.get("last_error_reason") or row.get("failure_reason"),
        message=row.get("last_error_message"),
    )


def _index(views: Iterable[PoolView]) -> dict[tuple[str, str], CredentialView]:
    out: dict[tuple[str, str], CredentialView] = {}
    for pv in views:
        for cv in pv.credentials:
            out.setdefault(cv.key, cv)
    return out


def diff(old: Iterable[PoolView] | None, new: Iterable[PoolView], at: float) -> list[Event]:
    """Events that turn *old* into *new*, stamped *at*. No *old* (first load): none."""
    if old is None:
        return []
    before = _index(old)
    after = _index(new)
    out: list[Event] = []
    for key, cv in after.items():
        prev = before.get(key)
        if prev is None:
            out.append(_event(cv, ADDED, at, None, cv.row.get("last_status")))
            continue
        was, now_ = prev.row.get("last_status"), cv.row.get("last_status")
        if prev.row.get("status_cleared_at") != cv.row.get("status_cleared_at") and \
                cv.row.get("status_cleared_at") is not None:
            out.append(_event(cv, CLEARED, at, was, now_))
        elif _status_key(prev) != _status_key(cv):
            if now_ == "dead":
                out.append(_event(cv, DEAD, at, was, now_))
            elif now_ == "exhausted":
                out.append(_event(cv, EXHAUSTED, at, was, now_))
            elif was in ("exhausted", "dead"):
                out.append(_event(cv, RECOVERED, at, was, now_))
    for key, cv in before.items():
        if key not in after:
            out.append(_event(cv, REMOVED, at, cv.row.get("last_status"), None))
    return out


def elapsed(
    available_at: Mapping[tuple[str, str], float], labels: Mapping[tuple[str, str], str],
    since: float, now: float,
) -> list[Event]:
    """Clock-driven "ready" events: cooldowns that ran out in ``(since, now]``."""
    out = []
    for key, t in available_at.items():
        if since < t <= now:
            out.append(Event(time=t, pool=key[0], id=key[1], label=labels.get(key, ""),
                             index=None, kind=READY, old_status="exhausted",
                             new_status="exhausted"))
    return sorted(out, key=lambda e: (e.time, e.pool, e.id))


def notice(pool_or_path: str, message: str, at: float) -> Event:
    """A timeline line about the store itself (e.g. it became unreadable)."""
    return Event(time=at, pool=pool_or_path, id="", label="", index=None, kind=NOTICE,
                 message=message)
