"""Shared fixtures and helpers for the hermes-admin test suite.

Fixtures
    tmp_home      a fresh Hermes home (``store.paths.Home``) on tmp_path, mode 0700, no files.
    hermes_path   (session) the unpacked real hermes-agent 0.19.0; skips the test with the
                  reason when it cannot be fetched (see tests/hermes_real.py).
    hermes        a live :class:`tests.hermes_real.HermesPartner` on ``tmp_home``; its API is
                  documented in tests/hermes_real.py (select, mark, reset_statuses,
                  exhausted_until, entries, bump / start_bump + finish, load_ok, hold,
                  persist_held). Closed after the test. With a home of your own, use
                  ``HermesPartner(home.root, hermes_path)`` (a context manager) instead.
                  Note: Hermes populates the home it runs on (SOUL.md, logs/, sessions/,
                  cron/, ... next to auth.json and auth.lock).
    cli           ``cli(*args, input=None, ok=True)`` runs the installed ``hermes-admin`` on
                  ``tmp_home`` in a subprocess and returns the CompletedProcess.

Helpers (importable: ``from tests.conftest import make_row, write_store, ...``)
    make_row(id, **fields)       a Hermes-shaped api_key row, status fields null.
    make_store(pools, **top)     a Hermes-shaped document.
    write_store(home, doc)       write auth.json as Hermes would (0600, indent 2).
    read_doc(home)               parse auth.json.
    run_cli(home, *args, ...)    what the ``cli`` fixture calls.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import settings

from store.paths import Home
from tests.hermes_real import HermesPartner, HermesUnavailable, hermes_dir

# The suite's children start with SIGHUP and SIGINT at their default actions, whatever started
# the suite. Under ``nohup``, or as a shell's background job, they arrive ignored, and every
# child inherits the ignore: the tests that signal a demo or hang up a console would then test
# the launcher, not hermes-admin. (tests/hostile_hour/test_web_child_orphan.py sets the ignore
# in a console on purpose: a web server under nohup must still not leave consoles behind.)
for _sig, _default in ((signal.SIGHUP, signal.SIG_DFL), (signal.SIGINT, signal.default_int_handler)):
    if signal.getsignal(_sig) == signal.SIG_IGN:
        signal.signal(_sig, _default)

# No per-example deadline anywhere: `make test` must pass on a busy machine, where one
# example of a correct test can take longer than hypothesis's 200 ms default. Each test still
# has its pytest-timeout bound.
settings.register_profile("hermes-admin", deadline=None)
settings.load_profile("hermes-admin")

# pytest-xdist workers (`make test` runs -n 2) export COLUMNS=80 LINES=24; the CLI and
# console children of a serial run see neither, and must see the same under xdist
# (Textual and argparse size their output by them).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

VENV_BIN = Path(sys.executable).parent
HERMES_ADMIN = VENV_BIN / "hermes-admin"
_SECRET_ENV_SUFFIXES = ("API_KEY", "_TOKEN", "_SECRET", "_KEY")


def make_row(rid: str, *, label: str | None = None, priority: int = 0, token: str | None = None,
             source: str = "manual", **fields: Any) -> dict[str, Any]:
    """A credential row as Hermes writes it; *fields* override or add anything."""
    row: dict[str, Any] = {
        "id": rid,
        "label": label or f"key-{rid}",
        "auth_type": "api_key",
        "priority": priority,
        "source": source,
    }
    if token is not None:
        row["access_token"] = token
    row.update({
        "last_status": None,
        "last_status_at": None,
        "last_error_code": None,
        "last_error_reason": None,
        "last_error_message": None,
        "last_error_reset_at": None,
        "request_count": 0,
    })
    row.update(fields)
    return row


def make_store(pools: dict[str, list[dict[str, Any]]], **top: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"version": 1, "providers": {}, "credential_pool": pools}
    doc.update(top)
    return doc


def write_store(home: Home, doc: dict[str, Any]) -> None:
    """Write auth.json the way Hermes does (indent 2, 0600, home 0700)."""
    home.root.mkdir(parents=True, exist_ok=True)
    os.chmod(home.root, 0o700)
    fd = os.open(home.auth, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(doc, indent=2) + "\n")
    os.chmod(home.auth, 0o600)


def read_doc(home: Home) -> dict[str, Any]:
    return json.loads(home.auth.read_text(encoding="utf-8"))


def cli_env(home: Home) -> dict[str, str]:
    """A clean environment for the CLI: no provider keys, no ~/.hermes to fall back to."""
    env = {k: v for k, v in os.environ.items() if not k.upper().endswith(_SECRET_ENV_SUFFIXES)}
    env["HERMES_HOME"] = str(home.root)
    env["HOME"] = str(home.root.parent)
    env.pop("HERMES_ADMIN_DEBUG", None)
    env["NO_COLOR"] = "1"
    return env


def run_cli(home: Home, *args: str, input: str | None = None, ok: bool = True,
            timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run ``hermes-admin --home <home> <args>``; with ok=True a non-zero exit fails the test."""
    cmd = [str(HERMES_ADMIN)] if HERMES_ADMIN.exists() else [sys.executable, "-m", "tui.cli"]
    # No terminal on stdin: the CLI must never stop to ask for a confirmation.
    stdin = {"input": input} if input is not None else {"stdin": subprocess.DEVNULL}
    proc = subprocess.run(
        [*cmd, "--home", str(home.root), *args], capture_output=True, text=True,
        env=cli_env(home), timeout=timeout, **stdin,
    )
    if ok and proc.returncode != 0:
        pytest.fail(f"hermes-admin {' '.join(args)} exited {proc.returncode}\n"
                    f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
    return proc


@pytest.fixture
def tmp_home(tmp_path: Path) -> Home:
    root = tmp_path / "hermes-home"
    root.mkdir(mode=0o700)
    os.chmod(root, 0o700)
    return Home(root)


@pytest.fixture(scope="session")
def hermes_path() -> Path:
    try:
        return hermes_dir()
    except HermesUnavailable as exc:
        pytest.skip(f"real hermes-agent unavailable: {exc}")


@pytest.fixture
def hermes(tmp_home: Home, hermes_path: Path) -> Iterator[HermesPartner]:
    partner = HermesPartner(tmp_home.root, hermes_path)
    try:
        yield partner
    finally:
        partner.close()


@pytest.fixture
def cli(tmp_home: Home):
    def run(*args: str, input: str | None = None, ok: bool = True) -> subprocess.CompletedProcess[str]:
        return run_cli(tmp_home, *args, input=input, ok=ok)

    return run


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch):
    """Local time = UTC, so "resets at" and clock cells are the same on every machine."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[Any]:
    """A real redis-server on a free loopback port in a temp dir (tests/fleet_helpers.py);
    skips with the reason when the binary is missing. Stopped after the test."""
    # Imported here: fleet_helpers imports this module's helpers (a top-level import would be a cycle).
    from tests.fleet_helpers import RedisServer

    d = tmp_path / "redis"
    d.mkdir()
    srv = RedisServer(d)
    try:
        yield srv
    finally:
        srv.stop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The real-terminal tests (marked ``tmux``) share one xdist group: with ``make test``'s
    ``-n 2 --dist loadgroup`` they run one after another on one worker, never two tmux
    consoles redrawing at once on a 2-core machine."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("tmux") is not None:
            item.add_marker(pytest.mark.xdist_group("terminal"))
        elif item.get_closest_marker("browser") is not None:   # one Chromium at a time
            item.add_marker(pytest.mark.xdist_group("browser"))
