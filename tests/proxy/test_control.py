"""``proxy restore`` / ``proxy pin ROUTE`` / ``proxy unpin`` against a running proxy.

- The installed CLI steers a real proxy process: pinned to the fallback, a request with the
  primary healthy is served by the fallback; ``restore`` brings the next request back to the
  primary; every action is audited (via cli). Clear errors: an unknown route (exit 2, naming
  the chain), no proxy running (exit 1), a port with no proxy on it or no port at all (exit 2).
- The control path goes no further than the home: on an exposed bind nothing on the proxy's
  port answers a control request, with or without a client key (and ``/metrics`` needs one);
  a request file that is a link, or that group or others may write, is refused and changes
  nothing. Negative control: a reader that follows links obeys the planted request.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess

import httpx
import pytest

from store.ops import audit
from store.paths import Home
from store.proxy import control
from store.proxy.edge.inbound import gate_for
from tests.cli.inprocess import run_main
from tests.conftest import HERMES_ADMIN, cli_env, run_cli
from tests.proxy_helpers import running_proxy, seed, start_proxy_proc, wait_until
from tui.demo.fake_provider import FakeProvider

pytestmark = pytest.mark.slow
MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
CLIENT_KEY = "hapk-control-test-key-00000000000000000001"


@pytest.fixture
def fake():
    with FakeProvider() as f:
        yield f


def _served_by(url: str) -> str:
    r = httpx.post(url + "/chat/completions", json=MSG, timeout=30)
    assert r.status_code == 200, r.text
    return r.headers["x-hermes-pool"]


def _cli_here(home: Home, *args: str) -> tuple[int, str, str]:
    """The CLI in this process: (exit code, stdout, stderr)."""
    return run_main(["--home", str(home.root), *args], b"")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def test_pin_restore_unpin_from_the_cli_against_a_running_proxy(tmp_home: Home, fake) -> None:
    seed(tmp_home, fake)
    proc, url = start_proxy_proc(tmp_home)
    try:
        assert _served_by(url) == "openrouter"
        pinned = run_cli(tmp_home, "proxy", "pin", "nous")
        assert "pinned to nous (was on openrouter)" in pinned.stdout
        assert _served_by(url) == "nous" and _served_by(url) == "nous"       # the primary is fine, and unused
        st = json.loads(run_cli(tmp_home, "proxy", "status", "--json").stdout)["proxies"][0]
        assert st["pinned"] == "nous" and st["active"] == "nous" and st["next_restore_check"] is None
        back = run_cli(tmp_home, "proxy", "restore", "--json")
        answer = json.loads(back.stdout)
        assert answer["ok"] and answer["active"] == "openrouter" and answer["pinned"] is None
        assert _served_by(url) == "openrouter"
        run_cli(tmp_home, "proxy", "pin", "nous")
        unpinned = run_cli(tmp_home, "proxy", "unpin")
        assert "unpinned from nous" in unpinned.stdout
        # Clear errors, nothing changed by any of them. In this process (the process boundary
        # is the successes' above): each is refused before anything is asked of the proxy.
        code, _, err = _cli_here(tmp_home, "proxy", "pin", "openruter")
        assert code == 2 and "openrouter -> nous" in err
        assert _cli_here(tmp_home, "proxy", "pin")[0] == 2
        code, _, err = _cli_here(tmp_home, "proxy", "restore", "--port", "1")
        assert code == 2 and "no proxy listens on port 1" in err
        assert _cli_here(tmp_home, "proxy", "restore", "--port", "http")[0] == 2
        assert _cli_here(tmp_home, "proxy", "unpin", "nous")[0] == 2
    finally:
        _stop(proc)
    gone = run_cli(tmp_home, "proxy", "restore", ok=False)
    assert gone.returncode == 1 and "no proxy is running" in gone.stderr
    actions = [(e["action"], e["via"]) for e in audit.tail(tmp_home) if str(e.get("action")).startswith("proxy-")]
    assert actions == [("proxy-pin", "cli"), ("proxy-restore", "cli"), ("proxy-pin", "cli"), ("proxy-unpin", "cli")]


def test_nothing_on_an_exposed_port_answers_a_control_request(tmp_home: Home, fake) -> None:
    seed(tmp_home, fake)
    keys = tmp_home.root / "hermes-admin-proxy-keys"
    keys.write_text(CLIENT_KEY + "\n")
    os.chmod(keys, 0o600)
    with running_proxy(tmp_home, host="127.0.0.2", gate=gate_for("127.0.0.2", keys)) as p:
        base = p.url[:-3]
        good = {"Authorization": f"Bearer {CLIENT_KEY}"}
        for path in ("/control", "/v1/control", "/hermes-admin/control", "/v1/proxy/pin", "/v1/proxy/restore",
                     "/metrics/control"):
            for headers in ({}, good):
                for method in ("GET", "POST"):
                    r = httpx.request(method, base + path, headers=headers, json={"command": "pin", "route": "nous"},
                                      timeout=10)
                    assert r.status_code == 404, (method, path, r.status_code)
        assert httpx.get(base + "/metrics", timeout=10).status_code == 401
        scraped = httpx.get(base + "/metrics", headers=good, timeout=10)
        assert scraped.status_code == 200 and "hermes_admin_proxy_route_requests_total" in scraped.text
        assert p.chain.steer.pin is None and p.chain.runtime.on_primary


def _plant(home: Home, port: int, tmp_path, how: str) -> str:
    rid = secrets.token_hex(8)
    body = json.dumps({"id": rid, "command": "pin", "route": "nous", "via": "cli"})
    at = control.request_path(home, port, rid)
    if how == "link":
        target = tmp_path / "planted-request"
        target.write_text(body)
        os.chmod(target, 0o600)
        at.symlink_to(target)
    else:
        at.write_text(body)
        os.chmod(at, 0o644)
    return rid


def _answer(p, rid: str) -> control.Answer:
    wait_until(lambda: any(a.id == rid for a in p.server.answers.kept), 10, "the proxy's answer")
    return next(a for a in p.server.answers.kept if a.id == rid)


@pytest.mark.parametrize("how", ["link", "open mode"])
def test_a_planted_control_request_is_refused(tmp_home: Home, fake, tmp_path, how: str) -> None:
    seed(tmp_home, fake)
    with running_proxy(tmp_home) as p:
        rid = _plant(tmp_home, p.server.port, tmp_path, how)
        answer = _answer(p, rid)
        assert not answer.ok and "refused" in answer.message
        assert p.chain.steer.pin is None and _served_by(p.url) == "openrouter"
        assert not os.path.lexists(control.request_path(tmp_home, p.server.port, rid))   # taken away
        if how == "link":
            assert (tmp_path / "planted-request").exists()          # the link went, never its target


def test_control_a_reader_that_follows_links_obeys_the_planted_request(tmp_home: Home, fake, tmp_path,
                                                                        monkeypatch) -> None:
    monkeypatch.setattr(control, "_read_own", lambda path: path.read_bytes())
    seed(tmp_home, fake)
    with running_proxy(tmp_home) as p:
        rid = _plant(tmp_home, p.server.port, tmp_path, "link")
        assert _answer(p, rid).ok
        assert p.chain.steer.pin == "nous" and _served_by(p.url) == "nous"


def test_two_proxies_on_one_home_need_a_port(tmp_home: Home, fake) -> None:
    seed(tmp_home, fake)
    one, _u1 = start_proxy_proc(tmp_home)
    two, _u2 = start_proxy_proc(tmp_home)
    try:
        wait_until(lambda: len(control.live_proxies(tmp_home)) == 2, 10, "both status files")
        r = subprocess.run([str(HERMES_ADMIN), "--home", str(tmp_home.root), "proxy", "restore"],
                           capture_output=True, text=True, env=cli_env(tmp_home), timeout=60)
        assert r.returncode == 2 and "2 proxies run on this home" in r.stderr and "--port" in r.stderr
    finally:
        _stop(one)
        _stop(two)
