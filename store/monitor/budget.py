"""``budget``: a key or a pool at the rule's share (``at: 80%``) of a budget of hermes-admin.yaml.

Budgets are :mod:`store.config.budgets`' (``budgets: {pool: {key: {day, month}, pool: {day,
month}}}``, US dollars of known cost); spend is the usage ledger's, read through
:func:`store.monitor.spend.spend_of` (a :class:`store.monitor.spend.Spend` per evaluation).
:func:`gather` (at sample time, the IO edge) asks for every amount a budget needs; :func:`add`
(pure) turns them into conditions. A spend that cannot be read is unknown: no alert, a notice,
never zero. A condition ends when the spend falls back under the share, which happens when
its period starts again (00:00 UTC for ``day``, the first of the month for ``month``): that
moment is the evaluation's next change.

A window cap (``cap: {5h: 80%}``, the share of a subscription window a key may use) is a
budget too: a key whose fresh reading of that window (the headroom sidecar, bound to the key's
secret) has used ``at`` of its cap alerts, and recovers when the window resets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from store.config.budgets import PERIODS, PoolBudget
from store.monitor import rules as R
from store.monitor.conditions import Evaluation, utc, who
from store.monitor.keyed import key_condition, pools_of, readings_of
from store.monitor.sample import ProfileSample, Sample
from store.paths import Home
from store.pools.view import PoolView
from store.usage.tally import resets

SpendOf = Callable[[Home, str, "str | None", str], "float | None"]
SpendKey = tuple[str, "str | None", str]          # (pool, row id or None for the pool, period)


def gather(home: Home, budgets: Mapping[str, PoolBudget], pools: Sequence[PoolView],
           spend: SpendOf) -> dict[SpendKey, float | None]:
    """Every spend the budgets of *home* need: each key's, and each pool's, per period."""
    out: dict[SpendKey, float | None] = {}
    views = {pv.key: pv for pv in pools}
    for pool, b in budgets.items():
        for period in PERIODS:
            if b.key.of(period) is not None and pool in views:
                for cv in views[pool].credentials:
                    out[(pool, cv.id, period)] = spend(home, pool, cv.id, period)
            if b.pool.of(period) is not None:
                out[(pool, None, period)] = spend(home, pool, None, period)
    return out


def _share(spent: float, limit: float) -> str:
    return f"{spent / limit:.0%}" if limit > 0 else "all"


def _usd(v: float) -> str:
    return f"${v:,.2f}" if v >= 0.01 or v == 0 else f"${v:.4f}"


def _caps(ev: Evaluation, rule: R.Rule, p: ProfileSample, pv: PoolView, caps: Mapping[str, float],
          now: float) -> None:
    for cv, entry in readings_of(p, pv):
        for window, cap in caps.items():
            r = entry.windows.get(window)
            if r is None or r.utilization is None or r.stale(now) or r.utilization < (rule.threshold or 0) * cap:
                continue
            reset = f"; the window resets {utc(r.reset_at)}" if r.reset_at is not None else ""
            ev.add(key_condition(
                rule, p, pv.key, cv, f"cap-{window}", title=f"{who(p, cv)} at {r.utilization / cap:.0%} of its "
                f"{window} cap", text=f"{who(p, cv)} has used {r.utilization:.0%} of its {window} window "
                f"({r.source}), {r.utilization / cap:.0%} of the {cap:.0%} cap hermes-admin.yaml sets (this rule "
                f"alerts at {rule.threshold or 0:.0%}){reset}."))
            ev.at(r.reset_at, now)


def add(ev: Evaluation, sample: Sample, rules: R.Rules, now: float) -> None:
    """Add the ``budget`` conditions of *sample* to *ev*."""
    rule = rules[R.BUDGET]
    at = rule.threshold or 0.0
    for p, pool, pv in pools_of(sample, rule, lambda p: p.budgets):
        b = p.budgets[pool]
        if b.cap and pv is not None:
            _caps(ev, rule, p, pv, b.cap, now)
        for period in PERIODS:
            ends = resets(period, now)      # the period starts again (00:00 UTC, the 1st)
            again = f"the {period} starts again {utc(ends)}"
            limit = b.key.of(period)
            for cv in pv.credentials if limit is not None and pv is not None else ():
                spent = p.spend.get((pool, cv.id, period))
                if spent is not None and spent >= at * limit:
                    ev.add(key_condition(
                        rule, p, pool, cv, period, title=f"{who(p, cv)} at {_share(spent, limit)} of its {period} "
                        f"budget", text=f"{who(p, cv)} spent {_usd(spent)} of its {period} budget of {_usd(limit)} "
                        f"({_share(spent, limit)}; this rule alerts at {at:.0%}); {again}."))
                    ev.at(ends, now)
            limit = b.pool.of(period)
            spent = p.spend.get((pool, None, period)) if limit is not None else None
            if limit is not None and spent is not None and spent >= at * limit:
                ev.add(key_condition(
                    rule, p, pool, None, period, title=f"{p.name}/{pool} at {_share(spent, limit)} of its {period} "
                    f"budget", text=f"Pool {pool} of profile {p.name} spent {_usd(spent)} of its {period} budget "
                    f"of {_usd(limit)} ({_share(spent, limit)}; this rule alerts at {at:.0%}); {again}."))
                ev.at(ends, now)
