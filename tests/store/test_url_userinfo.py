"""URL userinfo is a secret (RELIABILITY 37), and a home's secrets come from what a reader holds.

- ``http://user:pw@host`` shows as ``http://user:***@host`` in any text the redactor passes
  (several URLs, any scheme, a password holding ``:``; ports and paths untouched);
- the password of every ``*url`` field of the store and config.yaml is a secret of the home,
  as written and decoded, so an echo of it alone is caught too;
- :meth:`HomeSecrets.secrets` gives the same set as :func:`home_secrets` from what a reader
  already holds, and the fleet's outbound built from it reads no auth.json.

Negative controls: without the userinfo mask, the password is shown; without the URL walk,
the password's echo alone is shown.
"""

from __future__ import annotations

import secrets

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.authfile import read_store
from store.envfile import read_env
from store.fleet.outbound import Outbound
from store.paths import Home
from store.redaction import redact, urls, walk
from store.redaction.redact import HomeSecrets, Redactor, home_secrets
from tests.conftest import make_row, make_store, write_store

PW = f"hunter{secrets.token_hex(6)}"


@pytest.mark.parametrize("raw, shown", [
    ("http://user:pw123456@host/v1", "http://user:***@host/v1"),
    ("redis://:s3cretpass@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
    ("see https://bob:a:b:c@proxy.local:8443/v1 and http://x:yy@h2", "see https://bob:***@proxy.local:8443/v1 "
                                                                    "and http://x:***@h2"),
    ("https://al%40ice:p%2Fw@h/x", "https://al%40ice:***@h/x"),
    ("http://host:8080/path@x", "http://host:8080/path@x"),         # a port, then a path: no userinfo
    ("http://user@host/", "http://user@host/"),                     # a user alone is no secret
    ("no url here: a:b@c", "no url here: a:b@c"),
    ("http://user:***@host", "http://user:***@host"),               # idempotent
])
def test_mask_userinfo(raw: str, shown: str) -> None:
    assert urls.mask_userinfo(raw) == shown
    assert Redactor().redact(raw) == shown


@settings(max_examples=300, deadline=None)
@given(user=st.text("abcdefXYZ019._-~%", max_size=8),
       pw=st.text(st.characters(blacklist_characters="/@ \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0",
                                blacklist_categories=("Zs", "Zl", "Zp", "Cs")), min_size=1, max_size=20),
       before=st.text(max_size=10), after=st.sampled_from(["", "/v1", ":8443/v1", "?a=1"]))
def test_a_password_in_a_url_never_shows(user: str, pw: str, before: str, after: str) -> None:
    text = f"{before} https://{user}:{pw}@host.test{after}"
    out = Redactor().redact(text)
    assert f"{user}:***@host.test{after}" in out and f":{pw}@" not in out


def plant(home: Home) -> None:
    write_store(home, make_store({"openrouter": [
        make_row("aaaaaa", token="sk-or-v1-" + "a1" * 12, base_url=f"https://bob:{PW}@proxy.test/v1",
                 last_error_message=f"proxy said: bad password {PW}"),
        make_row("bbbbbb", priority=1, source="env:MY_KEY", inference_base_url="https://x:p%40ssw0rd99@h/v1"),
    ]}))
    home.config.write_text("fallback_providers:\n  - provider: custom\n    model: m\n"
                           "    base_url: http://carol:cfgpassword1@local.test/v1\n")
    home.env.write_text("MY_KEY=envsecretvalue1\n")


def test_url_passwords_are_secrets_of_the_home(tmp_home: Home) -> None:
    plant(tmp_home)
    found = home_secrets(tmp_home)
    assert {PW, "p%40ssw0rd99", "p@ssw0rd99", "cfgpassword1", "envsecretvalue1"} <= found
    msg = redact.for_home(tmp_home).redact(f"proxy said: bad password {PW}")
    assert PW not in msg and "…" in msg


def test_the_secret_set_from_what_a_reader_holds_is_the_files_set(tmp_home: Home) -> None:
    plant(tmp_home)
    doc = read_store(tmp_home).doc
    known = HomeSecrets()
    got = known.secrets(doc, redact.config_data(tmp_home), read_env(tmp_home))
    assert set(got) == home_secrets(tmp_home)
    assert known.secrets(doc, redact.config_data(tmp_home), read_env(tmp_home)) is got   # same set, no walk
    assert known.redactor(doc, redact.config_data(tmp_home), read_env(tmp_home))._secrets == set(got)


def test_the_fleets_outbound_reads_no_store_when_given_one(tmp_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    plant(tmp_home)
    doc = read_store(tmp_home).doc

    def no_reread(home: Home) -> set[str]:
        raise AssertionError("auth.json read again for a publish")

    monkeypatch.setattr("store.fleet.outbound.home_secrets", no_reread)
    out = Outbound.for_home(tmp_home, b"fleet-secret-0123456789", doc=doc, known=HomeSecrets())
    text = out.text(f"upstream echoed {PW} and envsecretvalue1")
    assert PW not in text and "envsecretvalue1" not in text and "fl:" in text
    with pytest.raises(AssertionError, match="read again"):   # control: without the doc it does read
        Outbound.for_home(tmp_home, b"fleet-secret-0123456789")


def test_negative_control_without_the_mask_the_password_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("store.redaction.redact.mask_userinfo", lambda text: text)
    assert f":{PW}@" in Redactor().redact(f"https://bob:{PW}@host/v1")


def test_negative_control_without_the_url_walk_the_echo_shows(tmp_home: Home,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    plant(tmp_home)
    monkeypatch.setattr(walk, "url_passwords", lambda url: [])
    assert PW in redact.for_home(tmp_home).redact(f"bad password {PW}")
