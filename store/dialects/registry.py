"""The one table that maps Hermes's provider ids to dialects, default endpoints and the
protocols they speak, and the one registry of dialects.

:data:`PROVIDERS` holds every id of Hermes's provider registry
(:data:`store.config.providers.KNOWN_PROVIDERS`) plus ``openai`` (the name older
hermes-admin stores use for OpenAI API keys). A ``custom:<name>`` pool (or an id the table
does not hold) speaks the dialect of its endpoint: Anthropic's when its route speaks
Anthropic Messages (``api_mode``, or a base URL Hermes maps to it), the Codex backend's on
``chatgpt.com``, else OpenAI's. A default base URL is given only where the provider
publishes one fixed endpoint; the others need ``base_url`` on the row (the proxy says so).

Adding a provider: a row here (and, for a new family, one module beside ``openai.py`` with
its :class:`~store.dialects.dialect.Dialect`, listed in :data:`DIALECTS`), and its row in
``tests/dialects/test_dialect_table.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from store import outside
from store.dialects import anthropic, codex, ietf, openai
from store.dialects.dialect import ANTHROPIC, OPENAI, RESPONSES, Dialect
from store.dialects.readings import Reading, lowered

DIALECTS: dict[str, Dialect] = {"openai": openai.DIALECT, "openrouter": openai.AGGREGATOR,
                                "anthropic": anthropic.DIALECT, "codex": codex.DIALECT}
CHAT = frozenset({OPENAI})
WITH_RESPONSES = frozenset({OPENAI, RESPONSES})
ANTHROPIC_POOL = frozenset({OPENAI, ANTHROPIC})     # Anthropic's OpenAI-compatible shim too


@dataclass(frozen=True)
class Provider:
    """One row of the table: the dialect, the default base URL (None: the row sets it)
    and the protocols its pool speaks."""

    dialect: str = "openai"
    base: str | None = None
    protocols: frozenset[str] = CHAT


PROVIDERS: dict[str, Provider] = {
    "openai-api": Provider("openai", "https://api.openai.com/v1", WITH_RESPONSES),
    "openai": Provider("openai", "https://api.openai.com/v1", WITH_RESPONSES),
    "openai-codex": Provider("codex", "https://chatgpt.com/backend-api/codex", WITH_RESPONSES),
    "anthropic": Provider("anthropic", "https://api.anthropic.com/v1", ANTHROPIC_POOL),
    "openrouter": Provider("openrouter", "https://openrouter.ai/api/v1", WITH_RESPONSES),
    "xai": Provider("openai", "https://api.x.ai/v1", WITH_RESPONSES),
    "deepseek": Provider("openai", "https://api.deepseek.com/v1"),
    "nous": Provider("openai", "https://inference-api.nousresearch.com/v1"),
    "gemini": Provider("openai", "https://generativelanguage.googleapis.com/v1beta/openai"),
    **{pid: Provider() for pid in (
        "alibaba", "alibaba-coding-plan", "arcee", "azure-foundry", "bedrock", "copilot", "copilot-acp",
        "custom", "deepinfra", "fireworks", "gmi", "huggingface", "kilocode", "kimi-coding", "kimi-coding-cn",
        "lmstudio", "minimax", "minimax-cn", "minimax-oauth", "novita", "nvidia", "ollama-cloud",
        "opencode-go", "opencode-zen", "qwen-oauth", "stepfun", "tencent-tokenhub", "upstage", "vertex",
        "xai-oauth", "xiaomi", "zai")},
}


def provider(pool: str | None) -> Provider | None:
    """The table's row for *pool* (None: a ``custom:`` pool or an id it does not hold)."""
    return PROVIDERS.get((pool or "").strip().lower())


def default_base(pool: str) -> str | None:
    """The provider's published endpoint for *pool*, or None."""
    row = provider(pool)
    return row.base if row is not None else None


def protocols(pool: str | None) -> frozenset[str] | None:
    """The protocols *pool*'s provider speaks (None: decided by its endpoint, a ``custom:``)."""
    row = provider(pool)
    return row.protocols if row is not None else None


def dialect_for(pool: str, base: str, speaks_anthropic: bool = False) -> Dialect:
    """The dialect a try of *pool* to *base* speaks (*speaks_anthropic*: the route speaks
    Anthropic Messages, for a pool the table does not name)."""
    row = PROVIDERS.get(pool)
    on_codex = "chatgpt.com" in base and codex.is_codex_host(base)
    if row is not None and (row.dialect != "openai" or not on_codex):
        return DIALECTS[row.dialect]
    if speaks_anthropic:
        return DIALECTS["anthropic"]
    return DIALECTS["codex"] if on_codex else DIALECTS["openai"]


def read_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]], now: float) -> list[Reading]:
    """Every reading an answer's headers carry in any dialect (an endpoint does not say
    which it speaks), read at *now*. Never raises."""
    h = lowered(headers)
    return openai.readings(h, now) + anthropic.readings(h, now) + ietf.readings(h, now)


def header_reset(headers: Mapping[str, str], now: float, notice: outside.Notice | None = None) -> float | None:
    """The reset an answer's headers state for itself: ``Retry-After`` first, then the
    OpenAI-style ``x-ratelimit-reset*`` (None: neither)."""
    h = lowered(headers)
    after = ietf.retry_after(h, now, notice)
    return after if after is not None else openai.reset(h, now, notice)


def is_aggregator(pool: str | None) -> bool:
    """Whether *pool*'s provider wraps its upstreams' errors (OpenRouter): a 429 it wraps
    is the upstream's, not the key's."""
    row = provider(pool)
    return row is not None and DIALECTS[row.dialect].aggregator
