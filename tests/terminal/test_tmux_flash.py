"""The installed `hermes-admin` in a real 80x24 terminal: a `:` command resets a row, the flash
line says so on one line with the way back (no escaped control code anywhere on screen), `M`
shows the whole message, `L` then `u` undoes the reset, and `?` help shows binding ids whole."""

from __future__ import annotations

import json
import re
import time

import pytest

from store.paths import Home
from tests import tmux
from tests.conftest import cli_env
from tests.terminal.seeds import primary_and_benched_backup

pytestmark = [
    pytest.mark.slow,
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux.available(), reason="tmux is not installed"),
]

KEY_A = "sk-or-v1-0123456789abcdefTMUXfls1"
KEY_B = "sk-or-v1-0123456789abcdefTMUXfls2"


def seed(home: Home) -> None:
    primary_and_benched_backup(home, KEY_A, KEY_B)


def status_of(home: Home, rid: str) -> str | None:
    doc = json.loads(home.auth.read_text(encoding="utf-8"))
    return next(r for r in doc["credential_pool"]["openrouter"] if r["id"] == rid)["last_status"]


def wait_status(home: Home, rid: str, want: str | None, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while status_of(home, rid) != want:
        if time.monotonic() > deadline:
            raise AssertionError(f"{rid} never became {want!r}: {status_of(home, rid)!r}")
        time.sleep(0.02)


def no_escapes(screen: str) -> None:
    assert "\\x" not in screen and KEY_A not in screen and KEY_B not in screen


def test_colon_reset_flash_line_message_log_and_undo_at_80x24(tmp_home: Home) -> None:
    exe = tmux.installed_hermes_admin()
    if exe is None:
        pytest.skip("hermes-admin is not installed in this environment")
    seed(tmp_home)
    with tmux.Tmux.start([exe, "--home", str(tmp_home.root)], size=(80, 24), env=cli_env(tmp_home)) as term:
        term.wait_for("backup", timeout=15)
        term.send(":")
        term.wait_for("Tab: complete", timeout=5)
        term.type("reset openrouter backup")
        term.send("Enter")
        term.wait_for("quota back", timeout=5)
        term.send("y")
        wait_status(tmp_home, "bbbbbb", None)
        screen = term.wait_for("undo: L, then u", timeout=5)
        flash = next(ln for ln in screen.splitlines() if "undo: L, then u" in ln)
        # The status as the table words it: how long the bench had left, never "exhausted".
        assert re.search(r"✔ reset · openrouter · backup: cooling \d+m( \d+s)? → ok", flash), flash
        no_escapes(screen)
        # The whole message, line by line.
        term.send("M")
        screen = term.wait_for("Messages:", timeout=5)
        assert "reset · openrouter: done" in screen and "hermes-admin undo " in screen
        assert "note: " in screen
        no_escapes(screen)
        term.send("Escape")
        term.wait_gone("Messages:", timeout=5)
        # What the flash line said: L, then u.
        term.send("L")
        term.wait_for("u: undo it", timeout=5)
        term.send("u")
        term.wait_for("Comes back as it was", timeout=5)
        term.send("y")
        wait_status(tmp_home, "bbbbbb", "exhausted")
        screen = term.wait_for("redo: L, then u", timeout=5)
        no_escapes(screen)
        assert status_of(tmp_home, "aaaaaa") is None
        term.send("Escape")
        term.wait_gone("u: undo it", timeout=5)
        # ? help at 80 columns: the ids a keymap needs, whole.
        term.send("?")
        term.wait_for("type to filter", timeout=5)
        term.type("reset")
        screen = term.wait_until(lambda s: "dashboard.reset" in s and "of " in s, timeout=5,
                                 what="help filtered to reset")
        assert "dashboard.rese…" not in screen
        ids = [ln.split()[-2] for ln in screen.splitlines() if ln.count("│") >= 2 and "." in ln.split()[-2]]
        assert "dashboard.reset" in ids and all("…" not in i for i in ids)
    audit = [json.loads(x) for x in tmp_home.audit.read_text().splitlines()]
    assert [e["action"] for e in audit] == ["reset", "undo"]
