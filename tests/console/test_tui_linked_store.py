"""The console on a home whose auth.json is a symlink: it reads through the link, its banner
says why writes are refused, and a reset confirmed in the console writes nothing (the one
error, naming the link and its target, is what the operator is told). Negative control:
the same reset on a plain home writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from screens.confirm import ConfirmScreen
from store import authfile
from store.paths import Home
from tests.home_tree import tree
from tests.tui_sample import app_for, notes, on_row, rows_by_id, settle, write_sample
from tui.widgets.status import Banner

pytestmark = pytest.mark.usefixtures("utc")


def _linked(tmp_path: Path) -> tuple[Home, Path]:
    shared = Home(tmp_path / "shared")
    shared.root.mkdir(mode=0o700)
    write_sample(shared)
    home = Home(tmp_path / "home")
    home.root.mkdir(mode=0o700)
    home.auth.symlink_to(shared.auth)
    return home, shared.auth


async def _reset_in_console(home: Home) -> list[str]:
    app = app_for(home)
    async with app.run_test(size=(100, 30)) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(app, pilot)
        banner = app.dashboard.query_one(Banner)
        return [*notes(app), banner.text]


async def test_a_console_reset_through_a_link_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    home, target = _linked(tmp_path)
    before = tree(home.root, target.parent)
    said = "\n".join(await _reset_in_console(home))
    assert tree(home.root, target.parent) == before
    assert not home.lock.exists() and not os.path.exists(home.root / "hermes-admin-history")
    assert "is a symlink to" in said and str(target) in said and "stop sharing" in said


async def test_negative_control_the_same_reset_on_a_plain_home_writes(tmp_home: Home) -> None:
    write_sample(tmp_home)
    await _reset_in_console(tmp_home)
    assert rows_by_id(tmp_home)["d4e5f6"]["last_status"] is None
    assert authfile.linked_store(tmp_home) is None
