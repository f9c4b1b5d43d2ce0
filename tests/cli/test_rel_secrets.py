"""Reliability bar 13: no secret leaves hermes-admin in clear.

Canary keys sit in the store, in .env and on the command line; every CLI verb runs
as a real subprocess (the installed console script), including failing ones and one
with debug tracebacks on. No canary may appear in stdout, stderr or the audit log,
while the fingerprint does appear where a key is shown.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import pytest

from store.paths import Home
from store.redaction.fingerprints import fingerprint
from tests.helpers_proc import run_cli, spawn, stop, wait_ready, write_doc

pytestmark = pytest.mark.slow


def _canary(prefix: str) -> str:
    return f"{prefix}CANARY{secrets.token_hex(16)}"


OWNED = _canary("sk-or-v1-")
OWNED_2 = _canary("sk-or-v1-")
OAUTH_ACCESS = _canary("sk-ant-oat01-")
OAUTH_REFRESH = _canary("sk-ant-ort01-")
PROVIDER_TOKEN = _canary("nous-")
ENV_VALUE = _canary("sk-or-v1-")
NEW_ARG = _canary("sk-or-v1-")
NEW_STDIN = _canary("sk-or-v1-")
STRAY = _canary("sk-or-v1-")
LOCKED_OUT = _canary("sk-or-v1-")
INTO_CORRUPT = _canary("sk-or-v1-")
WITH_TRACEBACK = _canary("sk-or-v1-")
IN_CONFIG = _canary("sk-local-")
CANARIES = [IN_CONFIG, OWNED, OWNED_2, OAUTH_ACCESS, OAUTH_REFRESH, PROVIDER_TOKEN, ENV_VALUE, NEW_ARG,
            NEW_STDIN, STRAY, LOCKED_OUT, INTO_CORRUPT, WITH_TRACEBACK]


def _row(rid: str, label: str, priority: int, source: str, **extra: Any) -> dict[str, Any]:
    row = {"id": rid, "label": label, "auth_type": "api_key", "priority": priority, "source": source,
           "last_status": None, "last_status_at": None, "last_error_code": None,
           "last_error_reason": None, "last_error_message": None, "last_error_reset_at": None,
           "request_count": 0}
    row.update(extra)
    return row


def canary_doc() -> dict[str, Any]:
    return {
        "version": 1,
        "active_provider": "openrouter",
        "providers": {"nous": {"access_token": PROVIDER_TOKEN, "refresh_token": PROVIDER_TOKEN + "r"}},
        "credential_pool": {
            "openrouter": [
                _row("a1b2c3", "main", 0, "manual", access_token=OWNED),
                _row("d4e5f6", "spare", 1, "manual", access_token=OWNED_2,
                     last_status="exhausted", last_status_at=1.0e9, last_error_code=429,
                     last_error_reason="rate_limit_exceeded", last_error_message="slow down"),
                _row("0a0b0c", "OPENROUTER_API_KEY", 2, "env:OPENROUTER_API_KEY",
                     secret_fingerprint="sha256:0123456789abcdef"),
            ],
            "anthropic": [
                _row("bbbbbb", "pkce", 0, "hermes_pkce", auth_type="oauth",
                     access_token=OAUTH_ACCESS, refresh_token=OAUTH_REFRESH),
            ],
        },
    }


CONFIG = f"""\
credential_pool_strategies:
  openrouter: round_robin
fallback_providers:
  - provider: openrouter
    model: anthropic/claude-sonnet-4
  - provider: custom
    model: my-local-model
    base_url: http://localhost:8000/v1
    api_key: {IN_CONFIG}   # an inline key, as some operators write it
provider_routing:
  sort: price
