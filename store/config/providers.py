"""Hermes's provider registry as data: the ids it accepts and the aliases it maps.

Generated from Hermes Agent 0.19.0: the canonical ids are the keys of
``hermes_cli.auth.PROVIDER_REGISTRY`` (after it auto-extends from ``providers/``)
plus every ``providers.list_providers()`` name; the aliases are the
``_PROVIDER_ALIASES`` table of ``hermes_cli.auth.resolve_provider`` plus the plugin
aliases. ``custom:<name>`` names a ``custom_providers`` entry and ``auto`` asks
Hermes to pick; both are accepted wherever a provider is named.

Plain data and pure functions: any module may import it (the CLI's "did you mean",
the inventory's findings).
"""

from __future__ import annotations

import difflib
import ipaddress
from urllib.parse import urlsplit

from store.errors import BadInput

KNOWN_PROVIDERS: frozenset[str] = frozenset({
    "alibaba", "alibaba-coding-plan", "anthropic", "arcee", "azure-foundry", "bedrock", "copilot",
    "copilot-acp", "custom", "deepinfra", "deepseek", "fireworks", "gemini", "gmi", "huggingface",
    "kilocode", "kimi-coding", "kimi-coding-cn", "lmstudio", "minimax", "minimax-cn",
    "minimax-oauth", "nous", "novita", "nvidia", "ollama-cloud", "openai-api", "openai-codex",
    "opencode-go", "opencode-zen", "openrouter", "qwen-oauth", "stepfun", "tencent-tokenhub",
    "upstage", "vertex", "xai", "xai-oauth", "xiaomi", "zai",
})

ALIASES: dict[str, str] = {
    "alibaba-cloud": "alibaba", "alibaba-coding": "alibaba-coding-plan",
    "alibaba_coding": "alibaba-coding-plan", "alibaba_coding_plan": "alibaba-coding-plan",
    "amazon": "bedrock", "amazon-bedrock": "bedrock", "arcee-ai": "arcee", "arceeai": "arcee",
    "aws": "bedrock", "aws-bedrock": "bedrock", "azure": "azure-foundry",
    "azure-ai": "azure-foundry", "azure-ai-foundry": "azure-foundry", "claude": "anthropic",
    "claude-code": "anthropic", "claude-oauth": "anthropic", "codex": "openai-codex",
    "copilot-acp-agent": "copilot-acp", "dashscope": "alibaba",
    "dashscope-coding": "alibaba-coding-plan", "deep-infra": "deepinfra",
    "deepinfra-ai": "deepinfra", "deepseek-chat": "deepseek", "fireworks-ai": "fireworks",
    "fw": "fireworks", "gcp-vertex": "vertex", "github": "copilot", "github-copilot": "copilot",
    "github-copilot-acp": "copilot-acp", "github-model": "copilot", "github-models": "copilot",
    "glm": "zai", "gmi-cloud": "gmi", "gmicloud": "gmi", "go": "opencode-go", "google": "gemini",
    "google-ai-studio": "gemini", "google-gemini": "gemini", "google-vertex": "vertex",
    "grok": "xai", "grok-oauth": "xai-oauth", "hf": "huggingface", "hugging-face": "huggingface",
    "huggingface-hub": "huggingface", "kilo": "kilocode", "kilo-code": "kilocode",
    "kilo-gateway": "kilocode", "kimi": "kimi-coding", "kimi-cn": "kimi-coding-cn",
    "kimi-for-coding": "kimi-coding", "llama-cpp": "custom", "llama.cpp": "custom",
    "llamacpp": "custom", "lm-studio": "lmstudio", "lm_studio": "lmstudio", "local": "custom",
    "mimo": "xiaomi", "mini-max": "minimax", "minimax-china": "minimax-cn",
    "minimax-global": "minimax-oauth", "minimax-oauth-io": "minimax-oauth",
    "minimax-portal": "minimax-oauth", "minimax_cn": "minimax-cn",
    "minimax_oauth": "minimax-oauth", "moonshot": "kimi-coding", "moonshot-cn": "kimi-coding-cn",
    "nous-portal": "nous", "nousresearch": "nous", "novita-ai": "novita", "novitaai": "novita",
    "nvidia-nim": "nvidia", "ollama": "custom", "ollama_cloud": "ollama-cloud",
    "openai_codex": "openai-codex", "opencode": "opencode-zen", "opencode-go-sub": "opencode-go",
    "opencode_go": "opencode-go", "opencode_zen": "opencode-zen", "or": "openrouter",
    "qwen": "qwen-oauth", "qwen-cli": "qwen-oauth", "qwen-dashscope": "alibaba",
    "qwen-portal": "qwen-oauth", "solar": "upstage", "step": "stepfun",
    "stepfun-coding-plan": "stepfun", "tencent": "tencent-tokenhub",
    "tencent-cloud": "tencent-tokenhub", "tencentmaas": "tencent-tokenhub",
    "tokenhub": "tencent-tokenhub", "vertex-ai": "vertex", "vllm": "custom", "x-ai": "xai",
    "x-ai-oauth": "xai-oauth", "x.ai": "xai", "xai-grok-oauth": "xai-oauth",
    "xiaomi-mimo": "xiaomi", "z-ai": "zai", "z.ai": "zai", "zen": "opencode-zen", "zhipu": "zai",
}

