"""The agent runtime judges whose fault a failure is with the proxy's own classifier
(spec section 6, RELIABILITY 31-33): a route's fault benches nothing and moves down the
chain after one other key; a request's fault is the caller's answer and moves nowhere; a
key's fault benches the row, and the same request never goes back to it."""

from __future__ import annotations

import pytest

from store.agent import judge as judge_mod
from store.agent.outcomes import FAILED, FALLBACK, KEY, ROTATED, ROUTE_DOWN, Result, Verdict
from store.agent.pool_client import PoolClient
from store.agent.runtime import AgentRuntime
from store.config.agent_view import Route
from tests.conftest import make_row, make_store, read_doc, write_store

NOW = 1_800_000_000.0
STATUS = ("last_status", "last_status_at", "last_error_code", "last_error_reason", "last_error_message",
          "last_error_reset_at")


def _home(home) -> None:
    write_store(home, make_store({
        "openrouter": [make_row("aaa111", token="sk-key-aaaa-0001", priority=0),
                       make_row("bbb222", token="sk-key-bbbb-0002", priority=1)],
        "nous": [make_row("nnn333", token="sk-nous-0003")]}))


def _statuses(home) -> dict:
    return {r["id"]: {f: r[f] for f in STATUS} for rows in read_doc(home)["credential_pool"].values() for r in rows}


def _agent(home) -> AgentRuntime:
    return AgentRuntime(home, "openrouter", clock=lambda: NOW, env={}, fallback=[Route("nous", "m")])


def test_a_route_fault_tries_one_other_key_then_falls_back_writing_no_status(tmp_home) -> None:
    _home(tmp_home)
    before = _statuses(tmp_home)
    agent = _agent(tmp_home)
    sel = agent.select()
    d = agent.report(Result.failed_transport("reset", "connection reset"))
    assert d.action == ROUTE_DOWN and d.selection.row_id == "bbb222"
    d = agent.report(Result(503, message="unavailable"))
    assert d.action == FALLBACK and d.selection.pool == "nous"
    assert _statuses(tmp_home) == before and sel.row_id == "aaa111"


def test_a_request_fault_is_the_callers_and_moves_nowhere(tmp_home) -> None:
    _home(tmp_home)
    before = _statuses(tmp_home)
    agent = _agent(tmp_home)
    agent.select()
    d = agent.report(Result(403, message="Your input was flagged for violence", metadata={"flagged_input": "x"}))
    assert d.action == FAILED and agent.on_primary
    assert _statuses(tmp_home) == before


def test_a_key_fault_benches_and_the_request_never_goes_back(tmp_home) -> None:
    _home(tmp_home)
    c = PoolClient(tmp_home, "openrouter", clock=lambda: NOW, env={})
    c.select()
    d = c.report(Result(402, message="Insufficient credits", headers={"Retry-After": "0"}))
    assert d.action == ROTATED and d.selection.row_id == "bbb222"
    row = next(r for r in read_doc(tmp_home)["credential_pool"]["openrouter"] if r["id"] == "aaa111")
    assert row["last_status"] == "exhausted" and row["last_error_reset_at"] >= NOW + 5     # the floor


def test_control_the_old_rule_benches_for_a_route_fault(tmp_home, monkeypatch) -> None:
    old_rule = lambda result, pool=None: Verdict(KEY, "old", "server_error")  # noqa: E731
    monkeypatch.setattr(judge_mod, "classify", old_rule)     # the one judgement of an answer
    _home(tmp_home)
    before = _statuses(tmp_home)
    agent = _agent(tmp_home)
    agent.select()
    agent.report(Result(503, message="unavailable"))
    assert _statuses(tmp_home) != before


@pytest.mark.parametrize("code", [500, 502, 503, 504, 529])
def test_no_5xx_is_ever_a_bench(tmp_home, code) -> None:
    _home(tmp_home)
    before = _statuses(tmp_home)
    c = PoolClient(tmp_home, "openrouter", clock=lambda: NOW, env={})
    c.select()
    for _ in range(3):
        c.report(Result(code, message="Rate limit exceeded, insufficient credits"))   # words do not matter
    assert _statuses(tmp_home) == before
