"""What a provider family is, as data: :class:`Dialect` (how a credential goes upstream,
where ``/v1`` goes, how its answers state limits, resets and usage) and the
:class:`Credential` context an ``attach`` gets. One instance per family module."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from store import outside
from store.dialects.readings import Reading, Usage
from store.frozen import quick_init

OPENAI = "openai"          # the protocols a client path speaks (store.proxy.routing.protocols)
ANTHROPIC = "anthropic"
RESPONSES = "responses"


@quick_init
@dataclass(frozen=True)
class Credential:
    """What ``attach`` needs of one try: the row's secret and where it goes."""

    token: str
    pool: str
    base: str
    path: str                       # the client's path (``/v1/...``)
    protocol: str = OPENAI
    auth_type: Any = None           # the row's ``auth_type``
    client_beta: str | None = None  # the client's ``anthropic-beta``
    user_agent: str | None = None   # the client's ``User-Agent``


def v1_in_base(protocol: str, base: str, path: str, query: str) -> str:
    """The OpenAI rule: the base holds its version (``.../v1``); the path follows it."""
    return path[3:] + query


def bearer(headers: Any, cred: Credential) -> Any:
    """``Authorization: Bearer <token>`` on *headers*, in place (the OpenAI form)."""
    headers["Authorization"] = "Bearer " + cred.token
    return headers


@dataclass(frozen=True)
class Dialect:
    """One provider family (see the package docstring)."""

    name: str
    attach: Callable[[Any, Credential], Any] = bearer          # the headers to send
    tail: Callable[[str, str, str, str], str] = v1_in_base     # what follows the base
    readings: Callable[[Mapping[str, str], float], list[Reading]] = lambda h, now: []
    reset: Callable[[Mapping[str, str], float, outside.Notice | None], float | None] = \
        lambda h, now, notice: None                            # its own reset headers, after Retry-After
    usage: Callable[..., Usage | None] = lambda data, notice=None: None   # from a JSON answer
    aggregator: bool = False        # a 429 it wraps ("Provider returned error") is its upstream's
    per_model_429: bool = False     # every rate-limit 429 is one model's (Anthropic)
    by_auth_type: bool = False      # attach needs the row's auth_type (OAuth or API key)
