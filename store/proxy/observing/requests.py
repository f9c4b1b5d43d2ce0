"""The proxy's last requests and what each cost: the panel's log, the counters, the latency histograms.

Per request, on the event loop: the server begins a :class:`Trace` (:meth:`RequestLog.begin`
makes it the current one of the task serving the request); the forwarder notes on it each
wait on an upstream (:func:`upstream_begin`, :func:`upstream_end`), the verdict on each
upstream answer (:func:`judged`: the one judgement, :mod:`store.agent.judge`; nothing here
reads an answer's status or body again), which row of which route served and whether it was
the conversation's pinned key (:func:`served_by`), and the kind of an error it answered itself
(:func:`answered_as`); :meth:`RequestLog.end` keeps one line of the last :data:`LOG_SIZE` and
counts it. A line holds the time, the request id, the path, the route, pool and credential id,
the status, the latencies, the tries, the outcome, the last verdict's class (:func:`class_of`:
success, key, route, request) and kind, and ``pinned`` (a conversation's pin chose the key,
#30): never a body, a header or a query string (a key can ride in any of them), so the log has
nothing to redact. The ``answers`` counter counts every verdict by class and kind.

Costs on the request path: a few clock reads, two dict increments, two histogram
observations and one tuple appended to a bounded deque, after the answer is written
(:meth:`RequestLog.finish` stamps the end and leaves the line and the counts to the loop's
next turn, ahead of any request that arrives later, in one callback that runs first what the
relay left for after the answer, :func:`after_answer`: a success's verdict). The dicts for the status file are
built once a second (:meth:`RequestLog.snapshot`), off the request path.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from store.agent.outcomes import Verdict
from store.proxy.observing.metrics import (
    ADDED_BUCKETS,
    CONTROL,
    GATE_AVAILABLE,
    GATE_PROBE,
    OPERATOR,
    UPSTREAM_BUCKETS,
    Histogram,
)
from store.proxy.routing.steering import CONTROL_RESTORE, OPERATOR_RESTORE

log = logging.getLogger("hermes_admin.proxy")
LOG_SIZE = 50
NO_ROUTE = "none"        # the route label of an answer no route served (a refusal, everything cooling)
# Outcomes of a request the proxy relayed (others are the kind of the proxy's own error answer).
SERVED, FALLBACK, PASSED_ON, STREAM_BROKEN = "served", "fallback", "passed_on", "stream_broken"
SUCCESS_CLASS = "success"   # the class of a verdict with no fault
MAX_VERDICTS = 64           # verdicts a trace keeps (a request's tries are bounded far below)
_clock = time.perf_counter


def _as_shown(line: tuple[Any, ...]) -> dict[str, Any]:
    """One line of the log as the status file holds it (:meth:`RequestLog.recent`)."""
    at, rid, path, route, pool, row, status, total, up, tries, outcome, cls, kind, pinned = line
    return {"at": at, "rid": rid, "path": path, "route": route, "pool": pool, "id": row, "status": status,
            "ms": round(total * 1000, 3), "upstream_ms": None if up is None else round(up * 1000, 3),
            "tries": tries, "outcome": outcome, "class": cls, "kind": kind, "pinned": pinned}


def class_of(verdict: Verdict) -> str:
    """The outcome class of *verdict*: whose fault (key, route, request), or success."""
    return verdict.fault or SUCCESS_CLASS


class Trace:
    """One request as the log sees it (mutated by the hooks below, on the loop)."""

    __slots__ = ("at", "rid", "path", "t0", "kind", "tries", "upstream", "up_since", "ready", "pool", "row",
                 "route", "fallback", "verdicts", "waited", "pinned", "after")

    def __init__(self, at: float, rid: str, path: str) -> None:
        self.at, self.rid, self.path = at, rid, path
        self.t0 = _clock()
        self.kind: str | None = None
        self.tries = 0
        self.upstream = 0.0
        self.up_since = 0.0
        self.ready = 0.0
        self.pool: str | None = None
        self.row: str | None = None
        self.route: str | None = None
        self.fallback = False
        self.verdicts: list[tuple[str, str]] = []     # (class, kind) of each answer judged, in order
        self.waited = 0.0        # paced or held on purpose (#30): not the proxy's own cost
        self.pinned = False
        self.after: tuple[Callable[..., object], tuple[Any, ...]] | None = None   # see after_answer


CURRENT: ContextVar[Trace | None] = ContextVar("hermes_admin_proxy_trace", default=None)


def upstream_begin() -> None:
    """A try is sent upstream now."""
    t = CURRENT.get()
    if t is not None:
        t.tries += 1
        t.up_since = _clock()


def upstream_end(first_byte: bool = False) -> None:
    """The upstream part of the try is over (the whole answer read, or a stream's headers:
    *first_byte*, its relay starts now). Idempotent."""
    t = CURRENT.get()
    if t is not None and t.up_since:
        now = _clock()
        t.upstream += now - t.up_since
        t.up_since = 0.0
        if first_byte:
            t.ready = now


def judged(verdict: Verdict) -> None:
    """An upstream's answer was judged: *verdict* is what the log and the counters hold of it."""
    t = CURRENT.get()
    if t is not None and len(t.verdicts) < MAX_VERDICTS:
        t.verdicts.append((class_of(verdict), verdict.kind))


