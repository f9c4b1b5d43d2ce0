"""May this row serve this request now? One check, made of small named filters.

Each filter answers for one row, on the view, at one moment: ``None`` (it may serve) or a
:class:`Refusal` naming the filter and, where one is known, when it lifts. The same filters
answer every question the proxy is asked about its rows:

- selection (:meth:`store.proxy.routing.chain.Chain.select`: the cooling and per-model filters run
  in batch over the kept list of :mod:`store.proxy.routing.picks`; the others through
  :meth:`Eligibility.keep` and :meth:`Eligibility.hold`);
- "may the row chosen earlier still be sent to" (:meth:`store.proxy.routing.chain.Chain.usable`);
- the status file, ``proxy status`` and the console's proxy panel
  (:meth:`store.proxy.routing.chain.Chain.states` -> :mod:`store.proxy.observing.report`);
- the agent's rules for the request (:class:`store.proxy.routing.request_client.RequestClient`'s
  filter is :meth:`Eligibility.upstream_open`);
- the answer to "why was no key used" (:func:`why`), which names the real reason.

The filters, in the order a row is refused by them:

========== ======================================================================
protocol   the route does not speak the request's protocol (no translation)
cooling    the row is benched (cooling) or dead in the store / the view
model      the row is benched for the model (and endpoint) the request asks for
breaker    the row's upstream failed: its circuit breaker is open (the route's
           fault, no key benched)
headroom   its provider said it has nothing left until a reset (its readings)
budget     over its key budget, its pool's budget, or a window's cap (``budgets:``
           of hermes-admin.yaml, :mod:`store.proxy.routing.budget_rules`, #29)
tried      this request already failed on it
========== ======================================================================

A soft hold is no refusal: a row at or under its pool's threshold, or whose last count of
requests left is spent by requests in flight, yields to rows with room and still serves
when none has (:meth:`Eligibility.hold`, #21); so does a pool's reserve row (#29), picked only
when no other row is. #30's affinity joins :data:`FILTERS` as one function. Pure and fast:
the caller holds the view's lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from store.agent import probe
from store.model import Row
from store.pools import policy, view
from store.proxy.routing.budget_rules import BudgetRules
from store.proxy.routing.headroom_gate import HeadroomGate
from store.proxy.routing.upstreams import Breakers, base_for
from store.usage.record import LEDGER_FILE
from store.usage.tally import Tally

PROTOCOL, COOLING, DEAD, MODEL, BREAKER, HEADROOM, BUDGET, TRIED = (
    "protocol", "cooling", "dead", "model", "breaker", "headroom", "budget", "tried")
# What each refusal is called where a client or an operator reads it.
WORDS = {PROTOCOL: "protocol not spoken", COOLING: "cooling", DEAD: "dead, needs an operator",
         MODEL: "benched for the model asked for", BREAKER: "upstream unavailable, circuit breaker open",
         HEADROOM: "held by headroom, its provider said nothing is left", BUDGET: "over budget",
         TRIED: "already failed on for this request"}


@dataclass(frozen=True)
class Refusal:
    """Why a row may not serve now: the filter's name, and when it lifts (None: unknown or never)."""

    filter: str
    until: float | None = None
    words: str | None = None        # the filter's own words, where it has more to say (a budget's)


@dataclass
class Ask:
    """What one check is about: a row of *pool* on a route (its *base_url*) at *now*, for a
    request of *scope* (the model and endpoint it asks for) that failed on *tried*."""

    pool: str
    rows: list[Row]
    now: float
    route_base: str | None = None
    scope: str | None = None
    tried: Collection[tuple[str, str]] = ()
    speaks: bool = True


