"""Helpers of the budget tests: a home whose hermes-admin.yaml has budgets, a proxy in this
process in front of the scripted upstream, whose usage feed hands each answer's
``usage.cost`` to the budgets' tally (on the feed's thread: :func:`ask` waits for it)."""

from __future__ import annotations

import time
from typing import Any

import openai

from store.config.settings import SETTINGS_FILE
from store.paths import Home
from tests.proxy.upstream import OK_BODY, http
from tests.proxy_helpers import Running, wait_until

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


_EXPECTED: dict[int, dict[tuple[str, str], float]] = {}     # per tally: the cost each row has been answered


def ask(p: Running) -> tuple[str, str, str]:
    """One chat request through the proxy with the real openai SDK; returns (pool, row id,
    fallback mark) once the proxy's own usage feed has handed the answer's cost to the
    budgets' tally (the feed prices on its own thread: a bounded wait, no sleep)."""
    c = openai.OpenAI(base_url=p.url, api_key="local", max_retries=0, timeout=30)
    raw = c.chat.completions.with_raw_response.create(**MSG)
    pool, row = raw.headers["X-Hermes-Pool"], raw.headers["X-Hermes-Credential"]
    cost = raw.http_response.json().get("usage", {}).get("cost")
    tally = p.chain.eligibility.budgets.tally
    owed = _EXPECTED.setdefault(id(tally), {})
    owed[(pool, row)] = owed.get((pool, row), 0.0) + (cost or 0.0)
    wait_until(lambda: tally.key(pool, row, "day", time.time()) >= owed[(pool, row)] - 1e-9,
               what="the usage feed to hand the answer's cost to the budgets' tally")
    return pool, row, raw.headers["X-Hermes-Fallback"]
