"""The installed `hermes-admin` in a real terminal (tmux), driven by keys, read from the screen.

The bounds here are readiness waits, generous so a busy machine still passes; no test asserts a
latency. The write-to-screen figures (p50/p95, ratios across home sizes) live in
bench/bench_tui.py (`latencies`), which prints and never asserts.
"""

from __future__ import annotations

import os
import time

import pytest

from store.model import pool_rows
from store.paths import Home
from store.pools import policy
from store.transaction import transaction
from tests import tmux
from tests.conftest import cli_env, make_row, make_store, write_store

pytestmark = [
    pytest.mark.slow,
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux.available(), reason="tmux is not installed"),
]

KEY_A = "sk-or-v1-0123456789abcdefTMUXaaa1"
KEY_B = "sk-or-v1-0123456789abcdefTMUXbbb2"


def seed(home: Home) -> None:
    write_store(home, make_store({"openrouter": [
        make_row("aaaaaa", label="primary", priority=0, token=KEY_A),
        make_row("bbbbbb", label="backup", priority=1, token=KEY_B),
    ]}))


def line_with(screen: str, text: str) -> str:
    return next((ln for ln in screen.splitlines() if text in ln), "")


def start(home: Home, *extra: str, size=(100, 30)) -> tmux.Tmux:
    exe = tmux.installed_hermes_admin()
    if exe is None:
        pytest.skip("hermes-admin is not installed in this environment")
    return tmux.Tmux.start([exe, "--home", str(home.root), *extra], size=size, env=cli_env(home))


def test_locked_external_write_reaches_the_screen(tmp_home: Home) -> None:
    """A write under the Hermes lock by another writer shows, unprompted, on the dashboard.

    The wait is bounded but generous (a busy machine); the time taken is printed, not
    asserted: the latency figure is bench/bench_tui.py's write -> on screen.
    """
    seed(tmp_home)
    with start(tmp_home) as term:
        term.wait_until(lambda s: "● ok" in line_with(s, "primary"), timeout=15,
                        what="primary shown ok")
        t0 = time.monotonic()
        with transaction(tmp_home) as doc:
            rows = pool_rows(doc, "openrouter")
            policy.mark_exhausted(rows, rows[0], time.time(), code=429,
                                  reason="rate_limit_exceeded")
        screen = term.wait_until(lambda s: "◐ cooling" in line_with(s, "primary"), timeout=30,
                                 interval=0.02, what="primary shown cooling")
        print(f"external write on screen after {time.monotonic() - t0:.3f}s (not asserted)")
        assert "429 rate_limit" in line_with(screen, "primary")
        assert "2←" in line_with(screen, "backup")  # the pick moved on
        # Keys work in the real terminal: filter, then quit cleanly (the watcher stops).
        before = (tmp_home.auth.read_bytes(), os.stat(tmp_home.auth).st_mtime_ns)
        term.send("/")
        term.wait_for("filter: label", timeout=5)   # the box is up and focused: type into it
        term.type("backup")
        term.wait_until(lambda s: "primary" not in s and "backup" in s, timeout=5,
                        what="filter applied")
        term.send("Enter")
        # Enter hands focus back to the table; a key sent before that would be typed.
        term.wait_gone("▔", timeout=5)
        term.send("q")
        term.wait_until(lambda s: term.pane_dead(), timeout=10, what="hermes-admin to exit")
        assert (tmp_home.auth.read_bytes(), os.stat(tmp_home.auth).st_mtime_ns) == before
        assert KEY_A not in term.capture() and KEY_B not in term.capture()


def test_read_only_flag_is_on_screen(tmp_home: Home) -> None:
    seed(tmp_home)
    with start(tmp_home, "--read-only", size=(80, 24)) as term:
        screen = term.wait_for("READ-ONLY", timeout=15)
        assert "primary" in term.wait_for("primary", timeout=5)
        assert "hermes-admin" in screen


@pytest.mark.hermes
def test_real_hermes_benching_a_key_reaches_the_screen(tmp_home: Home, hermes) -> None:
    """Real Hermes benches a key; the dashboard shows it cooling without a keypress.

    The wait is bounded but generous (a busy machine); the time taken is printed, not
    asserted: the latency figure is bench/bench_tui.py's write -> on screen.
    """
    seed(tmp_home)
    hermes.load_ok()  # let Hermes normalize the file first, as a running agent would have
    with start(tmp_home) as term:
        term.wait_until(lambda s: "● ok" in line_with(s, "primary"), timeout=15,
                        what="primary shown ok")
        t0 = time.monotonic()
        hermes.send("mark", pool="openrouter", status_code=429, reason="rate_limit_exceeded",
                    message="Rate limit exceeded", reset_at=None, api_key_hint=KEY_A)
        screen = term.wait_until(lambda s: "◐ cooling" in line_with(s, "primary"), timeout=30,
                                 interval=0.02, what="Hermes's bench on screen")
        # From the request to Hermes, so it includes Hermes's own load and write.
        print(f"{time.monotonic() - t0:.3f}s from Hermes's mark to the screen (not asserted)")
        assert hermes.finish()["id"] == "aaaaaa"
        assert "429" in line_with(screen, "primary")