def served_by(pool: str, row: str, route: str, fallback: bool, pinned: bool = False) -> None:
    """The answer comes from *row* of *pool*, on *route* (a fallback one or not), *pinned*:
    chosen as the conversation's pinned key (:mod:`store.proxy.routing.pins`)."""
    t = CURRENT.get()
    if t is not None:
        t.pool, t.row, t.route, t.fallback, t.pinned = pool, row, route, fallback, pinned


def waited(seconds: float) -> None:
    """The request waited *seconds* on purpose (paced on its key, or held for a reset): kept
    out of the proxy's added latency."""
    t = CURRENT.get()
    if t is not None:
        t.waited += seconds


def after_answer(fn: Callable[..., object], *args: Any) -> bool:
    """Run *fn(*args)* in the request's one deferred callback (:meth:`RequestLog.finish`),
    after its answer is written and before its line and counts, with its trace current:
    one loop callback a request, not one for its verdict and one for its line. False: no
    request is traced here, or it has its deferred work already (the caller schedules it)."""
    t = CURRENT.get()
    if t is None or t.after is not None:
        return False
    t.after = (fn, args)
    return True


def answered_as(kind: str) -> None:
    """The proxy answers itself, with an error of *kind* (``all_credentials_cooling``...)."""
    t = CURRENT.get()
    if t is not None:
        t.kind = kind


