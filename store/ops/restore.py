"""``restore-backup`` as an operator write: auth.json.bak put back, kept in the history.

It is the one write that cannot run in :func:`store.transaction.transaction`: its use is a
current file that no longer parses. :func:`restore_backup` is an edit that takes the lock
itself and is run by :func:`store.ops.write.perform` like every edit: under the lock it
keeps the current file aside (``auth.json.replaced-<time>``) and in the operator history
(:func:`store.ops.history.keep_before`), records every row the restore changes (added,
removed or changed, compared with the current file when it parses), and replaces the file
atomically. Undo then puts those rows back like any action's; when the current file did
not parse there are no rows to put back, and undo refuses with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from store import authfile, safeio
from store.errors import StoreUnreadable
from store.lock import DEFAULT_LOCK_TIMEOUT, locked
from store.model import Doc, pools
from store.ops import history
from store.ops.actions import Change, Outcome, status_fields
from store.ops.write import touched_rows
from store.paths import AUTH_FILE, Home


@dataclass
class Restored:
    """What the restore did: its audit record and where the replaced file was kept."""

    outcome: Outcome
    aside: Path | None = None
    unreadable_before: str | None = None     # why the replaced file did not parse


def changed_rows(before: Doc | None, after: Doc) -> list[Change]:
    """Every row that differs between the two documents (added, removed or changed)."""
    def by_key(doc: Doc | None) -> dict[tuple[str, str], dict]:
        out = {}
        for pool, rows in pools(doc or {}).items():
            for row in rows if isinstance(rows, list) else []:
                if isinstance(row, dict):
                    out[(str(pool), str(row.get("id")))] = row
        return out
    old, new = by_key(before), by_key(after)
    changes = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a is not None and b is not None and history.digests(a) == history.digests(b):
            continue
        label = str((b or a or {}).get("label") or "")
        changes.append(Change(key[0], key[1], label, status_fields(a), status_fields(b)))
    return changes


def restore_backup(home: Home, raw: bytes, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> Restored:
    """Put *raw* (auth.json.bak's bytes, already parsed by the caller) back as auth.json."""
    backup_doc = authfile.parse_store(raw, home.backup)
    with locked(home.lock, lock_timeout):
        pending = history.current(home)
        current: Doc | None = None
        result = Restored(Outcome("restore-backup", "*"))
        # Read checked (non-blocking, regular files only, capped): a FIFO here must not hold
        # auth.lock while it waits for a writer, nor /dev/zero fill memory.
        got = safeio.read_checked(home.auth, safeio.AUTH_CAP)
        if got is not None:
            try:
                current = authfile.parse_store(got[0], home.auth)
            except StoreUnreadable as exc:
                result.unreadable_before = exc.reason
            result.aside = authfile.keep_aside(home.root, "auth.json.replaced", got[0])
            if pending is not None:
                history.keep_before(pending, home.auth, AUTH_FILE)
        result.outcome.changes = changed_rows(current, backup_doc)
        if pending is not None and result.unreadable_before is None:
            pending.meta["rows"] = touched_rows(backup_doc, [result.outcome])
            if current is None:
                pending.meta["created"] = True
        elif pending is not None:
            pending.meta["unreadable_before"] = result.unreadable_before
        authfile.atomic_write_bytes(home.auth, raw)
    return result
