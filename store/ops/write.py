"""The one write-and-audit path: run a change, stamp it after the lock wait, audit it.

Every write hermes-admin makes (the CLI's verbs, the console's thread worker, config.yaml
edits, probe lifts, ``restore-backup``, a key acted on in every profile) goes through
:func:`perform`:

- a :class:`StoreChange` (a function ``change(doc, now) -> Outcome``) runs inside one
  :func:`store.transaction.transaction`; ``now`` is read from the clock *inside* the lock,
  after any wait for it, so the audit line and the row's timestamps say when the change
  happened, not when the operator asked for it;
- any other callable is an edit that takes its own lock (``store.config.edit``,
  ``store.ops.probe_report.run_probe``, ``store.ops.restore.restore_backup``); it is stamped
  when it returns, also after its lock wait.

An action on several homes calls it once per home with a :class:`Group`: one id across the
homes' records, undone together (:mod:`store.profiles.undo_all`).

A change that finds nothing to do raises :class:`store.ops.actions.NothingToChange` inside
the lock: nothing is written, no history is kept, no audit line is appended, and the
returned :class:`Written` says why (``unchanged``).

Every such write is an operator action: it gets a history id, keeps the file as it was
(:mod:`store.ops.history`) and records the rows it left, so ``hermes-admin undo`` can put
exactly those rows and fields back. Then the audit line(s) for what it changed are appended,
carrying the id, redacted with what the caller and the transaction already hold (the
caller's redactor plus the secrets of the rows written): no file is read again for them.
Nothing here touches a terminal.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar

from store.config import settings
from store.errors import HermesAdminError, StoreUnreadable
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.model import Doc, pool_rows, row_by_id, row_secrets
from store.ops import audit, history
from store.ops.actions import Change, NothingToChange, Outcome
from store.paths import AUTH_FILE, Home
from store.redaction import redact
from store.transaction import transaction

if TYPE_CHECKING:
    from store.config.edit import ConfigChange

T = TypeVar("T")
Clock = Callable[[], float]


@dataclass(frozen=True)
class StoreChange(Generic[T]):
    """A change to auth.json: ``change(doc, now)`` on the transaction's fresh document.

    Only ``add`` may create a missing home (``create=True``): a reset aimed at a mistyped
    home must not leave an empty Hermes home behind.
    """

    change: Callable[[Doc, float], T]
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    create: bool = False


@dataclass
class Written(Generic[T]):
    """What a write returned, when it happened, and what was audited."""

    value: T
    at: float
    outcomes: list[Outcome] = field(default_factory=list)
    audit_error: str | None = None    # the write landed but its audit line did not
    history_id: str | None = None     # what `hermes-admin undo ID` takes; None: nothing kept
    unchanged: str | None = None      # the change found nothing to do (NothingToChange): nothing written


@dataclass(frozen=True)
class Group:
    """One home's part of an action on several homes (a key acted on everywhere).

    Every home's write keeps its own record under the one ``id``, marked with ``meta``
    (``{"scope": ..., "profiles": [...]}``); ``audit`` is added to each audit line.
    """

    id: str
    meta: dict[str, Any]
    audit: dict[str, Any] = field(default_factory=dict)


def outcomes_of(value: Any) -> list[Outcome]:
    """The audit records of what a change returned.

    An Outcome, a list of them, a ConfigChange (only when it wrote), or anything with
    an ``outcome`` attribute (a probe report: None when nothing was lifted).
    """
    if value is None:
        return []
    if isinstance(value, Outcome):
        return [value]
    if isinstance(value, (list, tuple)):
        return [o for v in value for o in outcomes_of(v)]
    # A ConfigChange exists only once its module (and ruamel) is loaded: a pool write, or the
    # console's start-up, does not import the YAML editor to ask.
    edit = sys.modules.get("store.config.edit")
    if edit is not None and isinstance(value, edit.ConfigChange):
        return [config_outcome(value)] if value.written else []
    inner = getattr(value, "outcome", None)
    return [inner] if isinstance(inner, Outcome) else []


def config_outcome(change: ConfigChange) -> Outcome:
    """A config.yaml edit in the shape :func:`store.ops.audit.record` takes."""
    where = change.pool or "config.yaml"
    out = Outcome(f"config.{change.action}", where)
    out.changes.append(Change(where, change.key, "config.yaml", {"value": change.before}, {"value": change.after}))
    out.notes.extend(change.notes)
    return out


def touched_rows(doc: Doc, outcomes: list[Outcome]) -> list[dict[str, Any]]:
    """The rows *outcomes* changed, exactly as the write leaves them (None: removed)."""
    out = []
    for o in outcomes:
        for c in o.changes:
            row = row_by_id(pool_rows(doc, c.pool), c.id)
            after = None if row is None else history.digests(row)
            # The label is named in undo's confirmation: as every output shows it, fingerprinted.
            label = redact.Redactor(row_secrets(row) if row else ()).redact(c.label)
            out.append({"pool": c.pool, "id": c.id, "label": label, "after": after})
    return out


def perform(home: Home, job: StoreChange[T] | Callable[[], T], *, via: str,
            clock: Clock = time.time, redactor: redact.Redactor | None = None,
            remote: str | None = None, group: Group | None = None) -> Written[T]:
    """Run *job* (see the module docstring), then keep its history and audit what it changed.

    Errors of the change itself (BadInput, LockTimeout, StoreUnreadable, ...) propagate and
    nothing was written. An audit log that cannot be appended (an OS error, or a path that
    is not a regular file) never undoes or hides a write that landed: it is returned in
    ``audit_error``, which the CLI prints as a warning (exit 0) and the console shows; the
    same for a history copy that could not be kept. *redactor*: what the caller already
    knows of the home's secrets (the console's, the CLI's boundary); without one the audit
    reads the home's files for them. *remote*: the address the operator acts from (a console
    served by ``hermes-admin web``), kept in the history record and every audit line.
    *group*: this home's part of an action on several homes (one id across them, undone
    together; see :class:`Group`).
    """
    written_secrets: set[str] = set()
    try:
        # The id and the copies' ages are on the wall clock, whatever *clock* the caller pins.
        with history.recording(home, time.time(), group.id if group else None) as pending:
            if isinstance(job, StoreChange):
                keep = lambda src: history.keep_before(pending, src, AUTH_FILE)  # noqa: E731
                absent = not os.path.lexists(home.auth)
                value: Any = None      # a change that calls skip_write() returns nothing and writes nothing
                with transaction(home, lock_timeout=job.lock_timeout, create=job.create, before_replace=keep) as doc:
                    at = clock()   # inside the lock: after the wait, however long it was
                    history.stamp(pending)     # the id too: ids sort in the order writes land
                    value = job.change(doc, at)
                    outs = outcomes_of(value)
                    pending.meta["rows"] = touched_rows(doc, outs)
                    if group is not None:
                        pending.meta["group"] = group.meta
                    for o in outs:
                        for c in o.changes:
                            if (row := row_by_id(pool_rows(doc, c.pool), c.id)) is not None:
                                written_secrets.update(row_secrets(row))
                if absent and pending.meta.get("rows") and AUTH_FILE not in pending.kept:
                    pending.meta["created"] = True    # no file before: undo removes what it added
            else:
                value = job()
                at = clock()       # the edit held its own lock and has released it: after the wait
    except NothingToChange as exc:
        # Raised inside the lock: nothing was written, no copy kept, and no audit line.
        return Written(None, clock(), unchanged=str(exc))
    written = Written(value, at, outcomes_of(value))
    notes: list[str] = []
    try:
        meta: dict[str, Any] = {"via": via, "actions": [o.action for o in written.outcomes]}
        if remote is not None:
            meta["remote"] = remote
        written.history_id = history.save(pending, meta)
    except (HermesAdminError, OSError) as exc:
        notes.append(f"history record not kept: {exc}")
    try:
        own = settings.read(home)
    except HermesAdminError as exc:       # a broken hermes-admin.yaml never blocks a write
        own = settings.DEFAULTS
        notes.append(f"history pruned by the defaults: {exc}")
    history.prune(home, time.time(), keep=own.history_keep, days=own.history_days)
    r = redactor.with_secrets(*written_secrets) if redactor is not None else None
    extra = {"history": written.history_id} if written.history_id else {}
    if remote is not None:
        extra["remote"] = remote
    extra = {**(group.audit if group is not None else {}), **extra}
    try:
        for outcome in written.outcomes:
            audit.record(home, outcome, via=via, now=at, extra=extra or None, redactor=r)
    except StoreUnreadable as exc:
        notes.append(f"audit log not written: {exc}")
    except OSError as exc:
        notes.append(f"audit log {home.audit} not written: {exc.strerror or exc}")
    written.audit_error = "; ".join(notes) or None
    return written
