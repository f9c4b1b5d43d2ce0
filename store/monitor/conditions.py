"""The rules applied to a sample: which conditions hold now, and when that can next change.

Pure: a :class:`store.monitor.sample.Sample`, the :class:`store.monitor.rules.Rules` and the
clock in; :class:`Evaluation` out. A condition is keyed by what it is about (rule, profile,
pool, credential, window, proxy port), so the same trouble seen at two evaluations is one
condition, which is what lets :mod:`store.monitor.alerts` deduplicate it. ``next_change`` is
the earliest time a condition may start or end by the clock alone (a cooldown running out, a
fallback reaching its threshold, a reading going stale): the daemon sleeps until then, or
until the watcher reports a write, and never polls.

Texts name credentials by pool, position, label and display fingerprint; they are redacted
again at delivery (:mod:`store.monitor.delivery`), like every other output.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field

from store.agent import ratelimits
from store.agent.headroom import RowReadings
from store.agent.refresh import expires_at
from store.dialects.readings import MINUTE
from store.model import AUTH_OAUTH, as_int, parse_epoch
from store.monitor import rules as R
from store.monitor.sample import ProfileSample, ProxyView, Sample, state_at
from store.pools.policy import COOLING, DEAD
from store.pools.times import BAD_TIME, LONGEST_SHOWN, on_calendar
from store.pools.view import CredentialView, PoolView


@dataclass(frozen=True)
class Condition:
    """One thing that is wrong right now, with what an alert about it says."""

    key: str
    rule: str
    severity: str
    profile: str
    title: str
    text: str
    pool: str | None = None
    credential: str | None = None     # row id
    label: str | None = None
    fingerprint: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "rule": self.rule, "severity": self.severity, "profile": self.profile,
                "pool": self.pool, "id": self.credential, "label": self.label,
                "fingerprint": self.fingerprint, "title": self.title, "text": self.text}


@dataclass
class Evaluation:
    conditions: dict[str, Condition] = field(default_factory=dict)
    next_change: float | None = None

    def add(self, cond: Condition) -> None:
        self.conditions[cond.key] = cond

    def at(self, t: float | None, now: float) -> None:
        """Note that something changes at *t* (ignored unless it lies ahead)."""
        if t is not None and math.isfinite(t) and t > now and (self.next_change is None or t < self.next_change):
            self.next_change = t


def utc(t: float | None) -> str:
    """An absolute time as operators compare them across hosts."""
    if t is None or not math.isfinite(t):
        return "never"
    if not on_calendar(t):   # a stored 1e+287: said, never raised on (gmtime would)
        return BAD_TIME
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def span(seconds: float) -> str:
    """``59m 30s``, ``6d 23h``: the two largest units."""
    if not abs(seconds) <= LONGEST_SHOWN:
        return BAD_TIME
    s = max(0, int(seconds + 0.5))
    parts = []
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if s >= n or (unit == "s" and not parts):
            parts.append(f"{s // n}{unit}")
            s %= n
    return " ".join(parts[:2])


def who(p: ProfileSample, cv: CredentialView) -> str:
    """``default/openrouter #2 backup (sk-or-…a1B2)``."""
    out = f"{p.name}/{cv.pool} #{cv.index}"
    if cv.label:
        out += f" {cv.label}"
    if cv.fingerprint:
        out += f" ({cv.fingerprint})"
    return out


def _error(cv: CredentialView) -> str:
    code = cv.row.get("last_error_code")
    reason = cv.row.get("last_error_reason") or cv.row.get("failure_reason")
    bits = [str(code) if code is not None else "", str(reason) if reason else ""]
    return " ".join(b for b in bits if b) or "no error recorded"


def _cond(rule: R.Rule, key: str, p: ProfileSample, title: str, text: str,
          cv: CredentialView | None = None, pool: str | None = None) -> Condition:
    return Condition(key=key, rule=rule.name, severity=rule.severity, profile=p.name, title=title, text=text,
                     pool=cv.pool if cv is not None else pool, credential=cv.id if cv is not None else None,
                     label=cv.label if cv is not None else None,
                     fingerprint=cv.fingerprint if cv is not None else None)


