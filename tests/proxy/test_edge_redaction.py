"""Relayed answers carry no key; the proxy's own files are never written through a link
(RELIABILITY 39, 40, 18).

An upstream that echoes the row's token, another key of the home or a config secret in its
error body or a header reaches the client with fingerprints in their place; so do the
proxy's log and its 503s, and a base URL's password never shows. A symlink planted at the
status file's name, pointing at auth.json, leaves the store byte for byte as it was, and
``proxy status`` never prints what the link points at. Controls take each guard away.
"""

from __future__ import annotations

import json
import logging
import subprocess

import httpx
import pytest

from store.paths import Home
from store.proxy.edge import redacting
from store.proxy.observing import stats
from store.proxy.observing.stats import status_path
from store.redaction import crash
from store.redaction.fingerprints import fingerprint
from store.redaction.redact import HomeSecrets
from tests.conftest import HERMES_ADMIN, cli_env, make_row
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import EDGE_KEYS, EDGE_NOUS, edge_seed, running_chain_proxy, wait_until

pytestmark = pytest.mark.slow
MSG = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
OTHER_KEY = "sk-ant-api03-edgeOTHERkey" + "7" * 20           # a key of another pool of the home
CONFIG_SECRET = "plainConfigSecret4f9a1c77e2"               # config.yaml api_key: no key shape
PASSWORD = "pw4edgeCANARY91"


@pytest.fixture
def up():
    with ScriptedUpstream() as u:
        yield u


@pytest.fixture
def proxy_log(caplog):
    caplog.set_level(logging.INFO, logger="hermes_admin.proxy")
    return caplog


def _home_with_secrets(home: Home, up: ScriptedUpstream) -> None:
    edge_seed(home, up.url)
    doc = json.loads(home.auth.read_text())
    doc["credential_pool"]["anthropic"] = [make_row("an0edg", token=OTHER_KEY)]
    home.auth.write_text(json.dumps(doc))
    home.config.write_text(home.config.read_text() + "custom_providers:\n  - name: local\n"
                           f"    base_url: http://u:{PASSWORD}@127.0.0.1:9/v1\n    api_key: {CONFIG_SECRET}\n")


def _echo(status: int) -> object:
    body = {"error": {"message": f"bad key {EDGE_KEYS[0]}; also seen {OTHER_KEY}, {CONFIG_SECRET} and "
                                 f"the gateway password {PASSWORD}",
                      "type": "invalid_request_error"}}
    return http(status, {"X-Echo": f"Bearer {EDGE_KEYS[0]}", "X-Other": OTHER_KEY, "X-Plain": CONFIG_SECRET}, body)


SECRETS = (EDGE_KEYS[0], EDGE_KEYS[1], EDGE_NOUS, OTHER_KEY, CONFIG_SECRET, PASSWORD)


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


@pytest.mark.parametrize("status", [400, 503])
def test_an_echoed_key_reaches_the_client_as_a_fingerprint(tmp_home, up, proxy_log, status) -> None:
    _home_with_secrets(tmp_home, up)
    for key in (EDGE_KEYS[0], EDGE_KEYS[1], EDGE_NOUS):
        up.script(key, _echo(status))
    with running_chain_proxy(tmp_home) as p:
        r = httpx.post(p.url + "/chat/completions", json=MSG, timeout=30)
    assert r.status_code == status
    shown = r.text + json.dumps(dict(r.headers))
    assert _leaks(shown) == []
    assert fingerprint(EDGE_KEYS[0]) in r.text or fingerprint(EDGE_NOUS) in r.text
    ascii_fp = [fingerprint(k).replace("…", "...") for k in (EDGE_KEYS[0], EDGE_NOUS)]
    assert any(fp in r.headers["x-echo"] for fp in ascii_fp)      # headers carry the ASCII form
    assert _leaks("\n".join(rec.getMessage() for rec in proxy_log.records)) == []


def test_control_without_the_redactor_the_key_is_relayed(tmp_home, up, monkeypatch) -> None:
    monkeypatch.setattr(redacting.ProxySecrets, "for_row", lambda self, token: lambda text: text)
    _home_with_secrets(tmp_home, up)
    up.script(EDGE_KEYS[0], _echo(400))
    with running_chain_proxy(tmp_home) as p:
        r = httpx.post(p.url + "/chat/completions", json=MSG, timeout=30)
    assert EDGE_KEYS[0] in r.text


