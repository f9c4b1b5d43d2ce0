"""The walk the per-key rules share: ``burn_rate`` (:mod:`store.monitor.burn`) and ``budget``
(:mod:`store.monitor.budget`) each go over the pools a rule applies to, read one figure per
key (a window's use bound to the secret the row holds now, or a spend), compare it with the
rule's bound and raise a condition while it holds (it clears when it no longer does: the
alert book ends a condition that is not raised again).

- :func:`pools_of`: each profile's pools the rule applies to, with their views;
- :func:`readings_of`: each key of a pool with the headroom readings bound to its secret;
- :func:`key_condition`: the one way such a condition is made, keyed
  ``rule/profile/pool/row/what`` (``pool`` in place of the row for a pool's own), with the
  row's label and fingerprint.

Pure, like the rules that use it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from store.agent.headroom import RowReadings
from store.monitor import rules as R
from store.monitor.conditions import Condition
from store.monitor.sample import ProfileSample, Sample
from store.pools.view import CredentialView, PoolView


def pools_of(sample: Sample, rule: R.Rule, names: Callable[[ProfileSample], Iterable[str]] | None = None
             ) -> Iterator[tuple[ProfileSample, str, PoolView | None]]:
    """Each (profile, pool name, pool view) of *sample* that *rule* applies to: the pools
    each profile holds, or those *names* gives for it (a pool named there and absent from
    the store comes with no view). Nothing when the rule is off."""
    if not rule.enabled:
        return
    for p in sample.profiles:
        views = {pv.key: pv for pv in p.pools}
        for pool in (views if names is None else names(p)):
            if rule.applies(p.name, pool):
                yield p, pool, views.get(pool)


def readings_of(p: ProfileSample, pv: PoolView) -> Iterator[tuple[CredentialView, RowReadings]]:
    """Each key of *pv* with its readings in *p*'s headroom sidecar, only where those are
    bound to the secret the row holds now."""
    for cv in pv.credentials:
        entry = p.headroom.get((pv.key, cv.id))
        if entry is not None and entry.fp == cv.fingerprint:
            yield cv, entry     # else no readings, or readings of a secret this row no longer holds


def key_condition(rule: R.Rule, p: ProfileSample, pool: str, cv: CredentialView | None, what: str,
                  title: str, text: str) -> Condition:
    """The condition *rule* raises about key *cv* of *pool* (None: the pool as a whole) for
    *what* (a window, a period)."""
    if cv is None:
        return Condition(key=f"{rule.name}/{p.name}/{pool}/pool/{what}", rule=rule.name, severity=rule.severity,
                         profile=p.name, title=title, text=text, pool=pool)
    return Condition(key=f"{rule.name}/{p.name}/{pool}/{cv.id}/{what}", rule=rule.name, severity=rule.severity,
                     profile=p.name, title=title, text=text, pool=pool, credential=cv.id, label=cv.label,
                     fingerprint=cv.fingerprint)