class RequestLog:
    """The last requests, and the counters and histograms of every request (event loop only)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.lines: deque[tuple[Any, ...]] = deque(maxlen=LOG_SIZE)
        self.by_route: dict[tuple[str, int], int] = {}
        self.added = Histogram(ADDED_BUCKETS)
        self.upstream = Histogram(UPSTREAM_BUCKETS)
        self.fallbacks: dict[str, int] = {}
        self.restores: dict[str, int] = {}
        self.restore_failures = 0
        self.answers: dict[tuple[str, str], int] = {}    # (class, kind) -> upstream answers judged
        self.pending = 0      # requests answered whose line and counts are not in yet (finish, then end)
        self.loop: asyncio.AbstractEventLoop | None = None     # the server's, once started
        self._answered: list[tuple[Trace, int, float]] = []    # answered this turn: their one callback's

    def begin(self, rid: str, path: str) -> Trace:
        """A request on *path* starts: its trace is the current one from here on."""
        trace = Trace(self.clock(), rid, path)
        CURRENT.set(trace)
        return trace

    def finish(self, trace: Trace, status: int) -> None:
        """The request is answered with *status*: its end stamped now, its line and counts
        (:meth:`end`) on the loop's next turn, after the answer is written (at once when no
        loop runs here). The requests answered in one turn share that turn's one callback
        (:meth:`_end_later`), in the order they were answered. The handler's task ends with
        its answer, and its context with it: nothing here resets the current trace."""
        done = trace.ready or _clock()
        self.pending += 1
        answered = self._answered
        answered.append((trace, status, done))
        if len(answered) > 1:          # this turn's callback is scheduled already
            return
        loop = self.loop
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self._end_later()
                return
        loop.call_soon(self._end_later)

    def _end_later(self) -> None:
        """The one deferred callback of the requests answered in a turn: for each, what
        :func:`after_answer` left it (its verdict), with its trace current, then its line and
        counts (:meth:`end`)."""
        answered, self._answered = self._answered, []
        for trace, status, done in answered:
            try:
                if trace.after is not None:
                    fn, args = trace.after
                    trace.after = None
                    CURRENT.set(trace)
                    try:
                        fn(*args)
                    except Exception as exc:     # its line and counts still go in
                        log.error("request %s: deferred work failed (%s)", trace.rid, type(exc).__name__,
                                  exc_info=True)
                self._line(trace, status, done)
            except Exception as exc:      # one request's line never costs the others theirs
                log.error("request %s: its log line failed (%s)", trace.rid, type(exc).__name__, exc_info=True)
            finally:
                self.pending -= 1     # after the line is in: a reader on another thread polls for 0

    def end(self, trace: Trace, status: int, done: float | None = None) -> None:
        """The request was answered with *status* (at *done*, :func:`time.perf_counter`;
        None: now): one line, and every counter; no trace is current after it."""
        CURRENT.set(None)
        self._line(trace, status, trace.ready or _clock() if done is None else done)

    def _line(self, trace: Trace, status: int, done: float) -> None:
        """*trace*'s line and counts (in the callback of :meth:`_end_later`, whose context
        ends with it: the current trace is left as it is)."""
        total = max(0.0, done - trace.t0)
        added = max(0.0, total - trace.upstream - trace.waited)
        last = trace.verdicts[-1] if trace.verdicts else None
        if trace.kind is not None:
            outcome = trace.kind
        elif last is not None:          # relayed: the verdict on the answer relayed says what it was
            outcome = (FALLBACK if trace.fallback else SERVED) if last[0] == SUCCESS_CLASS else PASSED_ON
        else:                           # answered by the proxy itself without an error of its own
            outcome = SERVED if status < 400 else PASSED_ON
        for judged_as in trace.verdicts:
            self.answers[judged_as] = self.answers.get(judged_as, 0) + 1
        route = trace.route or NO_ROUTE
        key = (route, status)
        self.by_route[key] = self.by_route.get(key, 0) + 1
        self.added.observe(added)
        if trace.tries:
            self.upstream.observe(trace.upstream)
        self.lines.append((trace.at, trace.rid, trace.path, trace.route, trace.pool, trace.row, status,
                           total, trace.upstream if trace.tries else None, trace.tries, outcome,
                           last[0] if last else None, last[1] if last else None, trace.pinned))

    def noticed(self, kind: str, text: str, active: str | None = None) -> None:
        """Count a chain notice: a fallback (by the route it moved to), a restore (by trigger),
        a restore a probe vouched for that failed."""
        if kind == "fallback":
            route = text.rpartition("falling back to ")[2] or active or NO_ROUTE
            self.fallbacks[route] = self.fallbacks.get(route, 0) + 1
        elif kind in ("restore", OPERATOR_RESTORE, CONTROL_RESTORE):
            trigger = {OPERATOR_RESTORE: OPERATOR, CONTROL_RESTORE: CONTROL}.get(
                kind, GATE_PROBE if "(probe)" in text else GATE_AVAILABLE)
            self.restores[trigger] = self.restores.get(trigger, 0) + 1
        elif kind == "restore_failed":
            self.restore_failures += 1

    def recent(self) -> list[dict[str, Any]]:
        """The last requests, oldest first, as the status file holds them (fresh dicts: the
        status file keeps the last document it wrote to compare the next with)."""
        return [_as_shown(line) for line in self.lines]

    def snapshot(self) -> dict[str, Any]:
        """The status file's ``recent_requests``, ``counters`` and ``latency``."""
        return {
            "recent_requests": self.recent(),
            "counters": {"route_requests": [{"route": r, "code": c, "n": n}
                                            for (r, c), n in sorted(self.by_route.items())],
                         "fallbacks": dict(self.fallbacks), "restores": dict(self.restores),
                         "restore_failures": self.restore_failures,
                         "answers": [{"class": c, "kind": k, "n": n} for (c, k), n in sorted(self.answers.items())]},
            "latency": {"added_seconds": self.added.snapshot(), "upstream_seconds": self.upstream.snapshot()},
        }
