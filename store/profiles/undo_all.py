"""Undo an operator action in every home it changed, together.

Most actions change one home. Acting on a key everywhere (``R``, ``C``, ``--all-profiles``)
changes several, each keeping its own history record under one shared id
(:func:`store.profiles.everywhere.sharing` finds them, only among the profiles of the same
root). :func:`plans` plans the undo of each; :func:`run` writes each home's undo through
:func:`store.ops.write.perform`, the undos themselves again sharing one id, so undoing the
undo brings the action back everywhere too. A home whose lock stays busy is reported and
the others still go back (they are independent homes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from store.errors import HermesAdminError
from store.ops import history, undo
from store.ops.write import Group, StoreChange, Written, perform
from store.paths import Home
from store.profiles.everywhere import sharing
from store.redaction import redact


@dataclass
class HomePlan:
    """The undo of one home's part of the action (profile "" for a home on its own)."""

    profile: str
    home: Home
    plan: undo.Plan
    written: list[Written[Any]] = field(default_factory=list)
    error: HermesAdminError | None = None


def plans(home: Home, action_id: str) -> list[HomePlan]:
    """Every home's undo plan, this home first; StoreUnreadable for a record that cannot be used."""
    first = undo.plan(home, action_id)
    out = [HomePlan("", home, first)]
    for name, other in sharing(home, action_id, first.meta)[1:]:
        out.append(HomePlan(name, other, undo.plan(other, action_id)))
    if len(out) > 1:
        out[0].profile = str(first.meta["group"].get("profile") or "")
    return out


def conflicts(hps: list[HomePlan]) -> list[str]:
    """Later operator actions on the same rows, in any of the homes."""
    return [f"{hp.profile}: {c}" if len(hps) > 1 else c for hp in hps for c in hp.plan.conflicts]


def describe(hps: list[HomePlan]) -> list[str]:
    """What comes back, home by home (named by profile when there are several)."""
    return [f"{hp.profile}: {line}" if len(hps) > 1 else line for hp in hps for line in hp.plan.describe()]


def run(hps: list[HomePlan], *, via: str, lock_timeout: float,
        redactor: redact.Redactor | None = None) -> list[HomePlan]:
    """Write every home's undo (see the module docstring); each HomePlan says what landed."""
    group_id = history.new_id(time.time()) if len(hps) > 1 else None
    names = [hp.profile for hp in hps]
    for hp in hps:
        group = None
        if group_id is not None:
            group = Group(group_id, {"scope": "undo-all-profiles", "profile": hp.profile, "profiles": names,
                                     "undoes": hp.plan.id},
                          {"profile": hp.profile, "scope": "all-profiles", "profiles": names})
        try:
            if hp.plan.rows:
                hp.written.append(perform(hp.home, StoreChange(undo.store_change(hp.plan), lock_timeout=lock_timeout),
                                          via=via, redactor=redactor, group=group))
            if isinstance(hp.plan.meta.get("config"), dict):
                hp.written.append(perform(hp.home, partial(undo.config_edit, hp.home, hp.plan, lock_timeout),
                                          via=via, redactor=redactor))
        except HermesAdminError as exc:
            hp.error = exc
    return hps
