"""Notify targets pass the one redactor (store.redaction.targets), which masks secrets, not hosts.

- a key-shaped token in a notify URL's path (a provider-shaped key, and a long token of no
  known shape) never reaches the status file, the log or ``--check`` in full; the control
  with the targets' secret parts unnamed shows the generic token in the status file;
- a target with ``smtp=127.0.0.1`` leaves every ``127.0.0.1`` of the monitor's output
  readable; the control (the old rule: every query value a secret) masks them;
- hypothesis: for URLs built from hosts, ports, paths and query values, no host or IP
  address is ever named secret, and every key-shaped part is.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.monitor import delivery
from store.paths import Home
from store.redaction import targets as redaction_targets
from store.redaction.redact import Redactor, clear_registered
from tests.conftest import run_cli
from tests.monitor.helpers import Running, canaries_in, canary, free_port, rules, seed_home, wait_until

# A long token of no provider's shape, as a webhook's path may hold.
GENERIC = "Tq7" + "x9Z" * 12 + "w4"


@pytest.fixture(autouse=True)
def _forget_registered() -> Any:
    clear_registered()
    yield
    clear_registered()


def _hostile_urls() -> list[str]:
    return [f"json://127.0.0.1:{free_port()}/hooks/{canary(11)}",
            f"json://127.0.0.1:{free_port()}/services/{GENERIC}/x"]


def _status_after_a_run(home: Home, urls: list[str], log: list[str]) -> str:
    seed_home(home, 1)
    with Running(home=home, rules=rules(retries=0), targets=[delivery.target(u, i) for i, u in enumerate(urls)],
                 log=log.append, backoff=0.01) as run:
        wait_until(lambda: run.call(lambda: run.monitor.evaluations) > 0, what="the first evaluation")
    return (home.root / "hermes-admin-monitor.json").read_text()


def test_a_key_shaped_token_in_a_target_path_never_appears_in_full(tmp_home: Home) -> None:
    log: list[str] = []
    doc = _status_after_a_run(tmp_home, _hostile_urls(), log)
    shown = json.loads(doc)["targets"]
    assert canaries_in(doc + "\n".join(log)) == [] and GENERIC not in doc
    assert all(t.startswith("json://127.0.0.1:") for t in shown)     # the host stays readable
    assert any("…" in t for t in shown)
    proc = run_cli(tmp_home, "monitor", "--metrics", "none", "--check", "--notify", *_hostile_urls())
    assert canaries_in(proc.stdout + proc.stderr) == [] and GENERIC not in proc.stdout + proc.stderr
    assert "json://127.0.0.1:" in proc.stdout


def test_control_with_the_secret_parts_unnamed_the_token_is_in_the_status_file(
        tmp_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redaction_targets, "secret_parts", lambda _url, _privacy="": [])
    doc = _status_after_a_run(tmp_home, _hostile_urls(), [])
    assert GENERIC in doc


SMTP = "mailto://ops:hunter2-Secret99@mail.example.com:2525?smtp=127.0.0.1&from=mon@example.com&to=ops@example.com"


def test_a_target_with_smtp_on_loopback_leaves_the_address_readable(tmp_home: Home) -> None:
    hook = f"json://127.0.0.1:{free_port()}/hook"
    delivery.target(SMTP, 1)
    assert Redactor().redact("metrics at http://127.0.0.1:9464/metrics") == "metrics at http://127.0.0.1:9464/metrics"
    assert "hunter2-Secret99" not in Redactor().redact("login hunter2-Secret99 refused")   # the password is
    seed_home(tmp_home, 1)
    proc = run_cli(tmp_home, "monitor", "--metrics", "none", "--check", "--notify", SMTP, hook)
    assert hook in proc.stdout
    assert "hunter2-Secret99" not in proc.stdout + proc.stderr
    doc = _status_after_a_run(tmp_home, [SMTP, hook], [])
    assert hook in json.loads(doc)["targets"]


def _old_rule(url: str, _privacy: str = "") -> list[str]:
    """The rule before #29: every path segment and query value of 8 characters or more."""
    parts = urllib.parse.urlsplit(url)
    out = [seg for seg in parts.path.split("/") if seg] + [v for _k, v in urllib.parse.parse_qsl(parts.query)]
    return [p for p in out if len(p) >= 8]


def test_control_the_old_rule_masks_the_loopback_address_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redaction_targets, "secret_parts", _old_rule)
    delivery.target(SMTP, 1)
    assert "127.0.0.1" not in Redactor().redact("metrics at http://127.0.0.1:9464/metrics")


_label = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12)
_host = st.one_of(st.ip_addresses(v=4).map(str), st.lists(_label, min_size=2, max_size=4).map(".".join))
_key = st.one_of(st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=16,
                         max_size=40).map(lambda s: "sk-or-v1-" + s),
                 st.from_regex(r"\A[A-Za-z]{20}[0-9]{16}\Z"))


@settings(max_examples=150, deadline=None)
@given(host=_host, port=st.integers(1, 65535), other=_host, key=_key, seg=_label)
def test_hosts_are_never_secret_and_keys_always_are(host: str, port: int, other: str, key: str, seg: str) -> None:
    url = f"json://{host}:{port}/{seg}/{key}?smtp={other}&relay={other}"
    privacy = url   # a plugin that hides nothing
    secret = redaction_targets.secret_parts(url, privacy)
    assert host not in secret and other not in secret
    assert key in secret
    shown = redaction_targets.shown(url, privacy)
    assert key not in shown and shown.startswith(f"json://{host}:{port}/")


@pytest.mark.parametrize("url, secret, host", [
    ("tgram://123456789:AABBCCDDEEFFaabbccddeeff00112233/-100200300", "123456789:AABBCCDDEEFFaabbccddeeff00112233",
     None),
    ("discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js", "JHMHI8qBe7bk2ZwO5U711o3dV_js", None),
    ("slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ", "TIiajkdnlazkcOXrIdevi7FQ", None),
    ("mailtos://alice:app-password9@smtp.example.com?to=ops@example.com", "app-password9", "smtp.example.com"),
    ("json://hooks.internal.example/x?token=abc12345678", "abc12345678", "hooks.internal.example"),
])
def test_each_kind_of_target_registers_its_secret_and_not_its_host(url: str, secret: str, host: str | None) -> None:
    t = delivery.target(url, 1)
    assert secret not in t.shown
    said = Redactor().redact(f"upstream said: {secret} refused at {host or 'localhost'}")
    assert secret not in said
    if host:
        assert host in said and host in t.shown


@pytest.mark.parametrize("url, named", [("notaurl", "(with no scheme://)"), ("bogus://x", "(bogus://…)"),
                                        ("b\u00e4d://sk-or-v1-0123456789abcdefNOTIFY01", "(its scheme not shown)")])
def test_a_url_apprise_cannot_use_is_named_by_its_shape_never_echoed(url: str, named: str) -> None:
    """The error says what the URL looks like (it said "URL #1 (it)" for one without a scheme)."""
    from store.errors import BadInput
    with pytest.raises(BadInput) as got:
        delivery.target(url, 1)
    text = str(got.value)
    assert f"URL #1 {named} is not a URL Apprise can send to" in text, text
    assert "sk-or-v1" not in text and "notaurl" not in text