# Names that are not providers but that Hermes accepts where one is named.
SPECIAL = frozenset({"auto", "main"})
CUSTOM_PREFIX = "custom:"


def canonical(name: str) -> str | None:
    """The canonical id Hermes resolves *name* to, or None when it does not know it.

    ``custom:<name>`` is returned lower-cased, as Hermes keys custom pools.
    """
    n = str(name or "").strip().lower()
    if not n:
        return None
    if n in KNOWN_PROVIDERS or n in SPECIAL:
        return n
    if n.startswith(CUSTOM_PREFIX) and len(n) > len(CUSTOM_PREFIX):
        return n
    return ALIASES.get(n)


def is_known(name: str) -> bool:
    """True when Hermes would resolve *name* to a provider (or ``auto``/``main``)."""
    return canonical(name) is not None


def suggest(name: str, n: int = 3) -> list[str]:
    """Close known names for a mistyped *name* ("did you mean"), best first."""
    word = str(name or "").strip().lower()
    if not word:
        return []
    pool = sorted(KNOWN_PROVIDERS | set(ALIASES))
    out: list[str] = []
    for m in difflib.get_close_matches(word, pool, n=n * 2, cutoff=0.6):
        c = ALIASES.get(m, m)
        if c not in out:
            out.append(c)
    return out[:n]


def checked(field: str, name: str, escape: str | None = None,
            accept: frozenset[str] = frozenset()) -> str:
    """*name* as Hermes's canonical id (or as given when in *accept*, e.g. a pool the store
    already holds); BadInput with "did you mean" otherwise. *escape* names the flag that
    says an unknown name is meant (``add --new-pool``)."""
    if name in accept:
        return name
    canon = canonical(name)
    if canon is not None:
        return canon
    close = suggest(name)
    hint = f"did you mean {' or '.join(close)}?" if close else "see `hermes-admin inventory`"
    more = f"; use `{escape}` if a new pool is meant" if escape else ""
    raise BadInput(field, f"{name!r} is not a Hermes provider id or custom:<name>; {hint}{more}")


def check_base_url(text: str, field: str = "--base-url") -> str:
    """*text* (stripped) if it is an http(s) URL with a host, and a port in range where it
    names one; BadInput naming *field* otherwise. A URL that cannot be parsed
    (``https://[::1``, ``https://h:99999``) is refused here, never stored for the agent or the
    proxy to fail on at its first request."""
    text = text.strip()
    try:
        parts = urlsplit(text)
        parts.port        # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError as exc:
        raise BadInput(field, f"{text!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadInput(field, f"{text!r} is not an http(s) URL with a host")
    return text


def plaintext_note(url: str | None) -> str | None:
    """A note when requests to *url* would carry the key unencrypted beyond this host
    (``http://`` to anything but a loopback address or a ``localhost`` name), or None."""
    if not url:
        return None
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    if parts.scheme != "http" or host == "localhost" or host.endswith(".localhost"):
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:        # a name: only localhost names stay on this host
        pass
    return (f"{url.strip()} is plain http: the key travels unencrypted to {host}; "
            f"use https:// unless it is a gateway on a network you trust")
