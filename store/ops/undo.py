"""Undo one operator action: put back the rows and fields it changed, and nothing else.

``hermes-admin undo [ID]`` reads the action's history record (:mod:`store.ops.history`):
the file as it was before the action, and what the action left. It then works on the
*fresh* file under the lock, as every write does, so an agent's later writes survive:

- a row the action removed comes back, as it was, at its place (the source it suppressed
  is unsuppressed); a row it added goes;
- for a row it changed, each field it changed goes back to its old value if nobody has
  changed that field since; a field changed since is kept, and the result says so. Fields
  one writer sets together (:data:`UNITS`: the bench, the per-model bench, the key and its
  fingerprint and expiry) go back together or not at all: an agent that benched the key
  again since keeps its whole bench, never half of it;
- a config.yaml edit: each top-level key it changed goes back if it still reads as the
  edit left it, with its comments, in one locked edit.
- when nothing at all goes back in a file (everything was changed since), that half raises
  NothingToChange with the kept notes: nothing is written, and the CLI says "nothing was
  undone" (exit 2), never "undone"; :meth:`Plan.describe` previews the same on the files as
  they read now.

- a row whose key (``access_token``, ``refresh_token``, ``agent_key``) changed since the
  action (an agent rotated it, an OAuth refresh) is a different credential now: it is kept
  whole, neither removed nor given the old key's fields, and the result says so.

A record that cannot be used is refused before anything is written (:func:`plan` raises
StoreUnreadable naming the file): one whose copy is gone, is a link, or is named as any
other file than its own; one that records no row and no config key (a restore-backup of an
older version); one whose rows are not rows. An id from the future is refused too.
A later operator action that touched the same rows or keys makes undo refuse, naming it,
unless ``force`` is given. An undo is an operator action itself, kept in the history like
any other, so it can be undone.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from store import authfile
from store.config import yamledit, yamlread
from store.config.edit import ConfigChange
from store.errors import BadInput, HermesAdminError, StoreUnreadable
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.model import SECRET_FIELDS, STATUS_FIELDS, Doc, Row, ensure_pool, is_manual_source, pool_rows, row_by_id
from store.ops import history, undo_dup
from store.ops.actions import Change, NothingToChange, Outcome, status_fields
from store.paths import AUTH_FILE, CONFIG_FILE, Home
from store.pools import policy

_MISSING = object()


@dataclass
class Plan:
    """What undoing one action would do, worked out before any lock is taken."""

    meta: dict[str, Any]
    before_doc: Doc | None
    conflicts: list[str] = field(default_factory=list)   # later operator actions on the same rows
    home: Home | None = None                              # to say what config.yaml holds now
    force: bool = False                                   # bring a row back beside its key's twin

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
        preview = self._row_preview()
        for r in self.rows:
            before = _find(self.before_doc, r["pool"], r["id"])
            label = r.get("label") or r["id"]
            landed, notes = preview.get(f"{r['pool']}/{r['id']}", (True, [])) if preview else (True, [])
            if not landed:
                out.append(f"{r['pool']} {label} (id={r['id']}): nothing put back: {'; '.join(notes)}")
                continue
            if r.get("after") is None:
                out.append(f"{r['pool']} {label} (id={r['id']}): comes back")
            elif before is None:
                out.append(f"{r['pool']} {label} (id={r['id']}): is removed again")
            else:
                out.append(f"{r['pool']} {label} (id={r['id']}): fields put back")
            out.extend(f"{r['pool']} {n}" for n in notes)
        cfg = self.meta.get("config")
        if isinstance(cfg, dict):
            out.extend(self._config_lines(cfg))
        return out

    def _row_preview(self) -> dict[str, tuple[bool, list[str]]] | None:
        """Each row's undo tried on a copy of auth.json as it reads now (no lock, never
        written: a preview; the write decides again on the fresh file under the lock):
        whether anything goes back, and the notes (what is kept)."""
        if self.home is None or not self.rows:
            return None
        try:
            doc = json.loads(json.dumps(authfile.read_store(self.home).doc or {}))
        except (HermesAdminError, ValueError):
            return None
        got = {}
        for r in self.rows:
            out = Outcome("undo", str(r["pool"]))
            try:
                _undo_row(doc, self.before_doc, str(r["pool"]), str(r["id"]), r.get("after"), out, self.force)
            except BadInput as exc:
                out.notes.append(f"refused: {exc}")
            got[f"{r['pool']}/{r['id']}"] = (bool(out.changes), out.notes)
        return got

    def _config_lines(self, cfg: dict[str, Any]) -> list[str]:
        """config.yaml's keys as they read now (no lock: a preview; the edit decides again
        under its lock): those that go back, and those changed since, which stay."""
        touched = [k for k in cfg.get("touched") or [] if isinstance(k, str)]
        try:
            if self.home is None or not isinstance(cfg.get("after"), dict):
                raise LookupError
            raw = history.kept_bytes(self.home, self.meta, CONFIG_FILE)
            before = yamlread.load_plain(raw, self.home.config)[0] if raw is not None else {}
            raw = yamlread.read_bytes(self.home.config)
            now = yamlread.load_plain(raw, self.home.config)[0] if raw is not None else {}
        except (LookupError, HermesAdminError):
            return [f"{CONFIG_FILE}: {', '.join(touched)} put back where unchanged since the action"]
        back, kept = _config_split(touched, cfg["after"], before, now)
        lines = [f"{CONFIG_FILE}: {', '.join(back)} put back"] if back else []
        if kept:
            lines.append(f"{CONFIG_FILE}: {', '.join(kept)} changed since the action: kept as it is, not put back")
        return lines or [f"{CONFIG_FILE}: nothing to put back"]


def _find(doc: Doc | None, pool: str, rid: str) -> Row | None:
    return None if doc is None else row_by_id(pool_rows(doc, pool), rid)


def resolve(home: Home, which: str | None, now: float | None = None) -> str:
    """The id named by *which*: an id, ``N`` (the Nth newest action) or None (the newest).
    An empty or blank *which* is refused: ``undo --yes "$ID"`` with ID unset must not undo
    the newest action, one the script never named."""
    if which is not None and not which.strip():
        raise BadInput("ID", "is empty; name an action by its id or N from `hermes-admin history` "
                       "(leave ID out to mean the newest); nothing was undone")
    ids = list_ids(home, now)
    if which is None or which.strip() == "1":
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
    if history.from_future(which, time.time() if now is None else now):
        raise BadInput("ID", f"{which} lies in the future: no action was written then; refused")
    if which not in ids:
        raise BadInput("ID", f"{which} is not kept in this home's history (pruned, or another home's)")
    return which


def list_ids(home: Home, now: float | None = None) -> list[str]:
    """Kept action ids, oldest first (in the order they were written: an id is its time).
    An id from the future is left out: it would shadow every real action.
    StoreUnreadable naming the folder when it cannot be listed (:func:`history.names`)."""
    now = time.time() if now is None else now
    names = history.names(home)
    ids = (n[:-5] for n in names if n.endswith(".json") and history.valid_id(n[:-5]))
    return sorted(i for i in ids if not history.from_future(i, now))


def plan(home: Home, action_id: str) -> Plan:
    """Read the action's record and copy, and find later operator actions on the same rows.
    StoreUnreadable, naming the record, for one that cannot be used (see the module docstring)."""
    meta = history.load(home, action_id)
    record = history.folder(home) / f"{action_id}.json"
    _check_record(meta, record)
    raw = history.kept_bytes(home, meta, AUTH_FILE)
    before = None
    if raw is not None:
        before = authfile.parse_store(raw, history.folder(home) / f"{AUTH_FILE}.{action_id}")
    elif meta.get("rows") and not meta.get("created"):
        raise StoreUnreadable(record, f"keeps no copy of {AUTH_FILE} to put its rows back from; "
                              "refused (nothing was written)")
    p = Plan(meta, before, home=home)
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


def _check_record(meta: dict[str, Any], record: Any) -> None:
    rows, cfg = meta.get("rows"), meta.get("config")
    if rows is not None and not (isinstance(rows, list) and all(
            isinstance(r, dict) and isinstance(r.get("pool"), str) and isinstance(r.get("id"), str)
            and (r.get("after") is None or isinstance(r.get("after"), dict)) for r in rows)):
        raise StoreUnreadable(record, "holds rows that are not rows; a forged or broken record is not used")
    if meta.get("unreadable_before"):
        raise StoreUnreadable(record, f"replaced a file that did not parse ({str(meta['unreadable_before'])[:120]}); "
                              "there are no rows to put back (the file is kept beside the record)")
    if not rows and not isinstance(cfg, dict):
        what = ", ".join(map(str, meta.get("actions") or [])) or "this action"
        raise StoreUnreadable(record, f"records no row and no config key that {what} changed, so "
                              "nothing can be put back from it (an action of an older hermes-admin)")


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
            _undo_row(doc, p.before_doc, pool, rid, r.get("after"), out, p.force)
        if not any(o.changes for o in outcomes.values()):
            # Every row was changed since (or is already as it was): nothing is written, and
            # the caller says "nothing undone" with the reason, never "undone".
            why = "; ".join(n for o in outcomes.values() for n in o.notes[1:])
            raise NothingToChange(f"{AUTH_FILE}: nothing undone: {why or 'nothing to put back'}")
        return [o for o in outcomes.values() if o.changes or len(o.notes) > 1]
    return change


def _undo_row(doc: Doc, before_doc: Doc | None, pool: str, rid: str, after: Any, out: Outcome,
              force: bool = False) -> None:
    before = _find(before_doc, pool, rid)
    fresh = _find(doc, pool, rid)
    if after is None:                              # the action removed it: it comes back
        if before is None or fresh is not None:
            out.notes.append(f"{rid}: already there, left as it is")
            return
        undo_dup.refuse_duplicate(doc, pool, before, force)
        rows = ensure_pool(doc, pool)
        back = json.loads(json.dumps(before))
        at = next(i for i, r in enumerate(pool_rows(before_doc or {}, pool)) if r is before)
        rows.insert(min(at, len(rows)), back)
        policy.renumber(rows)
        _unsuppress(doc, before_doc, pool, back)
        out.changes.append(Change(pool, rid, str(back.get("label") or ""), {}, status_fields(back)))
        return
    if fresh is not None and _key_changed(after, fresh):
        out.notes.append(f"{fresh.get('label') or rid}: kept as it is: its key changed since the action "
                         "(another writer put a new one in this row)")
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
    kept, back = _put_back_fields(doc, pool, before, after, fresh)
    if kept:
        out.notes.append(f"{fresh.get('label') or rid}: kept {', '.join(kept)} as another writer left it "
                         "(changed since the action)")
    if back:
        out.changes.append(Change(pool, rid, str(fresh.get("label") or ""), was, status_fields(fresh)))


def _key_changed(after: dict[str, Any], fresh: Row) -> bool:
    """Whether the row's key differs from the one the action left (compared by digest)."""
    now = history.digests({f: fresh[f] for f in SECRET_FIELDS if f in fresh})
    return any(after.get(f) != now.get(f) for f in SECRET_FIELDS if f in after or f in now)


