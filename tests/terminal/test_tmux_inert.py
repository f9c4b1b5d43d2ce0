"""Inert text in a real terminal (RELIABILITY 20): a label that would set the terminal's
title and clear its screen, shown by `list` and by the console's dashboard and detail,
leaves tmux's pane title and the text above it as they were. The negative control
prints the same label raw and sees the title change."""

from __future__ import annotations

import shlex

import pytest

from store.paths import Home
from tests import tmux
from tests.conftest import cli_env, make_row, make_store, write_store

pytestmark = [
    pytest.mark.slow,
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux.available(), reason="tmux is not installed"),
]

EVIL = "evil\x1b]2;PWNED\x07\x1b[2J"


def seed(home: Home) -> None:
    write_store(home, make_store({"openrouter": [
        make_row("aaaaaa", label=EVIL, priority=0, token="sk-or-v1-0123456789abcdefINERTaa1")]}))


def title(term: tmux.Tmux) -> str:
    return term.pane_title()


def exe() -> str:
    path = tmux.installed_hermes_admin()
    if path is None:
        pytest.skip("hermes-admin is not installed in this environment")
    return path


def shell(home: Home, script: str) -> tmux.Tmux:
    return tmux.Tmux.start(["sh", "-c", script], size=(120, 20), env=cli_env(home))


def test_list_leaves_the_title_and_the_screen_alone(tmp_home: Home) -> None:
    seed(tmp_home)
    cmd = f"{shlex.quote(exe())} --home {shlex.quote(str(tmp_home.root))} list"
    with shell(tmp_home, f"echo ABOVE-THE-LIST; {cmd}; echo DONE; exec sleep 60") as term:
        screen = term.wait_for("DONE", timeout=20)
        assert "ABOVE-THE-LIST" in screen          # \x1b[2J did not clear it
        assert "evil\\x1b]2;PWNED\\x07\\x1b[2J" in screen
        assert title(term) != "PWNED"


def test_negative_control_a_raw_label_does_set_the_title(tmp_home: Home) -> None:
    with shell(tmp_home, "echo ABOVE; printf 'evil\\033]2;PWNED\\007\\033[2J'; echo; echo DONE; "
                         "exec sleep 60") as term:
        screen = term.wait_for("DONE", timeout=10)
        term.wait_until(lambda _s: title(term) == "PWNED", timeout=5, what="title set by the raw label")
        assert "ABOVE" not in screen


def test_console_dashboard_and_detail_leave_the_title_alone(tmp_home: Home) -> None:
    seed(tmp_home)
    with tmux.Tmux.start([exe(), "--home", str(tmp_home.root)], size=(120, 30),
                         env=cli_env(tmp_home)) as term:
        term.wait_for("evil\\x1b", timeout=20)
        before = title(term)
        assert before != "PWNED"
        term.send("Down")
        term.send("Enter")
        screen = term.wait_for("id aaaaaa", timeout=10)
        assert "evil\\x1b]2;PWNED" in screen
        assert title(term) != "PWNED"
        term.send("Escape")
        term.wait_for("openrouter", timeout=10)
        assert title(term) != "PWNED"
