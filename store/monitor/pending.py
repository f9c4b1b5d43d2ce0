"""Alerts a stopping monitor could not deliver, kept in its status file and sent after a restart.

Each entry is one notification and the targets it is still owed to, each named by its shown
form (:class:`store.monitor.delivery.Target`; the URL itself is a secret and is never stored).
A restarted monitor sends an entry to each target it was given with the same shown form; what
is owed to a target it no longer has is dropped, with a log line. At most :data:`KEEP` entries
are kept, enough for an alert per pool of 10,000 pools (the oldest first: the start of a
trouble matters more than its latest echo); the number beyond that is said (``pending_dropped``).

The status file is another process's file by the time it is read: every entry is checked
like any outside value, and one that is not well formed is skipped. Pure functions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from store.monitor.alerts import FIRING, RESOLVED, Notification
from store.monitor.conditions import Condition

KEEP = 12_000
_TEXT_CAP = 4000
MAX_TARGETS = 64
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


def to_json(n: Notification, targets: list[str]) -> dict[str, Any]:
    """One entry: the notification and the shown forms of the targets it is owed to."""
    return {"targets": targets, "kind": n.kind, "at": n.at, "since": n.since, "condition": n.condition.to_json()}


def from_json(data: Any) -> tuple[Notification, list[str]] | None:
    """(notification, targets shown) from one entry; None unless well formed."""
    if not isinstance(data, dict):
        return None
    targets, kind = data.get("targets"), data.get("kind")
    at, since = _epoch(data.get("at")), _epoch(data.get("since"))
    cond = condition_of(data.get("condition"))
    if not (isinstance(targets, list) and 0 < len(targets) <= MAX_TARGETS
            and all(isinstance(t, str) and 0 < len(t) <= _TEXT_CAP for t in targets)) \
            or kind not in (FIRING, RESOLVED) or at is None or since is None or cond is None:
        return None
    return Notification(kind, cond, at, since), list(dict.fromkeys(targets))


def bounded(owed: Iterable[tuple[Notification, str]]) -> tuple[list[dict[str, Any]], int]:
    """What is owed, (notification, target shown) in order, as at most :data:`KEEP` entries
    (one per notification, with its targets), and how many notifications more there were."""
    grouped: dict[int, tuple[Notification, list[str]]] = {}
    for n, target in owed:
        grouped.setdefault(id(n), (n, []))[1].append(target)
    entries = list(grouped.values())
    return [to_json(n, targets) for n, targets in entries[:KEEP]], max(0, len(entries) - KEEP)


def taken_over(previous: dict[str, Any] | None) -> list[tuple[Notification, str]]:
    """What a stopped monitor left owed in its status file (*previous*), checked, as
    (notification, target shown) in order."""
    raw = (previous or {}).get("pending")
    if not isinstance(raw, list):
        return []
    out = []
    for got in (from_json(e) for e in raw[:KEEP]):
        if got is not None:
            out += [(got[0], t) for t in got[1]]
    return out
