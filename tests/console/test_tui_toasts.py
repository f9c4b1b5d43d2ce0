"""Every write says what it did: a toast names the action, the rows and the result (from
what the write path returned); a destructive one names the undo of that very write; a failed write stays
on screen until dismissed."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable, Input

from store.ops import undo
from store.ops.actions import Change, Outcome
from store.paths import Home
from tests.tui_sample import app_for, config_home, on_row, settle
from tui.services.write_feedback import DISMISS_KEY, FAILED_TIMEOUT, UNDO, done_toast

pytestmark = pytest.mark.usefixtures("utc")


def toasts(app: Any) -> list[tuple[str, str, str, float]]:
    return [(n.title, n.message, n.severity, n.timeout) for n in app._notifications]


async def new_toast(app: Any, pilot: Any, seen: int = 0) -> tuple[str, str, str, float]:
    """The one toast the last write left (toasts are cleared before each write: they expire)."""
    await settle(app, pilot)
    shown = toasts(app)
    assert len(shown) == 1, shown
    app.clear_notifications()
    return shown[-1]


def test_done_toast_words_rows_and_the_way_back() -> None:
    out = Outcome("reset", "openrouter", [
        Change("openrouter", "a1", "primary", {"last_status": "exhausted"}, {"last_status": None}),
        Change("openrouter", "b2", "", {"last_status": "exhausted"}, {"last_status": None})])
    toast = done_toast("resetting 2 credentials", [out], history_id="20261201T204512123456Z-3f9a0c")
    assert toast.title == "reset · openrouter · 2 rows: done"
    assert toast.message.splitlines() == ["primary: exhausted → ok", "b2: exhausted → ok",
                                          UNDO.format(id="20261201T204512123456Z-3f9a0c")]
    # Not destructive: no undo line; a no-op says so.
    bench = Outcome("cooldown", "openrouter", [
        Change("openrouter", "a1", "primary", {"last_status": None}, {"last_status": "exhausted"})])
    assert "undo" not in done_toast("benching", [bench], history_id="x").message
    assert done_toast("setting x", []).message == "nothing to change"


async def test_a_toast_after_each_write_on_the_dashboard(tmp_home: Home) -> None:
    config_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(120, 40)) as pilot:
        app.clear_notifications()
        n = 0
        # reset (destructive)
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("r", "y")
        title, msg, severity, _ = await new_toast(app, pilot, n)
        assert title.startswith("reset · openrouter") and "backup-key" in msg and "→ ok" in msg
        assert severity == "information"
        assert f"hermes-admin undo {undo.resolve(tmp_home, None)}" in msg     # this very write's id
        # cooldown
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("c")
        await pilot.pause()
        await pilot.press(*"15m", "enter")
        title, msg, _, _ = await new_toast(app, pilot, n)
        assert title.startswith("cooldown · openrouter") and "ok → exhausted" in msg
        assert "hermes-admin undo" not in msg
        # move
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("J")
        title, msg, _, _ = await new_toast(app, pilot, n)
        assert title.startswith("priority · openrouter") and "priority 0 → 1" in msg
        # remove (destructive)
        await on_row(app, pilot, "openrouter", "0f0f0f")
        await pilot.press("d", "y")
        title, msg, _, _ = await new_toast(app, pilot, n)
        assert title.startswith("remove · openrouter") and "→ removed" in msg
        assert f"hermes-admin undo {undo.resolve(tmp_home, None)}" in msg
        # strategy
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("up", "up", "enter")
        title, msg, _, _ = await new_toast(app, pilot, n)
        assert "config.strategy · openrouter" in title and "least_used → round_robin" in msg
        # add
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        screen.query_one("#add-label", Input).value = "fresh"
        screen.query_one("#add-key-value", Input).value = "sk-or-v1-" + "f" * 40
        await pilot.press("enter")
        title, msg, _, _ = await new_toast(app, pilot, n)
        assert title.startswith("add · ") and "fresh: added" in msg
        assert "f" * 20 not in msg


async def test_a_toast_after_each_config_edit(tmp_home: Home) -> None:
    config_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(120, 40)) as pilot:
        app.clear_notifications()
        n = 0
        await pilot.press("v", "2")
        await pilot.pause()
        # fallback add
        await pilot.press("a")
        await pilot.pause()
        app.screen.query_one("#fb-provider", Input).value = "xai"
        app.screen.query_one("#fb-model", Input).value = "grok-4"
        await pilot.press("enter")
        title, msg, _, _ = await new_toast(app, pilot, n)
        assert "config.fallback.add" in title and "grok-4" in msg
        # fallback move
        await pilot.press("J")
        title, msg, _, _ = await new_toast(app, pilot, n)
        assert "config.fallback.move" in title and "1 → 2" in msg
        # fallback remove
        await pilot.press("x", "y")
        title, msg, _, _ = await new_toast(app, pilot, n)
        assert "config.fallback.remove" in title and "→ —" in msg
        # routing set and unset
        await pilot.press("3")
        await pilot.pause()
        table = app.screen.query_one("#routing-table", DataTable)
        table.move_cursor(row=0)
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("down", "down", "enter")
        title, msg, _, _ = await new_toast(app, pilot, n)
        assert "config.routing.set" in title and "price → latency" in msg
        await pilot.press("x", "y")
        title, msg, _, _ = await new_toast(app, pilot, n)
        assert "config.routing.unset" in title and "latency → —" in msg


async def test_a_failed_write_stays_until_dismissed(tmp_home: Home) -> None:
    config_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("r")
        await pilot.pause()
        tmp_home.auth.write_text("{ not json")          # the store breaks meanwhile
        app.clear_notifications()
        n = 0
        await pilot.press("y")
        title, msg, severity, timeout = await new_toast(app, pilot, n)
        assert severity == "error" and "Nothing was written" in msg
        assert timeout >= FAILED_TIMEOUT                # not gone after a few seconds
        assert DISMISS_KEY in msg
        await pilot.press(DISMISS_KEY)
        await pilot.pause()
        assert toasts(app) == []