def _pool(ev: Evaluation, rules: R.Rules, p: ProfileSample, pv: PoolView, now: float) -> None:
    empty, dead, long_, oauth, expiry = (rules[R.POOL_EMPTY], rules[R.KEY_DEAD], rules[R.LONG_COOLDOWN],
                                         rules[R.OAUTH_REFRESH_FAILED], rules[R.OAUTH_EXPIRY])
    usable = 0
    counts = {COOLING: 0, DEAD: 0}
    first_back: float | None = None
    for cv in pv.credentials:
        status, at, _left = state_at(cv, now)
        if status == COOLING:
            counts[COOLING] += 1
            ev.at(at, now)
            if at is not None and (first_back is None or at < first_back):
                first_back = at
        elif status == DEAD:
            counts[DEAD] += 1
        else:
            usable += 1
        row = cv.row
        base = f"{p.name}/{pv.key}/{cv.id}"
        if status == DEAD and dead.applies(p.name, pv.key):
            ev.add(_cond(dead, f"{R.KEY_DEAD}/{base}", p, f"{who(p, cv)} is dead",
                         f"{who(p, cv)} went dead ({_error(cv)}). Dead never expires: reset it or give "
                         f"it a new key.", cv))
        if status == COOLING and long_.applies(p.name, pv.key) and at is not None:
            since = parse_epoch(row.get("last_status_at")) or p.read_at
            if at - since > (long_.threshold or 0):
                ev.add(_cond(long_, f"{R.LONG_COOLDOWN}/{base}", p,
                             f"{who(p, cv)} is cooling for {span(at - since)}",
                             f"{who(p, cv)} is benched until {utc(at)} (in {span(at - now)}; {_error(cv)}), "
                             f"longer than the {span(long_.threshold or 0)} this rule allows.", cv))
        if (status in (COOLING, DEAD) and row.get("auth_type") == AUTH_OAUTH
                and as_int(row.get("last_error_code"), -1) == 401 and oauth.applies(p.name, pv.key)):
            ev.add(_cond(oauth, f"{R.OAUTH_REFRESH_FAILED}/{base}", p,
                         f"{who(p, cv)}: OAuth refresh failed",
                         f"{who(p, cv)} was refused with 401 after its token refresh ({_error(cv)}); "
                         f"{'it is dead: log in again' if status == DEAD else f'benched until {utc(at)}'}.", cv))
        if expiry.applies(p.name, pv.key) and not row.get("refresh_token"):
            exp = _expiry(pv.key, row)
            if exp is not None:
                starts = exp - (expiry.threshold or 0)
                if now >= starts:
                    ended = "expired" if exp <= now else f"expires in {span(exp - now)}"
                    ev.add(_cond(expiry, f"{R.OAUTH_EXPIRY}/{base}", p, f"{who(p, cv)} {ended}",
                                 f"{who(p, cv)} {ended} ({utc(exp)}) and holds no refresh token to renew "
                                 f"it.", cv))
                ev.at(starts, now)
    if pv.credentials and usable == 0 and empty.applies(p.name, pv.key):
        back = f"the first one is usable again at {utc(first_back)} (in {span(first_back - now)})" \
            if first_back is not None else "none comes back by itself (all dead)"
        ev.add(_cond(empty, f"{R.POOL_EMPTY}/{p.name}/{pv.key}", p, f"{p.name}/{pv.key} has no usable key",
                     f"Pool {pv.key} of profile {p.name} has no usable credential: {counts[COOLING]} cooling, "
                     f"{counts[DEAD]} dead; {back}.", pool=pv.key))


def _expiry(pool: str, row: dict) -> float | None:
    exp = expires_at(pool, row)
    if exp is None:
        exp = parse_epoch(row.get("expires_at_ms")) or parse_epoch(row.get("expires_at"))
    return exp


