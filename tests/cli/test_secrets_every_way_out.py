"""Any secret of the home, placed anywhere, never leaves through any way out (issue 19, by property).

Homes are drawn by tests/secret_homes.py: seven secrets of the home (a key-shaped token, a
token with no key shape, a refresh token, config.yaml's api_key, a borrowed .env value, the
passwords of a row's and config's base URLs), copied into labels, reasons, messages,
unknown fields, base URLs (path, user, password), config.yaml and .env. Then:

- the CLI: stdout and stderr of every verb that does not serve or dial out (reads, writes
  that land and write the audit log and the history, refusals), and every file the verbs
  left under the home except where the secrets are stored;
- the monitor: its ``/metrics`` answer, its status file and the alerts it delivers;
- the fleet: every key and value in Redis after a bench whose message holds the secrets
  (tests/fleet_helpers.py's dump and its plain-hash forms).

A secret may only ever appear as a fingerprint. Negative controls: with the redactor
switched to identity (and the fleet's outbound off), the same checks find the secrets.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings

from store.fleet.outbound import Outbound
from store.monitor.delivery import target
from store.paths import Home
from store.pools import policy
from store.redaction import redact
from store.redaction.redact import Redactor
from store.transaction import transaction
from tests import fleet_helpers
from tests.monitor.helpers import Running, Webhook, rules, wait_until
from tests.secret_homes import Plan, file_leaks, fixed_plan, leaks, plant, secret_homes
from tui.cli import entry

EXAMPLES = int(os.environ.get("HERMES_FUZZ_EXAMPLES", "300"))

# Every verb that neither serves, dials out nor opens the console; writes that land first.
VERBS: tuple[tuple[str, ...], ...] = (
    ("list",), ("list", "--json"), ("inventory",), ("inventory", "--json"), ("strategy",),
    ("fallback", "list"), ("routing", "set", "sort", "price"), ("reset", "openrouter", "cccccc"),
    ("cooldown", "openrouter", "aaaaaa", "--for", "15m", "--reason", "maintenance"),
    ("priority", "openrouter", "oauth", "0"), ("strategy", "openrouter", "round_robin"),
    ("fallback", "add", "openrouter", "some/model"), ("audit",), ("audit", "--json"), ("history",),
    ("history", "--json"), ("undo", "--yes"), ("restore-backup", "--yes"), ("proxy", "status"),
    ("proxy", "status", "--json"), ("monitor", "status"), ("monitor", "status", "--json"),
    ("fleet", "status", "--redis", "redis://127.0.0.1:9/0"), ("remove", "openrouter", "third"),
    ("remove", "openrouter", "nosuch"), ("add", "openrouter", "--api-key", "-", "--label", "x"),
    ("cooldown", "openrouter", "primary", "--until", "9999-12-31"),
)


@contextlib.contextmanager
def a_home(tmp: pytest.TempPathFactory, plan: Plan) -> Iterator[Home]:
    root = tmp.mktemp("home")
    root.chmod(0o700)
    home = Home(root)
    plant(home, plan)
    yield home


class _Stdin(io.TextIOWrapper):
    def isatty(self) -> bool:
        return False


NEW_KEY = "sk-or-v1-" + "added0123456789abcdef" * 2     # what `add` reads from stdin


def run(home: Home, argv: tuple[str, ...]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    saved, saved_in = os.environ.get("HERMES_HOME"), sys.stdin
    os.environ["HERMES_HOME"] = str(home.root)
    sys.stdin = _Stdin(io.BytesIO(NEW_KEY.encode() + b"\n"), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = entry.main(["--home", str(home.root), "--lock-timeout", "2", *argv]
                                  + (["--root", str(home.root)] if argv[0] == "inventory" else []))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        sys.stdin = saved_in
        if saved is None:
            os.environ.pop("HERMES_HOME", None)
        else:
            os.environ["HERMES_HOME"] = saved
        redact.clear_registered()
    return code, out.getvalue() + err.getvalue()


def cli_leaks(home: Home, plan: Plan) -> dict[str, Any]:
    """What every verb printed and left behind that holds a secret."""
    found: dict[str, Any] = {}
    for argv in VERBS:
        code, text = run(home, argv)
        assert "Traceback" not in text and "internal error" not in text, (argv, text[-800:])
        if leaks(text, plan):
            found[" ".join(argv)] = leaks(text, plan)
    found.update(file_leaks(home, plan))
    return found


@settings(max_examples=max(5, EXAMPLES // 20), deadline=None, suppress_health_check=list(HealthCheck))
@given(plan=secret_homes())
def test_no_verb_prints_or_leaves_a_secret(tmp_path_factory: pytest.TempPathFactory, plan: Plan) -> None:
    with a_home(tmp_path_factory, plan) as home:
        found = cli_leaks(home, plan)
        assert found == {}, found
        assert home.audit.exists()          # the writes landed and were audited


def test_negative_control_cli_without_the_redactor(tmp_path_factory: pytest.TempPathFactory,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Redactor, "redact", lambda self, text: str(text))
    plan = fixed_plan()
    with a_home(tmp_path_factory, plan) as home:
        found = cli_leaks(home, plan)
    assert {"list", "list --json", "inventory", "fallback list"} <= set(found), sorted(found)
    assert set(found["list --json"]) >= {"key", "plain", "url"}


# --- the monitor: /metrics, the status file, the alerts ------------------------------------------

def monitor_leaks(home: Home, plan: Plan) -> list[str]:
    hook = Webhook()
    try:
        with Running(home=home, rules=rules(quiet=0.2), metrics=("127.0.0.1", 0), targets=[target(hook.url, 1)],
                     backoff=0.05) as mon:
            wait_until(lambda: mon.call(lambda: mon.monitor.evaluations) > 0, what="the first evaluation")
            now = time.time()
            with transaction(home) as doc:   # every row benched: alerts name each row and the pool
                rows = doc["credential_pool"]["openrouter"]
                for row in rows:
                    policy.mark_exhausted(rows, row, now, code=429, reason=plan.first("last_error_reason", "r"),
                                          message=plan.first("last_error_message", "m"), reset_at=now + 4 * 3600)
            wait_until(lambda: "no usable key" in (home.root / "hermes-admin-monitor.json").read_text()
                       and any("no usable key" in str(p.get("title")) for p in hook.got()),
                       what="the pool's alert, delivered and in the status file")
            wait_until(mon.idle, what="the monitor to settle")
            url = mon.call(lambda: mon.monitor.metrics_url)
            with urllib.request.urlopen(url, timeout=10) as resp:  # noqa: S310 (loopback)
                metrics = resp.read().decode()
            status = (home.root / "hermes-admin-monitor.json").read_text()
    finally:
        hook.close()
    assert "hermes_admin_credential_state" in metrics and "no usable key" in status
    return leaks("\n".join([metrics, status, *hook.raw, home.audit.read_text()]), plan)


@pytest.mark.slow
@settings(max_examples=max(3, EXAMPLES // 60), deadline=None, suppress_health_check=list(HealthCheck))
@given(plan=secret_homes())
def test_the_monitor_serves_and_writes_no_secret(tmp_path_factory: pytest.TempPathFactory, plan: Plan) -> None:
    with a_home(tmp_path_factory, plan) as home:
        assert monitor_leaks(home, plan) == []


@pytest.mark.slow
def test_negative_control_monitor_without_the_redactor(tmp_path_factory: pytest.TempPathFactory,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Redactor, "redact", lambda self, text: str(text))
    plan = fixed_plan()
    with a_home(tmp_path_factory, plan) as home:
        assert monitor_leaks(home, plan) != []


# --- the fleet: what reaches Redis ----------------------------------------------------------------

def redis_text(home: Home, plan: Plan, url: str) -> str:
    daemon = fleet_helpers.Daemon(home, url, "host-a", interval=0.5)
    try:
        r = fleet_helpers.connect(url)
        with transaction(home) as doc:
            rows = doc["credential_pool"]["openrouter"]
            policy.mark_exhausted(rows, rows[0], time.time(), code=429, reason="rate_limit_exceeded",
                                  message=" ".join(plan.texts("last_error_message")) + " " +
                                  " ".join(plan.secrets.values()), reset_at=time.time() + 900)
        wait_until(lambda: any(r.hget(k, "message") for k in r.scan_iter("*s:*")), what="the bench in Redis")
        return fleet_helpers.dump_redis(r)
    finally:
        daemon.close()


def _fleet_leaks(text: str, plan: Plan) -> list[str]:
    return leaks(text, plan) + fleet_helpers.leaks(text, list(plan.secrets.values()))


@pytest.mark.slow
@settings(max_examples=max(3, EXAMPLES // 60), deadline=None, suppress_health_check=list(HealthCheck))
@given(plan=secret_homes())
def test_redis_holds_no_secret_of_the_home(tmp_path_factory: pytest.TempPathFactory, redis_server: Any,
                                           plan: Plan) -> None:
    redis_server_flush(redis_server)
    with a_home(tmp_path_factory, plan) as home:
        assert _fleet_leaks(redis_text(home, plan, redis_server.url), plan) == []


@pytest.mark.slow
def test_negative_control_redis_without_the_outbound(tmp_path_factory: pytest.TempPathFactory, redis_server: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Outbound, "text", lambda self, value, limit=200: value or "")
    plan = fixed_plan()
    with a_home(tmp_path_factory, plan) as home:
        assert _fleet_leaks(redis_text(home, plan, redis_server.url), plan) != []


def redis_server_flush(server: Any) -> None:
    fleet_helpers.connect(server.url).flushall()


def test_the_scan_sees_each_kind_of_secret(tmp_path: Path) -> None:
    """The leak check itself: each secret, whole or by a slice of its random part."""
    plan = fixed_plan()
    for kind, secret in plan.secrets.items():
        assert leaks(f"x {secret} y", plan) == [kind]
        assert leaks(f"x {secret[-14:]} y", plan) == [kind]
        assert leaks(f"x {secret[:10]}…{secret[-4:]} y", plan) == []    # a fingerprint is fine
