"""Every write says what it did, on the flash line at the bottom (one line) and in the message
log (``M``, every line): the action, the rows and the result (from what the write path
returned); a destructive one names the undo of that very write; a failed write stays on the
flash line until dismissed. No message covers the table, shows an escaped control code or a
store's internal field name."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable, Input

from store.ops import undo
from store.ops.actions import Change, Outcome
from store.paths import Home
from tests.tui_sample import app_for, config_home, on_row, settle
from tui.services.write_feedback import CONSOLE_UNDO, DISMISS_KEY, done_feedback
from tui.widgets.flash import FlashLine

pytestmark = pytest.mark.usefixtures("utc")


def logged(app: Any) -> list[tuple[str, str, str, float | None]]:
    return [(m.title, "\n".join(m.lines), m.severity, m.timeout) for m in app.messages]


def flash(app: Any) -> str:
    """The flash line the operator sees now (the current screen's, or the one under its modal)."""
    for screen in reversed(app.screen_stack):
        lines = screen.query(FlashLine)
        if lines:
            line = lines.first()
            return line.text if line.display else ""
    raise AssertionError("no flash line on screen")


async def new_message(app: Any, pilot: Any) -> tuple[str, str, str, float | None, str]:
    """The one message the last write left in the log (the log is emptied after each), and
    the flash line it put on screen."""
    await settle(app, pilot)
    shown = logged(app)
    assert len(shown) == 1, shown
    title, msg, _, _ = shown[-1]
    line = flash(app)
    assert line, "nothing on the flash line"
    assert "\\x" not in line and "\\x" not in msg and "\\x" not in title   # real breaks, no escapes
    assert "\n" not in line
    app.messages.entries.clear()
    return (*shown[-1], line)


def test_done_feedback_words_rows_and_the_way_back() -> None:
    out = Outcome("reset", "openrouter", [
        Change("openrouter", "a1", "primary", {"last_status": "exhausted"}, {"last_status": None}),
        Change("openrouter", "b2", "", {"last_status": "exhausted"}, {"last_status": None})])
    fb = done_feedback("resetting 2 credentials", [out], history_id="20261201T204512123456Z-3f9a0c")
    assert fb.title == "reset · openrouter · 2 rows: done"
    assert fb.message.splitlines() == ["primary: exhausted → ok", "b2: exhausted → ok",
                                       CONSOLE_UNDO.format(way="undo", id="20261201T204512123456Z-3f9a0c")]
    # One line for the flash line: the action, the first row, how many more, the way back.
    assert fb.flash.startswith("reset · openrouter · 2 rows · primary: exhausted → ok (+1 more)")
    assert "\n" not in fb.flash and fb.flash.endswith(" · undo: L, then u")
    # Not destructive: no undo line; a no-op says so.
    bench = Outcome("cooldown", "openrouter", [
        Change("openrouter", "a1", "primary", {"last_status": None}, {"last_status": "exhausted"})])
    assert "undo" not in done_feedback("benching", [bench], history_id="x").message
    assert done_feedback("setting x", []).message == "nothing to change"


async def test_a_flash_after_each_write_on_the_dashboard(tmp_home: Home) -> None:
    config_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(120, 40)) as pilot:
        app.messages.entries.clear()
        # reset (destructive)
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("r", "y")
        title, msg, severity, _, line = await new_message(app, pilot)
        assert title.startswith("reset · openrouter") and "backup-key" in msg and "→ ok" in msg
        assert severity == "information"
        assert f"hermes-admin undo {undo.resolve(tmp_home, None)}" in msg     # this very write's id
        assert line.startswith("✔ reset · openrouter · backup-key: cooling 59m → ok · undo: L, then u  ")
        # cooldown
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("c")
        await pilot.pause()
        await pilot.press(*"15m", "enter")
        title, msg, _, _, line = await new_message(app, pilot)
        assert title.startswith("cooldown · openrouter") and "ok → cooling 15m" in msg
        assert "hermes-admin undo" not in msg
        # move
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("J")
        title, msg, _, _, line = await new_message(app, pilot)
        assert title.startswith("priority · openrouter") and "priority 0 → 1" in msg
        # remove (destructive)
        await on_row(app, pilot, "openrouter", "0f0f0f")
        await pilot.press("d", "y")
        title, msg, _, _, line = await new_message(app, pilot)
        assert title.startswith("remove · openrouter") and "→ removed" in msg
        assert f"hermes-admin undo {undo.resolve(tmp_home, None)}" in msg
        # strategy
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("up", "up", "enter")
        title, msg, _, _, line = await new_message(app, pilot)
        assert "strategy · openrouter" in title and "config." not in title and "credential_pool" not in line
        assert "strategy of openrouter: least_used → round_robin" in msg
        # add
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        screen.query_one("#add-label", Input).value = "fresh"
        screen.query_one("#add-key-value", Input).value = "sk-or-v1-" + "f" * 40
        await pilot.press("ctrl+s")
        title, msg, _, _, line = await new_message(app, pilot)
        assert title.startswith("add · ") and "fresh: added" in msg
        assert "f" * 20 not in msg


async def test_a_flash_after_each_config_edit(tmp_home: Home) -> None:
    config_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(120, 40)) as pilot:
        app.messages.entries.clear()
        await pilot.press("v", "2")
        await pilot.pause()
        # fallback add
        await pilot.press("a")
        await pilot.pause()
        app.screen.query_one("#fb-provider", Input).value = "xai"
        app.screen.query_one("#fb-model", Input).value = "grok-4"
        await pilot.press("enter")
        title, msg, _, _, line = await new_message(app, pilot)
        assert "fallback added" in title and "config." not in line and "grok-4" in msg
        # fallback move
        await pilot.press("J")
        title, msg, _, _, line = await new_message(app, pilot)
        assert "fallback moved" in title and "fallback chain: 1 → 2" in msg
        # fallback remove
        await pilot.press("x", "y")
        title, msg, _, _, line = await new_message(app, pilot)
        assert "fallback removed" in title and "→ —" in msg
        assert " via " in msg                              # the entry in the operator's words...
        assert not any(f in msg + line for f in ("has_api_key", "origin", "=False"))   # ...not the store's
        # routing set and unset
        await pilot.press("3")
        await pilot.pause()
        table = app.screen.query_one("#routing-table", DataTable)
        table.move_cursor(row=0)
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("down", "down", "enter")
        title, msg, _, _, line = await new_message(app, pilot)
        assert "routing set" in title and "routing sort: price → latency" in msg
        await pilot.press("x", "y")
        title, msg, _, _, line = await new_message(app, pilot)
        assert "routing unset" in title and "latency → —" in msg and "provider_routing" not in msg


async def test_a_failed_write_stays_until_dismissed(tmp_home: Home) -> None:
    config_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("r")
        await pilot.pause()
        tmp_home.auth.write_text("{ not json")          # the store breaks meanwhile
        app.messages.entries.clear()
        await pilot.press("y")
        title, msg, severity, timeout, line = await new_message(app, pilot)
        assert severity == "error" and "Nothing was written" in msg
        assert "failed, nothing was written: " in line  # first, before a long path cuts the line
        assert timeout is None                          # not gone after a few seconds
        assert f"{app.key_of('app.dismiss_notifications', DISMISS_KEY)}: dismiss" in line   # how it goes
        assert [n.message for n in app._notifications] == []   # on the flash line, not in a toast
        await pilot.press(DISMISS_KEY)
        await pilot.pause()
        assert flash(app) == ""