def _headroom(ev: Evaluation, rule: R.Rule, p: ProfileSample, now: float) -> None:
    if not p.headroom:
        return
    for pv in p.pools:
        if not rule.applies(p.name, pv.key):
            continue
        for cv in pv.credentials:
            entry: RowReadings | None = p.headroom.get((pv.key, cv.id))
            if entry is None or entry.fp != cv.fingerprint:
                continue   # no readings, or readings of a secret this row no longer holds
            for r in entry.windows.values():
                ev.at(r.reset_at if r.reset_at is not None else r.read_at + (r.length or MINUTE), now)
            low = ratelimits.tightest(entry.windows.values(), now)
            if low is None or low.left is None or low.left >= (rule.threshold or 0):
                continue
            reset = f"; resets {utc(low.reset_at)}" if low.reset_at is not None else ""
            ev.add(_cond(rule, f"{R.LOW_HEADROOM}/{p.name}/{pv.key}/{cv.id}", p,
                         f"{who(p, cv)} has {low.left:.0%} of its {low.window} window left",
                         f"{who(p, cv)}: {low.left:.0%} of the {low.window} window left ({low.source}{reset}), "
                         f"under the {rule.threshold:.0%} this rule allows.", cv))


def _proxy(ev: Evaluation, rule: R.Rule, p: ProfileSample, proxy: ProxyView, now: float) -> None:
    if not proxy.on_fallback or not rule.applies(p.name):
        return
    # A proxy that does not say since when counts from its start (never from this read,
    # which would move the threshold at every evaluation).
    since = next((t for t in (proxy.on_fallback_since, proxy.started_at) if t is not None), now)
    due = since + (rule.threshold or 0)
    if now < due:
        ev.at(due, now)
        return
    ev.add(_cond(rule, f"{R.PROXY_FALLBACK}/{p.name}/{proxy.port}", p,
                 f"{p.name}: proxy :{proxy.port} on fallback {proxy.active} for {span(now - since)}",
                 f"The proxy on port {proxy.port} of profile {p.name} serves from {proxy.active} instead of "
                 f"its primary {proxy.primary} since {utc(since)}.", pool=proxy.primary))


def _findings(ev: Evaluation, rule: R.Rule, sample: Sample) -> None:
    for f in sample.findings:
        if f.kind not in rule.kinds or not any(rule.applies(name) for name in f.profiles):
            continue
        ref = ",".join(f"{pr}:{pool}:{rid}" for pr, pool, rid in sorted(f.rows)) or ",".join(f.profiles)
        digest = hashlib.sha256(ref.encode()).hexdigest()[:16]
        ev.add(Condition(key=f"{R.FINDINGS}/{f.kind}/{digest}", rule=rule.name, severity=rule.severity,
                         profile=",".join(f.profiles), title=f"finding: {f.kind.replace('_', ' ')}",
                         text=f.message))


def evaluate(sample: Sample, rules: R.Rules, now: float) -> Evaluation:
    """Every condition of *sample* under *rules* at *now*, and when they can next change."""
    ev = Evaluation()
    unreadable = rules[R.STORE_UNREADABLE]
    for p in sample.profiles:
        if p.store_error is not None and unreadable.applies(p.name):
            ev.add(Condition(key=f"{R.STORE_UNREADABLE}/{p.name}", rule=unreadable.name,
                             severity=unreadable.severity, profile=p.name,
                             title=f"{p.name}: auth.json cannot be read",
                             text=f"{p.store_error}. Every write is refused until it is fixed; the monitor "
                                  f"shows the last good read."))
        if p.store_linked is not None and unreadable.applies(p.name):
            ev.add(Condition(key=f"{R.STORE_UNREADABLE}/{p.name}/linked", rule=unreadable.name,
                             severity=unreadable.severity, profile=p.name,
                             title=f"{p.name}: auth.json is a symlink; every write is refused",
                             text=f"{p.store_linked}."))
        for pv in p.pools:
            _pool(ev, rules, p, pv, now)
        if rules[R.LOW_HEADROOM].enabled:
            _headroom(ev, rules[R.LOW_HEADROOM], p, now)
        for proxy in p.proxies:
            _proxy(ev, rules[R.PROXY_FALLBACK], p, proxy, now)
    if sample.findings and rules[R.FINDINGS].enabled:
        _findings(ev, rules[R.FINDINGS], sample)
    return ev
