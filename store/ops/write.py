"""The one write-and-audit path: run a change, stamp it after the lock wait, audit it.

Every write hermes-admin makes (the CLI's verbs, the console's thread worker, config.yaml
edits, probe lifts) goes through :func:`perform`:

- a :class:`StoreChange` (a function ``change(doc, now) -> Outcome``) runs inside one
  :func:`store.transaction.transaction`; ``now`` is read from the clock *inside* the lock,
  after any wait for it, so the audit line and the row's timestamps say when the change
  happened, not when the operator asked for it;
- any other callable is an edit that takes its own lock (``store.config.edit``,
  ``store.ops.probe_report.run_probe``); it is stamped when it returns, also after its lock wait.

Then the audit line(s) for what it changed are appended. Nothing here touches a terminal.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, TypeVar

from store.errors import StoreUnreadable
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.model import Doc
from store.ops import audit
from store.ops.actions import Outcome
from store.paths import Home
from store.transaction import transaction

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
    to_outcome = getattr(value, "to_outcome", None)
    if callable(to_outcome):
        return [to_outcome()] if getattr(value, "written", True) else []
    inner = getattr(value, "outcome", None)
    return [inner] if isinstance(inner, Outcome) else []


def perform(home: Home, job: StoreChange[T] | Callable[[], T], *, via: str,
            clock: Clock = time.time) -> Written[T]:
    """Run *job* (see the module docstring), then audit what it changed.

    Errors of the change itself (BadInput, LockTimeout, StoreUnreadable, ...) propagate and
    nothing was written. An audit log that cannot be appended (an OS error, or a path that
    is not a regular file) never undoes or hides a write that landed: it is returned in
    ``audit_error``, which the CLI prints as a warning (exit 0) and the console shows.
    """
    if isinstance(job, StoreChange):
        with transaction(home, lock_timeout=job.lock_timeout, create=job.create) as doc:
            at = clock()   # inside the lock: after the wait, however long it was
            value = job.change(doc, at)
    else:
        value = job()
        at = clock()       # the edit held its own lock and has released it: after the wait
    written = Written(value, at, outcomes_of(value))
    try:
        for outcome in written.outcomes:
            audit.record(home, outcome, via=via, now=at)
    except StoreUnreadable as exc:
        written.audit_error = f"audit log not written: {exc}"
    except OSError as exc:
        written.audit_error = f"audit log {home.audit} not written: {exc.strerror or exc}"
    return written
