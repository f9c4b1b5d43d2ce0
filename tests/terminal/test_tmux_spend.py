"""The installed `hermes-admin` in a real terminal (tmux), NO_COLOR: the spend column (#29)
shows today's cost for a key whose usage is in the ledger and ``—`` for one without; a
figure the proxy writes while the console runs appears without a keypress. Negative
control: the same console with the ledger reader patched out shows no figure."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from store.paths import Home
from store.usage.ledger import ledger_path, open_ledger, write_batch
from store.usage.record import Spent
from tests import tmux
from tests.conftest import cli_env, make_row, make_store, write_store

pytestmark = [
    pytest.mark.slow,
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux.available(), reason="tmux is not installed"),
]

ROWS = [make_row("aaa111", label="spent-key", token="sk-or-v1-" + "a" * 40),
        make_row("bbb222", label="idle-key", token="sk-or-v1-" + "b" * 40, priority=1),
        make_row("ccc333", label="later-key", token="sk-or-v1-" + "c" * 40, priority=2)]
SIZE = (160, 30)


def spend(home: Home, rid: str, cost: float) -> None:
    conn = open_ledger(ledger_path(home.root), write=True)
    try:
        write_batch(conn, [Spent(time.time(), "openrouter", rid, "sk-or-…aaaa", "m", "/chat/completions",
                                 None, 100, 20, 0, 0, 0, cost, "actual")])
    finally:
        conn.close()


def seed(home: Home) -> None:
    write_store(home, make_store({"openrouter": ROWS}))
    spend(home, "aaa111", 0.4213)


def spend_cell(screen: str, label: str) -> str:
    """The text under the ``spend`` title on *label*'s line."""
    head = next(ln for ln in screen.splitlines() if " spend " in ln)
    at = head.index(" spend ") + 1
    line = next(ln for ln in screen.splitlines() if label in ln)
    return line[at:at + 9].strip()


def installed() -> str:
    exe = tmux.installed_hermes_admin()
    if exe is None:
        pytest.skip("hermes-admin is not installed in this environment")
    return exe


def test_spend_figure_and_dash(tmp_home: Home) -> None:
    seed(tmp_home)
    with tmux.Tmux.start([installed(), "--home", str(tmp_home.root)], size=SIZE, env=cli_env(tmp_home)) as term:
        screen = term.wait_for("$0.42", timeout=20)
        assert spend_cell(screen, "spent-key") == "$0.42", screen
        assert spend_cell(screen, "idle-key") == "—", screen
        assert "$0.00" not in screen
        # The proxy records an answer of another key: it shows without a keypress.
        spend(tmp_home, "ccc333", 0.004)
        screen = term.wait_until(lambda s: "<$0.01" in s, timeout=20, interval=0.1, what="the new figure")
        assert spend_cell(screen, "later-key") == "<$0.01", screen


def test_reader_patched_out_shows_no_figure(tmp_home: Home, tmp_path: Path) -> None:
    """Negative control: the ledger reader patched out (it notes that it was asked), no figure."""
    seed(tmp_home)
    asked = tmp_path / "asked"
    code = ("import pathlib, sys; from tui.services import spend_feed; "
            f"spend_feed.SpendReader.read = lambda self: (pathlib.Path({str(asked)!r}).write_text('x'), {{}})[1]; "
            "from tui.cli import main; sys.exit(main())")
    argv = [sys.executable, "-c", code, "--home", str(tmp_home.root)]
    with tmux.Tmux.start(argv, size=SIZE, env=cli_env(tmp_home)) as term:
        term.wait_for("spent-key", timeout=20)
        deadline = time.monotonic() + 20
        while not asked.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert asked.exists(), "the console never asked the ledger"
        # Asked at least once more after the first (every 3 s): the first answer is on screen by then.
        asked.unlink()
        while not asked.exists() and time.monotonic() < deadline + 10:
            time.sleep(0.05)
        screen = term.capture()
        assert "spent-key" in screen and "$0.42" not in screen and " spend " not in screen, screen
