"""The proxy's Prometheus metrics: one definition for its own ``/metrics`` and the monitor's.

Both are built from the same document, the proxy's status (:meth:`ProxyServer.status`, the
dict it writes to ``hermes-admin-proxy-<port>.json`` every second): the proxy renders it at
scrape time, the monitor reads the file. :func:`figures_of` checks that document once
(every number finite and bounded, every text short and printable: the monitor reads a file
another process wrote), :func:`samples` turns the figures into samples of :data:`SPECS`,
so the two agree by construction; the monitor adds its ``profile`` and ``port`` labels (and
``hermes_admin_proxy_up``), the proxy none (Prometheus adds ``instance``).

On the request path nothing is built: counters are plain ints in memory and each histogram
(:class:`Histogram`) is observed once per request (a bisect and two additions); the text is
made by prometheus_client's ``generate_latest`` when ``/metrics`` is asked for.

Pure, but for prometheus_client (and the aiohttp answer that carries it); no IO.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.utils import floatToGoString

from store import outside

METRICS_PATH = "/metrics"
ADDED_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
UPSTREAM_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
MAX_SERIES = 512          # per family from one status file: more is not one of ours
# Restore triggers (label ``trigger`` of the restores counter).
GATE_AVAILABLE, GATE_PROBE, OPERATOR, CONTROL = "available", "probe", "operator_reset", "control"


class Histogram:
    """Counts per bucket (not cumulative), their sum and count; observed on the event loop."""

    __slots__ = ("bounds", "counts", "sum", "count")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)     # the last one: above every bound (+Inf)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1

    def snapshot(self) -> dict[str, Any]:
        """For the status file: the bounds, the cumulative count at each and at +Inf."""
        total, cumulative = 0, []
        for n in self.counts:
            total += n
            cumulative.append(total)
        return {"le": list(self.bounds), "counts": cumulative, "sum": self.sum, "count": self.count}


@dataclass(frozen=True)
class Histo:
    """A histogram as read back: cumulative counts per bound, the last one at +Inf."""

    le: tuple[float, ...]
    counts: tuple[int, ...]
    sum: float

    def buckets(self) -> list[tuple[str, float]]:
        names = [_le(b) for b in self.le] + ["+Inf"]
        return [(n, float(c)) for n, c in zip(names, self.counts, strict=True)]


def _le(bound: float) -> str:
    return floatToGoString(bound)     # as prometheus_client's own Histogram names its buckets


@dataclass(frozen=True)
class Spec:
    """One metric: its name (a counter's without ``_total``), type, help and label names."""

    name: str
    kind: str          # counter | gauge | histogram
    help: str
    labels: tuple[str, ...] = ()

    def make(self, prefix: tuple[str, ...] = ()) -> Metric:
        labels = list(prefix + self.labels)
        if self.kind == "counter":
            return CounterMetricFamily(self.name, self.help, labels=labels)
        if self.kind == "histogram":
            return HistogramMetricFamily(self.name, self.help, labels=labels)
        return GaugeMetricFamily(self.name, self.help, labels=labels)


SPECS = (
    Spec("hermes_admin_proxy_requests", "counter", "Requests the proxy sent upstream since it started (every try)"),
    Spec("hermes_admin_proxy_errors", "counter", "Requests the proxy answered with an error of its own"),
    Spec("hermes_admin_proxy_stream_failures", "counter", "Streams that broke after they started"),
    Spec("hermes_admin_proxy_in_flight", "gauge", "Requests in flight in the proxy"),
    Spec("hermes_admin_proxy_on_fallback", "gauge", "1 while the proxy serves from a fallback route"),
    Spec("hermes_admin_proxy_fallback_since_timestamp_seconds", "gauge",
         "Since when the proxy is on a fallback route"),
    Spec("hermes_admin_proxy_active_route", "gauge", "1 for the route the proxy serves from now, 0 for the others",
         ("route",)),
    Spec("hermes_admin_proxy_route_usable_credentials", "gauge",
         "Usable credentials of each route of the proxy's chain", ("route",)),
    Spec("hermes_admin_proxy_pool_requests", "counter", "Requests the proxy sent to each pool", ("pool",)),
    Spec("hermes_admin_proxy_pool_rate_limited", "counter",
         "Answers from each pool whose verdict is a rate limit (the key's or the upstream's)", ("pool",)),
    Spec("hermes_admin_proxy_route_requests", "counter",
         "Client requests answered, by the route that served (none: answered by the proxy itself) and HTTP "
         "status", ("route", "code")),
    Spec("hermes_admin_proxy_fallbacks", "counter", "Times the chain moved down to a fallback route, by that route",
         ("route",)),
    Spec("hermes_admin_proxy_restores", "counter",
         "Times the chain went back to its primary, by trigger (available, probe, operator_reset, control)",
         ("trigger",)),
    Spec("hermes_admin_proxy_restore_failures", "counter",
         "Restores a reopen probe vouched for that the primary then refused"),
    Spec("hermes_admin_proxy_added_latency_seconds", "histogram",
         "The proxy's own time on a request: to its answer (a stream: to its first byte), less the upstream's"),
    Spec("hermes_admin_proxy_upstream_latency_seconds", "histogram",
         "Time waiting on upstreams for a request: every try, to the whole answer (a stream: to its headers)"),
    Spec("hermes_admin_proxy_pinned_route", "gauge", "1 for the route an operator pinned the proxy to (proxy pin)",
         ("route",)),
    Spec("hermes_admin_proxy_answers", "counter",
         "Upstream answers by their one verdict: class (success, key, route, request: whose fault) and kind",
         ("class", "kind")),
    Spec("hermes_admin_credential_tokens", "counter",
         "Tokens each credential's answers reported through the proxy, by kind (input counts cached tokens)",
         ("pool", "credential", "kind")),
    Spec("hermes_admin_credential_cost_usd", "counter",
         "USD each credential's answers cost through the proxy, by how the cost is known (actual, estimated)",
         ("pool", "credential", "status")),
)
(REQ, ERR, STREAM, FLIGHT, FALLBACK, SINCE, ACTIVE, USABLE, POOL_REQ, POOL_429, ROUTE_REQ, FALLBACKS, RESTORES,
 RESTORE_FAILED, ADDED, UPSTREAM, PINNED, ANSWERS, TOKENS, COST) = range(len(SPECS))
TOKEN_FIELDS = (("input", "input_tokens"), ("output", "output_tokens"), ("cache_read", "cache_read_tokens"),
                ("cache_write", "cache_write_tokens"), ("reasoning", "reasoning_tokens"))


class UsageCounters:
    """The two per-credential counters, a listener of the proxy's usage feed
    (:class:`store.usage.feed.UsageFeed`, on its thread); the credential is the row id,
    never a secret. :meth:`snapshot` is the status document's ``usage_totals``.

    Per answer: one lookup of the credential's five token sums (a list, a kind None until
    it first counts) and one of its cost; the ``[pool, credential, kind, n]`` entries are
    made at :meth:`snapshot`, each kind in the order it first counted."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], list[int | None]] = {}     # (pool, credential) -> sums by kind
        self._order: list[tuple[str, str, str, list[int | None], int]] = []   # each kind as it first counted
        self.cost: dict[tuple[str, str, str], float] = {}

    def __call__(self, spent: Any) -> None:
        key = (spent.pool, spent.row_id or "-")
        sums = self._tokens.get(key)
        if sums is None:
            sums = self._tokens[key] = [None, None, None, None, None]
        for i, n in enumerate((spent.input_tokens, spent.output_tokens, spent.cache_read_tokens,
                               spent.cache_write_tokens, spent.reasoning_tokens)):
            if n:
                was = sums[i]
                sums[i] = n if was is None else was + n
                if was is None:        # listed after its sum is set: a snapshot never sees None
                    self._order.append((key[0], key[1], TOKEN_FIELDS[i][0], sums, i))
        usd = spent.cost_usd
        if usd is not None:
            ck = (key[0], key[1], spent.cost_status)
            self.cost[ck] = self.cost.get(ck, 0.0) + usd

    @property
    def tokens(self) -> dict[tuple[str, str, str], int]:
        """Tokens by (pool, credential, kind), each kind that counted."""
        return {(pool, cred, kind): sums[i] for pool, cred, kind, sums, i in self._order[:]}   # type: ignore[misc]

    def snapshot(self) -> dict[str, Any]:
        order, cost = self._order[:MAX_SERIES * 8], list(self.cost.items())     # one C call each: no lock
        return {"tokens": [[pool, cred, kind, sums[i]] for pool, cred, kind, sums, i in order],
                "cost_usd": [[*k, v] for k, v in cost[:MAX_SERIES * 4]]}

Sample = tuple[int, tuple[str, ...], Any]     # (spec index, label values, value or Histo)


@dataclass(frozen=True)
class Figures:
    """What one status document says, checked (see :func:`figures_of`)."""

    requests_total: int = 0
    errors_total: int = 0
    stream_failures: int = 0
    in_flight: int = 0
    on_fallback: bool = False
    fallback_since: float | None = None
    routes: tuple[tuple[str, bool, int], ...] = ()          # name, active, usable
    pools: tuple[tuple[str, int, int], ...] | None = None   # exact totals; None: an older proxy's file
    route_requests: tuple[tuple[str, str, int], ...] = ()
    fallbacks: tuple[tuple[str, int], ...] = ()
    restores: tuple[tuple[str, int], ...] = ()
    restore_failures: int = 0
    added: Histo | None = None
    upstream: Histo | None = None
    pinned: str | None = None
    answers: tuple[tuple[str, str, int], ...] = ()          # verdict class, kind, count
    tokens: tuple[tuple[str, str, str, float], ...] = ()
    cost: tuple[tuple[str, str, str, float], ...] = ()


def _usage(node: Any, key: str, cap: int) -> tuple[tuple[str, str, str, float], ...]:
    """``usage_totals`` entries ``[pool, credential, kind|status, value]``, checked."""
    got = node.get(key) if isinstance(node, Mapping) else None
    out = []
    for e in (got if isinstance(got, list) else [])[:cap]:
        if isinstance(e, list) and len(e) == 4 and all(_text(x) for x in e[:3]):
            v = outside.number(e[3], "proxy usage total", lo=0.0, hi=float(outside.MAX_COUNT) * 1000)
            if v is not None:
                out.append((e[0], e[1], e[2], v))
    return tuple(sorted(out))


def _text(v: Any, limit: int = 200) -> str | None:
    return v if isinstance(v, str) and 0 < len(v) <= limit and v.isprintable() else None


def _count(v: Any, what: str) -> int:
    return outside.count(v, what) or 0


def _pairs(node: Any, what: str) -> tuple[tuple[str, int], ...]:
    if not isinstance(node, Mapping):
        return ()
    out = [(k, _count(v, what)) for k, v in list(node.items())[:MAX_SERIES] if _text(k)]
    return tuple(sorted(out))


def _histo(node: Any) -> Histo | None:
    """A histogram from the status file, or None unless every part is sane: finite increasing
    bounds, as many cumulative counts plus one, never decreasing, and a finite sum."""
    if not isinstance(node, Mapping):
        return None
    le, counts, total = node.get("le"), node.get("counts"), node.get("sum")
    if not isinstance(le, list) or not isinstance(counts, list) or len(counts) != len(le) + 1 or len(le) > 64:
        return None
    if not all(isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b) for b in le):
        return None
    if any(b >= c for b, c in zip(le, le[1:], strict=False)):
        return None
    got = [outside.count(c, "proxy histogram count") for c in counts]
    if any(c is None for c in got) or any(a > b for a, b in zip(got, got[1:], strict=False)):  # type: ignore[operator]
        return None
    if not isinstance(total, (int, float)) or isinstance(total, bool) or not math.isfinite(total) or total < 0:
        return None
    return Histo(tuple(float(b) for b in le), tuple(int(c) for c in got if c is not None), float(total))


def figures_of(st: Mapping[str, Any], now: float) -> Figures:
    """The checked figures of one status document (the proxy's own, or a file read back)."""
    counters = st.get("counters") if isinstance(st.get("counters"), Mapping) else {}
    latency = st.get("latency") if isinstance(st.get("latency"), Mapping) else {}
    routes = []
    for r in (st.get("chain") if isinstance(st.get("chain"), list) else [])[:MAX_SERIES]:
        if isinstance(r, Mapping) and _text(r.get("name")):
            routes.append((r["name"], r.get("active") is True, _count(r.get("usable"), "proxy usable count")))
    pools = None
    totals = st.get("pool_totals")
    if isinstance(totals, Mapping):
        pools = tuple(sorted((k, _count(v.get("requests"), "proxy pool count"),
                              _count(v.get("rate_limited"), "proxy pool count"))
                             for k, v in list(totals.items())[:MAX_SERIES] if _text(k) and isinstance(v, Mapping)))
    by_code = []
    for e in (counters.get("route_requests") if isinstance(counters.get("route_requests"), list) else [])[:MAX_SERIES]:
        if isinstance(e, Mapping) and _text(e.get("route")) and _text(str(e.get("code")), 3):
            by_code.append((e["route"], str(e.get("code")), _count(e.get("n"), "proxy request count")))
    answers = []
    for e in (counters.get("answers") if isinstance(counters.get("answers"), list) else [])[:MAX_SERIES]:
        if isinstance(e, Mapping) and _text(e.get("class"), 16) and _text(e.get("kind"), 64):
            answers.append((e["class"], e["kind"], _count(e.get("n"), "proxy answer count")))
    primary, active = _text(st.get("primary")), _text(st.get("active"))
    return Figures(
        requests_total=_count(st.get("requests_total"), "proxy count"),
        errors_total=_count(st.get("errors_total"), "proxy count"),
        stream_failures=_count(st.get("stream_failures"), "proxy count"),
        in_flight=_count(st.get("in_flight"), "proxy count"),
        on_fallback=primary is not None and active is not None and primary != active,
        fallback_since=outside.epoch(st.get("on_fallback_since"), "proxy on_fallback_since", now=now),
        routes=tuple(routes), pools=pools, route_requests=tuple(sorted(by_code)),
        fallbacks=_pairs(counters.get("fallbacks"), "proxy fallbacks"),
        restores=_pairs(counters.get("restores"), "proxy restores"),
        restore_failures=_count(counters.get("restore_failures"), "proxy count"),
        added=_histo(latency.get("added_seconds")), upstream=_histo(latency.get("upstream_seconds")),
        pinned=_text(st.get("pinned")), answers=tuple(sorted(answers)),
        tokens=_usage(st.get("usage_totals"), "tokens", MAX_SERIES * 8),
        cost=_usage(st.get("usage_totals"), "cost_usd", MAX_SERIES * 4))


def samples(f: Figures, pools: Iterable[tuple[str, int, int]] | None = None) -> list[Sample]:
    """The samples of :data:`SPECS` that *f* holds; *pools*: per-pool totals to use when the
    file has none (the monitor sums an older proxy's 10 s buckets)."""
    out: list[Sample] = [(REQ, (), float(f.requests_total)), (ERR, (), float(f.errors_total)),
                         (STREAM, (), float(f.stream_failures)), (FLIGHT, (), float(f.in_flight)),
                         (FALLBACK, (), 1.0 if f.on_fallback else 0.0)]
    if f.on_fallback and f.fallback_since is not None:
        out.append((SINCE, (), f.fallback_since))
    for name, active, usable in f.routes:
        out.append((ACTIVE, (name,), 1.0 if active else 0.0))
        out.append((USABLE, (name,), float(usable)))
    for pool, req, limited in (f.pools if f.pools is not None else (pools or ())):
        out.append((POOL_REQ, (pool,), float(req)))
        out.append((POOL_429, (pool,), float(limited)))
    out.extend((ROUTE_REQ, (route, code), float(n)) for route, code, n in f.route_requests)
    out.extend((FALLBACKS, (route,), float(n)) for route, n in f.fallbacks)
    out.extend((RESTORES, (trigger,), float(n)) for trigger, n in f.restores)
    out.append((RESTORE_FAILED, (), float(f.restore_failures)))
    if f.added is not None:
        out.append((ADDED, (), f.added))
    if f.upstream is not None:
        out.append((UPSTREAM, (), f.upstream))
    if f.pinned is not None:
        out.append((PINNED, (f.pinned,), 1.0))
    out.extend((ANSWERS, (cls, kind), float(n)) for cls, kind, n in f.answers)
    out.extend((TOKENS, (pool, cred, kind), float(n)) for pool, cred, kind, n in f.tokens)
    out.extend((COST, (pool, cred, status), usd) for pool, cred, status, usd in f.cost)
    return out


def add(metric: Metric, kind: str, labels: Sequence[str], value: Any) -> None:
    """One sample into its family (a histogram's value is a :class:`Histo`)."""
    if kind == "histogram":
        metric.add_metric(list(labels), buckets=value.buckets(), sum_value=value.sum)  # type: ignore[call-arg]
    else:
        metric.add_metric(list(labels), value)


class _Families:
    """A collector of families already built (what generate_latest takes)."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> list[Metric]:
        return self.families


def exposition(status: Mapping[str, Any], now: float) -> bytes:
    """The proxy's own ``/metrics`` text for *status* (built at scrape time)."""
    families = [s.make() for s in SPECS]
    for i, labels, value in samples(figures_of(status, now)):
        add(families[i], SPECS[i].kind, labels, value)
    return generate_latest(_Families(families))  # type: ignore[arg-type]


def metrics_response(status: Mapping[str, Any], now: float) -> web.Response:
    """``/metrics``: the exposition of *status*, with prometheus_client's content type."""
    return web.Response(body=exposition(status, now), headers={"Content-Type": CONTENT_TYPE_LATEST})