# Fields one writer sets together: when another writer changed any of them since the action,
# it left the whole group as it meant it, so undo puts back all of the group or none of it.
# A bench half put back (last_status null beside an agent's 402 and reset time) is a row
# that contradicts itself; so is a key beside another key's fingerprint or expiry.
UNITS = (
    ("bench", (*STATUS_FIELDS, "failure_reason", "status_cleared_at")),
    ("per-model bench", ("model_cooldowns", "model_cooldown_observed_at")),
    ("key", (*SECRET_FIELDS, "secret_fingerprint", "expires_at", "expires_at_ms", "last_refresh",
             "agent_key_expires_at")),
)


def _put_back_fields(doc: Doc, pool: str, before: Row, after: Row, fresh: Row) -> tuple[list[str], list[str]]:
    """Each field the action changed goes back where nobody changed it (or its unit, see
    :data:`UNITS`) since; (what was kept, as the note names it; the fields put back).
    *after* holds the digests of what the action left (:func:`store.ops.history.digests`)."""
    b, f = history.digests(before), history.digests(fresh)
    changed = {k for k in set(b) | set(after) if b.get(k, _MISSING) != after.get(k, _MISSING)}
    since = {k for k in set(f) | set(after) if f.get(k, _MISSING) != after.get(k, _MISSING)}
    kept, held = [], set()
    for name, unit in UNITS:
        if changed & set(unit) and since & set(unit):
            held |= set(unit)
            kept.append(f"its whole {name} ({', '.join(sorted(since & set(unit)))} changed)")
    new_priority, back = None, []
    for key in sorted(changed - held):
        if key in since:
            kept.append(key)
            continue
        back.append(key)
        if key == "priority" and isinstance(before.get("priority"), int):
            new_priority = before["priority"]
        elif key not in b:
            fresh.pop(key, None)
        else:
            fresh[key] = json.loads(json.dumps(before[key]))
    if new_priority is not None:
        policy.move(ensure_pool(doc, pool), fresh, new_priority)
    return kept, back


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

    with yamledit.locked_edit(path, home.config_lock, touched=frozenset(keys), lock_timeout=lock_timeout) as s:
        back, kept = _config_split(keys, after, before_plain, s.plain)
        for key in back:
            if key in before_tree:
                s.tree[key] = before_tree[key]
            else:
                s.tree.pop(key, None)
        s.dirty = bool(back)
    if not back:        # the lock is released and nothing was written: say so, never "undone"
        raise NothingToChange(f"{CONFIG_FILE}: nothing undone: " + (_kept_note(kept) if kept else
                              "the action left nothing here that differs from before it"))
    notes = tuple([f"undo of {p.id}"] + ([f"{CONFIG_FILE}: {_kept_note(kept)}"] if kept else []))
    return ConfigChange("undo", ",".join(back) or ",".join(keys), {k: "as the action left it" for k in back},
                        {k: before_plain.get(k) for k in back}, written=bool(back), notes=notes)


def _config_split(keys: list[str], after: dict[str, Any], before: Any, now: Any) -> tuple[list[str], list[str]]:
    """(back, kept): of the keys the action changed, those still as it left them, and those
    changed since (by hand, by Hermes, by another edit), which undo leaves as they are."""
    def digest(plain: Any, key: str) -> str:
        return history.digest(plain.get(key, history.ABSENT) if isinstance(plain, dict) else history.ABSENT)

    back, kept = [], []
    for key in keys:
        if digest(before, key) != after.get(key):           # else the action did not change it
            (back if digest(now, key) == after.get(key) else kept).append(key)
    return back, kept


def _kept_note(kept: list[str]) -> str:
    return (f"kept {', '.join(kept)} as it is now: changed since the action (by hand or by another "
            "writer), so not put back")
