"""The OAuth refresh hook: Codex/Anthropic skews, a loopback token endpoint, no lock held
during the request, and a concurrent refresh by another process is kept."""

from __future__ import annotations

import base64
import json
import socket

import pytest

from store.agent import refresh
from store.lock import lock_is_free
from store.transaction import transaction
from tests.conftest import make_row, make_store, read_doc, write_store
from tui.demo.fake_provider import FakeProvider

NOW = 1_800_000_000.0


def jwt(exp: float) -> str:
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    return f"{part({'alg': 'none'})}.{part({'exp': exp, 'sub': 'user'})}.sig"


@pytest.fixture
def fake():
    with FakeProvider() as fp:
        yield fp


@pytest.mark.parametrize("left,expected", [(119, True), (120, True), (121, False), (3600, False)])
def test_codex_refreshes_120s_before_the_jwt_exp(left, expected):
    row = {"auth_type": "oauth", "access_token": jwt(NOW + left)}
    assert refresh.needs_refresh("openai-codex", row, NOW) is expected


@pytest.mark.parametrize("left,expected", [(119, True), (121, False)])
def test_anthropic_refreshes_120s_before_expires_at_ms(left, expected):
    row = {"auth_type": "oauth", "expires_at_ms": int((NOW + left) * 1000)}
    assert refresh.needs_refresh("anthropic", row, NOW) is expected


def test_api_keys_and_unknown_expiry_never_need_refresh():
    assert not refresh.needs_refresh("anthropic", {"auth_type": "api_key", "expires_at_ms": 1}, NOW)
    assert not refresh.needs_refresh("openai-codex", {"auth_type": "oauth", "access_token": "opaque"}, NOW)
    assert refresh.jwt_exp("a.b") is None


def _oauth_home(home, fake, **kw):
    write_store(home, make_store({"anthropic": [make_row(
        "oau111", token="at-old-0001", auth_type="oauth", source="hermes_pkce",
        refresh_token="rt-old-0001", last_status="exhausted", last_status_at=NOW,
        last_error_code=401, last_error_reason="token_expired", custom_field="kept", **kw)]}))


def test_refresh_writes_new_tokens_and_holds_no_lock_during_the_request(tmp_home, fake, monkeypatch):
    _oauth_home(tmp_home, fake)
    fake.oauth("rt-old-0001", access_token="at-new-0002", new_refresh="rt-new-0002", expires_in=600)
    held = []
    real_connect = socket.socket.connect

    def guarded(self, address):
        held.append(not lock_is_free(tmp_home.lock))
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    hook = refresh.RefreshHook({"anthropic": fake.url + "/v1/oauth/token"}, clock=lambda: NOW)
    res = hook(tmp_home, "anthropic", "oau111")
    assert res.ok and not res.by_other
    assert held == [False]
    row = read_doc(tmp_home)["credential_pool"]["anthropic"][0]
    assert row["access_token"] == "at-new-0002" and row["refresh_token"] == "rt-new-0002"
    assert row["expires_at_ms"] == int((NOW + 600) * 1000)
    assert row["last_status"] == "ok" and row["last_error_code"] is None
    assert row["custom_field"] == "kept"


def test_a_refresh_done_meanwhile_by_another_process_is_kept(tmp_home, fake, monkeypatch):
    _oauth_home(tmp_home, fake)
    fake.oauth("rt-old-0001", access_token="at-ours-0002", new_refresh="rt-ours-0002")
    real_request = refresh.request_tokens

    def racing_request(*a, **kw):
        answer = real_request(*a, **kw)
        with transaction(tmp_home) as doc:     # another agent stores its refresh first
            r = doc["credential_pool"]["anthropic"][0]
            r["access_token"], r["refresh_token"] = "at-theirs-0003", "rt-theirs-0003"
        return answer

    monkeypatch.setattr(refresh, "request_tokens", racing_request)
    res = refresh.RefreshHook({"anthropic": fake.url + "/v1/oauth/token"})(tmp_home, "anthropic", "oau111")
    assert res.ok and res.by_other
    row = read_doc(tmp_home)["credential_pool"]["anthropic"][0]
    assert row["access_token"] == "at-theirs-0003" and row["refresh_token"] == "rt-theirs-0003"


def test_terminal_refresh_errors_and_borrowed_rows(tmp_home, fake):
    _oauth_home(tmp_home, fake)
    fake.oauth("rt-old-0001", error="invalid_grant")
    before = tmp_home.auth.read_bytes()
    res = refresh.RefreshHook({"anthropic": fake.url + "/v1/oauth/token"})(tmp_home, "anthropic", "oau111")
    assert not res.ok and res.terminal and "invalid_grant" in res.reason
    assert "rt-old-0001" not in res.reason
    assert tmp_home.auth.read_bytes() == before
    # A borrowed row (claude_code) is never refreshed into auth.json.
    write_store(tmp_home, make_store({"anthropic": [make_row(
        "brw111", auth_type="oauth", source="claude_code", refresh_token="rt-x",
        secret_fingerprint="sha256:0011223344556677")]}))
    res = refresh.RefreshHook({"anthropic": fake.url + "/v1/oauth/token"})(tmp_home, "anthropic", "brw111")
    assert not res.ok and "borrowed" in res.reason
    assert fake.requests_to("/oauth/token") == 1
