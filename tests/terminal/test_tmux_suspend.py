"""^Z in a real terminal (the installed `hermes-admin` in tmux, under an interactive bash at
80x24): the operator gets the shell's prompt, and `fg` draws the whole console again at
once, with what changed meanwhile. Found by a hostile session: Textual's raw mode made ^Z a
key that did nothing, and its own resume drew nothing until the next change or resize."""

from __future__ import annotations

import shlex

import pytest

from store.paths import Home
from tests import tmux
from tests.conftest import cli_env
from tests.terminal.seeds import primary_and_benched_backup

pytestmark = [
    pytest.mark.slow,
    pytest.mark.tmux,
    pytest.mark.timeout(120),
    pytest.mark.skipif(not tmux.available(), reason="tmux is not installed"),
]

KEY_A = "sk-or-v1-0123456789abcdefTMUXsus1"
KEY_B = "sk-or-v1-0123456789abcdefTMUXsus2"


def test_ctrl_z_gives_the_shell_and_fg_draws_the_console_again(tmp_home: Home) -> None:
    exe = tmux.installed_hermes_admin()
    if exe is None:
        pytest.skip("hermes-admin is not installed in this environment")
    primary_and_benched_backup(tmp_home, KEY_A, KEY_B)
    with tmux.Tmux.start(["bash", "--norc", "--noprofile", "-i"], size=(80, 24), env=cli_env(tmp_home)) as term:
        term.type("PS1='shell''$ '")      # quoted apart: the typed line itself is no prompt
        term.send("Enter")
        term.wait_for("shell$", timeout=10)
        term.type("clear")
        term.send("Enter")
        term.wait_until(lambda s: s.strip() == "shell$", timeout=10)
        term.type(f"{shlex.quote(exe)} --home {shlex.quote(str(tmp_home.root))}")
        term.send("Enter")
        term.wait_for("primary", timeout=20)
        term.wait_gone("shell$", timeout=10)
        term.send("C-z")
        term.wait_until(lambda s: "Stopped" in s and "shell$" in s, timeout=10)
        # Meanwhile, from the shell: a change the console must show when it is back.
        term.type(f"{shlex.quote(exe)} --home {shlex.quote(str(tmp_home.root))} strategy openrouter fill_first")
        term.send("Enter")
        term.wait_until(lambda s: s.rstrip().endswith("shell$"), timeout=20)
        term.type("fg")
        term.send("Enter")
        # No key after fg: the console is drawn on its own, the change in it.
        screen = term.wait_until(lambda s: "primary" in s and "fill_first" in s and "Stopped" not in s, timeout=10)
        assert KEY_A not in screen and KEY_B not in screen
        term.send("q")
        term.wait_until(lambda s: s.rstrip().endswith("shell$"), timeout=10)
