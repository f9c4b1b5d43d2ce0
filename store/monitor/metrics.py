"""Prometheus metrics of every credential, pool and proxy, built from the latest sample at scrape time.

:class:`MonitorCollector` is a prometheus_client custom collector: at each ``collect()`` it asks
the daemon for the latest :class:`store.monitor.sample.Sample` and the clock, and yields one
family per metric (names, types and labels in ``docs/metrics.md``). Label values are the
profile, pool, credential id and label, never a key: each passes the home's redactor and
:func:`store.redaction.redact.escape_controls` (inert, capped), like every other output.

The families' samples are built by :func:`credential_samples` and :func:`other_samples`, which
both the collector and :class:`store.monitor.exposition.Exposition` (the cached text the
daemon serves) use, so the two cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from store.model import as_int
from store.monitor.sample import ProfileSample, ProxyView, Sample, state_at
from store.pools.policy import COOLING, DEAD, OK, READY
from store.pools.view import CredentialView
from store.proxy.observing import metrics as proxy_metrics
from store.proxy.observing.metrics import Figures
from store.redaction.redact import Redactor, escape_controls

STATES = (OK, COOLING, READY, DEAD)
CRED = ("profile", "pool", "id", "label")
LABEL_CAP = 128


@dataclass(frozen=True)
class Family:
    """One metric: its name (without ``_total``), type, help and label names."""

    name: str
    kind: str
    help: str
    labels: tuple[str, ...]

    def make(self) -> Metric:
        cls = {"counter": CounterMetricFamily, "histogram": HistogramMetricFamily}.get(self.kind, GaugeMetricFamily)
        return cls(self.name, self.help, labels=list(self.labels))

    def lines(self, value: Any) -> int:
        """How many exposition lines one sample of this family takes (a histogram: its
        buckets, +Inf, count and sum)."""
        return len(value.le) + 3 if self.kind == "histogram" else 1


def _g(name: str, help_: str, labels: tuple[str, ...]) -> Family:
    return Family(name, "gauge", help_, labels)


def _c(name: str, help_: str, labels: tuple[str, ...]) -> Family:
    return Family(name, "counter", help_, labels)


# Per credential: five families with a fixed number of samples each (the cached block).
CRED_FAMILIES = (
    _g("hermes_admin_credential_state", "1 for the credential's state (ok, cooling, ready, dead), 0 for the "
       "others", CRED + ("state",)),
    _g("hermes_admin_credential_cooldown_remaining_seconds", "Seconds until the credential is usable again: 0 "
       "when usable now, +Inf when dead", CRED),
    _g("hermes_admin_credential_available_at_timestamp_seconds", "When a benched credential is usable again "
       "(epoch seconds; absent when it is not benched, or dead)", CRED),
    _c("hermes_admin_credential_requests", "Requests counted on the credential (auth.json request_count)", CRED),
    _g("hermes_admin_credential_last_error_code", "HTTP status of the credential's last error (0: none)", CRED),
)
HEADROOM = CRED + ("window",)
OTHER_FAMILIES = (
    _g("hermes_admin_credential_headroom_ratio", "Share of the window left, 0..1, from the provider's rate-limit "
       "readings (fresh readings only)", HEADROOM),
    _g("hermes_admin_credential_headroom_remaining", "Requests, tokens or credits left in the window", HEADROOM),
    _g("hermes_admin_credential_headroom_limit", "The window's limit", HEADROOM),
    _g("hermes_admin_credential_headroom_reset_timestamp_seconds", "When the window resets (epoch seconds)",
       HEADROOM),
    _g("hermes_admin_pool_credentials", "Credentials of the pool in each state", ("profile", "pool", "state")),
    _g("hermes_admin_pool_usable_credentials", "Credentials of the pool usable now (ok or ready)",
       ("profile", "pool")),
    _g("hermes_admin_pool_next_available_timestamp_seconds", "When a pool with no usable credential gets one "
       "back (epoch seconds; absent while one is usable, or when all are dead)", ("profile", "pool")),
    _g("hermes_admin_store_readable", "1 when the profile's auth.json reads, 0 when it cannot be read (the "
       "metrics then show the last good read)", ("profile",)),
    _g("hermes_admin_proxy_up", "1 while the proxy on this port runs (its status file is fresh)",
       ("profile", "port")),
    # The proxy's own metrics, as its /metrics serves them (store.proxy.observing.metrics), with profile and port.
    *(Family(s.name, s.kind, s.help, ("profile", "port") + s.labels) for s in proxy_metrics.SPECS),
    _g("hermes_admin_root_findings", "Findings over the root's profiles, by kind", ("kind", "severity")),
    _g("hermes_admin_monitor_open_alerts", "Alerts open now, by rule", ("rule",)),
    _c("hermes_admin_monitor_deliveries", "Alert deliveries, by result (sent, failed)", ("result",)),
)
N_CRED = len(CRED_FAMILIES)
(HR_RATIO, HR_REMAINING, HR_LIMIT, HR_RESET, POOL_CREDS, POOL_USABLE, POOL_NEXT, STORE_OK, PROXY_UP) = range(9)
PROXY_BASE = PROXY_UP + 1          # then one family per store.proxy.observing.metrics.SPECS, in its order
FINDINGS, OPEN_ALERTS, DELIVERIES = range(PROXY_BASE + len(proxy_metrics.SPECS), len(OTHER_FAMILIES))

Samples = list[tuple[int, tuple[str, ...], Any]]     # a value is a float, or a histogram's Histo


@dataclass
class MonitorStats:
    """What the monitor itself did, for its own two metrics."""

    open_by_rule: dict[str, int] = field(default_factory=dict)
    deliveries: dict[str, int] = field(default_factory=lambda: {"sent": 0, "failed": 0})


class Inert:
    """Label values made safe: redacted by the home's redactor, control characters escaped, capped.
    Kept per redactor and text, so a scrape redacts only labels it has not seen."""

    def __init__(self) -> None:
        self._seen: dict[tuple[int, str], str] = {}
        self._redactors: dict[int, Redactor] = {}

    def __call__(self, text: Any, redactor: Redactor | None) -> str:
        raw = text if isinstance(text, str) else str(text)
        key = (id(redactor), raw)
        hit = self._seen.get(key)
        if hit is None:
            value = redactor.redact(raw) if redactor is not None else raw
            value = escape_controls(value)
            hit = value if len(value) <= LABEL_CAP else value[:LABEL_CAP - 1] + "…"
            if len(self._seen) > 200_000:
                self._seen.clear()
                self._redactors.clear()
            self._seen[key] = hit
            if redactor is not None:
                self._redactors[id(redactor)] = redactor   # keep it alive: its id stays its own
        return hit


def credential_labels(p: ProfileSample, cv: CredentialView, inert: Inert) -> tuple[str, str, str, str]:
    r = p.redactor
    return (p.name, inert(cv.pool, r), inert(cv.id, r), inert(cv.label, r))


def _code(cv: CredentialView) -> float:
    code = cv.row.get("last_error_code")
    return float(as_int(code, 0)) if code is not None else 0.0


def credential_samples(labels: tuple[str, ...], cv: CredentialView, now: float) -> Samples:
    """The credential families' samples of one credential, in exposition order."""
    status, at, left = state_at(cv, now)
    out: Samples = [(0, labels + (s,), 1.0 if s == status else 0.0) for s in STATES]
    out.append((1, labels, math.inf if status == DEAD else (left or 0.0)))
    if at is not None and math.isfinite(at) and status != DEAD:
        out.append((2, labels, at))
    out.append((3, labels, float(as_int(cv.row.get("request_count"), 0))))
    out.append((4, labels, _code(cv)))
    return out


