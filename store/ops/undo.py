"""Undo one operator action: put back the rows and fields it changed, and nothing else.

``hermes-admin undo [ID]`` reads the action's history record (:mod:`store.ops.history`):
the file as it was before the action, and what the action left. It then works on the
*fresh* file under the lock, as every write does, so an agent's later writes survive:

- a row the action removed comes back, as it was, at its place (the source it suppressed
  is unsuppressed); a row it added goes;
- for a row it changed, each field it changed goes back to its old value if nobody has
  changed that field since; a field changed since (an agent benched the key again, say)
  is kept, and the result says so;
- a config.yaml edit: each top-level key it changed goes back if it still reads as the
  edit left it, with its comments, in one locked edit.

A later operator action that touched the same rows or keys makes undo refuse, naming it,
unless ``force`` is given. An undo is an operator action itself, kept in the history like
any other, so it can be undone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from store import authfile
from store.config import yamledit, yamlread
from store.config.edit import ConfigChange
from store.errors import BadInput, StoreUnreadable
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.model import Doc, Row, ensure_pool, is_manual_source, pool_rows, row_by_id
from store.ops import history
from store.ops.actions import Change, Outcome, status_fields
from store.paths import AUTH_FILE, CONFIG_FILE, Home
from store.pools import policy

_MISSING = object()


@dataclass
class Plan:
    """What undoing one action would do, worked out before any lock is taken."""

    meta: dict[str, Any]
    before_doc: Doc | None
    conflicts: list[str] = field(default_factory=list)   # later operator actions on the same rows

    @property
    def id(self) -> str:
        return str(self.meta["id"])

    @property
    def rows(self) -> list[dict[str, Any]]:
        rows = self.meta.get("rows")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def describe(self) -> list[str]:
        """What comes back, in the words a confirmation shows (labels and ids, no secret)."""
        out = []
        for r in self.rows:
            before = _find(self.before_doc, r["pool"], r["id"])
            label = r.get("label") or r["id"]
            if r.get("after") is None:
                out.append(f"{r['pool']} {label} (id={r['id']}): comes back")
            elif before is None:
                out.append(f"{r['pool']} {label} (id={r['id']}): is removed again")
            else:
                out.append(f"{r['pool']} {label} (id={r['id']}): fields put back")
        cfg = self.meta.get("config")
        if isinstance(cfg, dict):
            out.append(f"config.yaml: {', '.join(map(str, cfg.get('touched', [])))} put back")
        return out


def _find(doc: Doc | None, pool: str, rid: str) -> Row | None:
    return None if doc is None else row_by_id(pool_rows(doc, pool), rid)


def resolve(home: Home, which: str | None) -> str:
    """The id named by *which*: an id, ``N`` (the Nth newest action) or None (the newest)."""
    ids = list_ids(home)
    if which is None or which.strip() in ("", "1"):
        if not ids:
            raise BadInput("ID", "no operator action is kept in the history of this home")
        return ids[-1]
    which = which.strip()
    if which.isascii() and which.isdigit():
        n = int(which) if len(which) <= 6 else 0
        if not 1 <= n <= len(ids):
            raise BadInput("N", f"only {len(ids)} operator actions are kept (1 is the newest)")
        return ids[-n]
    if not history.valid_id(which):
        raise BadInput("ID", "is not a history id (see `hermes-admin history`)")
    if which not in ids:
        raise BadInput("ID", f"{which} is not kept in this home's history (pruned, or another home's)")
    return which


def list_ids(home: Home) -> list[str]:
    """Kept action ids, oldest first."""
    try:
        names = [p.name for p in history.folder(home).iterdir()]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(n[:-5] for n in names if n.endswith(".json") and history.valid_id(n[:-5]))


def plan(home: Home, action_id: str) -> Plan:
    """Read the action's record and copy, and find later operator actions on the same rows."""
    meta = history.load(home, action_id)
    raw = history.kept_bytes(home, meta, AUTH_FILE)
    before = None
    if raw is not None:
        before = authfile.parse_store(raw, history.folder(home) / f"{AUTH_FILE}.{action_id}")
    p = Plan(meta, before)
    mine = _touched(meta)
    for later in list_ids(home):
        if later <= action_id:
            continue
        try:
            other = history.load(home, later)
        except StoreUnreadable:
            continue
        overlap = mine & _touched(other)
        if overlap:
            what = ", ".join(sorted(overlap)[:3])
            p.conflicts.append(f"{later} ({', '.join(map(str, other.get('actions') or ['?']))}) changed {what} since")
    return p


def _touched(meta: dict[str, Any]) -> set[str]:
    rows = meta.get("rows") if isinstance(meta.get("rows"), list) else []
    out = {f"{r.get('pool')}/{r.get('id')}" for r in rows if isinstance(r, dict)}
    cfg = meta.get("config")
    if isinstance(cfg, dict) and isinstance(cfg.get("touched"), list):
        out |= {f"config.yaml:{k}" for k in cfg["touched"]}
    return out


