"""The fake provider the tests and the demo share: scripts, quotas, probe endpoints, OAuth,
and the process mode the demo starts."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.demo.fake_calls import Clock, call
from tui.demo import fake_provider as fpv

ROOT = Path(__file__).resolve().parents[2]


def test_scripted_replies_in_order_last_one_repeats():
    with fpv.FakeProvider() as fp:
        fp.script("k", fpv.rate_limited(retry_after=30), fpv.billing(), fpv.unauthorized("token_revoked"),
                  fpv.server_error(529), fpv.ok())
        got = [call(fp.url, "k") for _ in range(6)]
        assert [g[0] for g in got] == [429, 402, 401, 529, 200, 200]
        assert got[0][1]["Retry-After"] == "30"
        assert got[2][2]["error"]["code"] == "token_revoked"
        assert got[4][2]["choices"][0]["message"]["role"] == "assistant"
        assert call(fp.url, "unscripted")[0] == 200
        assert call(fp.url, None)[0] == 401
        assert call(fp.url, "k", path="/nope")[0] == 404


def test_usage_limit_and_reset_header_shapes():
    with fpv.FakeProvider() as fp:
        fp.script("u", fpv.rate_limited(usage_limit=True, reset_at=1_800_000_900.0))
        status, headers, body = call(fp.url, "u")
        assert status == 429 and "usage limit" in body["error"]["message"].lower()
        assert headers["x-ratelimit-reset"] == "1800000900000"


def test_a_quota_that_reopens_early_and_one_that_lies():
    clock = Clock()
    with fpv.FakeProvider(clock=clock) as fp:
        fp.quota("early", fpv.Quota(limit=2, window=3600, reopens_at=clock.t + 60))
        fp.quota("liar", fpv.Quota(limit=1, window=3600, lie=True))
        assert [call(fp.url, "early")[0] for _ in range(3)] == [200, 200, 429]
        status, headers, _ = call(fp.url, "early")
        assert status == 429 and int(headers["x-ratelimit-reset"]) == int((clock.t + 3600) * 1000)
        usage = call(fp.url, "early", "GET", "/backend-api/wham/usage")[2]
        assert usage["rate_limit"]["primary_window"]["used_percent"] == 100.0
        clock.t += 61                                      # reopens before the window says
        assert call(fp.url, "early", "GET", "/api/codex/usage")[2][
            "rate_limit"]["primary_window"]["used_percent"] < 100
        assert call(fp.url, "early")[0] == 200
        # The liar: usage and key endpoints say "plenty left", chat keeps refusing.
        assert [call(fp.url, "liar")[0] for _ in range(2)] == [200, 429]
        assert call(fp.url, "liar", "GET", "/backend-api/wham/usage")[2][
            "rate_limit"]["primary_window"]["used_percent"] == 10.0
        assert call(fp.url, "liar", "GET", "/api/v1/key")[2]["data"]["limit_remaining"] > 0
        assert call(fp.url, "liar")[0] == 429


def test_probe_and_token_endpoints():
    with fpv.FakeProvider() as fp:
        fp.usage("c", 40.0, secondary=70.0, additional=[99.0])
        body = call(fp.url, "c", "GET", "/backend-api/wham/usage")[2]
        assert body["additional_rate_limits"][0]["rate_limit"]["primary_window"]["used_percent"] == 99.0
        fp.key_info("o", limit=10, limit_remaining=0)
        assert call(fp.url, "o", "GET", "/api/v1/key")[2]["data"]["limit_remaining"] == 0
        fp.oauth("rt-1", access_token="at-2", new_refresh="rt-2", expires_in=60)
        form = b"grant_type=refresh_token&refresh_token=rt-1&client_id=x"
        status, _h, body = call(fp.url, None, path="/oauth/token", data=form,
                                headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert status == 200 and body["access_token"] == "at-2" and body["expires_in"] == 60
        status, _h, body = call(fp.url, None, path="/v1/oauth/token",
                                data=json.dumps({"refresh_token": "unknown"}).encode(),
                                headers={"Content-Type": "application/json"})
        assert status == 400 and body["error"] == "invalid_grant"
        assert fp.requests_to("/oauth/token") == 2


def test_runs_as_a_process_with_a_script(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"keys": {"k": [{"status": 402}]},
                                  "quotas": {"q": {"limit": 1, "window": 60}}}))
    port_file = tmp_path / "port"
    proc = subprocess.Popen([sys.executable, "-m", "tui.demo.fake_provider", "--port", "0",
                             "--script", str(script), "--port-file", str(port_file)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while not port_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        url = f"http://127.0.0.1:{int(port_file.read_text())}"
        assert call(url, "k")[0] == 402
        assert [call(url, "q")[0] for _ in range(2)] == [200, 429]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("the fake provider did not stop on SIGTERM")
    assert proc.returncode == 0