class ProxyCounters:
    """Requests and 429s per pool as counters, summed from the 10 s buckets of a proxy's status file.

    A bucket keeps the highest count seen for it; buckets that left the file's 10-minute window
    are folded into a total. Exact while the file is read at least once per 10 minutes (each
    scrape reads it); a proxy that restarts starts a new count (Prometheus sees a reset).
    """

    def __init__(self) -> None:
        self._seen: dict[tuple[str, int, float | None, str], tuple[list[int], dict[int, list[int]]]] = {}

    def totals(self, profile: str, proxy: ProxyView) -> dict[str, tuple[int, int]]:
        out = {}
        end = int(proxy.updated_at or 0.0)
        for pool, (step, req, rl) in proxy.pools.items():
            key = (profile, proxy.port, proxy.started_at, pool)
            folded, buckets = self._seen.setdefault(key, ([0, 0], {}))
            last = end // step * step
            n = max(len(req), len(rl))
            for i in range(n):
                start = last - (n - 1 - i) * step
                slot = buckets.setdefault(start, [0, 0])
                slot[0] = max(slot[0], req[i] if i < len(req) else 0)
                slot[1] = max(slot[1], rl[i] if i < len(rl) else 0)
            oldest = last - (n - 1) * step
            for start in [s for s in buckets if s < oldest]:
                gone = buckets.pop(start)
                folded[0] += gone[0]
                folded[1] += gone[1]
            out[pool] = (folded[0] + sum(b[0] for b in buckets.values()),
                         folded[1] + sum(b[1] for b in buckets.values()))
        return out


