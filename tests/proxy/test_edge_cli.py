"""``hermes-admin proxy`` checks its arguments before anything starts (RELIABILITY 44):
exit 2 naming the argument, a port in use exits 3 saying so, never an internal error.
The control takes the host check away and gets the internal error back."""

from __future__ import annotations

import socket
import subprocess

import pytest

from tests.conftest import HERMES_ADMIN, cli_env, make_row, make_store, write_store
from tui.cli import entry
from tui.cli import proxy as proxy_cli

pytestmark = pytest.mark.slow
KEY = "sk-or-v1-clitest-000000000000000000000000001"


@pytest.fixture
def home(tmp_home):
    write_store(tmp_home, make_store({"openrouter": [make_row("or0cli", token=KEY)]}))
    tmp_home.config.write_text("model:\n  provider: openrouter\n  default: m\n")
    return tmp_home


def run(home, *args: str, config: str | None = None) -> subprocess.CompletedProcess[str]:
    if config is not None:
        home.config.write_text(config)
    return subprocess.run([str(HERMES_ADMIN), "proxy", "--home", str(home.root), *args], capture_output=True,
                          text=True, env=cli_env(home), timeout=60)


BAD = [
    (["--port", "70000"], "--port"),
    (["--port", "-1"], "--port"),
    (["--port", "http"], "--port"),
    (["--pool", "nosuch"], "--pool"),
    (["--host", "[::1]"], "--host"),
    (["--host", "no..such"], "--host"),
    (["--host", "nosuchhost.invalid"], "--host"),
    (["--drain-timeout", "nan"], "--drain-timeout"),
    (["--drain-timeout", "-1"], "--drain-timeout"),
    (["--drain-timeout", "inf"], "--drain-timeout"),
    (["--body-timeout", "0"], "--body-timeout"),
    (["--restore-interval", "1e999"], "--restore-interval"),
]


@pytest.mark.parametrize("args,named", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_argument_exits_2_naming_it(home, args, named) -> None:
    r = run(home, *args)
    assert r.returncode == 2, r.stderr
    assert named in r.stderr and "internal error" not in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""


def test_a_config_without_model_provider_exits_2_naming_what_to_pass(home) -> None:
    r = run(home, config="fallback_providers: []\n")
    assert r.returncode == 2 and "model.provider" in r.stderr and "--pool" in r.stderr
    r = run(home, config="model:\n  provider: nosuch\n  default: m\n")
    assert r.returncode == 2 and "model.provider" in r.stderr and "'nosuch' is no pool" in r.stderr


def test_a_model_without_default_names_model_default(home) -> None:
    """``model: {provider: openrouter}`` and no ``default``: the missing field is
    ``model.default`` (it was reported as ``model.provider``, which is set)."""
    r = run(home, config="model:\n  provider: openrouter\n")
    assert r.returncode == 2 and "model.default" in r.stderr and "model.provider" not in r.stderr, r.stderr
    assert "--pool" in r.stderr and "Traceback" not in r.stderr


def test_a_port_in_use_exits_3_saying_so(home) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = run(home, "--port", str(port))
    assert r.returncode == 3
    assert f"--port {port}: already in use" in r.stderr and "Traceback" not in r.stderr


def test_control_without_the_host_check_a_bracketed_host_is_an_internal_error(home, monkeypatch, capsys) -> None:
    monkeypatch.setattr(proxy_cli, "check_host", lambda host: host)
    monkeypatch.setenv("HERMES_HOME", str(home.root))
    code = entry.main(["proxy", "--home", str(home.root), "--port", "0", "--host", "[::1]"])
    assert code == 1 and "internal error" in capsys.readouterr().err
