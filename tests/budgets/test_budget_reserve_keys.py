"""A key pasted into ``budgets.<pool>.reserve`` is refused: the error names
``budgets.<pool>.reserve[<i>]``, never echoes the value, the proxy does not start and
nothing is written. Key shapes are the ones a row's label refuses, so every label can
still be named as a reserve."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.config import budgets as budgets_mod
from store.config import settings as settings_mod
from store.errors import ConfigUnreadable
from store.ops.textcheck import keyish
from tests.budgets.conftest import budgets
from tests.cli.inprocess import run_main
from tests.proxy_helpers import edge_seed

PATH = Path("hermes-admin.yaml")
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
PREFIXES = ("sk-or-v1-", "sk-ant-api03-", "sk-proj-", "xai-", "gsk_", "ghp_", "hf_", "r8_", "pplx-", "eyJ")
KEYS = st.builds(lambda p, tail: p + tail, st.sampled_from(PREFIXES),
                 st.text(ALNUM, min_size=24, max_size=48)) | \
       st.text(ALNUM, min_size=32, max_size=60).filter(lambda s: any(c.isdigit() for c in s)
                                                       and any(c.isalpha() for c in s))
PLAIN = st.sampled_from(["or0003", "backup", "team/abcdefghijklmnopqrstuvwxyz0123456", "work laptop", "ant-2"])


def _parse(reserve: list) -> settings_mod.Settings:
    return settings_mod.parse({"budgets": {"openrouter": {"key": {"day": 1}, "reserve": reserve}}}, PATH)


def _not_echoed(text: str, key: str) -> bool:
    """No 8-character run of *key* appears in *text* (the error shows nothing of the key)."""
    return not any(key[i:i + 8] in text for i in range(len(key) - 7))


@pytest.mark.parametrize("key", ["sk-or-v1-" + "a1b2" * 10, "sk-ant-api03-" + "Zx9" * 12,
                                 "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", "ghp_" + "A1" * 12,
                                 "0123456789abcdefABCDEF0123456789ab"])
def test_a_key_shaped_reserve_entry_is_refused_naming_its_index(key: str) -> None:
    with pytest.raises(ConfigUnreadable) as got:
        _parse(["or0003", key])
    text = str(got.value)
    assert "budgets.openrouter.reserve[1]:" in text and "API key" in text and str(PATH) in text
    assert _not_echoed(text, key)


@settings(max_examples=200, deadline=None)
@given(before=st.lists(PLAIN, max_size=3), key=KEYS, after=st.lists(PLAIN | KEYS, max_size=3))
def test_hostile_reserves_with_keys_are_refused_at_the_first_key(before: list, key: str, after: list) -> None:
    with pytest.raises(ConfigUnreadable) as got:
        _parse([*before, key, *after])
    text = str(got.value)
    assert f"budgets.openrouter.reserve[{len(before)}]:" in text
    assert _not_echoed(text, key)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=64) | KEYS)
def test_a_reserve_refuses_exactly_the_shapes_a_label_refuses(text: str) -> None:
    """One idea of a key for labels (typed at the console) and reserve entries (in the yaml)."""
    assert budgets_mod.key_shaped(text) == keyish(text)


def test_plain_names_and_labels_with_slashes_still_read() -> None:
    got = _parse(["or0003", "team/abcdefghijklmnopqrstuvwxyz0123456", "work laptop"])
    assert got.budgets["openrouter"].reserve == ("or0003", "team/abcdefghijklmnopqrstuvwxyz0123456", "work laptop")


def test_control_without_the_key_check_the_key_is_read_as_a_reserve(monkeypatch) -> None:
    """Negative control: the check switched off, the same key is taken as a reserve name."""
    key = "sk-or-v1-" + "a1b2" * 10
    monkeypatch.setattr(budgets_mod, "key_shaped", lambda text: False)
    assert _parse([key]).budgets["openrouter"].reserve == (key,)


def test_the_proxy_with_a_key_in_its_reserve_does_not_start_and_writes_nothing(tmp_home) -> None:
    key = "sk-or-v1-" + "c3d4" * 10
    edge_seed(tmp_home, "http://127.0.0.1:9", keys=1, fallback=False)
    budgets(tmp_home, f"openrouter:\n  reserve: [{key}]")
    before = tmp_home.auth.read_bytes()
    code, out, err = run_main(["proxy", "--home", str(tmp_home.root), "--port", "0"], b"")
    assert code == 3 and "budgets.openrouter.reserve[0]:" in err and "API key" in err
    assert _not_echoed(out + err, key) and "sk-or-…" not in err      # not even its fingerprint
    assert tmp_home.auth.read_bytes() == before and not list(tmp_home.root.glob("hermes-admin-proxy-*.json"))


@pytest.mark.parametrize("key", ["sk-or-v1-" + "e5f6" * 10, "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln"])
def test_a_key_pasted_as_a_pool_name_is_refused_without_showing_it(key: str) -> None:
    with pytest.raises(ConfigUnreadable) as got:
        settings_mod.parse({"budgets": {"openrouter": {"key": {"day": 1}}, key: {"key": {"day": 1}}}}, PATH)
    text = str(got.value)
    assert "budgets: pool name #2 looks like an API key" in text and _not_echoed(text, key)


def test_a_long_pool_name_is_no_key() -> None:
    name = "team-2026-production-east-openrouter"
    got = settings_mod.parse({"budgets": {name: {"key": {"day": 1}}}}, PATH)
    assert got.budgets[name].key.day == 1.0