class Eligibility:
    """The filters over one proxy's view: its breakers, its headroom gate, its TTLs and env."""

    def __init__(self, breakers: Breakers, headroom: HeadroomGate, env: Mapping[str, str],
                 ttls: Callable[[], policy.Ttls]) -> None:
        self.breakers = breakers
        self.headroom = headroom
        self.env = env
        self.ttls = ttls
        # budgets: hermes-admin.yaml's, over the tally the usage feed adds to (#29)
        self.budgets = BudgetRules(headroom.settings.budgets, Tally(headroom.clock), headroom, env)

    def seed(self, home: Any) -> str | None:
        """Start the budgets' tally from the usage ledger beside *home* (blocking, read-only;
        at the proxy's start, only when a pool has a budget). A ledger that cannot be read is
        a notice in the log (and returned); the tally then starts at zero."""
        if not self.budgets.budgets:
            return None
        notice = self.budgets.tally.seed(home.root / LEDGER_FILE)
        if notice is not None:
            logging.getLogger("hermes_admin.proxy").warning("budgets: %s", notice)
        return notice

    # -- the filters, one row each --

    def protocol(self, ask: Ask, row: Row, eff: policy.Effective) -> Refusal | None:
        return None if ask.speaks else Refusal(PROTOCOL)

    def cooling(self, ask: Ask, row: Row, eff: policy.Effective) -> Refusal | None:
        if eff.usable:
            return None
        return Refusal(DEAD if eff.status == policy.DEAD else COOLING, eff.available_at)

    def model(self, ask: Ask, row: Row, eff: policy.Effective) -> Refusal | None:
        if not eff.model_benches or ask.scope is None:
            return None
        t = eff.model_benches.get(ask.scope)
        return None if t is None else Refusal(MODEL, t)

    def breaker(self, ask: Ask, row: Row, eff: policy.Effective) -> Refusal | None:
        if not self.breakers:
            return None
        base = self.base(ask.pool, row, ask.route_base)
        return Refusal(BREAKER, self.breakers.reopens_at(base)) if self.breakers.blocked(base, ask.now) else None

    def headroom_(self, ask: Ask, row: Row, eff: policy.Effective) -> Refusal | None:
        until = self.headroom.exhausted_until(ask.pool, row, ask.now, self.env)
        return None if until is None else Refusal(HEADROOM, until)

    def budget(self, ask: Ask, row: Row, eff: policy.Effective) -> Refusal | None:
        got = self.budgets.refused(ask.pool, row, ask.now) if self.budgets.budgets else None
        return None if got is None else Refusal(BUDGET, got[0], got[1])

    def tried(self, ask: Ask, row: Row, eff: policy.Effective) -> Refusal | None:
        return Refusal(TRIED) if (ask.pool, str(row.get("id"))) in ask.tried else None

    @property
    def filters(self) -> tuple[Callable[[Ask, Row, policy.Effective], Refusal | None], ...]:
        """Every filter, in order (:data:`FILTERS` names them)."""
        return (self.protocol, self.cooling, self.model, self.breaker, self.headroom_, self.budget, self.tried)

    # -- the check --

    def check(self, ask: Ask, row: Row) -> Refusal | None:
        """The first filter that refuses *row* (None: it may serve *ask*)."""
        eff = view.judge(row, ask.rows, ask.now, self.ttls(), self.env)
        for f in self.filters:
            if (refused := f(ask, row, eff)) is not None:
                return refused
        return None

    def checks(self, ask: Ask) -> list[tuple[policy.Effective, Refusal | None]]:
        """Each row of *ask*: its effective status and its first refusal."""
        ttls = self.ttls()
        out = []
        for row in ask.rows:
            eff = view.judge(row, ask.rows, ask.now, ttls, self.env)
            out.append((eff, next((r for f in self.filters if (r := f(ask, row, eff)) is not None), None)))
        return out

    # -- what selection's fast path asks (the rows already past cooling and model) --

    @staticmethod
    def base(pool: str, row: Row, route_base: str | None = None) -> str:
        return base_for(pool, row.get("inference_base_url") or row.get("base_url") or route_base)

    def keep(self, pool: str, route_base: str | None, now: float,
             tried: Collection[tuple[str, str]] | None) -> Callable[[Row], bool] | None:
        """The tried and breaker filters as one predicate for a pick (None: nothing to leave out)."""
        if not tried and not self.breakers:
            return None
        breakers = self.breakers
        return lambda r: (pool, str(r.get("id"))) not in (tried or ()) and not breakers.blocked(
            base_for(pool, r.get("inference_base_url") or r.get("base_url") or route_base), now)

    def hold(self, pool: str, now: float, rows: list[Row] | None = None,
             generation: int = -1) -> Callable[[list[Row]], Collection[str]] | None:
        """The headroom and budget filters and the soft holds (threshold, in flight, a
        reserve row while another may serve) for a pick. *rows*, *generation*: the view's
        rows of *pool* and its generation (what the budget keeps its reserve ids for)."""
        headroom, budgets = self.headroom.holding(pool), self.budgets.of(pool) is not None
        if not headroom and not budgets:
            return None
        gate = (lambda allowed: self.headroom.held(pool, allowed, now, self.env)) if headroom else None
        if not budgets:
            return gate
        return lambda allowed: self.budgets.held(pool, allowed, now, rows=rows, generation=generation, headroom=gate)

    def upstream_open(self, pool: str, now: Callable[[], float],
                      others: Callable[[Row], bool] | None = None) -> Callable[[Row], bool]:
        """The breaker and budget filters as the agent's rules take them (a row's
        eligibility), and the reserve rule: with *others* (whether a row other than the one
        asked about, not a reserve row, may serve this request: :meth:`another_serves`), a
        reserve row is refused while another row may serve (a rotation after a failure, too)."""
        budgets = self.budgets

        def ok(row: Row) -> bool:
            if self.breakers.blocked(self.base(pool, row), now()):
                return False
            b = budgets.of(pool)
            if b is None:
                return True
            if budgets.refused(pool, row, now()) is not None:
                return False
            return others is None or not budgets.reserved(b, row) or not others(row)
        return ok

    def another_serves(self, ask: Ask, but: str) -> bool:
        """Whether a row of *ask* other than *but*, and not a reserve row of its pool's
        budget, may serve *ask* now: a live secret and no filter refusing it (the reserve
        rule of :meth:`store.proxy.routing.budget_rules.BudgetRules.held`)."""
        b = self.budgets.of(ask.pool)
        spare = (lambda r: self.budgets.reserved(b, r)) if b is not None else (lambda r: False)
        return any(isinstance(r, dict) and str(r.get("id")) != but and not spare(r)
                   and probe.row_secret(r, self.env) and self.check(ask, r) is None for r in ask.rows)


