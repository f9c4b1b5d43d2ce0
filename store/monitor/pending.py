"""Alerts a stopping monitor could not deliver, kept in its status file and sent after a restart.

Each entry is one notification still owed to one target, named by the target's shown form
(:class:`store.monitor.delivery.Target`; the URL itself is a secret and is never stored). A
restarted monitor sends an entry to the target it was given with the same shown form; an
entry for a target it no longer has is dropped, with a log line. At most :data:`KEEP` entries
are kept (the oldest first: the start of a trouble matters more than its latest echo); the
number beyond that is said (``pending_dropped``).

The status file is another process's file by the time it is read: every entry is checked
like any outside value, and one that is not well formed is skipped. Pure functions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from store.monitor.alerts import FIRING, RESOLVED, Notification
from store.monitor.conditions import Condition

KEEP = 2000
_TEXT_CAP = 4000
_REQUIRED = ("key", "rule", "severity", "profile", "title", "text")
_OPTIONAL = ("pool", "id", "label", "fingerprint")


def condition_of(data: Any) -> Condition | None:
    """A condition from its JSON form (:meth:`Condition.to_json`); None unless well formed."""
    if not isinstance(data, dict):
        return None
    req = {k: data.get(k) for k in _REQUIRED}
    if not all(isinstance(v, str) and 0 < len(v) <= _TEXT_CAP for v in req.values()):
        return None
    opt = {k: data.get(k) for k in _OPTIONAL}
    if not all(v is None or (isinstance(v, str) and len(v) <= _TEXT_CAP) for v in opt.values()):
        return None
    return Condition(**req, pool=opt["pool"], credential=opt["id"], label=opt["label"],  # type: ignore[arg-type]
                     fingerprint=opt["fingerprint"])


def _epoch(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def to_json(n: Notification, target: str) -> dict[str, Any]:
    """One entry: the notification and the shown form of the target it is owed to."""
    return {"target": target, "kind": n.kind, "at": n.at, "since": n.since, "condition": n.condition.to_json()}


def from_json(data: Any) -> tuple[Notification, str] | None:
    """(notification, target shown) from one entry; None unless well formed."""
    if not isinstance(data, dict):
        return None
    target, kind = data.get("target"), data.get("kind")
    at, since = _epoch(data.get("at")), _epoch(data.get("since"))
    cond = condition_of(data.get("condition"))
    if not (isinstance(target, str) and 0 < len(target) <= _TEXT_CAP) or kind not in (FIRING, RESOLVED) \
            or at is None or since is None or cond is None:
        return None
    return Notification(kind, cond, at, since), target


def bounded(entries: Iterable[tuple[Notification, str]]) -> tuple[list[dict[str, Any]], int]:
    """(the first :data:`KEEP` entries as JSON, how many more there were)."""
    out: list[dict[str, Any]] = []
    dropped = 0
    for n, target in entries:
        if len(out) < KEEP:
            out.append(to_json(n, target))
        else:
            dropped += 1
    return out, dropped


def taken_over(previous: dict[str, Any] | None) -> list[tuple[Notification, str]]:
    """The entries a stopped monitor left in its status file (*previous*), checked."""
    raw = (previous or {}).get("pending")
    if not isinstance(raw, list):
        return []
    return [got for got in (from_json(e) for e in raw[:KEEP]) if got is not None]
