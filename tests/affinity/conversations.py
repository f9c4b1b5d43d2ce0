"""Conversations through a running proxy with the real SDKs, shared by the affinity tests.

A pool of keys on the scripted cache upstream (:mod:`tests.affinity.cache_upstream`), one
pool per protocol as Hermes names them: ``openrouter`` (Chat Completions), ``openai-api``
(Responses), ``anthropic`` (Messages). :class:`Talk` holds one conversation's history and
sends its next turn; each turn returns the row id the proxy served it with and the cached
tokens the SDK read from the answer's usage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai

from store.dialects.dialect import ANTHROPIC, OPENAI, RESPONSES
from store.paths import Home
from tests.conftest import make_row, make_store, write_store

POOLS = {OPENAI: "openrouter", RESPONSES: "openai-api", ANTHROPIC: "anthropic"}
KEYS = {OPENAI: "sk-or-v1-affinity-{i:032d}", RESPONSES: "sk-proj-affinity-{i:032d}",
        ANTHROPIC: "sk-ant-api03-affinity-{i:032d}"}
MODELS = {OPENAI: "openai/gpt-5", RESPONSES: "gpt-5", ANTHROPIC: "claude-sonnet-4-5"}


def key(protocol: str, i: int) -> str:
    return KEYS[protocol].format(i=i)


def row_id(i: int) -> str:
    return f"k{i}aff"


def seed(home: Home, base: str, protocol: str, *, keys: int = 2, strategy: str = "round_robin",
         settings: str | None = None) -> str:
    """One pool of *keys* rows of *protocol*'s provider on *base*, with *strategy*, and
    hermes-admin.yaml holding *settings* (None: no file, the defaults). Returns the pool."""
    pool = POOLS[protocol]
    url = {OPENAI: base + "/api/v1", RESPONSES: base + "/v1", ANTHROPIC: base}[protocol]
    write_store(home, make_store({pool: [make_row(row_id(i), token=key(protocol, i), priority=i, base_url=url)
                                         for i in range(keys)]}))
    home.config.write_text(f"model:\n  provider: {pool}\n  default: {MODELS[protocol]}\n"
                           f"credential_pool_strategies:\n  {pool}: {strategy}\n")
    if settings is not None:
        (home.root / "hermes-admin.yaml").write_text(settings)
    return pool


@dataclass
class Talk:
    """One conversation: its protocol, its opening, its history so far."""

    protocol: str
    url: str                  # the proxy's /v1 base
    opening: str
    system: str = "You are the hermes-admin test assistant. Answer briefly."
    history: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)      # e.g. prompt_cache_key, metadata

    def turn(self, text: str | None = None) -> tuple[str, int]:
        """Send the next user message; (the row id that served it, cached tokens reported)."""
        self.history.append({"role": "user", "content": text or (self.opening if not self.history else
                                                                  f"and then? ({len(self.history)})")})
        if self.protocol == ANTHROPIC:
            c = anthropic.Anthropic(base_url=self.url[:-3], api_key="local", max_retries=0, timeout=30)
            raw = c.messages.with_raw_response.create(model=MODELS[ANTHROPIC], max_tokens=16, system=self.system,
                                                      messages=self.history, **self.extra)
            got = raw.parse()
            answer, cached = got.content[0].text, got.usage.cache_read_input_tokens or 0
        elif self.protocol == RESPONSES:
            c = openai.OpenAI(base_url=self.url, api_key="local", max_retries=0, timeout=30)
            raw = c.responses.with_raw_response.create(model=MODELS[RESPONSES], instructions=self.system,
                                                       input=self.history, **self.extra)
            got = raw.parse()
            answer, cached = got.output_text, got.usage.input_tokens_details.cached_tokens
        else:
            c = openai.OpenAI(base_url=self.url, api_key="local", max_retries=0, timeout=30)
            raw = c.chat.completions.with_raw_response.create(
                model=MODELS[OPENAI], messages=[{"role": "system", "content": self.system}, *self.history],
                **self.extra)
            got = raw.parse()
            answer, cached = got.choices[0].message.content, got.usage.prompt_tokens_details.cached_tokens
        self.history.append({"role": "assistant", "content": answer})
        return raw.headers["x-hermes-credential"], cached
