"""Hermes's encrypted store (``hermes encrypt enable``): auth.json and .env become the
envelope ``HRMSENC`` + version byte + 12-byte nonce + AES-256-GCM ciphertext (with its
16-byte tag). The tests build the envelope themselves with the cryptography-free layout
(random bytes stand in for ciphertext: hermes-admin never decrypts).

Every verb says Hermes encrypted it, that hermes-admin cannot read it and what to do, exits
3 and writes nothing; the console's banner and the monitor's ``store_unreadable`` carry the
same reason; no other binary file is called encrypted (hypothesis: random bytes and
near-miss magics). Negative control: with the recogniser switched off, the old unhelpful
"not UTF-8" comes back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from screens.dashboard_chrome import problems  # the console's banner lines
from store import authfile, envelope, envfile
from store.errors import EXIT_UNREADABLE, EncryptedStore, StoreUnreadable
from store.monitor import conditions, rules
from store.monitor.sample import ProfileSample, Sample
from store.paths import Home
from store.watch.home import HomeLoader
from tests.conftest import make_row, make_store, run_cli, write_store
from tests.home_tree import tree


def sealed(version: int = 1, body: bytes | None = None) -> bytes:
    """An envelope laid out as Hermes writes it: magic, version, nonce, ciphertext + tag."""
    nonce = os.urandom(envelope.NONCE_BYTES)
    ciphertext = os.urandom(200) if body is None else body
    return envelope.MAGIC + bytes([version]) + nonce + ciphertext + os.urandom(envelope.TAG_BYTES)


def _home_with(tmp_home: Home, *, auth: bytes | None = None, env: bytes | None = None) -> Home:
    if auth is None:
        write_store(tmp_home, make_store({"openrouter": [make_row("aaaaaa", token="sk-or-v1-" + "a" * 32)]}))
    else:
        tmp_home.auth.write_bytes(auth)
    if env is not None:
        tmp_home.env.write_bytes(env)
    return tmp_home


def _says_encrypted(text: str, path: Path) -> None:
    assert f"{path}: encrypted by Hermes (`hermes encrypt`" in text
    assert "cannot read it" in text and "hermes encrypt disable" in text and "nothing was written" in text


VERBS = [("list",), ("list", "--json"), ("reset", "openrouter", "--yes"), ("remove", "openrouter", "1", "--yes"),
         ("add", "openrouter", "--api-key", "sk-or-v1-" + "c" * 32), ("priority", "openrouter", "1", "0"),
         ("cooldown", "openrouter", "1", "--for", "5m"), ("strategy", "openrouter", "round_robin"),
         ("history",), ("audit",), ("undo", "--yes"), ("restore-backup", "--yes"),
         ("proxy", "--pool", "openrouter", "--port", "0")]


@pytest.mark.parametrize("which", ["auth.json", ".env"])
@pytest.mark.parametrize("verb", VERBS, ids=lambda v: " ".join(v[:2]))
def test_every_verb_says_encrypted_and_writes_nothing(tmp_home: Home, which: str, verb: tuple[str, ...]) -> None:
    home = _home_with(tmp_home, **({"auth": sealed()} if which == "auth.json" else {"env": sealed()}))
    before = tree(home.root)
    proc = run_cli(home, *verb, ok=False)
    assert proc.returncode == EXIT_UNREADABLE, proc.stderr
    _says_encrypted(proc.stderr, home.root / which)
    assert "not UTF-8" not in proc.stderr and "internal error" not in proc.stderr
    assert tree(home.root) == before


def test_the_strict_reader_names_the_envelope_version(tmp_home: Home) -> None:
    tmp_home.auth.write_bytes(sealed(version=2))
    with pytest.raises(EncryptedStore) as exc:
        authfile.read_store(tmp_home)
    assert exc.value.exit_code == EXIT_UNREADABLE and "envelope version 2" in exc.value.reason


def test_the_console_banner_and_the_monitor_say_the_same(tmp_home: Home) -> None:
    home = _home_with(tmp_home, auth=sealed(), env=sealed())
    state = HomeLoader(home).load()
    assert isinstance(state.store_error, EncryptedStore)
    lines = problems(state)
    assert lines[0][0] == "error"
    _says_encrypted(lines[0][1], home.auth)
    assert any(f"{home.env}: encrypted by Hermes" in text for _, text in lines[1:])
    sample = Sample([ProfileSample("default", home, state.pools, state.store_error, state.read_at)])
    ev = conditions.evaluate(sample, rules.defaults(), 0.0)
    raised = [c for c in ev.conditions.values() if c.rule == rules.STORE_UNREADABLE]
    assert len(raised) == 1
    _says_encrypted(raised[0].text, home.auth)


def test_env_reader_reports_and_guesses_no_value(tmp_home: Home) -> None:
    tmp_home.env.write_bytes(sealed(body=b"OPENROUTER_API_KEY=sk-or-v1-visible\n"))
    values, problem = envfile.read_env_report(tmp_home)
    assert values == {} and problem is not None
    _says_encrypted(problem, tmp_home.env)


# --- no other binary file is mistaken for it ---------------------------------------------------

NEAR_MISSES = [b"HRMSEN", b"hrmsenc", b"HRMSENX", b"XHRMSENC", b"\xef\xbb\xbfHRMSENC", b" HRMSENC"]


@pytest.mark.parametrize("magic", NEAR_MISSES)
def test_near_miss_magics_are_not_called_encrypted(tmp_home: Home, magic: bytes) -> None:
    tmp_home.auth.write_bytes(magic + b"\x01" + os.urandom(80))
    with pytest.raises(StoreUnreadable) as exc:
        authfile.read_store(tmp_home)
    assert not isinstance(exc.value, EncryptedStore)


def test_a_truncated_envelope_is_not_called_encrypted(tmp_home: Home) -> None:
    tmp_home.auth.write_bytes(sealed()[:envelope.MIN_BYTES - 1])
    with pytest.raises(StoreUnreadable) as exc:
        authfile.read_store(tmp_home)
    assert not isinstance(exc.value, EncryptedStore)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(min_size=0, max_size=400))
def test_random_bytes_are_never_called_encrypted(raw: bytes) -> None:
    if raw.startswith(envelope.MAGIC):
        return
    assert envelope.version_of(raw) is None
    try:
        authfile.parse_store(raw, Path("auth.json"))
    except StoreUnreadable as exc:
        assert not isinstance(exc, EncryptedStore)


@settings(max_examples=200)
@given(st.binary(min_size=1, max_size=len(envelope.MAGIC)), st.binary(min_size=0, max_size=80))
def test_near_misses_of_the_magic_are_never_called_encrypted(prefix: bytes, rest: bytes) -> None:
    magic = bytearray(envelope.MAGIC)
    magic[:len(prefix)] = prefix
    raw = bytes(magic) + rest
    assert (envelope.version_of(raw) is not None) == (raw.startswith(envelope.MAGIC)
                                                     and len(raw) >= envelope.MIN_BYTES)


@settings(max_examples=100)
@given(st.integers(0, 255), st.binary(min_size=envelope.TAG_BYTES, max_size=300))
def test_every_well_formed_envelope_is_recognised(version: int, body: bytes) -> None:
    raw = envelope.MAGIC + bytes([version]) + os.urandom(envelope.NONCE_BYTES) + body
    with pytest.raises(EncryptedStore) as exc:
        authfile.parse_store(raw, Path("auth.json"))
    assert f"envelope version {version}" in exc.value.reason


def test_a_plain_store_still_reads(tmp_home: Home) -> None:
    _home_with(tmp_home)
    assert authfile.read_store(tmp_home).doc["credential_pool"]["openrouter"][0]["id"] == "aaaaaa"
    assert json.loads(tmp_home.auth.read_bytes())


def test_negative_control_without_the_recogniser_it_is_just_not_utf8(
        tmp_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_home.auth.write_bytes(envelope.MAGIC + b"\x01" + b"\xff" * 60)
    monkeypatch.setattr(envelope, "check", lambda raw, path: None)
    with pytest.raises(StoreUnreadable) as exc:
        authfile.read_store(tmp_home)
    assert not isinstance(exc.value, EncryptedStore) and "not UTF-8" in exc.value.reason
