"""`hermes-admin web`'s arguments: every bad one is exit 2 naming it, before anything listens;
and a web console's writes carry `via: web` and the browser's address (audit and history)."""

from __future__ import annotations

import argparse
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.errors import BadInput
from store.ops import actions
from store.ops.write import StoreChange, perform
from store.paths import Home
from tests.conftest import make_row, make_store, run_cli, write_store
from tui.cli import web as web_cli
from tui.cli.entry import build_parser
from tui.web.access import is_loopback


@pytest.mark.parametrize("args,named", [
    (["--host", "0.0.0.0"], "--host"),
    (["--host", "10.1.2.3", "--public-url", "http://console.example.org"], "--public-url"),
    (["--host", "0.0.0.0", "--public-url", "https://console.example.org/admin"], "--public-url"),
    (["--host", "0.0.0.0", "--public-url", "https://user:pw@console.example.org"], "--public-url"),
    (["--allow-writes", "--read-only"], "--allow-writes"),
    (["--port", "99999"], "--port"),
    (["--port", "http"], "--port"),
    (["--idle-timeout", "soon"], "--idle-timeout"),
    (["--idle-timeout", "0s"], "--idle-timeout"),
    (["--max-sessions", "0"], "--max-sessions"),
    (["--max-sessions", "1000"], "--max-sessions"),
    (["--host", "bad host!"], "--host"),
])
def test_bad_arguments_exit_2_naming_the_argument(tmp_home: Home, args: list[str], named: str) -> None:
    write_store(tmp_home, make_store({}))
    proc = run_cli(tmp_home, "web", *args, ok=False, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert named in proc.stderr
    assert "token=" not in proc.stdout + proc.stderr   # nothing was served


def test_a_missing_home_is_refused(tmp_path) -> None:
    home = Home(tmp_path / "nowhere")
    proc = run_cli(home, "web", ok=False, timeout=30)
    assert proc.returncode == 3 and "--home" in proc.stderr   # the guard's exit for every verb


def test_beyond_loopback_with_an_https_public_url_is_accepted(tmp_path) -> None:
    args = build_parser().parse_args(["--home", str(tmp_path), "web", "--host", "0.0.0.0",
                                      "--public-url", "https://Console.Example.org:8443/"])
    opts = web_cli.options(args)
    assert opts.public_url == "https://console.example.org:8443" and not opts.allow_writes
    assert opts.idle == 900 and opts.max_sessions == 4


@settings(max_examples=150, deadline=None)
@given(host=st.text(max_size=40), public=st.one_of(st.none(), st.text(max_size=60)),
       idle=st.text(max_size=10), sessions=st.text(max_size=5))
def test_generated_arguments_are_refused_cleanly_or_safe(tmp_path_factory, host, public, idle, sessions) -> None:
    home = tmp_path_factory.getbasetemp()
    ns = argparse.Namespace(allow_writes=False, read_only=False, root=None, home=str(home), host=host,
                            port="8765", public_url=public, idle_timeout=idle, max_sessions=sessions,
                            lock_timeout=5.0)
    try:
        opts = web_cli.options(ns)
    except BadInput as exc:
        assert exc.field.startswith("--")
        return
    assert is_loopback(opts.host) or (opts.public_url or "").startswith("https://")
    assert opts.idle > 0 and 1 <= opts.max_sessions <= web_cli.MAX_SESSIONS


def test_a_web_write_is_audited_via_web_with_the_remote_address(tmp_home: Home) -> None:
    write_store(tmp_home, make_store({"openrouter": [
        make_row("aaaaaa", token="sk-or-v1-0123456789abcdefAUDITweb1", last_status="exhausted",
                 last_status_at=1.0, last_error_code=429)]}))
    written = perform(tmp_home, StoreChange(lambda doc, now: actions.reset(doc, "openrouter", None, now)),
                      via="web", remote="203.0.113.9 (through 127.0.0.1)")
    entry = json.loads(tmp_home.audit.read_text().splitlines()[-1])
    assert entry["via"] == "web" and entry["remote"] == "203.0.113.9 (through 127.0.0.1)"
    record = json.loads((tmp_home.root / "hermes-admin-history" / f"{written.history_id}.json").read_text())
    assert record["via"] == "web" and record["remote"] == "203.0.113.9 (through 127.0.0.1)"
    # A terminal's write says nothing of a remote address.
    perform(tmp_home, StoreChange(lambda doc, now: actions.reset(doc, "openrouter", None, now)), via="tui")
    assert "remote" not in json.loads(tmp_home.audit.read_text().splitlines()[-1])
