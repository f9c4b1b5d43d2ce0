"""The installed `hermes-admin` in a real terminal (tmux), NO_COLOR: the headroom column at
80x24 and 200x50 shows a key's tightest window as a bar, a number and a word, a reading past
its reset says "stale" in words, and a reading another process writes to the sidecar while
the console runs appears without a keypress (the home watcher follows the sidecar)."""

from __future__ import annotations

import time

import pytest

from store.agent.headroom import Headroom
from store.dialects.readings import Reading
from store.paths import Home
from store.pools.view import row_fingerprint
from tests import tmux
from tests.conftest import cli_env, make_row, make_store, write_store

pytestmark = [
    pytest.mark.slow,
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux.available(), reason="tmux is not installed"),
]

ROWS = [make_row("aaa111", label="fresh-key", token="sk-or-v1-" + "f" * 40),
        make_row("bbb222", label="stale-key", token="sk-or-v1-" + "s" * 40, priority=1),
        make_row("ccc333", label="later-key", token="sk-or-v1-" + "l" * 40, priority=2)]


def record(home: Home, rid: str, *readings: Reading) -> None:
    room = Headroom(home)
    row = next(r for r in ROWS if r["id"] == rid)
    room.record("openrouter", rid, row_fingerprint("openrouter", row), readings)
    assert room.flush(force=True)


def seed(home: Home) -> None:
    now = time.time()
    write_store(home, make_store({"openrouter": ROWS}))
    record(home, "aaa111", Reading("5h", "anthropic-unified", now, utilization=0.62, reset_at=now + 3600))
    record(home, "bbb222", Reading("5h", "anthropic-unified", now - 9000, utilization=0.9, reset_at=now - 60))


def start(home: Home, size: tuple[int, int]) -> tmux.Tmux:
    exe = tmux.installed_hermes_admin()
    if exe is None:
        pytest.skip("hermes-admin is not installed in this environment")
    return tmux.Tmux.start([exe, "--home", str(home.root)], size=size, env=cli_env(home))


def line_with(screen: str, text: str) -> str:
    return next((ln for ln in screen.splitlines() if text in ln), "")


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_headroom_bars_and_a_stale_reading_in_words(tmp_home: Home, size) -> None:
    seed(tmp_home)
    with start(tmp_home, size) as term:
        screen = term.wait_for("38% 5h", timeout=20)
        fresh = line_with(screen, "38% 5h")
        assert "fresh-key"[:8] in fresh, screen
        if size[0] >= 200:
            assert "▕" in fresh and "▏" in fresh, screen     # a bar, not colour
        # At 80 columns the headroom gives way first: its words, no bar, and the reason keeps
        # its cells (#28).
        assert "stale" in line_with(screen, "stale-key"[:8]), screen
        assert ("headroom" if size[0] >= 200 else " room ") in screen
        # Another process on the home records a reading: it shows without a keypress.
        now = time.time()
        record(tmp_home, "ccc333", Reading("requests", "openai", now, limit=500, remaining=12, reset_at=now + 600))
        shown = "12/500" if size[0] >= 200 else "2% rpm"     # at 80: the share, not the counts
        screen = term.wait_until(lambda s: shown in s, timeout=20, interval=0.1,
                                 what="the new reading on screen")
        assert "later-ke" in line_with(screen, shown), screen
