"""RELIABILITY 27: the probe stays at its origin.

Two loopback servers on two ports are two origins. The configured one redirects to the
other, which would answer "reopened". The probe must not follow: the second origin never
receives the key, and the verdict is unknown, so nothing is lifted. A negative control
puts urllib's default redirect-following opener back and sees the key arrive there.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

from store.agent import probe
from store.paths import Home
from tests.conftest import make_row, read_doc, run_cli, write_store

KEY = "sk-or-v1-probeCANARY000000000000000000000000001"
REOPENED_BODY = {"data": {"limit": None}}


class _Server:
    def __init__(self, answer: Any) -> None:
        self.seen: list[dict[str, str]] = []
        self.answer = answer
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.seen.append(dict(self.headers))
                status, headers, body = outer.answer(self.path)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def origins() -> Iterator[tuple[_Server, _Server]]:
    other = _Server(lambda path: (200, {"Content-Type": "application/json"}, json.dumps(REOPENED_BODY).encode()))
    home = _Server(lambda path: (302, {"Location": other.url + path}, b""))
    try:
        yield home, other
    finally:
        home.close()
        other.close()


def _benched_home(home: Home, base: str) -> bytes:
    now = time.time()
    write_store(home, {"version": 1, "providers": {}, "credential_pool": {"openrouter": [
        make_row("aaaaaa", token=KEY, base_url=base + "/api/v1", last_status="exhausted",
                 last_status_at=now - 10, last_error_code=402, last_error_reset_at=now + 3600)]}})
    return home.auth.read_bytes()


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_gets_no_key_and_lifts_nothing(
        tmp_home: Home, origins: tuple[_Server, _Server], code: int) -> None:
    here, other = origins
    here.answer = lambda path: (code, {"Location": other.url + path}, b"")
    raw = _benched_home(tmp_home, here.url)
    result = probe.lift_reopened_cooldowns(tmp_home, "openrouter",
                                           probe.default_verdict_fn({}, probe.VerdictCache()))
    assert here.seen and here.seen[0].get("Authorization") == f"Bearer {KEY}"
    assert other.seen == []
    assert result.verdicts["aaaaaa"].state == probe.UNKNOWN
    assert str(code) in result.verdicts["aaaaaa"].reason
    assert result.cleared_reopened == [] and tmp_home.auth.read_bytes() == raw


def test_negative_control_a_following_opener_leaks_the_key_and_lifts(
        tmp_home: Home, origins: tuple[_Server, _Server], monkeypatch: pytest.MonkeyPatch) -> None:
    here, other = origins
    _benched_home(tmp_home, here.url)
    monkeypatch.setattr(probe, "_OPENER", urllib.request.build_opener())
    result = probe.lift_reopened_cooldowns(tmp_home, "openrouter",
                                           probe.default_verdict_fn({}, probe.VerdictCache()))
    assert other.seen and other.seen[0].get("Authorization") == f"Bearer {KEY}"
    assert result.cleared_reopened == ["aaaaaa"]
    assert read_doc(tmp_home)["credential_pool"]["openrouter"][0]["last_status"] is None


@pytest.mark.parametrize("status, body", [
    (200, b"not json"), (200, b"\xff\xfe"), (200, b"[" * 100_000), (200, b"[]"),
    (204, b""), (500, json.dumps(REOPENED_BODY).encode()), (404, b"{}"),
])
def test_non_2xx_or_undecodable_is_unknown(tmp_home: Home, origins: tuple[_Server, _Server],
                                          status: int, body: bytes) -> None:
    here, _ = origins
    here.answer = lambda path: (status, {"Content-Type": "application/json"}, body)
    raw = _benched_home(tmp_home, here.url)
    result = probe.lift_reopened_cooldowns(tmp_home, "openrouter",
                                           probe.default_verdict_fn({}, probe.VerdictCache()))
    assert result.verdicts["aaaaaa"].state == probe.UNKNOWN
    assert tmp_home.auth.read_bytes() == raw


ECHOED = "sk-ant-api03-echoedCANARY000000000000000000000001"   # not in the store: caught by shape


def test_a_probe_lift_audits_no_secret_from_any_field(tmp_home: Home, origins: tuple[_Server, _Server]) -> None:
    """The lift's audit record carries the row's reasons and messages from before the reset;
    every one of them passes the redactor (a known store secret and a key-shaped echo)."""
    _, other = origins                     # answers "reopened" directly
    now = time.time()
    write_store(tmp_home, {"version": 1, "providers": {}, "credential_pool": {"openrouter": [
        make_row("aaaaaa", token=KEY, base_url=other.url + "/api/v1", last_status="exhausted",
                 last_status_at=now - 10, last_error_code=402, last_error_reset_at=now + 3600,
                 last_error_reason=f"reason {KEY}", last_error_message=f"message {ECHOED}",
                 failure_reason=f"billing {KEY}")]}})
    proc = run_cli(tmp_home, "probe", "openrouter", ok=False)
    assert proc.returncode == 0, proc.stderr
    text = tmp_home.audit.read_text()
    assert "probe" in text and KEY not in text and ECHOED not in text
    assert "sk-ant-…0001" in text