def other_samples(sample: Sample, now: float, stats: MonitorStats, counters: ProxyCounters,
                  inert: Inert) -> Samples:
    """Every sample that is not one of the per-credential block's, in exposition order per family."""
    out: Samples = []
    for p in sample.profiles:
        r = p.redactor
        out.append((STORE_OK, (p.name,), 0.0 if p.store_error is not None else 1.0))
        for pv in p.pools:
            pool = inert(pv.key, r)
            counts = dict.fromkeys(STATES, 0)
            first: float | None = None
            for cv in pv.credentials:
                status, at, _left = state_at(cv, now)
                counts[status] += 1
                if status == COOLING and at is not None and (first is None or at < first):
                    first = at
                if p.headroom:
                    out.extend(_headroom(p, cv, now, inert))
            out.extend((POOL_CREDS, (p.name, pool, s), float(counts[s])) for s in STATES)
            usable = counts[OK] + counts[READY]
            out.append((POOL_USABLE, (p.name, pool), float(usable)))
            if usable == 0 and first is not None:
                out.append((POOL_NEXT, (p.name, pool), first))
        for proxy in p.proxies:
            out.extend(_proxy(p, proxy, counters, inert))
    kinds: dict[tuple[str, str], int] = {}
    for f in sample.findings:
        kinds[(f.kind, f.severity)] = kinds.get((f.kind, f.severity), 0) + 1
    out.extend((FINDINGS, k, float(v)) for k, v in sorted(kinds.items()))
    out.extend((OPEN_ALERTS, (rule,), float(n)) for rule, n in sorted(stats.open_by_rule.items()))
    out.extend((DELIVERIES, (res,), float(n)) for res, n in sorted(stats.deliveries.items()))
    return out


def _headroom(p: ProfileSample, cv: CredentialView, now: float, inert: Inert) -> Samples:
    entry = p.headroom.get((cv.pool, cv.id))
    if entry is None or entry.fp != cv.fingerprint:
        return []
    out: Samples = []
    base = credential_labels(p, cv, inert)
    for r in sorted(entry.windows.values(), key=lambda x: x.window):
        if r.stale(now):
            continue     # never shown as current
        labels = base + (inert(r.window, None),)
        if r.left is not None:
            out.append((HR_RATIO, labels, r.left))
        if r.remaining is not None:
            out.append((HR_REMAINING, labels, r.remaining))
        if r.limit is not None:
            out.append((HR_LIMIT, labels, r.limit))
        if r.reset_at is not None:
            out.append((HR_RESET, labels, r.reset_at))
    return out


def figures(proxy: ProxyView) -> Figures:
    """What the proxy's own /metrics shows: the status file's figures, or (a view built without
    them) those its fields hold."""
    if proxy.figures is not None:
        return proxy.figures
    return Figures(requests_total=proxy.requests_total, errors_total=proxy.errors_total,
                   stream_failures=proxy.stream_failures, in_flight=proxy.in_flight, on_fallback=proxy.on_fallback,
                   fallback_since=proxy.on_fallback_since,
                   routes=tuple((r.name, r.active, r.usable) for r in proxy.routes))


def _proxy(p: ProfileSample, proxy: ProxyView, counters: ProxyCounters, inert: Inert) -> Samples:
    """The proxy's own samples (store.proxy.observing.metrics.samples) with profile and port; per pool, an
    older proxy's file without exact totals gives the sums of its 10 s buckets."""
    labels = (p.name, str(proxy.port))
    out: Samples = [(PROXY_UP, labels, 1.0 if proxy.live else 0.0)]
    if not proxy.live:
        return out
    f = figures(proxy)
    summed = None if f.pools is not None else [(pool, req, rl) for pool, (req, rl)
                                               in sorted(counters.totals(p.name, proxy).items())]
    for i, lv, value in proxy_metrics.samples(f, summed):
        out.append((PROXY_BASE + i, labels + tuple(inert(v, p.redactor) for v in lv), value))
    return out


def filled(families: Sequence[Family], samples: Samples) -> list[Metric]:
    out = [f.make() for f in families]
    for fi, labels, value in samples:
        proxy_metrics.add(out[fi], families[fi].kind, labels, value)
    return out


class MonitorCollector:
    """The prometheus_client collector: every family, from the latest sample, at scrape time."""

    def __init__(self, latest: Callable[[], tuple[Sample, float, MonitorStats]]) -> None:
        self.latest = latest
        self.counters = ProxyCounters()
        self.inert = Inert()

    def describe(self) -> list[Metric]:
        return [f.make() for f in CRED_FAMILIES + OTHER_FAMILIES]

    def collect(self) -> Iterator[Metric]:
        sample, now, stats = self.latest()
        creds: Samples = []
        for p in sample.profiles:
            for pv in p.pools:
                for cv in pv.credentials:
                    creds.extend(credential_samples(credential_labels(p, cv, self.inert), cv, now))
        yield from filled(CRED_FAMILIES, creds)
        yield from filled(OTHER_FAMILIES, other_samples(sample, now, stats, self.counters, self.inert))
