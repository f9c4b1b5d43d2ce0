"""hermes-admin's own settings file (store.config.settings): strict, named errors, defaults."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store.config import settings
from store.errors import ConfigUnreadable
from store.paths import Home


def test_defaults_without_a_file(tmp_home: Home) -> None:
    assert settings.read(tmp_home) == settings.DEFAULTS
    assert settings.DEFAULTS.threshold_for("openrouter") == 0.0     # Hermes's behaviour


def test_a_file_is_read_per_pool(tmp_home: Home) -> None:
    (tmp_home.root / settings.SETTINGS_FILE).write_text(
        "headroom:\n  threshold: 0.02\n  pools:\n    openrouter: 0.1\n  least_used_weighs_headroom: true\n"
        "history:\n  keep: 5\n  days: 2\n")
    s = settings.read(tmp_home)
    assert (s.threshold_for("openrouter"), s.threshold_for("nous")) == (0.1, 0.02)
    assert (s.least_used_weighs_headroom, s.history_keep, s.history_days) == (True, 5, 2.0)


@pytest.mark.parametrize("text, field", [
    ("headroom:\n  threshold: 2\n", "headroom.threshold"),
    ("headroom:\n  threshold: .nan\n", "headroom.threshold"),
    ("headroom:\n  pools:\n    openrouter: -1\n", "headroom.pools.openrouter"),
    ("headroom:\n  least_used_weighs_headroom: maybe\n", "least_used_weighs_headroom"),
    ("history:\n  keep: 0\n", "history.keep"),
    ("history:\n  days: 1e400\n", "history.days"),
    ("bogus: 1\n", "bogus"), ("[1, 2]\n", "mapping"), ("a: [\n", "not valid YAML"),
    ("a: &a [*a, *a]\n" * 1, ""),
])
def test_a_bad_file_names_the_file_and_the_field(tmp_home: Home, text: str, field: str) -> None:
    (tmp_home.root / settings.SETTINGS_FILE).write_text(text)
    with pytest.raises(ConfigUnreadable) as got:
        settings.read(tmp_home)
    assert settings.SETTINGS_FILE in str(got.value) and field in str(got.value)


@given(st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=10),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=10), c, max_size=3),
                    max_leaves=12))
def test_any_document_is_settings_or_a_named_error(data) -> None:
    try:
        s = settings.parse(data, "hermes-admin.yaml")
    except ConfigUnreadable:
        return
    assert 0 <= s.threshold <= 0.99 and s.history_keep >= 1
