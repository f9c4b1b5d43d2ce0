"""Act on one key in every profile that holds it (``--all-profiles``).

The key is named by a TARGET in one profile's pool; every profile of the root whose
rows hold the same secret (compared by hash, :mod:`store.redaction.secret_ids`) is changed
through :func:`store.ops.write.perform`, as every operator write is: in its own transaction
under its own lock, one after the other, with its own history record and audit line naming
that profile and every profile the action set out to touch. The records of all the
profiles share one action id, so ``undo`` puts them back together (:func:`sharing`).
A profile whose lock stays busy past the timeout is left unchanged and reported; the
others still change (they are independent homes). Nothing here touches the network.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from store import authfile
from store.envfile import read_env
from store.errors import BadInput, HermesAdminError, LockTimeout
from store.model import Doc, pools, sorted_rows
from store.ops import actions, history
from store.ops.write import Group, StoreChange, perform
from store.paths import Home
from store.pools.view import row_fingerprint
from store.profiles.root import Profile, Root, discover, resolve_root
from store.redaction import redact
from store.redaction.secret_ids import key_identity
from store.transaction import skip_write

# (doc, pool, row id, now) -> Outcome for that one row.
RowChange = Callable[[Doc, str, str, float], actions.Outcome]


@dataclass
class ProfileResult:
    """What happened in one profile."""

    profile: str
    pools: list[str] = field(default_factory=list)
    outcomes: list[actions.Outcome] = field(default_factory=list)
    error: HermesAdminError | None = None      # not changed, and why
    skipped: list[str] = field(default_factory=list)   # rows left alone, and why
    warnings: list[str] = field(default_factory=list)


@dataclass
class AllProfilesResult:
    """Every profile's result, plus the profiles that could not be searched at all."""

    fingerprint: str
    action_id: str = ""                  # the one history id of every profile's record
    results: list[ProfileResult] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)   # (profile, reason)

    @property
    def changed(self) -> list[str]:
        return [r.profile for r in self.results if r.error is None and r.outcomes]

    @property
    def failed(self) -> list[ProfileResult]:
        return [r for r in self.results if r.error is not None]

    @property
    def exit_code(self) -> int:
        """0 all changed; the worst failure's code otherwise (4 when a lock timed out)."""
        codes = [r.error.exit_code for r in self.failed if r.error is not None]
        if any(isinstance(r.error, LockTimeout) for r in self.failed):
            return LockTimeout.exit_code
        return max(codes, default=0)


def _matching(doc: Doc, ident: str, env: dict[str, str]) -> list[tuple[str, str]]:
    """(pool, id) of every row of *doc* holding the key *ident*."""
    out = []
    for pool, rows in sorted(pools(doc).items()):
        if not isinstance(rows, list):
            continue
        for row in sorted_rows(r for r in rows if isinstance(r, dict)):
            if key_identity(row, env) == ident:
                out.append((pool, str(row.get("id"))))
    return out


def identify(profile: Profile, pool: str, target: str) -> tuple[str, str]:
    """(identity, display fingerprint) of TARGET's key in *profile*'s POOL (read only)."""
    snap = authfile.read_store(profile.home)
    if snap.doc is None:
        raise BadInput("POOL", f"no store at {profile.home.auth}")
    env = read_env(profile.home)
    row = actions.resolve(snap.doc, pool, target)
    ident = key_identity(row, env)
    if ident is None:
        raise BadInput("TARGET", f"{pool}: {row.get('label')!r} has no key to match in other profiles "
                       "(no stored secret, env value or secret_fingerprint)")
    return ident, row_fingerprint(pool, row, env) or "—"


def act_everywhere(root: Root, origin: Profile, pool: str, target: str, change: RowChange, *,
                   action: str, now: float, lock_timeout: float, via: str = "cli",
                   redactor: redact.Redactor | None = None, remote: str | None = None) -> AllProfilesResult:
    """Apply *change* to every row holding TARGET's key, profile by profile, each through
    ``write.perform`` under one action id (on the wall clock, as every id is). Each change is
    stamped inside its own lock; *now* is when the operator asked. *remote*: the address the
    operator acts from (a web console), in each history record and audit line."""
    ident, fp = identify(origin, pool, target)
    result = AllProfilesResult(fp, history.new_id(time.time()))
    plan: list[tuple[Profile, dict[str, str]]] = []
    for prof in discover(root):
        try:
            snap = authfile.read_store(prof.home)
        except HermesAdminError as exc:
            result.unreadable.append((prof.name, str(exc)))
            continue
        env = read_env(prof.home)
        if snap.doc is not None and _matching(snap.doc, ident, env):
            plan.append((prof, env))
    names = [p.name for p, _ in plan]
    for prof, env in plan:
        pr = ProfileResult(prof.name)
        result.results.append(pr)

        def one(doc: Doc, at: float, env: dict[str, str] = env, pr: ProfileResult = pr) -> list[actions.Outcome]:
            # Re-match inside the lock: the file may have changed since the plan.
            for row_pool, rid in _matching(doc, ident, env):
                try:
                    pr.outcomes.append(change(doc, row_pool, rid, at))
                    pr.pools.append(row_pool)
                except BadInput as exc:   # e.g. a dead row cannot be benched
                    pr.skipped.append(f"{row_pool} {rid}: {exc.problem}")
            if not pr.outcomes:
                skip_write()
            return pr.outcomes

        group = Group(result.action_id, {"scope": "all-profiles", "profile": prof.name, "profiles": names},
                      {"profile": prof.name, "scope": "all-profiles", "key": fp, "profiles": names})
        try:
            written = perform(prof.home, StoreChange(one, lock_timeout=lock_timeout), via=via,
                              redactor=redactor, remote=remote, group=group)
        except HermesAdminError as exc:
            pr.error = exc
            pr.outcomes.clear()
            continue
        if written.audit_error:   # the write landed; say what of its record did not
            pr.warnings.append(f"{prof.home.root}: {written.audit_error}")
    return result


def sharing(home: Home, action_id: str, meta: dict) -> list[tuple[str, Home]]:
    """The homes an action on several homes changed, (profile, home), this one first.

    Only profiles of this home's own root count, and only those whose history keeps a
    record of the same id marked as part of it: a record cannot send undo elsewhere.
    """
    group = meta.get("group")
    if not isinstance(group, dict):
        return [("", home)]
    root = resolve_root(None, home.root)
    out = [(str(group.get("profile") or ""), home)]
    for prof in discover(root):
        if prof.home.root == home.root:
            continue
        try:
            other = history.load(prof.home, action_id)
        except HermesAdminError:
            continue
        if isinstance(other.get("group"), dict):
            out.append((prof.name, prof.home))
    return out