def store_change(p: Plan) -> Callable[[Doc, float], list[Outcome]]:
    """The auth.json half of the undo, as a change on the fresh document."""
    def change(doc: Doc, now: float) -> list[Outcome]:
        outcomes: dict[str, Outcome] = {}
        for r in p.rows:
            pool, rid = str(r["pool"]), str(r["id"])
            out = outcomes.setdefault(pool, Outcome("undo", pool, notes=[f"undo of {p.id}"]))
            _undo_row(doc, p.before_doc, pool, rid, r.get("after"), out)
        return [o for o in outcomes.values() if o.changes or len(o.notes) > 1]
    return change


def _undo_row(doc: Doc, before_doc: Doc | None, pool: str, rid: str, after: Any, out: Outcome) -> None:
    before = _find(before_doc, pool, rid)
    fresh = _find(doc, pool, rid)
    if after is None:                              # the action removed it: it comes back
        if before is None or fresh is not None:
            out.notes.append(f"{rid}: already there, left as it is")
            return
        rows = ensure_pool(doc, pool)
        back = json.loads(json.dumps(before))
        at = next(i for i, r in enumerate(pool_rows(before_doc or {}, pool)) if r is before)
        rows.insert(min(at, len(rows)), back)
        policy.renumber(rows)
        _unsuppress(doc, before_doc, pool, back)
        out.changes.append(Change(pool, rid, str(back.get("label") or ""), {}, status_fields(back)))
        return
    if before is None:                             # the action added it: it goes
        if fresh is None:
            out.notes.append(f"{rid}: already gone")
            return
        rows = ensure_pool(doc, pool)
        was = status_fields(fresh)
        rows.remove(fresh)
        policy.renumber(rows)
        out.changes.append(Change(pool, rid, str(fresh.get("label") or ""), was, {}))
        return
    if fresh is None:
        out.notes.append(f"{rid}: removed since; nothing to put back")
        return
    was = status_fields(fresh)
    kept = _put_back_fields(doc, pool, before, after, fresh)
    if kept:
        out.notes.append(f"{fresh.get('label') or rid}: kept {', '.join(kept)} (changed since by another writer)")
    out.changes.append(Change(pool, rid, str(fresh.get("label") or ""), was, status_fields(fresh)))


def _put_back_fields(doc: Doc, pool: str, before: Row, after: Row, fresh: Row) -> list[str]:
    """Each field the action changed goes back where nobody changed it since; the kept ones.
    *after* holds the digests of what the action left (:func:`store.ops.history.digests`)."""
    b, f = history.digests(before), history.digests(fresh)
    kept = []
    new_priority = None
    for key in sorted(set(b) | set(after)):
        bv, av = b.get(key, _MISSING), after.get(key, _MISSING)
        if bv == av:
            continue
        if f.get(key, _MISSING) != av:
            kept.append(key)
            continue
        if key == "priority" and isinstance(before.get("priority"), int):
            new_priority = before["priority"]
        elif bv is _MISSING:
            fresh.pop(key, None)
        else:
            fresh[key] = json.loads(json.dumps(before[key]))
    if new_priority is not None:
        policy.move(ensure_pool(doc, pool), fresh, new_priority)
    return kept


def _unsuppress(doc: Doc, before_doc: Doc | None, pool: str, row: Row) -> None:
    """The seeded source a removal suppressed is let go again (if it was not suppressed before)."""
    source = str(row.get("source") or "")
    if not source or is_manual_source(source):
        return
    was = ((before_doc or {}).get("suppressed_sources") or {}).get(pool) or []
    now = (doc.get("suppressed_sources") or {}).get(pool)
    if isinstance(now, list) and source in now and source not in was:
        now.remove(source)


def config_edit(home: Home, p: Plan, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> ConfigChange | None:
    """The config.yaml half of the undo: one locked edit of the keys the action changed."""
    cfg = p.meta.get("config")
    if not isinstance(cfg, dict) or not isinstance(cfg.get("after"), dict):
        return None
    after = cfg["after"]
    keys = [k for k in cfg.get("touched") or [] if isinstance(k, str)]
    raw_before = history.kept_bytes(home, p.meta, CONFIG_FILE)
    path = home.config
    before_plain = yamlread.load_plain(raw_before, path)[0] if raw_before is not None else {}
    before_tree = yamlread.load_tree(raw_before, path)[0]
    before_plain = before_plain if isinstance(before_plain, dict) else {}

    def now_digest(plain: dict[str, Any], key: str) -> str:
        return history.digest(plain.get(key, history.ABSENT))

    back, kept = [], []
    with yamledit.locked_edit(path, home.config_lock, touched=frozenset(keys), lock_timeout=lock_timeout) as s:
        for key in keys:
            if now_digest(before_plain, key) == after.get(key):
                continue                                     # the action did not change it
            if now_digest(s.plain, key) != after.get(key):
                kept.append(key)
                continue
            if key in before_tree:
                s.tree[key] = before_tree[key]
            else:
                s.tree.pop(key, None)
            back.append(key)
        s.dirty = bool(back)
    notes = tuple([f"undo of {p.id}"] + ([f"kept {', '.join(kept)} (changed since)"] if kept else []))
    return ConfigChange("undo", ",".join(back) or ",".join(keys), {k: "as the action left it" for k in back},
                        {k: before_plain.get(k) for k in back}, written=bool(back), notes=notes)
