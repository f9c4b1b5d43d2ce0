"""The agent runtime feeds the usage ledger (#29): a caller's report whose verdict carries
usage becomes a ledger row, written behind (never under auth.lock, never in auth.json); a
locked or corrupt ledger is a notice and the agent goes on. The real runtime against a
scripted upstream over HTTP, and the demo agent (direct mode) as a process. Controls: the
ledger off (by the runtime's flag and by hermes-admin.yaml) records nothing."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

from store.agent.judge import judge_success
from store.agent.outcomes import OK, Result
from store.agent.runtime import AgentRuntime
from store.config.settings import SETTINGS_FILE
from store.dialects.registry import DIALECTS
from store.usage import ledger as ledger_mod
from store.usage.ledger import ledger_path
from tests.cli.inprocess import run_main
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import wait_until
from tui.demo.agent import chat_answer
from tui.demo.fake_provider import FakeProvider

ROOT = Path(__file__).resolve().parents[2]
KEYS = ("sk-or-v1-runtimeusage-" + "A" * 30, "sk-or-v1-runtimeusage-" + "B" * 30)
ANSWER = {"id": "c1", "object": "chat.completion", "model": "m",
          "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
          "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10, "cost": 0.0012,
                    "prompt_tokens_details": {"cached_tokens": 2}}}


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


def seed(home, base: str, settings: str | None = None) -> None:
    write_store(home, make_store({"openrouter": [make_row("or0run", token=KEYS[0], priority=0, base_url=base),
                                                 make_row("or1run", token=KEYS[1], priority=1, base_url=base)]}))
    if settings is not None:
        (home.root / SETTINGS_FILE).write_text(settings)


def rows(home) -> list[tuple]:
    with sqlite3.connect(ledger_path(home.root)) as c:
        return c.execute("SELECT pool, row_id, fingerprint, model, input_tokens, output_tokens, cache_read_tokens, "
                         "cost_usd, cost_status FROM requests ORDER BY at").fetchall()


def turn(agent: AgentRuntime, base: str):
    sel = agent.select()
    result, body = chat_answer(sel, base)
    return sel, agent.report(result, body=body)


def test_a_runtime_answer_with_usage_becomes_a_ledger_row(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    up.script(None, *[http(200, body=ANSWER)] * 3)
    agent = AgentRuntime(tmp_home, "openrouter", model="m", env={})
    for _ in range(3):
        sel, decision = turn(agent, up.url)
        assert decision.action == OK
    agent.close()
    got = rows(tmp_home)
    assert got == [("openrouter", sel.row_id, sel.fingerprint, "m", 7, 3, 2, 0.0012, "actual")] * 3
    assert agent.usage.answers == 3 and agent.usage.ledger.written == 3
    doc = json.dumps(read_doc(tmp_home))
    assert "tokens" not in doc and "cost" not in doc                 # never in auth.json
    raw = ledger_path(tmp_home.root).read_bytes()
    assert not any(k.encode() in raw or k[-12:].encode() in raw for k in KEYS)    # no secret
    assert os.stat(ledger_path(tmp_home.root)).st_mode & 0o777 == 0o600
    code, out, err = run_main(["usage", "--home", str(tmp_home.root), "--json"], b"")
    assert code == 0, err
    creds = {c["id"]: c for c in json.loads(out)["pools"]["openrouter"]["credentials"]}
    assert creds[sel.row_id]["input_tokens"] == 21 and creds[sel.row_id]["cost_status"] == "actual"


def test_a_verdict_the_caller_judged_is_recorded_too(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    agent = AgentRuntime(tmp_home, "openrouter", env={})
    sel = agent.select()
    body = json.dumps({**ANSWER, "usage": {"prompt_tokens": 11, "completion_tokens": 1}}).encode()
    verdict = judge_success(agent.clock(), dialect=DIALECTS["openai"], body=body, model="other-model")
    assert agent.report(Result(200), verdict).action == OK
    agent.close()
    assert rows(tmp_home) == [("openrouter", sel.row_id, sel.fingerprint, "other-model", 11, 1, None, None,
                               "unknown")]


def test_answers_without_usage_and_failures_record_nothing(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    up.script(None, http(200, body={"id": "c1", "choices": []}),
              http(429, {"Retry-After": "30"}, {"error": {"message": "slow down", "type": "rate_limit"}}))
    agent = AgentRuntime(tmp_home, "openrouter", env={})
    turn(agent, up.url)
    turn(agent, up.url)
    agent.close()
    assert agent.usage.answers == 0 and not ledger_path(tmp_home.root).exists()


@pytest.mark.parametrize("how", ["flag", "settings"])
def test_control_with_the_ledger_off_nothing_is_recorded(tmp_home, up, how) -> None:
    seed(tmp_home, up.url, "usage:\n  ledger: false\n" if how == "settings" else None)
    up.script(None, *[http(200, body=ANSWER)] * 2)
    agent = AgentRuntime(tmp_home, "openrouter", env={}, usage=False if how == "flag" else None)
    assert turn(agent, up.url)[1].action == OK
    agent.close()
    assert agent.usage.answers == 0 and agent.usage.feed is None and not ledger_path(tmp_home.root).exists()


def _written_while_auth_lock_is_held(home, base: str, wait: float) -> bool:
    agent = AgentRuntime(home, "openrouter", env={}, lock_timeout=1.0)
    turn(agent, base)
    with FileLock(str(home.lock), timeout=5):
        assert agent.usage.feed.wait_idle(10)
        try:
            wait_until(lambda: agent.usage.ledger.written == 1, timeout=wait, what="the write")
        except AssertionError:
            return False
        finally:
            agent.close(timeout=0.5)
    return True


def test_the_ledger_is_written_while_another_process_holds_auth_lock(tmp_home, up) -> None:
    """Written behind and never under auth.lock: with the lock held elsewhere all along, the
    row still reaches the ledger."""
    seed(tmp_home, up.url)
    up.script(None, http(200, body=ANSWER))
    assert _written_while_auth_lock_is_held(tmp_home, up.url, 10)
    assert len(rows(tmp_home)) == 1


def test_control_a_writer_that_took_auth_lock_would_not_get_through(tmp_home, up, monkeypatch) -> None:
    """Negative control: the ledger's batch made to take auth.lock first, the same test
    sees no row written while the lock is held elsewhere."""
    seed(tmp_home, up.url)
    up.script(None, http(200, body=ANSWER))
    write_rows = ledger_mod.write_rows

    def under_the_lock(conn, batch):
        try:
            with FileLock(str(tmp_home.lock), timeout=0.2):
                write_rows(conn, batch)
        except Timeout:         # as a locked ledger: the rows wait for the next round
            raise sqlite3.OperationalError("database is locked") from None
    monkeypatch.setattr(ledger_mod, "write_rows", under_the_lock)
    assert not _written_while_auth_lock_is_held(tmp_home, up.url, 2)


def test_a_corrupt_ledger_is_a_notice_and_the_agent_goes_on(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    up.script(None, *[http(200, body=ANSWER)] * 3)
    ledger_path(tmp_home.root).write_bytes(b"not a database at all" * 50)
    agent = AgentRuntime(tmp_home, "openrouter", env={})
    assert [turn(agent, up.url)[1].action for _ in range(3)] == [OK] * 3
    wait_until(lambda: any("not a usable usage ledger" in n.text for n in agent.notices_of("usage")),
               what="the ledger's notice")
    agent.close()
    assert all("the agent goes on" in n.text for n in agent.notices_of("usage"))
    assert ledger_path(tmp_home.root).read_bytes().startswith(b"not a database")


def test_a_locked_ledger_is_a_notice_then_catches_up(tmp_home, up) -> None:
    seed(tmp_home, up.url)
    up.script(None, *[http(200, body=ANSWER)] * 4)
    agent = AgentRuntime(tmp_home, "openrouter", env={})
    turn(agent, up.url)
    wait_until(lambda: agent.usage.ledger is not None and agent.usage.ledger.written == 1, what="the first row")
    holder = sqlite3.connect(ledger_path(tmp_home.root), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    assert [turn(agent, up.url)[1].action for _ in range(3)] == [OK] * 3
    wait_until(lambda: any("locked" in n.text for n in agent.notices_of("usage")), what="the locked notice")
    holder.execute("ROLLBACK")
    holder.close()
    wait_until(lambda: agent.usage.ledger.written == 4, what="the rows that waited")
    agent.close()
    assert len(rows(tmp_home)) == 4


@pytest.mark.slow
def test_the_demo_agent_in_direct_mode_records_its_usage(tmp_home) -> None:
    """``python -m tui.demo.agent`` without --proxy: every answer of the fake provider
    (which reports 5 input and 3 output tokens) is a ledger row once the agent ends."""
    with FakeProvider() as fake:
        seed(tmp_home, fake.url)
        report = tmp_home.root.parent / "agent.json"
        argv = [sys.executable, "-m", "tui.demo.agent", "--home", str(tmp_home.root), "--pool", "openrouter",
                "--interval", "0.05", "--duration", "1.5", "--report", str(report)]
        done = subprocess.run(argv, env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT, capture_output=True,
                              text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    got = json.loads(report.read_text())
    assert got["usage_answers"] > 0 and got["statuses"].get("200") == got["usage_answers"]
    recorded = rows(tmp_home)
    assert len(recorded) == got["usage_answers"]
    assert {(r[0], r[4], r[5]) for r in recorded} == {("openrouter", 5, 3)}
