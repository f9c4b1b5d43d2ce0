"""Hostile hour: a dangling symlink at config.yaml is a warning, not a silent default.

A config.yaml linked from a dotfiles folder that moved was read as no config at all: the
strategies, the fallback chain and the routing silently fell back to defaults (``strategy``
showed ``fill_first (default)``) with no word. It is now the same warning as every other
config that cannot be used, naming the link and its target.
"""

from __future__ import annotations

import pytest

from store import safeio
from store.config import yamlread
from store.errors import ConfigUnreadable
from store.paths import Home
from tests.conftest import make_row, run_cli, write_store

MISSING = "/nonexistent-dotfiles/hermes/config.yaml"


@pytest.fixture
def linked(tmp_home: Home) -> Home:
    write_store(tmp_home, {"version": 1, "providers": {}, "credential_pool": {
        "openrouter": [make_row("aaaaaa")]}})
    (tmp_home.root / "config.yaml").symlink_to(MISSING)
    return tmp_home


def test_read_verbs_warn_naming_the_link(linked: Home) -> None:
    for verb in (("list",), ("strategy",), ("fallback", "list")):
        proc = run_cli(linked, *verb, ok=False, timeout=20)
        assert "config.yaml" in proc.stderr and MISSING in proc.stderr, (verb, proc.stderr)
        assert "does not exist" in proc.stderr


def test_the_reader_raises(linked: Home) -> None:
    with pytest.raises(ConfigUnreadable, match="does not exist"):
        yamlread.read_bytes(linked.root / "config.yaml")
    assert yamlread.read_bytes(linked.root / "absent.yaml") is None   # missing stays missing


def test_negative_control_without_the_check_it_is_silent(
        linked: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safeio, "refuse_dangling", lambda *a, **k: None)
    assert yamlread.read_bytes(linked.root / "config.yaml") is None
