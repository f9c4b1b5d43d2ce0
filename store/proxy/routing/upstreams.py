"""Where a row's requests go, and whether that upstream is answering.

A route's failure (RELIABILITY 31: refused, reset, timed out, TLS, a malformed or cut
answer, a 5xx) is never a key's: nothing is benched and nothing written. What remembers it
is a :class:`Breakers`, in memory only: per upstream base URL, a short circuit breaker.
An upstream that gave no answer at all opens at once (another key to the same host cannot
help); one that answered badly opens at the second request in a row it failed (the first lets
the request try another key). A request counts once: its retry on another key of the same
upstream failing too is the same request's failure, not a second one, so one bad request (a
body the provider chokes on) never shuts the route for everyone. While open, no request is
sent there: the chain serves from the next route, or answers 503 with the time it reopens.
It opens for :data:`FIRST_OPEN` seconds, twice as long each time a trial after it fails
again (up to :data:`LONGEST_OPEN`), and a success closes it and forgets. A restarted proxy starts with every breaker
closed.

Pure bookkeeping with the clock passed in; the event loop is its only user (no lock).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from store.dialects.registry import default_base

FIRST_OPEN = 2.0        # seconds
LONGEST_OPEN = 60.0
STRIKES = 2             # requests in a row answered badly that open a breaker


def base_for(pool: str, base_url: str | None) -> str:
    """The base URL a request of *pool* with a row's *base_url* goes to ("" when none): the
    row's, else the provider's published endpoint (:mod:`store.dialects.registry`)."""
    return (base_url or default_base(pool) or "").rstrip("/")


def display(base: str) -> str:
    """*base* as it may be shown: without any user or password in it."""
    try:
        parts = urlsplit(base)
    except ValueError:
        return "(an unparseable base URL)"
    if "@" not in parts.netloc:
        return base
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def route_name(name: str) -> str:
    """A route's name as it may be shown (``custom:<base url>`` without userinfo)."""
    head, sep, rest = name.partition(":")
    return head + sep + display(rest) if sep and "@" in rest else name


@dataclass
class Breaker:
    """One upstream's recent failures."""

    strikes: int = 0            # requests in a row it answered badly
    struck: set[str] = field(default_factory=set)   # those requests (each counts once)
    opened: int = 0             # times opened in a row (the next opening lasts longer)
    open_until: float = 0.0
    last_error: str = ""
    since: float = 0.0          # first failure of this run


class Breakers:
    """Circuit breakers per upstream base URL (see the module docstring)."""

    def __init__(self) -> None:
        self._by_base: dict[str, Breaker] = {}

    def __bool__(self) -> bool:
        """True while any upstream has failed since it last answered (a fast test)."""
        return bool(self._by_base)

    def blocked(self, base: str, now: float) -> bool:
        """True while *base*'s breaker is open: send nothing there."""
        b = self._by_base.get(base)
        return b is not None and now < b.open_until

    def reopens_at(self, base: str) -> float | None:
        b = self._by_base.get(base)
        return b.open_until if b is not None and b.open_until else None

    def failed(self, base: str, now: float, *, answered: bool, what: str, request: str | None = None) -> None:
        """A route failure on *base* (*answered*: the upstream sent an HTTP answer; *request*:
        the client request it failed, which strikes once however many keys it tries)."""
        b = self._by_base.get(base)
        if b is None:
            b = self._by_base[base] = Breaker(since=now)
        b.last_error = what
        if now < b.open_until:
            return              # sent before it opened: the opening already counts it
        if answered and request is not None:
            if request in b.struck:
                return          # the same request again, on another key: one failure
            b.struck.add(request)
        b.strikes += 1
        if not answered or b.strikes >= STRIKES:
            b.open_until = now + min(LONGEST_OPEN, FIRST_OPEN * 2 ** b.opened)
            b.opened += 1
            b.strikes = 0
            b.struck = set()

    def succeeded(self, base: str) -> None:
        """*base* answered: its breaker closes and forgets."""
        if self._by_base:
            self._by_base.pop(base, None)

    def snapshot(self, now: float) -> list[dict[str, Any]]:
        """For the status file: each upstream that failed since it last answered."""
        return [{"upstream": display(base), "state": "open" if now < b.open_until else
                 ("half-open" if b.opened else "closed"),
                 "open_until": b.open_until or None, "times_opened": b.opened, "strikes": b.strikes,
                 "down_since": b.since, "last_error": b.last_error}
                for base, b in sorted(self._by_base.items())]
