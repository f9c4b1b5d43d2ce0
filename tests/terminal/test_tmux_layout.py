"""The installed `hermes-admin` in a real terminal (tmux) at 80x24 and 200x50: a pool header
keeps its counts with a 40-character pool name at both sizes, and at 200 columns the
longest reason Hermes writes is shown whole (at 80 it is cut: the same check fails there)."""

from __future__ import annotations

import time

import pytest

from store.paths import Home
from tests import tmux
from tests.conftest import cli_env
from tests.layout_sample import LONG_POOL, LONGEST, write_layout_sample

pytestmark = [
    pytest.mark.slow,
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux.available(), reason="tmux is not installed"),
]


def start(home: Home, size: tuple[int, int]) -> tmux.Tmux:
    exe = tmux.installed_hermes_admin()
    if exe is None:
        pytest.skip("hermes-admin is not installed in this environment")
    return tmux.Tmux.start([exe, "--home", str(home.root)], size=size, env=cli_env(home))


def line_with(screen: str, text: str) -> str:
    return next((ln for ln in screen.splitlines() if text in ln), "")


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_a_long_pool_name_keeps_its_header_counts(tmp_home: Home, size) -> None:
    write_layout_sample(tmp_home, now=time.time())
    with start(tmp_home, size) as term:
        screen = term.wait_for("together-back", timeout=15)   # the label is cut at 80
        header = line_with(screen, "custom:tog")
        assert "0 ok" in header and "3 cooling" in header and "0 dead" in header, screen
        # The name gives way, not the counts: whole at 200, shortened at 80.
        assert (LONG_POOL in header) == (size[0] == 200), header


def test_the_longest_hermes_reason_is_whole_at_200_and_cut_at_80(tmp_home: Home) -> None:
    write_layout_sample(tmp_home, now=time.time())
    with start(tmp_home, (200, 50)) as term:
        screen = term.wait_for("together-backup", timeout=15)
        assert f"403 {LONGEST}" in line_with(screen, "together-backup"), screen
    # Control: at 80 columns the same row's reason is cut, and the check above would fail.
    with start(tmp_home, (80, 24)) as term:
        screen = term.wait_for("together-back", timeout=15)
        row = line_with(screen, "together-back")
        assert LONGEST not in row and "403 personal" in row, screen