"""


@pytest.fixture
def home(tmp_path: Path) -> Home:
    h = Home(tmp_path / "hermes")
    write_doc(h, canary_doc())
    h.config.write_text(CONFIG)
    h.env.write_text(f"OPENROUTER_API_KEY={ENV_VALUE}\n")
    return h


def _leaks(text: str) -> list[str]:
    """Canaries (or a long enough slice of one to be a usable key) found in *text*."""
    found = []
    for c in CANARIES:
        body = c.split("CANARY", 1)[1]
        if c in text or body[:16] in text or body[-16:] in text:
            found.append(fingerprint(c) or "?")
    return found


def _check(proc: Any, what: str, found: list[str]) -> None:
    """Collect leaks instead of stopping at the first, so a failure lists them all."""
    for stream in ("stdout", "stderr"):
        for fp in _leaks(getattr(proc, stream)):
            found.append(f"`{what}` {stream}: {fp}")


def test_no_canary_in_any_cli_output(home: Home) -> None:
    found: list[str] = []

    def ok(*args: str, stdin: str | None = None) -> Any:
        proc = run_cli(*args, home=home, stdin=stdin)
        _check(proc, " ".join(args), found)
        assert proc.returncode == 0, (args, proc.stderr)
        return proc

    def fails(code: int, *args: str, stdin: str | None = None, **kw: Any) -> Any:
        proc = run_cli(*args, home=home, stdin=stdin, **kw)
        _check(proc, " ".join(args), found)
        assert proc.returncode == code, (args, proc.returncode, proc.stderr)
        assert proc.stderr.strip(), f"{args}: failed without saying why"
        return proc

    listed = ok("list").stdout
    # The check sees real output: the keys are listed, as fingerprints.
    for key in (OWNED, OWNED_2, OAUTH_ACCESS, ENV_VALUE):
        assert fingerprint(key) in listed, f"{fingerprint(key)} missing from list:\n{listed}"
    as_json = ok("list", "--json").stdout
    assert fingerprint(OWNED) in as_json
    ok("list", "openrouter")

    added = ok("add", "openrouter", "--api-key", NEW_ARG, "--label", "from-arg").stdout
    assert fingerprint(NEW_ARG) in added
    added = ok("add", "openrouter", "--api-key", "-", "--label", "from-stdin", stdin=NEW_STDIN + "\n").stdout
    assert fingerprint(NEW_STDIN) in added
    ok("reset", "openrouter", "spare")
    # The anthropic key is ok already: nothing to clear, so nothing written and no audit line.
    assert "nothing changed" in ok("reset", "anthropic", "--yes").stdout
    ok("cooldown", "openrouter", "main", "--for", "15m", "--reason", "maintenance")
    ok("priority", "openrouter", "from-arg", "0")
    ok("remove", "openrouter", "from-stdin", "--yes")
    ok("strategy")
    ok("strategy", "openrouter", "least_used")
    chain = ok("fallback", "list").stdout
    assert "my-local-model" in chain, chain
    ok("fallback", "list", "--json")
    ok("routing", "show")
    ok("audit")
    ok("audit", "--json")

    # Failing variants.
    fails(2, "add", "openrouter", "--api-key", OWNED)               # duplicate key, echoed back?
    fails(2, "add", "openrouter", "--api-key", NEW_ARG + " x")        # whitespace in key
    fails(2, "add", "no_such pool", "--api-key", NEW_ARG)             # bad pool key
    fails(2, "reset", "nosuchpool")
    fails(2, "reset", "openrouter", "nosuchtarget")
    fails(2, "cooldown", "openrouter", "main", "--for", "soon")
    fails(2, "priority", "openrouter", "main", "99")
    stray = fails(2, "reset", "openrouter", "main", STRAY)            # argparse echoes extras
    assert fingerprint(STRAY) in stray.stderr

    holder = spawn("hold", home=str(home.root), how="raw")
    try:
        wait_ready(holder)
        fails(4, "add", "openrouter", "--api-key", LOCKED_OUT, "--lock-timeout", "0.2")
        fails(4, "reset", "openrouter", "--yes", "--lock-timeout", "0.2")
    finally:
        stop(holder)

    # A corrupt store that still holds the canaries: the parse error must not quote it.
    raw = home.auth.read_bytes()
    home.auth.write_bytes(raw[: len(raw) - 30])
    fails(3, "list")
    fails(3, "list", "--json")
    fails(3, "reset", "openrouter")
    fails(3, "add", "openrouter", "--api-key", "-", stdin=INTO_CORRUPT + "\n")
    home.auth.write_bytes(raw)

    # An unexpected failure with debug tracebacks on, while a key is in play.
    home.audit.rename(home.root / "audit-aside")
    home.audit.mkdir()
    try:
        proc = run_cli("add", "openrouter", "--api-key", "-", "--label", "tb", home=home,
                       stdin=WITH_TRACEBACK + "\n", extra_env={"HERMES_ADMIN_DEBUG": "1"})
        _check(proc, "add (audit unwritable, HERMES_ADMIN_DEBUG=1)", found)
        assert proc.returncode != 0 or "warning" in proc.stderr, proc.stderr
    finally:
        home.audit.rmdir()
        (home.root / "audit-aside").rename(home.audit)

    log = home.audit.read_text()
    assert log.count("\n") >= 7, "the audit log did not record the actions"
    found += [f"audit log: {fp}" for fp in _leaks(log)]
    assert not found, "secrets in clear:\n" + "\n".join(found)


def test_key_echoed_in_a_provider_error_is_not_shown(home: Home) -> None:
    """Providers put the offending key in error text (Hermes stores it in
    last_error_message); every place that shows or logs the message must redact it."""
    doc = canary_doc()
    spare = doc["credential_pool"]["openrouter"][1]
    spare["last_error_code"] = 401
    spare["last_error_message"] = f"Incorrect API key provided: {OWNED_2}."
    write_doc(home, doc)
    found: list[str] = []
    for args in (["list"], ["list", "--json"], ["reset", "openrouter", "spare"], ["audit", "--json"]):
        proc = run_cli(*args, home=home)
        assert proc.returncode == 0, (args, proc.stderr)
        _check(proc, " ".join(args), found)
    found += [f"audit log: {fp}" for fp in _leaks(home.audit.read_text())]
    assert not found, "secrets in clear:\n" + "\n".join(found)


def test_negative_control_leak_detector_sees_a_key(home: Home) -> None:
    """The detector is not blind: a key printed whole, or most of it, is caught."""
    assert _leaks(f"error: {OWNED}") == [fingerprint(OWNED)]
    assert _leaks("token " + OWNED_2[5:]) == [fingerprint(OWNED_2)]
    assert _leaks(fingerprint(OWNED) or "") == []
    # And the store itself really does hold them in clear (so the CLI had them to leak).
    raw = home.auth.read_text()
    assert OWNED in raw and OAUTH_REFRESH in raw
    assert ENV_VALUE in home.env.read_text()
    assert os.environ.get("OPENROUTER_API_KEY") != ENV_VALUE