def test_control_without_the_log_filter_the_key_is_logged(tmp_home, up, proxy_log, monkeypatch) -> None:
    monkeypatch.setattr(crash.LogRedaction, "filter", lambda self, record: True)
    _home_with_secrets(tmp_home, up)
    for key in (EDGE_KEYS[0], EDGE_KEYS[1], EDGE_NOUS):
        up.script(key, _echo(503))
    with running_chain_proxy(tmp_home) as p:
        httpx.post(p.url + "/chat/completions", json=MSG, timeout=30)
    assert _leaks("\n".join(rec.getMessage() for rec in proxy_log.records))


def test_a_503_a_status_file_and_the_log_never_show_a_base_urls_password(tmp_home, up, proxy_log) -> None:
    edge_seed(tmp_home, up.url)
    tmp_home.config.write_text(
        "model:\n  provider: openrouter\nfallback_providers:\n  - provider: custom\n    model: m2\n"
        f"    base_url: http://u:{PASSWORD}@127.0.0.1:9/v1\n    key_env: EDGE_FALLBACK_KEY\n")
    tmp_home.env.write_text("EDGE_FALLBACK_KEY=sk-edge-fallback-000000000000000000001\n")
    for key in EDGE_KEYS[:2]:
        up.script(key, http(402, {}, {"error": {"message": "Insufficient credits", "code": 402}}))
    with running_chain_proxy(tmp_home) as p:
        r = httpx.post(p.url + "/chat/completions", json=MSG, timeout=30)      # the fallback: refused
        again = httpx.post(p.url + "/chat/completions", json=MSG, timeout=30)  # all out: a 503
        p.server._write_status()
        status = status_path(tmp_home, p.server.port).read_text()
    assert PASSWORD not in r.text + again.text + json.dumps(dict(r.headers)) + status
    assert again.status_code == 503 and "custom:http://127.0.0.1:9/v1" in again.text
    assert PASSWORD not in "\n".join(rec.getMessage() for rec in proxy_log.records)


def test_a_symlink_at_the_status_files_name_never_reaches_the_store(tmp_home, up, proxy_log) -> None:
    edge_seed(tmp_home, up.url)
    store = tmp_home.auth.read_bytes()
    with running_chain_proxy(tmp_home) as p:
        path = status_path(tmp_home, p.server.port)
        path.unlink()
        path.symlink_to(tmp_home.auth)
        wait_until(lambda: any("could not write the status file" in r.getMessage() and "symlink" in r.getMessage()
                               for r in proxy_log.records), 10, "the status writer to refuse the link")
    assert path.is_symlink()
    assert tmp_home.auth.read_bytes() == store      # not one byte of the store changed, final status included
    # proxy status reads its own files the same way: it never prints the store behind the link.
    r = subprocess.run([str(HERMES_ADMIN), "proxy", "status", "--json", "--home", str(tmp_home.root)],
                       capture_output=True, text=True, env=cli_env(tmp_home), timeout=30)
    assert EDGE_KEYS[0] not in r.stdout and "credential_pool" not in r.stdout


def test_control_a_writer_that_follows_the_link_replaces_the_store(tmp_home, up, monkeypatch) -> None:
    real = stats.atomic_write_bytes
    monkeypatch.setattr(stats, "atomic_write_bytes",
                        lambda path, data, **kw: real(path, data, **{**kw, "follow_link": True}))
    edge_seed(tmp_home, up.url)
    with running_chain_proxy(tmp_home) as p:
        path = status_path(tmp_home, p.server.port)
        path.unlink()
        path.symlink_to(tmp_home.auth)
        wait_until(lambda: "pid" in json.loads(tmp_home.auth.read_bytes()), 10, "the store to be replaced")
    # Every key is gone: the reason the status file is written without following a link.
    assert "credential_pool" not in json.loads(tmp_home.auth.read_bytes())


def test_a_base_urls_password_counts_as_a_secret_wherever_it_is_written() -> None:
    doc = {"credential_pool": {"a": [{"base_url": f"https://u:{PASSWORD}@h/v1"}]}, "b": "http://h/v1",
           "c": "not a url @ all"}
    found = HomeSecrets().secrets(doc, {"custom_providers": [{"base_url": "http://x:other-pw-77@h/v1"}]}, {})
    assert PASSWORD in found and "other-pw-77" in found
    assert "not a url @ all" not in found and "http://h/v1" not in found