FILTERS = (PROTOCOL, COOLING, MODEL, BREAKER, HEADROOM, BUDGET, TRIED)
Check = tuple[policy.Effective, Refusal | None]     # one row: its status, its first refusal


def why(per_route: Iterable[tuple[str, list[tuple[policy.Effective, Refusal | None]]]]) -> tuple[str, list[str]]:
    """Why no key could serve: (the answer's kind, one phrase per route), from the refusals
    of :meth:`Eligibility.checks` (route name, its rows' checks). The kind is
    ``all_credentials_cooling`` only when every refusal is a bench, ``over_budget`` only when
    every refusal is a budget's (then its words say which budget and when it resets)."""
    reasons: set[str] = set()
    parts = []
    for name, checks in per_route:
        by: dict[str, list[float | None]] = {}
        said: dict[str, None] = {}          # a budget's own words, each once, in order
        for _eff, refusal in checks:
            if refusal is not None and refusal.filter != TRIED:
                by.setdefault(refusal.filter, []).append(refusal.until)
                if refusal.words:
                    said[refusal.words] = None
        if not checks:
            parts.append(f"{name}: no credential")
            continue
        words = []
        for name_, untils in by.items():
            reasons.add(name_)
            n = len(untils)
            what = "; ".join(said) if name_ == BUDGET and said else WORDS[name_]
            words.append(what if name_ == PROTOCOL else f"{what} ({n} key{'s' if n > 1 else ''})")
        if words:
            parts.append(f"{name}: " + ", ".join(words))
    if reasons <= {COOLING, DEAD, MODEL}:
        kind = "all_credentials_cooling"
    elif reasons <= {BREAKER}:
        kind = "upstream_unavailable"
    elif reasons == {BUDGET}:
        kind = "over_budget"
    else:
        kind = "no_usable_credential"
    return kind, parts


def describe_refusals(checks: Any) -> dict[str, int]:
    """Counts of rows per refusal (for the status file)."""
    out: dict[str, int] = {}
    for _eff, refusal in checks:
        if refusal is not None:
            out[refusal.filter] = out.get(refusal.filter, 0) + 1
    return out
