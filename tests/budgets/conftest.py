"""Helpers of the budget tests: a home whose hermes-admin.yaml has budgets, a proxy in this
process in front of the scripted upstream, and the usage feed played by the test (each
answer's ``usage.cost`` handed to the proxy's tally as the feed hands it a Spent)."""

from __future__ import annotations

import time
from typing import Any

import openai

from store.config.settings import SETTINGS_FILE
from store.paths import Home
from store.usage.record import ACTUAL, Spent
from tests.proxy.upstream import OK_BODY, http
from tests.proxy_helpers import Running

MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def costing(cost: float) -> Any:
    """An OpenRouter-style answer that reports what it cost (``usage.cost``)."""
    return http(200, {}, {**OK_BODY, "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4,
                                                "cost": cost}})


def budgets(home: Home, text: str | None) -> None:
    """hermes-admin.yaml with *text* under ``budgets:`` (None: no budgets at all)."""
    path = home.root / SETTINGS_FILE
    if text is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text("budgets:\n" + "".join(f"  {line}\n" for line in text.strip().splitlines()))


def ask(p: Running) -> tuple[str, str, str]:
    """One chat request through the proxy with the real openai SDK; the answer's cost goes to
    the proxy's tally as the usage feed would give it. Returns (pool, row id, fallback mark)."""
    c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
    raw = c.chat.completions.with_raw_response.create(**MSG)
    pool, row = raw.headers["X-Hermes-Pool"], raw.headers["X-Hermes-Credential"]
    cost = raw.http_response.json().get("usage", {}).get("cost")
    p.chain.eligibility.budgets.tally(Spent(at=time.time(), pool=pool, row_id=row, fingerprint=None,
                                            cost_usd=cost, cost_status=ACTUAL))
    return pool, row, raw.headers["X-Hermes-Fallback"]
