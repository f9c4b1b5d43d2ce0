"""The Anthropic family: ``api.anthropic.com`` and the Anthropic-compatible ``custom:``
endpoints Hermes talks Messages to (MiniMax's ``/anthropic``, Kimi's coding plan...).

- auth, as Hermes's ``agent/anthropic_adapter.py`` (``build_anthropic_client``, 0.19.0): on
  the ``anthropic`` pool an OAuth token (the row is ``auth_type: oauth``, or the token has an
  OAuth shape: ``sk-ant-`` but not ``sk-ant-api``, ``eyJ``, ``cc-``) goes as ``Authorization:
  Bearer`` with the OAuth betas Hermes adds (``_OAUTH_ONLY_BETAS``) merged into the client's
  ``anthropic-beta``; an API key goes as ``x-api-key``. A ``custom:`` endpoint gets
  ``x-api-key`` except the hosts Hermes sends a bearer to (``_requires_bearer_auth``).
  Anthropic's OpenAI-compatible paths (``/v1/chat/completions``...) take the OpenAI SDK's
  bearer; ``/v1/models`` is Anthropic's own and takes the native form.
- base path: ``/v1`` is part of every path; a base that ends in ``/v1`` already gets the
  path after it, any other base the whole path (Hermes strips ``/v1`` from the base and
  the SDK adds it back). This holds for every path, not only Messages.
- limits: ``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-*`` (resets
  in RFC 3339) and the subscription ``anthropic-ratelimit-unified-<window>-*`` fields;
- usage: ``usage.input_tokens`` / ``output_tokens`` / ``cache_read_input_tokens`` /
  ``cache_creation_input_tokens``;
- every rate-limit 429 is one model's (newer Hermes's ``_is_model_scoped_failure``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from store import outside
from store.dialects.dialect import ANTHROPIC, Credential, Dialect
from store.dialects.readings import LENGTHS, Reading, Usage, grouped, opt_fraction, usage_of
from store.model import AUTH_OAUTH

OAUTH_BETAS = ("claude-code-20250219", "oauth-2025-04-20")   # Hermes's _OAUTH_ONLY_BETAS
NATIVE_PATHS = ("/v1/models",)     # OpenAI-protocol paths that are Anthropic's own API
_V1_SUFFIX = re.compile(r"/v1/?$")
_WINDOWS = re.compile(r"anthropic-ratelimit-(requests|tokens|input-tokens|output-tokens)-(limit|remaining|reset)")
_UNIFIED = re.compile(r"anthropic-ratelimit-unified-([a-z0-9_]{1,24})-(utilization|reset)")


def is_oauth_token(token: str) -> bool:
    """Hermes's ``_is_oauth_token``: an Anthropic OAuth or setup token, by its shape."""
    if not token or token.startswith("sk-ant-api"):
        return False
    return token.startswith(("sk-ant-", "eyJ", "cc-"))


def _bearer_host(base: str) -> bool:
    """Hermes's ``_requires_bearer_auth``: Anthropic-compatible hosts that want a bearer."""
    low = base.rstrip("/").lower()
    try:
        host = (urlsplit(low).hostname or "")
    except ValueError:
        host = ""
    return (low.startswith(("https://api.minimax.io/anthropic", "https://api.minimaxi.com/anthropic"))
            or "azure.com" in low or host == "palantirfoundry.com" or host.endswith(".palantirfoundry.com"))


def uses_oauth(pool: str, auth_type: Any, token: str) -> bool:
    """Whether the row's *token* goes to *pool*'s upstream as an OAuth bearer."""
    if pool != "anthropic" or token.startswith("sk-ant-api"):
        return False
    return auth_type == AUTH_OAUTH or is_oauth_token(token)


def attach(headers: Any, cred: Credential) -> Any:
    """A copy of *headers* with the row's credential in the form its path needs."""
    sending = headers.copy()
    native = cred.protocol == ANTHROPIC or cred.path in NATIVE_PATHS
    for name in ("Authorization", "x-api-key", "anthropic-beta"):
        sending.popall(name, None)
    if uses_oauth(cred.pool, cred.auth_type, cred.token):
        sending["Authorization"] = "Bearer " + cred.token
        if native:
            betas = [b.strip() for b in (cred.client_beta or "").split(",") if b.strip()]
            betas += [b for b in OAUTH_BETAS if b not in betas]
            sending["anthropic-beta"] = ",".join(betas)
        return sending
    if cred.client_beta is not None:
        sending["anthropic-beta"] = cred.client_beta
    if not native or (cred.pool != "anthropic" and _bearer_host(cred.base)):
        sending["Authorization"] = "Bearer " + cred.token
    else:
        sending["x-api-key"] = cred.token
    return sending


def tail(protocol: str, base: str, path: str, query: str) -> str:
    """``/v1`` once, whether the base holds it or not (see the module docstring)."""
    return (path[3:] if _V1_SUFFIX.search(base) else path) + query


def readings(h: Mapping[str, str], now: float) -> list[Reading]:
    out = grouped(h, _WINDOWS, now, "anthropic", lambda m: (m.group(1), m.group(2)))
    return out + _unified(h, now)


def _unified(h: Mapping[str, str], now: float) -> list[Reading]:
    windows: dict[str, dict[str, str]] = {}
    for name, value in h.items():
        m = _UNIFIED.fullmatch(name)
        if m:
            windows.setdefault(m.group(1), {})[m.group(2)] = value
    out = []
    for window, parts in windows.items():
        used = opt_fraction(parts.get("utilization"))
        if used is None:
            continue
        reset = outside.epoch(parts["reset"], "reset", now=now) if "reset" in parts else None
        base = window.split("_", 1)[0]
        out.append(Reading(window, "anthropic-unified", now, utilization=used, reset_at=reset,
                           length=LENGTHS.get(base)))
    status = h.get("anthropic-ratelimit-unified-status", "")
    if status == "rejected" and not any(r.left == 0.0 for r in out):
        reset = outside.epoch(h.get("anthropic-ratelimit-unified-reset"), "reset", now=now)
        if reset is not None:
            out.append(Reading("unified", "anthropic-unified", now, utilization=1.0, reset_at=reset))
    return out


def usage(data: Any, notice: outside.Notice | None = None) -> Usage | None:
    """The usage of a JSON answer (every shape: :func:`store.dialects.readings.usage_block`)."""
    return usage_of(data, notice=notice)


DIALECT = Dialect("anthropic", attach=attach, tail=tail, readings=readings, usage=usage, per_model_429=True,
                  by_auth_type=True)
