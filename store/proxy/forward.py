"""One client request's way through the chain: pick a row, send it upstream, judge the
answer, and relay it or try again.

Every failure is judged once (:func:`store.agent.outcomes.classify`, RELIABILITY 31-33):

- the **key's** fault goes to the agent's rules off the loop (:meth:`Chain.outcome`: a
  bench in the view at once, then in the store); the next row is never one this request
  already failed on; a store that cannot record it (a lock held, an unreadable file)
  keeps the bench in memory and another key still serves;
- the **route's** fault writes nothing: the upstream's breaker takes a strike (or opens),
  another key is tried once where that may help, then the next route; when nothing else
  can serve, the client gets the last upstream answer or a 502/504 that says so;
- the **request's** fault: the client gets the provider's answer as it came.

A key's rate limit on a pinned conversation may be waited out on the same key
(:mod:`store.proxy.routing.pace`); when no key can serve, the request may wait for the
soonest reset instead of a 503 (:mod:`store.proxy.routing.hold`, ``proxy.hold``).

Relayed answers carry no key (:mod:`store.proxy.edge.wire`), redirects are returned as they
came (never followed: a 307 elsewhere never sees the prompt or the key), a 2xx is relayed
as it arrives (:mod:`store.proxy.edge.relay`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, replace
from types import EllipsisType
from typing import Any

import aiohttp
from aiohttp import web

from store.agent.judge import endpoint_of, judge_success
from store.agent.outcomes import (
    FAILED,
    MALFORMED,
    OUT,
    REQUEST,
    RETRY,
    ROTATED,
    ROUTE,
    TIMEOUT,
    Decision,
    Result,
    Verdict,
)
from store.dialects.dialect import Credential
from store.dialects.registry import dialect_for
from store.proxy.edge.answers import Answers
from store.proxy.edge.coding import codings
from store.proxy.edge.redacting import ProxySecrets
from store.proxy.edge.relay import Relay
from store.proxy.edge.upstream import Reads, open_session
from store.proxy.edge.wire import (
    DROP_REQUEST,
    ERROR_CAP,
    Answer,
    UpstreamUrls,
    kept,
    plain,
    raw_query,
    result_of,
    transport_kind,
    with_model,
)
from store.proxy.observing import requests as trace
from store.proxy.observing.report import reopen_times
from store.proxy.observing.spend import Spend
from store.proxy.observing.stats import Stats
from store.proxy.offloop import run_blocking
from store.proxy.routing.affinity import Conversation
from store.proxy.routing.attempt import Attempt
from store.proxy.routing.chain import Chain
from store.proxy.routing.hold import Hold
from store.proxy.routing.pace import pace
from store.proxy.routing.protocols import ANTHROPIC, OPENAI, Want
from store.proxy.routing.upstreams import base_for, display, route_name
from store.proxy.routing.verdict import bench_exhausted, judge_attempt

log = logging.getLogger("hermes_admin.proxy")
MAX_TRIES = 4


@dataclass
class Failure:
    """The last route failure of a request: what the client gets if nothing else serves."""

    attempt: Attempt
    result: Result
    verdict: Verdict
    base: str
    answer: Answer | None


class Forwarder:
    """Sends client requests upstream along the chain (one per proxy, on the event loop)."""

    def __init__(self, chain: Chain, stats: Stats, secrets: ProxySecrets) -> None:
        self.chain = chain
        self.stats = stats
        self.secrets = secrets
        self.session: aiohttp.ClientSession | None = None
        self.loop: asyncio.AbstractEventLoop | None = None    # the server's, once started (no getpid a request)
        self.answer_timeout: float | None = None   # seconds to the answer's headers (None: unbounded)
        self.reads = Reads()      # the bodies being read, and their bound (edge/upstream.py)
        self._waiting: dict[asyncio.Task, float] = {}   # requests waiting for an answer's headers, by deadline
        self._overdue: set[asyncio.Task] = set()
        self._benching: set[asyncio.Task] = set()   # headroom benches on their way to the store
        self.urls = UpstreamUrls()
        self.answers = Answers(chain, stats, secrets)
        self._error = self.answers.error
        self._pass_on = self.answers.pass_on
        self.spend = Spend(chain)            # each answer's usage, to the ledger and every listener
        self.spend.listen(chain.eligibility.budgets.tally)     # the budgets' count of known cost (#29)
        self.relay = Relay(chain.breakers, chain.clock, stats, secrets, self.answers.mark, self._served, self.spend)
        self.hold = Hold(chain.clock, lambda want: chain.look_again(None, want), self._soonest,
                         lambda: chain.headroom.settings.proxy)

    def open(self, timeout: aiohttp.ClientTimeout) -> aiohttp.ClientSession:
        """The upstream session, bounded by *timeout* (its read bound kept by :attr:`reads`)."""
        self.reads.limit = timeout.sock_read
        self.answer_timeout = (timeout.sock_connect or 0) + (timeout.sock_read or 0) or None
        self.session = open_session(timeout)
        return self.session

    async def forward(self, request: web.BaseRequest, path: str, body: bytes, rid: str,
                      protocol: str = OPENAI, model: str | None | EllipsisType = ...) -> web.StreamResponse:
        """Serve one request of *protocol* (:mod:`store.proxy.routing.protocols`) along the chain:
        only routes that speak it, never a row benched for the model it asks for (*model*: what
        the door read of the body, if it read it)."""
        chain = self.chain
        encoded = "Content-Encoding" in request.headers and bool(codings(request.headers))
        # The door read the model of an encoded body too (decoded, edge/coding.py): the chain gets it.
        want = Want(protocol, body, encoded and model is ..., endpoint_of(path), model)
        if want.endpoint is None and body and not encoded and chain.pins.may_apply():
            want.conversation = Conversation(protocol, body, request.headers)   # named on first use (#30)
        got = await self._walk(request, path, body, rid, want, encoded, chain.select(want=want))
        if got is None:       # every key out: held for the soonest reset when it is near (proxy.hold)
            since = time.monotonic()
            again = await self.hold.wait(want, rid)
            trace.waited(time.monotonic() - since)
            if again is not None:
                got = await self._walk(request, path, body, rid, want, encoded, again)
        return got if got is not None else self.answers.all_out(rid, want)

    async def _walk(self, request: web.BaseRequest, path: str, body: bytes, rid: str, want: Want, encoded: bool,
                    attempt: Attempt | None) -> web.StreamResponse | None:
        """Walk the chain from *attempt*: the answer, or None when no key could serve."""
        chain = self.chain
        protocol = want.protocol
        headers = kept(request.headers, DROP_REQUEST)
        query = raw_query(request)
        client_beta, user_agent = request.headers.get("anthropic-beta"), request.headers.get("User-Agent")
        tries, limit = 0, 0       # the bound on tries, worked out once past MAX_TRIES (never on a first try)
        last: Failure | None = None
        walk, looked = attempt, False
        while True:
            if tries >= MAX_TRIES:
                limit = limit or MAX_TRIES + 2 * chain.row_count()
                if tries >= limit:
                    break
            if attempt is None:       # before any "no key" answer, look again (benches may have ended)
                if looked or walk is None:
                    break
                looked = True
                attempt = self._carry(walk, chain.look_again(walk.tried, want))
                if attempt is None:
                    break
            walk = attempt
            tries += 1
            sel = attempt.selection
            if not attempt.fresh and not chain.usable(sel, want):   # benched since chosen: never send to it
                attempt = self._carry(attempt, chain.select(attempt.index, attempt.tried, want=want))
                continue
            if attempt.index and sel.model and encoded:
                return self._error(415, f"the fallback route {route_name(self._route(attempt).name)} sets the "
                                        f"model, which needs the body as JSON: send it without Content-Encoding",
                                   "unsupported_content_encoding", rid)
            payload = body if attempt.index == 0 or not sel.model else with_model(body, sel.model)
            base = base_for(sel.pool, sel.base_url)
            if not base:       # a configuration gap, not the key's fault: bench nothing
                return self._error(502, f"{sel.pool}: row {sel.row_id} has no base_url and the pool no "
                                        f"default; set base_url on the row", "no_upstream", rid)
            dialect = attempt.dialect = dialect_for(sel.pool, base, chain.speaks(attempt.index, ANTHROPIC))
            sending = dialect.attach(headers, Credential(sel.token, sel.pool, base, path, protocol,
                                                         chain.auth_type(sel) if dialect.by_auth_type else None,
                                                         client_beta, user_agent))
            tail = dialect.tail(protocol, base, path, query)
            sent = await self._send(request, attempt, base, tail, payload, sending, rid)
            if not isinstance(sent, tuple):      # relayed (a StreamResponse's ABC check costs ~1 us)
                return sent
            result, answer = sent
            verdict = judge_attempt(chain, attempt, result, attempt.readings)    # the one judgement of this answer
            self._judged(attempt, verdict)
            if verdict.fault == REQUEST:
                log.info("request %s: %s/%s answered HTTP %d (%s): the request's fault, passed on", rid,
                         sel.pool, sel.row_id, result.status, verdict.kind)
                return self._pass_on(answer, attempt, rid) if answer is not None else \
                    self._error(result.status, result.message or "the request failed", "invalid_request", rid)
            if verdict.fault == ROUTE:
                chain.breakers.failed(base, chain.clock(), answered=verdict.answered, request=rid,
                                      what=f"{verdict.kind}: {result.message or result.status}")
                log.info("request %s: %s/%s via %s: %s (%s): the route's fault, no key benched", rid, sel.pool,
                         sel.row_id, display(base), result.message or f"HTTP {result.status}", verdict.kind)
                last = Failure(attempt, result, verdict, base, answer)
                attempt = self._after_route_fault(attempt, verdict, want)
                continue
            if (paced := await pace(attempt, verdict, chain.headroom.settings.proxy.pace_max_wait, rid)) is not None:
                trace.waited(paced)   # a pinned conversation's short rate limit: the same key again
                continue
            attempt, passed = await self._after_key_fault(attempt, result, verdict, answer, rid, want)
            if passed is not None:
                return passed
        if last is not None:
            return self.answers.route_failed(last.attempt, last.result, last.verdict, last.answer, rid)
        return None

    def cut_overdue(self) -> None:
        """Cancel each wait for an answer's headers past its deadline, and end each body read
        silent for the read bound (called every second): a timer per request (asyncio.timeout)
        costs about 8 us a request, one re-armed per read more."""
        now = time.monotonic()
        for task, deadline in list(self._waiting.items()):
            if now >= deadline and task not in self._overdue:
                self._overdue.add(task)
                task.cancel()
        self.reads.cut(now)

    def _soonest(self, want: Want) -> float | None:
        """When the soonest key of a route that speaks *want*'s protocol reopens."""
        times = [t for t in reopen_times(self.chain, want).values() if t is not None]
        return min(times) if times else None

    # -- one try --

    async def _send(self, request: web.BaseRequest, attempt: Attempt, base: str, tail: str, payload: bytes,
                    headers: Any, rid: str) -> web.StreamResponse | tuple[Result, Answer | None]:
        """Send once: the relayed response, or the failure (its Result, and the answer if any)."""
        sel = attempt.selection
        self.stats.begin(sel.pool, sel.row_id, sel.label)
        ticket = self.chain.headroom.sent(sel)     # in flight until its answer's readings are in
        attempt.readings = ()
        try:
            assert self.session is not None
            task = asyncio.current_task(self.loop)
            if self.answer_timeout is not None and task is not None:
                self._waiting[task] = time.monotonic() + self.answer_timeout
            trace.upstream_begin()
            try:
                up = await self.session.request(request.method, self.urls.get(base, tail),
                                                data=payload or None, headers=headers, allow_redirects=False)
            except asyncio.CancelledError:
                if task not in self._overdue:
                    raise
                self._overdue.discard(task)
                task.uncancel()
                return Result.failed_transport(TIMEOUT, f"{display(base)}: no answer within "
                                                        f"{self.answer_timeout:g} s"), None
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                kind = transport_kind(exc)
                return Result.failed_transport(kind, f"{display(base)}: {kind} ({type(exc).__name__})"), None
            except ValueError as exc:     # what the client sent cannot go on as it is: its fault
                return Result(400, reason="invalid_request", message="the request could not be forwarded "
                              f"as received ({type(exc).__name__}: {str(exc)[:200]})"), None
            finally:
                self._waiting.pop(task, None)
            self.reads.watch(up, time.monotonic())
            try:
                if up.status < 200:       # an unsolicited upgrade or a stray 1xx is no answer
                    return Result.failed_transport(MALFORMED, f"{display(base)}: HTTP {up.status} "
                                                              f"instead of an answer"), None
                attempt.readings = self.chain.headroom.read(up.headers, self.chain.clock())   # read once
                self.chain.headroom.observe(sel, attempt.readings, ticket)   # every answer's readings, 2xx too
                if up.status < 400:
                    return await self.relay.relay(request, up, attempt, base, rid)
                try:
                    raw = await up.content.read(ERROR_CAP + 1)
                    while len(raw) <= ERROR_CAP and not up.content.at_eof():
                        more = await up.content.read(ERROR_CAP + 1 - len(raw))
                        if not more:
                            break
                        raw += more
                except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                    kind = transport_kind(exc)
                    return Result.failed_transport(kind, f"{display(base)}: HTTP {up.status} then {kind}"), None
                answer = Answer(up.status, up.headers, raw[:ERROR_CAP], len(raw) > ERROR_CAP)
                text = plain(answer.raw, up.headers.get("Content-Encoding", "")) or b""
                return result_of(up.status, up.headers, text), answer
            finally:
                self.reads.done(up)
                up.release()
        finally:
            trace.upstream_end()
            self.stats.end(sel.pool, sel.row_id)
            self.chain.headroom.done(ticket)

    def _served(self, attempt: Attempt, base: str, body: bytes | None = None) -> None:
        """A 2xx: its verdict (the readings already read, the usage of a JSON *body*); the
        breaker closes, and a key its provider said has nothing left is benched in the
        store off the loop (the view holds it already, by its readings). A body read whole
        goes to the usage feed with its usage (a stream goes at its end, from the relay)."""
        sel = attempt.selection
        want = attempt.want
        verdict = judge_success(self.chain.clock(), attempt.readings, body=body,
                                dialect=attempt.dialect if body else None,   # the dialect its request was sent with
                                model=sel.model, endpoint=want.endpoint if want is not None else None,
                                notice=log.warning)
        self._judged(attempt, verdict)
        if body is not None:
            self.spend.answer(attempt, verdict.usage)
        self.chain.breakers.succeeded(base)
        self.chain.success(attempt)
        if verdict.exhausted_until is not None and sel.pool in self.chain.pools:
            task = asyncio.get_running_loop().create_task(run_blocking(bench_exhausted, self.chain, attempt))
            self._benching.add(task)
            task.add_done_callback(self._benching.discard)

    def _judged(self, attempt: Attempt, verdict: Verdict) -> None:
        """The log and the counters take the one verdict on the answer (never the answer)."""
        trace.judged(verdict)
        self.stats.judged(attempt.selection.pool, verdict)

    # -- what next --

    def _carry(self, old: Attempt, new: Attempt | None) -> Attempt | None:
        if new is not None:       # the new attempt keeps what the request already tried
            new.tried, new.route_retried, new.paced = old.tried, old.route_retried, old.paced
        return new

    def _route(self, attempt: Attempt) -> Any:
        return attempt.route or self.chain.routes[attempt.index]

    def _after_route_fault(self, attempt: Attempt, verdict: Verdict, want: Want) -> Attempt | None:
        """Another key of the same route once (where it may help), else the next route;
        either way the chain stays on its route (a failing upstream is not a fallback)."""
        chain = self.chain
        tried = attempt.failed_on()
        if verdict.other_key_may_help and not attempt.route_retried:
            nxt = self._carry(attempt, chain.select(attempt.index, tried, move=False, want=want))
            if nxt is not None and nxt.index == attempt.index:
                nxt.route_retried = True
            return nxt
        if attempt.index + 1 >= len(chain.routes):
            return None
        return self._carry(attempt, chain.select(attempt.index + 1, tried, move=False, want=want))

    async def _after_key_fault(self, attempt: Attempt, result: Result, verdict: Verdict, answer: Answer | None,
                               rid: str, want: Want) -> tuple[Attempt | None, web.StreamResponse | None]:
        chain = self.chain
        decision = await self._record(attempt, result, verdict, rid)
        if decision.action != RETRY:
            attempt.failed_on()
        if decision.action in (RETRY, ROTATED) and decision.selection is not None:
            nxt = decision.selection
            model = self._route(attempt).model if attempt.index else None
            pinned = attempt.pinned and nxt.row_id == attempt.selection.row_id    # a rotation is no pin
            return replace(attempt, selection=replace(nxt, model=model), fresh=False, pinned=pinned), None
        if decision.action == FAILED:
            # Not a credential problem after all: the client gets the upstream's answer.
            if answer is not None:
                return None, self._pass_on(answer, attempt, rid)
            return None, self._error(502, result.message or "upstream failed", "upstream_error", rid)
        if decision.action == OUT and attempt.index + 1 < len(chain.routes):
            # Out for one model only: the route still serves the others, so the chain stays.
            return self._carry(attempt, chain.select(attempt.index + 1, attempt.tried, want=want,
                                                     move=not attempt.model_benched)), None
        if decision.action == OUT:
            return None, None
        return self._carry(attempt, chain.select(attempt.index, attempt.tried, want=want)), None

    async def _record(self, attempt: Attempt, result: Result, verdict: Verdict, rid: str) -> Decision:
        """The agent's rules for a key's fault, off the loop. A store that cannot record it
        (a lock held past the timeout, an unreadable file) never stops another key: the bench
        is in the view already, and the row is avoided for this request anyway."""
        try:
            return await run_blocking(self.chain.outcome, attempt, result, verdict)
        except Exception as exc:
            sel = attempt.selection
            log.warning("request %s: %s/%s: the %s could not be recorded in the store (%s: %s); it holds "
                        "in memory, another key serves", rid, sel.pool, sel.row_id, verdict.kind,
                        type(exc).__name__, exc)
            return Decision(ROTATED, None)
