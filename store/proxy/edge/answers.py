"""The answers the proxy gives when it does not relay a success: its own errors, an
upstream's error passed on without a key in it, and the 503 when nothing in the chain can
serve.

Every one carries the request id the log line carries (RELIABILITY 43) and the marks of
the route that answered (``X-Hermes-Pool``...). They are OpenAI-shaped here; on the
Anthropic paths the server reshapes the proxy's own errors
(:func:`store.proxy.edge.anthropic.shaped`), while an upstream's answer stays as it came.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from store.agent.outcomes import Result, Verdict
from store.proxy.edge.redacting import ProxySecrets
from store.proxy.edge.wire import (
    DROP_RESPONSE,
    ERROR_CAP,
    H_CRED,
    H_FALLBACK,
    H_POOL,
    H_REQUEST_ID,
    H_ROUTE,
    Answer,
    error_body,
    header_value,
    kept,
    plain,
    redact_body,
    redacted_headers,
)
from store.proxy.observing import requests as trace
from store.proxy.observing.report import RoutesView, reopen_times, retry_after
from store.proxy.observing.stats import Stats
from store.proxy.routing.attempt import Attempt
from store.proxy.routing.eligibility import why
from store.proxy.routing.protocols import OPENAI, TITLES, Want, served_paths
from store.proxy.routing.upstreams import route_name

log = logging.getLogger("hermes_admin.proxy")


class Answers:
    """The proxy's non-relayed answers, for one proxy (on the event loop). *view*: what they
    read of the chain (its routes, what each speaks, each row's state; the chain is one)."""

    def __init__(self, view: RoutesView, stats: Stats, secrets: ProxySecrets) -> None:
        self.view = view
        self.stats = stats
        self.secrets = secrets
        self._marks: dict[tuple[str, str, str, bool], tuple[str, str, str, str]] = {}

    def route_of(self, attempt: Attempt) -> Any:
        return attempt.route or self.view.routes[attempt.index]

    def mark(self, headers: Any, attempt: Attempt) -> None:
        """The route's marks on an answer (never a key)."""
        sel = attempt.selection
        key = (sel.pool, sel.row_id, self.route_of(attempt).name, bool(attempt.index))
        marks = self._marks.get(key)
        if marks is None:
            if len(self._marks) > 4096:
                self._marks.clear()
            marks = self._marks[key] = (header_value(sel.pool), header_value(sel.row_id),
                                        "1" if attempt.index else "0", header_value(route_name(key[2])))
        headers[H_POOL], headers[H_CRED], headers[H_FALLBACK], headers[H_ROUTE] = marks
        trace.served_by(sel.pool, sel.row_id, marks[3], bool(attempt.index), attempt.pinned)

    def error(self, status: int, message: str, kind: str, rid: str, **extra: Any) -> web.Response:
        self.stats.errors += 1
        trace.answered_as(kind)
        text = self.secrets.text(message)
        log.warning("request %s: %d %s: %s", rid, status, kind, text)
        return error_body(status, text, kind, rid, **self.secrets.redactor().redact_obj(extra))

    def pass_on(self, answer: Answer, attempt: Attempt, rid: str) -> web.Response:
        """The upstream's error answer for the client, with fingerprints for keys."""
        sel = attempt.selection
        redact = self.secrets.for_row(sel.token)
        body = None if answer.over_cap else plain(answer.raw, answer.headers.get("Content-Encoding", ""))
        if body is None:
            why = (f"over {ERROR_CAP // (1 << 20)} MB" if answer.over_cap else
                   f"in an encoding the proxy cannot check for keys ({answer.headers.get('Content-Encoding')})")
            resp = self.error(answer.status, f"{sel.pool} answered HTTP {answer.status} with a body {why}; "
                                             f"not relayed", "upstream_error", rid)
        else:
            headers = kept(answer.headers, DROP_RESPONSE)
            headers.popall("Content-Encoding", None)
            redacted_headers(headers, sel.token, lambda: redact, every=True)
            resp = web.Response(status=answer.status, body=redact_body(body, [redact]), headers=headers)
            resp.headers[H_REQUEST_ID] = rid
        self.mark(resp.headers, attempt)
        return resp

    def route_failed(self, attempt: Attempt, result: Result, verdict: Verdict, answer: Answer | None,
                     rid: str) -> web.Response:
        """Nothing else could serve after a route failure: its answer, or a 502/504."""
        if answer is not None:
            return self.pass_on(answer, attempt, rid)
        sel = attempt.selection
        resp = self.error(504 if verdict.kind == "timeout" else 502,
                          f"{sel.pool}: {result.message}; no other route could serve (no key was benched)",
                          "upstream_unreachable", rid)
        self.mark(resp.headers, attempt)
        return resp

    def all_out(self, rid: str, want: Want | None = None) -> web.Response:
        """503: every key of every route that speaks the request's protocol is cooling (or
        benched for its model), or no route speaks it at all."""
        chain = self.view
        protocol = want.protocol if want is not None else OPENAI
        speaking = [i for i in range(len(chain.routes)) if chain.speaks(i, protocol)]
        routes = [{"route": route_name(chain.routes[i].name), "paths": served_paths(chain.protocols(i))}
                  for i in speaking]
        if not speaking:
            others = "; ".join(f"{r['route']} serves {', '.join(r['paths'])}" for r in (
                {"route": route_name(chain.routes[i].name), "paths": served_paths(chain.protocols(i))}
                for i in range(len(chain.routes))))
            return self.error(503, f"no route in the chain speaks {TITLES[protocol]} (no translation between "
                                   f"protocols): {others}", "no_route_for_protocol", rid, routes=routes)
        reopen = reopen_times(chain, want)
        now = chain.clock()
        retry = retry_after(reopen, now)
        pools = [{"pool": p, "reopens_at": t, "reopens_in": None if t is None else max(0, round(t - now))}
                 for p, t in reopen.items()]
        parts = [f"{p['pool']} reopens in {p['reopens_in']} s" if p["reopens_at"] is not None
                 else f"{p['pool']} has nothing that reopens by itself" for p in pools]
        kind, reasons = why((route_name(route.name), checks) for i, route, checks in chain.states(want)
                            if chain.speaks(i, protocol))
        if kind == "over_budget":
            return self.over_budget(rid, reasons, pools, retry)
        what = {"all_credentials_cooling": "every credential {of} is cooling",
                "upstream_unavailable": "every upstream {of} is failing (no key benched)",
                }.get(kind, "no credential {of} can serve now")
        if protocol == OPENAI:
            what = what.format(of="in the chain")
        else:
            names = ", ".join(r["route"] for r in routes)
            what = what.format(of=f"of the routes that speak {TITLES[protocol]} ({names})")
            refused = [route_name(chain.routes[i].name) for i in range(len(chain.routes)) if i not in speaking]
            if refused:
                parts.append(f"not tried: {', '.join(refused)} (they do not speak {TITLES[protocol]}; "
                             f"no translation between protocols)")
        parts = reasons + parts
        resp = self.error(503, what + ": " + "; ".join(parts or ["no pool"]), kind, rid,
                          pools=pools, routes=routes)
        if retry is not None:
            resp.headers["Retry-After"] = str(retry)
        return resp

    def over_budget(self, rid: str, reasons: list[str], pools: list[dict[str, Any]], retry: int | None) -> web.Response:
        """429: every route that could serve is over a budget of hermes-admin.yaml (#29); the
        answer names each budget and when it resets, ``Retry-After`` the soonest reset. In
        the protocol's own shape (the server reshapes it on the Anthropic paths)."""
        resp = self.error(429, "over budget (hermes-admin.yaml budgets:): " + "; ".join(reasons), "over_budget",
                          rid, pools=pools)
        if retry is not None:
            resp.headers["Retry-After"] = str(retry)
        return resp
