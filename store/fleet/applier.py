"""Fleet states onto this host's file: the sync daemon's one way of writing auth.json.

:class:`FleetApplier` takes states already checked by ``store.fleet.inbound`` and applies
only the ``usable`` ones, each batch one ``store.transaction`` (lock, fresh read, apply,
atomic write, release) with no network call under the lock. It remembers what it
wrote (so the daemon does not publish it back as news) and the version it applied per
key (so a state older than one already applied never undoes it, and a flood of hints
for a key that did not change costs no write).
"""

from __future__ import annotations

import copy
import threading
from typing import Any, Callable, Mapping

from store.errors import HermesAdminError
from store.fleet.local import apply_states, signature
from store.fleet.model import FleetState
from store.model import Doc
from store.ops.actions import Change, Outcome
from store.ops.audit import record
from store.paths import Home
from store.pools import policy
from store.transaction import skip_write, transaction


class FleetApplier:
    """Applies checked fleet states to *home*; thread-safe (the subscriber and the main
    loop both apply)."""

    def __init__(self, home: Home, secret: bytes, *, lock_timeout: float, clock: Callable[[], float],
                 log: Callable[[str], None], error: Callable[[str], None]) -> None:
        self.home = home
        self.secret = secret
        self.lock_timeout = lock_timeout
        self.clock = clock
        self.log = log
        self.error = error
        self._apply_mu = threading.Lock()    # one apply at a time, from check to write
        self._mu = threading.Lock()          # the two maps below
        self._applied: dict[tuple[str, str], tuple[Any, ...]] = {}
        self._versions: dict[str, int] = {}

    def wrote(self, key: tuple[str, str], sig: tuple[Any, ...]) -> bool:
        """True when row *key* (pool, id) is as this applier last wrote it (an echo)."""
        with self._mu:
            return self._applied.get(key) == sig

    def forget_versions(self) -> None:
        """Accept any version again (Redis may have restarted empty)."""
        with self._mu:
            self._versions.clear()

    def apply(self, states: Mapping[str, FleetState], *, env: Mapping[str, str], ttls: policy.Ttls,
              offset: float, precheck: Doc | None = None, newer_only: bool = False) -> int:
        """Apply *states* to the local rows holding those keys, in one transaction; returns
        how many rows changed.

        Only states that passed the check (``usable``) are applied; *newer_only* (a pub/sub
        hint) skips a state whose version was already applied. With *precheck* (a document
        just read), a batch that would change nothing takes no lock at all."""
        with self._apply_mu:
            with self._mu:
                # A state older than one already applied for its key (a reconcile's fetch
                # racing a hint) must not undo the newer one. Checked under the apply lock,
                # so the two threads cannot pass it in one order and write in the other.
                keep: dict[str, FleetState] = {}
                for fp, fs in states.items():
                    known = self._versions.get(fp, 0)
                    if fs.usable and (fs.version > known or (fs.version == known and not newer_only)):
                        keep[fp] = fs
                        self._versions[fp] = fs.version
            if not keep:
                return 0
            if precheck is not None and not apply_states(copy.deepcopy(precheck), self.secret, env, keep,
                                                         offset, self.clock(), ttls):
                return 0
            changed: list[Any] = []
            try:
                with transaction(self.home, lock_timeout=self.lock_timeout, create=False) as doc:
                    changed = apply_states(doc, self.secret, env, keep, offset, self.clock(), ttls)
                    if not changed:
                        skip_write()
                    with self._mu:
                        for pool, row, _action in changed:
                            self._applied[(pool, str(row.get("id") or ""))] = signature(row)
            except HermesAdminError as exc:
                self.error(str(exc))
                return 0
        if changed:
            self._audit(changed, keep)
            for pool, row, action in changed:
                self.log(f"fleet: applied {action} to {pool} {row.get('label') or row.get('id')}"
                         f" (status {row.get('last_status') or 'ok'})")
        return len(changed)

    def _audit(self, changed: list[Any], states: Mapping[str, FleetState]) -> None:
        by_pool: dict[str, Outcome] = {}
        for pool, row, action in changed:
            out = by_pool.setdefault(pool, Outcome(f"fleet-{action}", pool))
            out.changes.append(Change(pool, str(row.get("id")), str(row.get("label") or ""), {},
                                      {"last_status": row.get("last_status"),
                                       "last_error_reset_at": row.get("last_error_reset_at"),
                                       "status_cleared_at": row.get("status_cleared_at")}))
        for out in by_pool.values():
            origins = sorted({s.host or s.cleared_by or "?" for s in states.values()})
            try:
                record(self.home, out, via="fleet-sync", extra={"fleet_origin": origins})
            except OSError as exc:
                self.error(f"audit: {exc}")
