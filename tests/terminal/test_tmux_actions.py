"""Operator actions in a real terminal: the installed `hermes-admin` in tmux, driven by keys,
checked in auth.json. `/` filters to the cooling key, `r` `y` clears it; `c` `15m` Enter benches
it for 15 minutes; under --read-only the same keys change nothing and say why."""

from __future__ import annotations

import json
import os
import time

import pytest

from store.paths import Home
from tests import tmux
from tests.conftest import cli_env
from tests.terminal.seeds import primary_and_benched_backup
from tui.text.sentences import READ_ONLY

pytestmark = [
    pytest.mark.slow,
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux.available(), reason="tmux is not installed"),
]

KEY_A = "sk-or-v1-0123456789abcdefTMUXact1"
KEY_B = "sk-or-v1-0123456789abcdefTMUXact2"


def seed(home: Home) -> float:
    return primary_and_benched_backup(home, KEY_A, KEY_B)


def row(home: Home, rid: str) -> dict:
    doc = json.loads(home.auth.read_text(encoding="utf-8"))
    return next(r for r in doc["credential_pool"]["openrouter"] if r["id"] == rid)


def wait_file(home: Home, pred, timeout: float = 10.0, what: str = "the file") -> dict:
    """Poll auth.json (bounded) until pred(row bbbbbb); return that row."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            r = row(home, "bbbbbb")
            if pred(r):
                return r
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; row: {row(home, 'bbbbbb')}")
        time.sleep(0.02)


def start(home: Home, *extra: str) -> tmux.Tmux:
    exe = tmux.installed_hermes_admin()
    if exe is None:
        pytest.skip("hermes-admin is not installed in this environment")
    return tmux.Tmux.start([exe, "--home", str(home.root), *extra], size=(100, 30), env=cli_env(home))


def filter_to(term: tmux.Tmux, text: str, hidden: str) -> None:
    term.send("/")
    term.wait_for("filter: label", timeout=5)   # the box is up and focused: type into it
    term.type(text)
    term.wait_until(lambda s: hidden not in s, timeout=5, what=f"filter {text!r} applied")
    term.send("Enter")
    term.wait_gone("▔", timeout=5)   # the filter box closed: keys go to the table again


def test_filter_reset_then_cooldown_land_in_the_file(tmp_home: Home) -> None:
    seed(tmp_home)
    with start(tmp_home) as term:
        term.wait_for("backup", timeout=15)
        filter_to(term, "cooling", hidden="primary")
        term.send("r")
        screen = term.wait_for("quota back", timeout=5)
        assert "backup" in screen and "Reset" in screen
        t0 = time.time()
        term.send("y")
        r = wait_file(tmp_home, lambda r: r["last_status"] is None, what="the reset")
        assert r["last_error_reset_at"] is None and r["last_error_code"] is None
        assert abs(r["status_cleared_at"] - t0) < 5
        # The row is no longer cooling, so the filter now hides it: filter to it by name.
        term.send("Escape")
        # Wait for Escape to land: ESC and the next key sent at once read as alt+key.
        term.wait_for("primary", timeout=5)
        filter_to(term, "backup", hidden="primary")
        term.send("c")
        term.wait_for("Set a cooldown by hand", timeout=5)
        term.type("15m")
        term.wait_for("in 15m", timeout=5)
        t1 = time.time()
        term.send("Enter")
        r = wait_file(tmp_home, lambda r: r["last_status"] == "exhausted", what="the cooldown")
        assert abs(r["last_error_reset_at"] - (t1 + 900)) < 5
        assert r["last_error_reason"] == "manual_cooldown"
        term.wait_until(lambda s: "◐ cooling" in s and "backup" in s, timeout=5, what="cooling on screen")
        assert row(tmp_home, "aaaaaa")["last_status"] is None       # the other key untouched
        screen = term.capture()
        assert KEY_A not in screen and KEY_B not in screen
    audit = [json.loads(x) for x in tmp_home.audit.read_text().splitlines()]
    assert [e["action"] for e in audit] == ["reset", "cooldown"]


def test_read_only_same_keys_change_nothing(tmp_home: Home) -> None:
    seed(tmp_home)
    before = (tmp_home.auth.read_bytes(), os.stat(tmp_home.auth).st_mtime_ns)
    with start(tmp_home, "--read-only") as term:
        term.wait_for("backup", timeout=15)
        filter_to(term, "cooling", hidden="primary")
        term.send("r")
        term.wait_for(READ_ONLY, timeout=5)
        term.send("y", "c")
        term.type("15m")
        term.send("Enter")
        time.sleep(0.5)   # give a (wrong) write every chance to land before comparing
        screen = term.capture()
        assert "Set a cooldown by hand" not in screen and "quota back" not in screen
    assert (tmp_home.auth.read_bytes(), os.stat(tmp_home.auth).st_mtime_ns) == before
    assert not tmp_home.audit.exists()
