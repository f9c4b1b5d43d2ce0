"""The installed `hermes-admin --root` in a real terminal: profile lines, the switcher, and a
reset on one profile's row landing in that profile's auth.json only."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests import tmux
from tests.conftest import cli_env, read_doc, write_store
from tests.profiles_sample import CANARIES, home, make_root

pytestmark = [
    pytest.mark.slow,
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux.available(), reason="tmux is not installed"),
]


def test_root_console_switches_profile_and_resets_in_the_rows_profile(tmp_path: Path) -> None:
    exe = tmux.installed_hermes_admin()
    if exe is None:
        pytest.skip("hermes-admin is not installed in this environment")
    root = make_root(tmp_path)
    d, a = home(root, "default"), home(root, "team-a")
    doc = read_doc(a)      # benched for an hour from now (the sample's times are fixed in 2026)
    doc["credential_pool"]["openrouter"][0].update(last_status_at=time.time() - 30,
                                                   last_error_reset_at=time.time() + 3600)
    write_store(a, doc)
    before_d = d.auth.read_bytes()
    with tmux.Tmux.start([exe, "--root", str(root.path)], size=(140, 40), env=cli_env(d)) as term:
        screen = term.wait_for("■ team-b", timeout=15)
        assert "■ default" in screen and "■ team-a" in screen and "⚑ shared" in screen
        term.send(":")
        term.wait_for("profile <name>", timeout=5)
        term.send("profile team-a", literal=True)
        term.send("Enter")
        screen = term.wait_until(lambda s: "■ default" not in s and "■ team-a" in s
                                 and "profile <name>" not in s and "◐ cooling" in s, timeout=5,
                                 what="narrowed to team-a, command line closed")
        assert "profile: team-a" in screen
        # Filter to team-a's benched "copied" row (Enter puts the cursor on it), then reset it.
        term.send("/")
        term.wait_for("filter: label", timeout=5)
        term.type("copied")
        term.wait_until(lambda s: "own-a" not in s, timeout=5, what="filter applied")
        term.send("Enter")
        term.wait_gone("▔", timeout=5)
        term.send("r")
        term.wait_for("quota back", timeout=5)
        term.send("y")
        # The whole row, not just "no ◐ on screen": a screen caught mid-redraw has no ◐ either.
        screen = term.wait_until(lambda s: "◐ cooling" not in s and "acting: team-a" in s and any(
            "copied" in ln and "● ok" in ln for ln in s.splitlines()), timeout=10, what="copied reset")
        assert not any(c in screen for c in CANARIES)
        assert not any(c in term.capture() for c in CANARIES)
    assert read_doc(a)["credential_pool"]["openrouter"][0]["last_status"] is None
    assert d.auth.read_bytes() == before_d
