"""What the operator is told after a write: the action, the rows and their status after it.

Derived only from what the write path returned (the audit outcomes of
:func:`store.ops.write.perform`), so the toast says what landed in the file, not what was
asked. A destructive action names the way back: ``hermes-admin undo <id>`` with the id
the operator history kept for that very write; a failed write is shown until the
operator dismisses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from store.ops.actions import Change, Outcome

NULL = "—"
MAX_ROWS = 3                     # rows named in one toast; the rest are counted
DESTRUCTIVE = frozenset({"remove", "reset"})   # auth.json rows lose fields: there is a way back
UNDO = "undo: hermes-admin undo {id}"
FAILED_TIMEOUT = 24 * 3600.0     # "until dismissed": Textual toasts need a finite timer
DONE_TIMEOUT = 6.0
DISMISS_KEY = "ctrl+l"


@dataclass(frozen=True)
class Toast:
    title: str
    message: str
    severity: str = "information"
    timeout: float = DONE_TIMEOUT


def _short(value: Any) -> str:
    if value is None or value == "" or value == [] or value == {}:
        return NULL
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in value.items() if v not in (None, "")) or NULL
    if isinstance(value, (list, tuple)):
        return ", ".join(_short(v) for v in value)
    return str(value)


def _row_result(action: str, c: Change) -> str:
    """"or-primary: cooling → ok" — the row and how its status moved."""
    name = c.label or c.id or NULL
    before, after = c.before or {}, c.after or {}
    if "value" in before or "value" in after:                 # a config.yaml edit
        return f"{c.id}: {_short(before.get('value'))} → {_short(after.get('value'))}"
    b = before.get("last_status") or "ok"
    if not after:
        return f"{name}: {b} → removed"
    if not before:
        return f"{name}: added ({after.get('last_status') or 'ok'})"
    if action == "priority" or before.get("priority") != after.get("priority"):
        return f"{name}: priority {before.get('priority')} → {after.get('priority')}"
    return f"{name}: {b} → {after.get('last_status') or 'ok'}"


def _rows(action: str, changes: list[Change]) -> list[str]:
    lines = [_row_result(action, c) for c in changes[:MAX_ROWS]]
    if len(changes) > MAX_ROWS:
        lines.append(f"… and {len(changes) - MAX_ROWS} more")
    return lines


def undo_hint(history_id: str) -> str:
    return UNDO.format(id=history_id)


def done_toast(what: str, outcomes: Iterable[Outcome], notes: Iterable[str] = (), *,
               history_id: str | None = None) -> Toast:
    """The toast for a write that landed (*what* is the request's own words); a destructive
    one names the undo of this write (*history_id*, from the operator history)."""
    outcomes = list(outcomes)
    if not outcomes:
        extra = "; ".join(notes)
        return Toast(f"{what}: done", "nothing to change" + (f" ({extra})" if extra else ""))
    lines: list[str] = []
    titles: list[str] = []
    destructive = False
    for out in outcomes:
        n = len(out.changes)
        titles.append(f"{out.action} · {out.pool}" + (f" · {n} rows" if n > 1 else ""))
        lines += _rows(out.action, out.changes)
        lines += [f"note: {note}" for note in out.notes]
        destructive |= out.action in DESTRUCTIVE
    if destructive and history_id:
        lines.append(undo_hint(history_id))
    return Toast("; ".join(dict.fromkeys(titles)) + ": done", "\n".join(lines))


def failed_toast(title: str, message: str) -> Toast:
    """A failed write: shown until dismissed, with the key that dismisses it."""
    return Toast(title or "write failed", f"{message}\n({DISMISS_KEY}: dismiss)",
                 severity="error", timeout=FAILED_TIMEOUT)
