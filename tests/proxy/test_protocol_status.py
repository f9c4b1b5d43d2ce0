"""What the proxy says about its protocols and its event loop.

``proxy status`` shows, under each route of the chain, the paths it serves: an ``anthropic``
pool serves the Anthropic Messages paths (and Anthropic's OpenAI-compatible ones), an
``openrouter`` fallback the OpenAI paths and Responses, never ``/v1/messages``. The control
makes every route claim every protocol and the status shows it: the lines come from what
the chain decides, not from a fixed list.

The event loop (:mod:`store.proxy.loop`): asyncio's own by default (uvloop measured no
faster here), uvloop when ``HERMES_ADMIN_PROXY_LOOP=uvloop`` asks for it, and asyncio's loop
with a warning where it is asked for but cannot be imported; the status file says which
loop the proxy runs on.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading

import pytest

from store.proxy import loop as proxy_loop
from store.proxy.observing.stats import status_path
from store.proxy.routing.chain import Chain
from store.proxy.routing.protocols import ANTHROPIC, OPENAI, RESPONSES
from tests.conftest import HERMES_ADMIN, cli_env, make_row, make_store, write_store
from tests.proxy_helpers import running_chain_proxy

pytestmark = pytest.mark.slow

CONFIG = """\
model:
  provider: anthropic
  default: claude-sonnet-4-5
fallback_providers:
  - provider: openrouter
    model: openai/gpt-5
"""
OPENAI_PATHS = "/v1/chat/completions /v1/completions /v1/embeddings /v1/models"


def seed(home) -> None:
    write_store(home, make_store({
        "anthropic": [make_row("an0key", token="sk-ant-api03-statustest-" + "A" * 40,
                               base_url="http://127.0.0.1:9")],
        "openrouter": [make_row("or0key", token="sk-or-v1-statustest-" + "0" * 30,
                                base_url="http://127.0.0.1:9/api/v1")],
    }))
    home.config.write_text(CONFIG)


def served(home) -> dict[str, str]:
    """Per route of the running proxy's chain, the ``serves`` line ``proxy status`` prints."""
    r = subprocess.run([str(HERMES_ADMIN), "proxy", "status", "--home", str(home.root)],
                       capture_output=True, text=True, env=cli_env(home), timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    out: dict[str, str] = {}
    route = None
    for line in r.stdout.splitlines():
        words = line.split()
        if "model" in words and "usable" in words:
            route = words[1] if words[0] == "▶" else words[0]
        elif words[:1] == ["serves"] and route is not None:
            out[route] = " ".join(words[1:])
    return out


def test_proxy_status_shows_the_paths_each_route_serves(tmp_home) -> None:
    seed(tmp_home)
    with running_chain_proxy(tmp_home, primary="anthropic") as p:
        lines = served(tmp_home)
        status = json.loads(status_path(tmp_home, p.server.port).read_text())
    assert lines == {"anthropic": OPENAI_PATHS + " /v1/messages /v1/messages/count_tokens",
                     "openrouter": OPENAI_PATHS + " /v1/responses"}
    assert [r["paths"][-1] for r in status["chain"]] == ["/v1/messages/count_tokens", "/v1/responses"]
    assert status["loop"] == "asyncio"          # the test's own loop


def test_control_a_chain_that_claims_every_protocol_shows_it(tmp_home, monkeypatch) -> None:
    monkeypatch.setattr(Chain, "protocols", lambda self, i: frozenset({OPENAI, ANTHROPIC, RESPONSES}))
    seed(tmp_home)
    with running_chain_proxy(tmp_home, primary="anthropic"):
        lines = served(tmp_home)
    assert "/v1/messages" in lines["openrouter"]      # caught: the status follows the chain


# --- the event loop ------------------------------------------------------------------------------

async def _which() -> str:
    return proxy_loop.loop_name()


def test_the_proxy_runs_on_asyncios_loop_by_default_even_with_uvloop_installed(monkeypatch) -> None:
    pytest.importorskip("uvloop")
    monkeypatch.delenv(proxy_loop.ENV, raising=False)
    assert proxy_loop.run(_which()) == "asyncio"      # measured no faster here: not the default
    assert proxy_loop.loop_name() == "asyncio"


def test_asked_for_uvloop_runs_on_it(monkeypatch) -> None:
    pytest.importorskip("uvloop")
    monkeypatch.setenv(proxy_loop.ENV, "uvloop")
    assert proxy_loop.run(_which()) == "uvloop"
    assert proxy_loop.loop_name() == "uvloop"         # what the status file will say


def test_asked_for_uvloop_where_it_cannot_be_imported_falls_back_saying_so(monkeypatch, caplog) -> None:
    monkeypatch.setenv(proxy_loop.ENV, "uvloop")
    monkeypatch.setitem(sys.modules, "uvloop", None)    # import uvloop raises ImportError
    with caplog.at_level("WARNING", logger="hermes_admin.proxy"):
        assert proxy_loop.run(_which()) == "asyncio"
    assert "cannot be imported" in caplog.text and proxy_loop.loop_name() == "asyncio"


def test_control_loop_name_tells_the_loops_apart() -> None:
    """A loop_name that always said "asyncio" would pass the default's test: a running
    uvloop loop is named as it is."""
    uvloop = pytest.importorskip("uvloop")
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert runner.run(_which()) == "uvloop"


def _proxy_loop(home, env: dict[str, str]) -> str:
    """The loop ``proxy status --json`` reports for a ``hermes-admin proxy`` run with *env*."""
    proc = subprocess.Popen([str(HERMES_ADMIN), "proxy", "--home", str(home.root), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        box: list[str] = []
        reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(30)                        # the ready line, or give up
        assert box and "http://" in box[0], box
        r = subprocess.run([str(HERMES_ADMIN), "proxy", "status", "--json", "--home", str(home.root)],
                           capture_output=True, text=True, env=env, timeout=60)
        return json.loads(r.stdout)["proxies"][0]["loop"]
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def test_the_proxy_command_reports_its_loop(tmp_home) -> None:
    pytest.importorskip("uvloop")
    seed(tmp_home)
    env = cli_env(tmp_home)
    env.pop(proxy_loop.ENV, None)
    assert _proxy_loop(tmp_home, env) == "asyncio"
    assert _proxy_loop(tmp_home, dict(env, **{proxy_loop.ENV: "uvloop"})) == "uvloop"
