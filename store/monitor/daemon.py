"""The monitor daemon: the watchers in, metrics and alerts out, nothing done while idle.

One asyncio loop owns everything but the store watcher, which runs on a thread
(``store.watch.home.follow`` for a home, ``store.profiles.live.follow_root`` for a root, the same
inotify path as the console) and hands each state to the loop. An evaluation runs when the
watcher reports a write, and otherwise only when the clock alone can change a condition (the
next cooldown end, a held-back recovery, a threshold). Two bounded follow-ups exist, both
started by activity and never while idle: one evaluation :data:`HEADROOM_SETTLE` after a write
(the headroom sidecar is written behind, after the store), and one every :data:`PROXY_TICK`
while a proxy on a followed home is live (its status file changes every second; the
watchers follow only the store's own files).

The metrics server is aiohttp on the loop (no thread that wakes to poll); ``/metrics`` passes
the proxy's inbound-auth rule (:func:`store.proxy.edge.inbound.gate_for`) and serves
:class:`store.monitor.metrics.Exposition`. Deliveries run per target, concurrently with a bound
(:mod:`store.monitor.dispatch`); what is still owed when the monitor stops is kept in its
status file and sent by the next run (:mod:`store.monitor.pending`).
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from store.errors import BadInput, HermesAdminError
from store.monitor import budget, pending, status
from store.monitor.alerts import AlertBook, Notification
from store.monitor.burn import BurnHistory
from store.monitor.conditions import Condition
from store.monitor.delivery import Deliverer, Delivery, Target, apprise_send
from store.monitor.dispatch import Dispatcher
from store.monitor.exposition import Exposition
from store.monitor.judge import evaluate
from store.monitor.metrics import MonitorCollector, MonitorStats
from store.monitor.rules import BUDGET, LOW_HEADROOM, PROXY_FALLBACK, Rules
from store.monitor.sample import ProfileSample, Sample, SideFiles
from store.monitor.spend import Spend
from store.paths import Home, profile_name
from store.profiles.findings import Finding
from store.profiles.live import follow_root
from store.profiles.root import Root
from store.proxy.edge.inbound import Gate
from store.redaction import crash
from store.redaction.redact import HomeSecrets, Redactor, escape_controls, merged
from store.watch.home import HomeState, follow
from store.watch.loop import StopFlag

HEADROOM_SETTLE = 1.5
PROXY_TICK = 2.0
SPEND_TICK = 30.0
DRAIN_TIMEOUT = 10.0
Log = Callable[[str], None]


class MonitorError(HermesAdminError):
    """The monitor cannot start here (exit 3): its port is taken, or another monitor runs."""

    exit_code = 3


@dataclass
class _Profile:
    name: str
    state: HomeState
    secrets: HomeSecrets = field(default_factory=HomeSecrets)
    redactor: Redactor | None = None


class Monitor:
    """One monitor over one home or one root. :meth:`start`, then :meth:`stop`, on one loop."""

    def __init__(self, *, rules: Rules, gate: Gate, home: Home | None = None, root: Root | None = None,
                 metrics: tuple[str, int] | None = None, targets: list[Target] | None = None,
                 clock: Callable[[], float] = time.time, log: Log | None = None, backoff: float = 1.0,
                 send: Callable[..., Any] = apprise_send) -> None:
        if (home is None) == (root is None):
            raise ValueError("a monitor follows one home or one root")
        self.home, self.root, self.rules, self.gate = home, root, rules, gate
        self.status_home = home if home is not None else Home(root.path)   # type: ignore[union-attr]
        self.metrics_at = metrics
        self.targets = list(targets or [])
        self.clock = clock
        self.log = log or (lambda _m: None)
        self.book = AlertBook(rules.quiet_period)
        self.stats = MonitorStats()
        self.side = SideFiles()
        self.deliveries: list[Delivery] = []
        self.evaluations = 0
        self.generation = 0
        self.metrics_url: str | None = None
        self.started_at = clock()
        self._profiles: dict[str, _Profile] = {}
        self._findings: list[Finding] = []
        self._redactor: Redactor = Redactor()
        self._stop = StopFlag()
        self._deliver_stop = threading.Event()
        self._deliverer = Deliverer(self.targets, retries=rules.retries, redactor=lambda _n: self._redactor,
                                    audit_home=self._audit_home, stop=self._deliver_stop, clock=clock,
                                    backoff=backoff, send=send)
        self._dispatch = Dispatcher(self._deliverer, self.targets, self._delivered, self.log)
        self._owed: list[tuple[Notification, str]] = []
        self.burn = BurnHistory()
        self.spend_tick = SPEND_TICK
        self._noted: set[str] = set()
        self._collector = MonitorCollector(self._latest)
        self.exposition = Exposition(self._collector)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._settle_at: float | None = None
        self._started = False
        self._stopped = False
        self._runner: web.AppRunner | None = None
        self._watcher: threading.Thread | None = None
        self._open_keys: set[str] = set()

    # -- start and stop --

    async def start(self) -> None:
        """Bind the metrics port, take over a previous run's open alerts, start watching."""
        self._loop = asyncio.get_running_loop()
        # A callback or task that raises is said through the log, redacted with the homes'
        # secrets as last read (asyncio's default would print its traceback as it is).
        self._loop.set_exception_handler(crash.loop_handler(self.log, self.redactor))
        previous = status.read(self.status_home)
        if status.is_running(previous) and previous is not None and previous.get("pid") != os.getpid():
            raise MonitorError(f"{status.status_path(self.status_home)}: a monitor already runs on "
                               f"{self.status_home.root} (pid {previous.get('pid')}); stop it first")
        if self.metrics_at is not None:
            await self._serve(*self.metrics_at)
        self.book.seed(_open_from(previous))
        self._open_keys = set(self.book.open)
        self._dispatch.start()
        self._started = True
        lost = [shown for n, shown in pending.taken_over(previous) if not self._dispatch.put_for(n, shown)]
        if lost:
            self.log(f"{len(lost)} alert(s) a previous run still owed to target(s) no longer given were dropped")
        self._write_status()
        self._watcher = threading.Thread(target=self._watch, name="monitor-watch", daemon=True)
        self._watcher.start()

    async def _serve(self, host: str, port: int) -> None:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/", self._index)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, host, port, reuse_address=False).start()
        except OSError as exc:
            await self._runner.cleanup()
            self._runner = None
            if exc.errno == errno.EADDRINUSE:
                raise MonitorError(f"--metrics {host}:{port}: port {port} is already in use on {host}") from None
            raise BadInput("--metrics", f"{host}:{port}: cannot listen there ({exc.strerror or exc})") from None
        bound = self._runner.addresses[0]
        shown = f"[{host}]" if ":" in host else host
        self.metrics_url = f"http://{shown}:{bound[1]}/metrics"

    async def stop(self, drain_timeout: float = DRAIN_TIMEOUT) -> None:
        """Stop watching, let queued deliveries finish (bounded), keep what is still owed in the
        status file, say so there. A second call does nothing."""
        if self._stopped:
            return
        self._stopped = True
        self._stop.set()
        if self._timer is not None:
            self._timer.cancel()
        if self._started:
            self._owed = await self._dispatch.drain(drain_timeout)
            self._deliver_stop.set()
            if self._owed:
                self.log(f"stopping with {len(self._owed)} alert(s) undelivered: kept in the status file, "
                         f"sent by the next run")
        if self._runner is not None:
            await self._runner.cleanup()
        if self._watcher is not None:
            await asyncio.to_thread(self._watcher.join, 2.0)
        self._write_status("stopped")

    def idle(self) -> bool:
        """Nothing evaluated, queued or being delivered right now (tests wait on it)."""
        return (self._started and self._dispatch.idle()
                and (self._timer is None or self._timer_at is None or self._timer_at > self.clock() + 0.05))

    # -- the watcher thread --

    def _watch(self) -> None:
        assert self._loop is not None
        post = self._loop.call_soon_threadsafe
        while not self._stop.is_set():
            try:
                if self.root is not None:
                    for rs in follow_root(self.root, self._stop, clock=self.clock):
                        post(self._on_root, rs.states, rs.findings)
                else:
                    assert self.home is not None
                    for hs in follow(self.home, self._stop, clock=self.clock):
                        post(self._on_root, {profile_name(hs.home.root): hs}, [])
                return
            except Exception as exc:  # the one place the watcher's failures surface
                post(self.log, f"watcher: {type(exc).__name__}: {escape_controls(exc)}")
                self._stop.wait(1.0)

    # -- on the loop --

    def _on_root(self, states: dict[str, HomeState], findings: list[Finding]) -> None:
        for name in [n for n in self._profiles if n not in states]:
            del self._profiles[name]
        for name, st in states.items():
            prof = self._profiles.get(name)
            if prof is None:
                prof = self._profiles[name] = _Profile(name, st)
            if prof.redactor is None or prof.state is not st:
                prof.state = st
                data = st.config.data if st.config is not None else None
                prof.redactor = prof.secrets.redactor(st.doc, data, st.env)
        self._findings = list(findings)
        parts = [p.redactor for p in self._profiles.values() if p.redactor is not None]
        self._redactor = parts[0] if len(parts) == 1 else merged(parts)
        self.side.forget({str(p.state.home.root) for p in self._profiles.values()})
        self.generation += 1
        if self.rules[LOW_HEADROOM].enabled:
            self._settle_at = self.clock() + HEADROOM_SETTLE
        self._schedule(self.clock())

    def _schedule(self, at: float | None) -> None:
        if at is None or self._loop is None or self._stop.is_set():
            return
        if self._timer is not None and self._timer_at is not None and self._timer_at <= at \
                and not self._timer.cancelled():
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = at
        self._timer = self._loop.call_later(max(0.0, at - self.clock()), self._evaluate)

    def sample(self, now: float, *, spend: bool = True) -> Sample:
        """The latest state of every followed home, with their side files read now (and, with
        *spend*, the usage ledger for the homes' budgets; a scrape does not need it)."""
        profiles = []
        spent_of = Spend(now)
        for p in self._profiles.values():
            notes: list[str] = []
            st = p.state
            budgets = self.side.budgets(st.home, notes) if spend and self.rules[BUDGET].enabled else {}
            spent = budget.gather(st.home, budgets, st.pools, spent_of) if budgets else {}
            notes += [n for n in spent_of.notes if n not in notes and str(st.home.root) in n]
            profiles.append(ProfileSample(p.name, st.home, st.pools, st.store_error, st.read_at,
                                          self.side.headroom(st.home, now, notes),
                                          self.side.proxies(st.home, now, notes), tuple(notes), p.redactor,
                                          store_linked=st.store_linked, budgets=budgets, spend=spent))
        return Sample(profiles, self._findings, self.generation, root=self.root is not None)

    def _latest(self) -> tuple[Sample, float, MonitorStats]:
        now = self.clock()
        return self.sample(now, spend=False), now, self.stats

    def _evaluate(self) -> None:
        self._timer = self._timer_at = None
        if self._stop.is_set() or not self._profiles:
            return
        crash.crash_for_tests("monitor", self._a_token)
        now = self.clock()
        sample = self.sample(now)
        for p in sample.profiles:
            self.burn.observe(p.name, p.headroom)
            for note in p.notes:
                if note not in self._noted and len(self._noted) < 1000:
                    self._noted.add(note)
                    self.log(f"notice: {escape_controls(self._redactor.redact(note))}")
        self.burn.forget({p.name for p in sample.profiles})
        ev = evaluate(sample, self.rules, now, self.burn)
        sent = self.book.update(ev.conditions, now)
        self.evaluations += 1
        by_rule: dict[str, int] = {}
        for alert in self.book.open.values():
            by_rule[alert.condition.rule] = by_rule.get(alert.condition.rule, 0) + 1
        self.stats.open_by_rule = by_rule
        for n in sent:
            self.log(f"alert {n.kind}: {escape_controls(self._redactor.redact(n.title))}")
            self._dispatch.put(n)
        if sent or set(self.book.open) != self._open_keys:
            self._open_keys = set(self.book.open)
            self._write_status()
        nxt = [t for t in (ev.next_change, self.book.next_due()) if t is not None]
        if self._settle_at is not None:
            if self._settle_at > now:
                nxt.append(self._settle_at)
            else:
                self._settle_at = None
        if self.rules[PROXY_FALLBACK].enabled and any(px.live for p in sample.profiles for px in p.proxies):
            nxt.append(now + PROXY_TICK)
        if any(p.budgets for p in sample.profiles):
            nxt.append(now + self.spend_tick)    # the ledger is written behind, by other processes
        if nxt:
            self._schedule(min(nxt))

    def _delivered(self, d: Delivery) -> None:
        """One delivery's outcome (on the loop): counted, logged, kept for the status file."""
        self.stats.deliveries[d.result] = self.stats.deliveries.get(d.result, 0) + 1
        note = f" ({d.error})" if d.error else ""
        self.log(f"{d.kind} {d.result} to {d.target} after {d.attempts} attempt(s){note}")
        if d.audit_error:
            self.log(d.audit_error)
        self.deliveries = (self.deliveries + [d])[-status.KEEP_DELIVERIES:]
        self._write_status()

    def redactor(self) -> Redactor:
        """The redactor of every followed home as last read (its log and tracebacks pass it)."""
        return self._redactor

    def _a_token(self) -> object:
        rows = [r for p in self._profiles.values() for pv in p.state.pools for r in (cv.row for cv in pv.credentials)]
        return next((r.get("access_token") for r in reversed(rows) if r.get("access_token")), None)

    def _audit_home(self, n: Notification) -> Home:
        prof = self._profiles.get(n.condition.profile)
        return prof.state.home if prof is not None else self.status_home

    # -- the metrics endpoint --

    async def _metrics(self, request: web.Request) -> web.Response:
        if not self.gate.allows(request.headers.get("Authorization")):
            return web.Response(status=401, text="a valid bearer token is required (Authorization: Bearer ...)\n")
        body = self.exposition.render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4})

    async def _index(self, _request: web.Request) -> web.Response:
        return web.Response(text="hermes-admin monitor: metrics at /metrics\n")

    # -- the status file --

    def _write_status(self, state: str = "running") -> None:
        red = self._redactor

        def clean(d: dict[str, Any]) -> dict[str, Any]:
            return {k: escape_controls(red.redact(v)) if isinstance(v, str) else v for k, v in d.items()}

        doc = {"version": status.VERSION, "pid": os.getpid(), "host": socket.gethostname(), "state": state,
               "started_at": self.started_at, "updated_at": self.clock(),
               "mode": "root" if self.root is not None else "home", "path": str(self.status_home.root),
               "metrics": self.metrics_url, "rules": self.rules.source,
               "targets": [escape_controls(red.redact(t.shown)) for t in self.targets],
               "open_alerts": [clean({**a.condition.to_json(), "since": a.since}) for a in self.book.open.values()],
               "last_deliveries": [clean(d.to_json()) for d in self.deliveries]}
        owed, dropped = pending.bounded(self._owed if state == "stopped" else ())
        doc["pending"] = [{**e, "targets": [escape_controls(red.redact(t)) for t in e["targets"]],
                           "condition": clean(e["condition"])} for e in owed]
        doc["pending_dropped"] = dropped
        try:
            status.write(self.status_home, doc)
        except HermesAdminError as exc:
            self.log(f"status file not written: {exc}")


def _open_from(previous: dict[str, Any] | None) -> list[tuple[Condition, float]]:
    """The open alerts a stopped monitor left in its status file (checked like any outside file)."""
    out = []
    for a in (previous or {}).get("open_alerts") or []:
        cond = pending.condition_of(a)
        since = a.get("since") if isinstance(a, dict) else None
        if cond is None or isinstance(since, bool) or not isinstance(since, (int, float)):
            continue
        out.append((cond, float(since)))
    return out
