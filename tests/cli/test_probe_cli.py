"""`hermes-admin probe POOL [TARGET] [--json]` end to end against the fake provider."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import make_row, make_store, read_doc, run_cli, write_store
from tui.demo.fake_provider import FakeProvider

TOKENS = {"r": "cdx-token-reopened-000A", "l": "cdx-token-limited-000B",
          "u": "cdx-token-unknown-000C"}


@pytest.fixture
def fake():
    with FakeProvider() as fp:
        yield fp


def _seed(home, fake):
    now = time.time()
    bench = dict(last_status="exhausted", last_status_at=now - 30, last_error_code=429,
                 last_error_reason="usage_limit_reached", last_error_reset_at=now + 7200)
    write_store(home, make_store({"openai-codex": [
        make_row("rrr111", label="reopens", token=TOKENS["r"], priority=0,
                 base_url=fake.url + "/backend-api", **bench),
        make_row("lll222", label="limited", token=TOKENS["l"], priority=1,
                 base_url=fake.url + "/backend-api", **bench),
        make_row("uuu333", label="erroring", token=TOKENS["u"], priority=2,
                 base_url=fake.url + "/backend-api", **bench),
        make_row("ok4444", label="fine", token="cdx-token-fine-000D", priority=3),
    ]}))
    fake.usage(TOKENS["r"], 20.0)
    fake.usage(TOKENS["l"], 100.0)
    fake.usage(TOKENS["u"], status=500)


def test_probe_prints_verdicts_lifts_only_reopened_and_exits_5_on_unknown(tmp_home, fake):
    _seed(tmp_home, fake)
    proc = run_cli(tmp_home, "probe", "openai-codex", ok=False)
    assert proc.returncode == 5, proc.stderr
    out = proc.stdout
    assert "#1 reopens" in out and "reopened (worst window 20% used); cooldown lifted" in out
    assert "#2 limited" in out and "still limited (worst window 100% used)" in out
    assert "#3 erroring" in out and "unknown (usage endpoint answered HTTP 500)" in out
    assert "#4 fine" in out and "not probed (ok)" in out
    for token in TOKENS.values():
        assert token not in out + proc.stderr
    rows = {r["id"]: r for r in read_doc(tmp_home)["credential_pool"]["openai-codex"]}
    assert rows["rrr111"]["last_status"] is None and "status_cleared_at" in rows["rrr111"]
    assert rows["lll222"]["last_status"] == rows["uuu333"]["last_status"] == "exhausted"
    assert all(r["request_count"] == 0 for r in rows.values())
    audit = (tmp_home.root / "hermes-admin-audit.jsonl").read_text()
    assert "probe-lift" in audit and "rrr111" in audit and TOKENS["r"] not in audit


def test_probe_one_target_json_exit_0(tmp_home, fake):
    _seed(tmp_home, fake)
    proc = run_cli(tmp_home, "probe", "openai-codex", "limited", "--json")
    data = json.loads(proc.stdout)
    assert [r["id"] for r in data["rows"]] == ["lll222"]
    assert data["rows"][0]["verdict"] == "limited" and not data["rows"][0]["lifted"]
    assert data["rows"][0]["fingerprint"] and TOKENS["l"] not in proc.stdout
    # Only the target was probed.
    assert fake.requests_to("/wham/usage") == 1


def test_probe_unknown_pool_is_bad_input(tmp_home, fake):
    _seed(tmp_home, fake)
    proc = run_cli(tmp_home, "probe", "nosuchpool", ok=False)
    assert proc.returncode == 2 and "nosuchpool" in proc.stderr
