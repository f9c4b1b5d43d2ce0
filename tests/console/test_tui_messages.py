"""The flash line and the message log: one line that never covers the table, the last 100
messages in full behind ``M``, real line breaks, and a failure that outlives newer messages
until the operator dismisses it."""

from __future__ import annotations

from typing import Any

import pytest
from textual.app import App

from screens.message_log import MessagesScreen
from store.paths import Home
from tests.tui_sample import NOW, app_for, on_row, settle, write_sample
from tui.text import shown
from tui.widgets import CredentialTable
from tui.widgets.flash import FlashLine, MessageLog, flash_text

pytestmark = pytest.mark.usefixtures("utc")
KEYS = {"messages": "M", "dismiss": "^l"}


class Owner(App):
    """A message log needs a node to own its signal; nothing is run."""


def log(limit: int = 100) -> MessageLog:
    return MessageLog(Owner(), lambda: NOW, limit)


def test_the_log_keeps_the_last_100() -> None:
    messages = log()
    for i in range(130):
        messages.add(title="", lines=[f"message {i}"], timeout=5)
    assert len(messages) == 100
    assert [m.lines[0] for m in messages][:1] == ["message 30"]
    assert messages.shown().lines[0] == "message 129"


def test_a_failure_outlives_newer_messages_until_dismissed() -> None:
    messages = log()
    failed = messages.add(title="write failed", lines=["reset failed: busy. Nothing was written."],
                          severity="error", timeout=None, line="reset failed, nothing was written: busy")
    newer = messages.add(title="", lines=["Sort: status"], timeout=2)
    assert messages.shown() is newer
    # The newer one says a failure waits behind it...
    assert flash_text(newer, 80, messages.failures_behind(), KEYS).plain.startswith("✖ 1 failed · › Sort")
    messages.expire(newer)
    # ...and when it times out the failure is back, with the keys that act on it.
    assert messages.shown() is failed and messages.failures_behind() == 0
    line = flash_text(failed, 80, 0, KEYS).plain
    assert line.startswith("✖ reset failed, nothing was written") and line.endswith("^l: dismiss · M: log")
    messages.expire(failed)                 # a failure has no timeout: expiring it changes nothing
    assert messages.shown() is failed
    messages.dismiss()
    assert messages.shown() is None
    assert len(messages) == 2               # the log keeps both


def test_the_flash_line_fits_its_width_and_keeps_its_keys() -> None:
    messages = log()
    entry = messages.add(title="reset · openrouter: done", lines=["a" * 200, "b"], timeout=5,
                         line="reset · openrouter · " + "x" * 200, done=True)
    for width in (40, 80, 200):
        text = flash_text(entry, width, 0, KEYS).plain
        assert len(text) <= width and text.startswith("✔ reset · openrouter · xxx")
    # A message that fits is shown whole; the hint takes the room left, if there is enough.
    short = messages.add(title="t", lines=["a", "b"], timeout=5, line="sort: status")
    assert flash_text(short, 40, 0, KEYS).plain.endswith("M: details")
    assert flash_text(short, 20, 0, KEYS).plain == "› sort: status"
    failed = messages.add(title="t", lines=["x"], timeout=None, line="y" * 60, severity="error")
    assert flash_text(failed, 80, 0, KEYS).plain.endswith(" ^l: dismiss")     # its key stays


def test_negative_control_the_old_funnel_escapes_line_breaks() -> None:
    """The check below (no ``\\x`` on screen) catches the old toast: ``shown`` escapes a newline."""
    assert "\\x0a" in shown.shown("a\nb")
    assert "\\x0a" not in shown.shown_lines("a\nb")


def regions_overlap(a: Any, b: Any) -> bool:
    return a.x < b.right and b.x < a.right and a.y < b.bottom and b.y < a.bottom


async def test_after_a_reset_at_80x24_the_flash_line_covers_no_row_and_m_shows_every_line(
        tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:    # toasts drawn, if any
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("r", "y")
        await settle(app, pilot)
        flash = app.dashboard.query_one(FlashLine)
        table = app.dashboard.query_one(CredentialTable)
        assert flash.display and flash.text.startswith("✔ reset · openrouter · backup-key: cooling 59m → ok")
        assert len(flash.text) <= 78 and "\\x" not in flash.text
        assert not regions_overlap(flash.region, table.region)       # beside the table, not over it
        assert [n.message for n in app._notifications] == []         # and no toast either
        # Negative control: the toast this replaces lands over the table's right half.
        App.notify(app, "reset · openrouter · 1 rows: done\nbackup-key: exhausted → ok\nnote: …", timeout=60)
        for _ in range(20):                                          # bounded: the rack shows it later
            await pilot.pause()
            toasts = list(app.screen.query("Toast"))
            if toasts:
                break
        assert toasts and any(regions_overlap(t.region, table.region) for t in toasts)
        app.clear_notifications()
        # M: the whole message, line by line.
        await pilot.press("M")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MessagesScreen)
        text = screen.text
        assert "reset · openrouter: done" in text
        assert "\n    backup-key: cooling 59m → ok" in text and "\n    note: " in text
        assert "\\x" not in text
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.dashboard


async def test_a_refusal_goes_to_the_flash_line_too(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("r")
        await pilot.pause()
        flash = app.dashboard.query_one(FlashLine)
        assert flash.display and "read-only" in flash.text
        assert [n.message for n in app._notifications] == []
