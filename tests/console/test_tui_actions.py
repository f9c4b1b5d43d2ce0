"""Pilot tests of the dashboard's operator actions (issue 4), each asserting on the table
and on the file.

The app runs with a fake clock and no watcher: a write's worker posts its result, the app
re-reads the home (as the watcher would) and the table shows what is now in auth.json.
"""

from __future__ import annotations

import json
import os

import pytest
from textual import events
from textual.widgets import Input

from screens.add_key import AddKeyScreen
from screens.confirm import ConfirmScreen
from screens.cooldown import CooldownScreen
from screens.dashboard import DashboardScreen
from store.paths import Home
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.helpers_proc import spawn, stop, wait_ready
from tests.tui_sample import (
    CANARY,
    NOW,
    app_for,
    audit_lines,
    key,
    notes,
    on_row,
    rows_by_id,
    settle,
    table_of,
    write_sample,
)
from tui.text.sentences import READ_ONLY
from tui.widgets import StatusBar

pytestmark = pytest.mark.usefixtures("utc")

NEW_KEY = "sk-or-v1-NEWCANARY9876543210fedcbaQ7Z1"


# ---------------------------------------------------------------- reset

async def test_reset_confirm_writes_and_cancel_paths_write_nothing(tmp_home: Home) -> None:
    write_sample(tmp_home)
    before = tmp_home.auth.read_bytes()
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        for cancel in ("n", "escape"):
            await pilot.press("r")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press(cancel)
            await settle(app, pilot)
            assert isinstance(app.screen, DashboardScreen)
            assert tmp_home.auth.read_bytes() == before
        await pilot.press("r")
        await pilot.pause()
        text = app.screen.text
        assert "backup-key" in text and "d4e5f6" in text
        assert "does not give the provider's quota back" in text
        assert "0.19.0" in text and "status_cleared_at" in text
        await pilot.press("y")
        await settle(app, pilot)
        row = rows_by_id(tmp_home)["d4e5f6"]
        assert row["last_status"] is None and row["last_error_code"] is None
        assert row["status_cleared_at"] == NOW and row["request_count"] == 3
        assert row["custom_note"] == {"team": "ops"}          # unknown fields survive
        assert table_of(app).cell_text(key("openrouter", "d4e5f6"), "status") == "● ok"
        # Only that row changed.
        others = {k: v for k, v in rows_by_id(tmp_home).items() if k != "d4e5f6"}
        assert others == {r["id"]: r for r in json.loads(before)["credential_pool"]["openrouter"]
                          if r["id"] != "d4e5f6"}
    (entry,) = audit_lines(tmp_home)
    assert entry["action"] == "reset" and entry["via"] == "tui" and entry["pool"] == "openrouter"
    assert entry["changes"][0]["before"]["last_status"] == "exhausted"
    assert CANARY not in tmp_home.audit.read_text()


async def test_bulk_reset_applies_to_tagged_rows_only(tmp_home: Home) -> None:
    write_sample(tmp_home)
    before = read_doc(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        table = table_of(app)
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("space")
        await on_row(app, pilot, "openrouter", "0f0f0f")
        await pilot.press("space")
        await pilot.pause()
        # The tag is a symbol in the # cell and a count in the status bar, not only colour.
        assert table.cell_text(key("openrouter", "d4e5f6"), "pos").startswith("✓")
        assert table.cell_text(key("openrouter", "a1b2c3"), "pos") == "1←"
        assert "✓ 2 tagged" in app.dashboard.query_one(StatusBar).text
        # The cursor sits on the primary: tags win over the cursor.
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("r")
        await pilot.pause()
        text = app.screen.text
        assert "Reset 2 tagged credentials?" in text
        assert "backup-key" in text and "third" in text and "primary" not in text
        await pilot.press("y")
        await settle(app, pilot)
        rows = rows_by_id(tmp_home)
        assert rows["d4e5f6"]["last_status"] is None and rows["0f0f0f"]["last_status"] is None
        assert "model_cooldowns" not in rows["0f0f0f"]
        assert rows["a1b2c3"] == before["credential_pool"]["openrouter"][0]
        assert read_doc(tmp_home)["credential_pool"]["anthropic"] == before["credential_pool"]["anthropic"]
        # Done: both rows ok, and the tags stay (k9s keeps marks) until `u` clears them.
        assert table.cell_text(key("openrouter", "0f0f0f"), "status") == "● ok"
        assert app.dashboard.operator.tags == {("openrouter", "d4e5f6"), ("openrouter", "0f0f0f")}
        assert table.cell_text(key("openrouter", "d4e5f6"), "pos").startswith("✓")
        await pilot.press("u")
        await pilot.pause()
        assert app.dashboard.operator.tags == set()
        assert not table.cell_text(key("openrouter", "d4e5f6"), "pos").startswith("✓")
    (entry,) = audit_lines(tmp_home)
    assert sorted(c["id"] for c in entry["changes"]) == ["0f0f0f", "d4e5f6"]


async def test_untag_all_and_tags_follow_removed_rows(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("space")
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("space", "u")
        await pilot.pause()
        assert app.dashboard.operator.tags == set()
        await on_row(app, pilot, "openrouter", "a1b2c3")  # space moved the cursor down
        await pilot.press("space")
        from store.transaction import transaction

        with transaction(tmp_home) as doc:
            doc["credential_pool"]["openrouter"] = doc["credential_pool"]["openrouter"][1:]
        app.reload()
        await pilot.pause()
        assert app.dashboard.operator.tags == set()


# ---------------------------------------------------------------- cooldown

async def test_cooldown_modal_previews_applies_and_cancels(tmp_home: Home) -> None:
    write_sample(tmp_home)
    before = tmp_home.auth.read_bytes()
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, CooldownScreen)
        await pilot.press("escape")
        await settle(app, pilot)
        assert tmp_home.auth.read_bytes() == before
        await pilot.press("c")
        await pilot.pause()
        await pilot.press(*"soon")
        await pilot.pause()
        assert app.screen.preview.startswith("✖")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, CooldownScreen)
        assert app.screen.error_text.startswith("for/until:") and "'soon'" in app.screen.error_text
        assert tmp_home.auth.read_bytes() == before
        await pilot.press(*["backspace"] * 4, *"15m")
        await pilot.pause()
        assert app.screen.preview == "until 00:15:00, in 15m"
        await pilot.press("tab", *"maintenance", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DashboardScreen)
        row = rows_by_id(tmp_home)["a1b2c3"]
        assert row["last_status"] == "exhausted" and row["last_status_at"] == NOW
        assert row["last_error_reset_at"] == NOW + 900
        assert row["last_error_reason"] == "maintenance"
        table = table_of(app)
        assert table.cell_text(key("openrouter", "a1b2c3"), "status") == "◐ cooling"
        assert table.cell_text(key("openrouter", "a1b2c3"), "left") == "15m"
    assert [e["action"] for e in audit_lines(tmp_home)] == ["cooldown"]


async def test_cooldown_skips_dead_rows_and_refuses_only_dead(tmp_home: Home) -> None:
    write_sample(tmp_home)
    before = tmp_home.auth.read_bytes()
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await on_row(app, pilot, "anthropic", "aa11bb")
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert any("dead credential cannot be benched" in n for n in notes(app))
        assert tmp_home.auth.read_bytes() == before


# ---------------------------------------------------------------- remove

async def test_remove_confirm_and_cancel(tmp_home: Home) -> None:
    write_sample(tmp_home)
    before = tmp_home.auth.read_bytes()
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await on_row(app, pilot, "openrouter", "0f0f0f")
        await pilot.press("d")
        await pilot.pause()
        assert "may write it back until it reloads" in app.screen.text
        assert "suppressed_sources" not in app.screen.text       # a manual row is not seeded
        await pilot.press("n")
        await settle(app, pilot)
        assert tmp_home.auth.read_bytes() == before
        await pilot.press("d", "y")
        await settle(app, pilot)
        rows = read_doc(tmp_home)["credential_pool"]["openrouter"]
        assert [(r["id"], r["priority"]) for r in rows] == [("a1b2c3", 0), ("d4e5f6", 1)]
        assert key("openrouter", "0f0f0f") not in table_of(app).order
        # A seeded source is suppressed, and the confirmation said so.
        await on_row(app, pilot, "anthropic", "aa11bb")
        await pilot.press("d")
        await pilot.pause()
        assert "claude_code" in app.screen.text and "suppressed_sources" in app.screen.text
        await pilot.press("y")
        await settle(app, pilot)
        doc = read_doc(tmp_home)
        assert doc["credential_pool"]["anthropic"] == []
        assert doc["suppressed_sources"] == {"anthropic": ["claude_code"]}
    assert [e["action"] for e in audit_lines(tmp_home)] == ["remove", "remove"]


# ---------------------------------------------------------------- priority

async def test_move_up_and_down_renumbers_and_the_cursor_follows(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        table = table_of(app)
        await on_row(app, pilot, "openrouter", "0f0f0f")
        await pilot.press("K")
        await settle(app, pilot)
        order = [r["id"] for r in sorted(read_doc(tmp_home)["credential_pool"]["openrouter"],
                                          key=lambda r: r["priority"])]
        assert order == ["a1b2c3", "0f0f0f", "d4e5f6"]
        assert table.cursor_credential.id == "0f0f0f" and table.cursor_credential.index == 2
        await pilot.press("shift+up")
        await settle(app, pilot)
        assert rows_by_id(tmp_home)["0f0f0f"]["priority"] == 0
        assert table.cursor_credential.id == "0f0f0f"
        # At the top, K is unavailable and says why; nothing is written.
        before = tmp_home.auth.read_bytes()
        assert app.dashboard.check_action("move_up", ()) is None
        await pilot.press("K")
        await settle(app, pilot)
        assert tmp_home.auth.read_bytes() == before
        assert any("already first" in n for n in notes(app))
        await pilot.press("J")
        await settle(app, pilot)
        assert [r["priority"] for r in read_doc(tmp_home)["credential_pool"]["openrouter"]
                if r["id"] == "0f0f0f"] == [1]


# ---------------------------------------------------------------- add

async def test_add_key_validation_errors_are_inline_and_write_nothing(tmp_home: Home) -> None:
    write_sample(tmp_home)
    before = tmp_home.auth.read_bytes()
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 40)) as pilot:
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, AddKeyScreen)
        assert app.focused is screen.query_one("#add-pool")        # the form opens on Pool
        await pilot.press("ctrl+s")                      # no key typed
        await pilot.pause()
        assert screen.error_text == "key: is empty: type or paste the key"
        assert app.focused is screen.query_one("#add-key-value")   # where the error points
        screen.query_one("#add-key-value", Input).value = NEW_KEY
        screen.query_one("#add-label", Input).value = "primary"   # taken in this pool
        await pilot.press("enter")
        await pilot.pause()
        assert screen.error_text == "label: label 'primary' is already used in pool openrouter"
        assert app.focused is screen.query_one("#add-label")
        screen.query_one("#add-label", Input).value = ""
        screen.query_one("#add-key-value", Input).value = CANARY     # already in the pool
        await pilot.press("enter")
        await pilot.pause()
        assert screen.error_text == "key: sk-or-…XYZ9 is already in pool openrouter"
        screen.query_one("#add-key-value", Input).value = NEW_KEY
        screen.query_one("#add-pool").value = "\x00new"
        screen.query_one("#add-new-pool", Input).value = "My Server"
        await pilot.press("enter")
        await pilot.pause()
        assert screen.error_text.startswith("pool: ") and "My Server" in screen.error_text
        assert app.focused is screen.query_one("#add-new-pool")
        assert isinstance(app.screen, AddKeyScreen) and app.screen.request is None
        await pilot.press("escape")
        await settle(app, pilot)
    assert tmp_home.auth.read_bytes() == before
    assert not tmp_home.audit.exists()


async def test_add_key_through_the_modal_lands_and_leaks_nowhere(tmp_home: Home) -> None:
    """Canary: the new key reaches auth.json, and no screen, notification, audit line or
    log holds it in clear."""
    write_sample(tmp_home)
    app = app_for(tmp_home)
    screens: list[str] = []
    async with app.run_test(size=(100, 40)) as pilot:
        await on_row(app, pilot, "anthropic", "aa11bb")
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        screen.query_one("#add-pool").value = "\x00new"
        await pilot.pause()
        screen.query_one("#add-new-pool", Input).value = "custom:my-server"
        screen.query_one("#add-label", Input).value = "fresh"
        box = screen.query_one("#add-key-value", Input)
        box.focus()
        await pilot.pause()
        box.post_message(events.Paste(NEW_KEY))             # paste works in the masked input
        await pilot.pause()
        assert box.value == NEW_KEY
        screen.query_one("#add-base-url", Input).value = "http://127.0.0.1:9/v1"
        screens.append(app.export_screenshot())
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DashboardScreen)
        (row,) = read_doc(tmp_home)["credential_pool"]["custom:my-server"]
        assert row["access_token"] == NEW_KEY and row["label"] == "fresh"
        assert row["source"] == "manual" and row["base_url"] == "http://127.0.0.1:9/v1"
        assert row["priority"] == 0 and row["request_count"] == 0
        # The new row is on screen with the cursor on it, as a fingerprint.
        table = table_of(app)
        assert table.cursor_credential is not None and table.cursor_credential.id == row["id"]
        assert table.cell_text(key("custom:my-server", row["id"]), "fingerprint") == "sk-or-…Q7Z1"
        await pilot.press("L")
        await pilot.pause()
        screens.append(app.export_screenshot())
        await pilot.press("escape", "enter")               # the detail view too
        await pilot.pause()
        screens.append(app.export_screenshot())
        said = notes(app) + [str(r) for r in app.writer.results] + \
            list(app.dashboard.events_log.lines_written)
    audit_text = tmp_home.audit.read_text()
    assert "custom:my-server" in audit_text and "fresh" in audit_text
    for where, text in [("audit", audit_text), *(("screen", s) for s in screens),
                        *(("said", s) for s in said)]:
        assert NEW_KEY not in text and NEW_KEY[-16:] not in text, where
    # Control: the fingerprint is on screen, so the screens did show the row.
    assert any("sk-or-…Q7Z1" in s.replace("&#160;", " ") for s in screens)


# ---------------------------------------------------------------- read-only

WRITE_KEYS = ("a", "r", "c", "d", "K", "J", "s", "p")


async def test_read_only_refuses_every_writing_key_and_says_so(tmp_home: Home) -> None:
    write_sample(tmp_home)
    tmp_home.config.write_text("# operator notes\ncredential_pool_strategies:\n  openrouter: random\n")
    files = {p: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in (tmp_home.auth, tmp_home.config)}
    app = app_for(tmp_home, read_only=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        dash = app.dashboard
        for action in ("add", "reset", "cooldown", "remove", "move_up", "move_down", "strategy", "probe"):
            assert dash.check_action(action, ()) is None, action     # shown, dimmed
        for k in WRITE_KEYS:
            app.messages.entries.clear()
            await pilot.press(k)
            await settle(app, pilot)
            assert isinstance(app.screen, DashboardScreen), k
            assert notes(app) == [READ_ONLY], k
        # Config edits too.
        await pilot.press("v", "2", "a")
        await pilot.pause()
        assert app.screen.id == "config"
        assert notes(app)[-1] == READ_ONLY
        # The palette path refuses the same way.
        await pilot.press("escape")
        app.dashboard_action("reset")
        await settle(app, pilot)
        assert isinstance(app.screen, DashboardScreen) and notes(app)[-1] == READ_ONLY
        # And the writer itself refuses, whoever calls it.
        assert app.writer.submit("sneaky", lambda: tmp_home.auth.write_text("{}")) is None
        await settle(app, pilot)
    assert {p: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in files} == files
    assert not tmp_home.audit.exists()


async def test_read_only_control_the_same_keys_act_when_writable(tmp_home: Home) -> None:
    """Negative control for the test above: without --read-only the keys do open their screens."""
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        for k in ("a", "r", "c", "d", "s"):
            await pilot.press(k)
            await pilot.pause()
            assert not isinstance(app.screen, DashboardScreen), k
            await pilot.press("escape")
            await pilot.pause()
        assert READ_ONLY not in notes(app)


# ---------------------------------------------------------------- failures

async def test_lock_held_by_another_process_waits_visibly_then_times_out(tmp_home: Home) -> None:
    write_sample(tmp_home)
    before = tmp_home.auth.read_bytes()
    holder = spawn("hold", home=str(tmp_home.root), how="raw")
    try:
        wait_ready(holder)
        # The timeout leaves the waiting state on screen long enough to be seen on a loaded
        # machine; the loop below is bounded well inside it.
        app = app_for(tmp_home, lock_timeout=4.0)
        async with app.run_test(size=(100, 30)) as pilot:
            await on_row(app, pilot, "openrouter", "d4e5f6")
            await pilot.press("r", "y")
            status = app.dashboard.query_one(StatusBar)
            table = table_of(app)
            for _ in range(150):                        # bounded: 150 x 20 ms
                if "waiting for auth.lock" in status.text:
                    break
                await pilot.pause(0.02)
            assert "waiting for auth.lock…" in status.text
            # The pending row is marked, and the UI still answers keys meanwhile.
            assert table.cell_text(key("openrouter", "d4e5f6"), "pos").startswith("⟳")
            await pilot.press("w")
            await pilot.pause()
            assert table.wide
            await settle(app, pilot)
            (message,) = [n for n in notes(app) if "auth.lock" in n]
            assert str(tmp_home.lock) in message and "Nothing was written" in message
            assert "waiting" not in status.text
            assert table.cell_text(key("openrouter", "d4e5f6"), "status") == "◐ cooling"
            assert not table.cell_text(key("openrouter", "d4e5f6"), "pos").startswith("⟳")
    finally:
        stop(holder)
    assert tmp_home.auth.read_bytes() == before
    assert not tmp_home.audit.exists()


async def test_unreadable_store_refuses_the_write_and_keeps_the_bytes(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        broken = b'{"credential_pool": {"openrouter": ['
        tmp_home.auth.write_bytes(broken)
        await pilot.press("r", "y")
        await settle(app, pilot)
        (message,) = [n for n in notes(app) if "failed" in n]
        assert str(tmp_home.auth) in message and "Nothing was written" in message
    assert tmp_home.auth.read_bytes() == broken


async def test_row_removed_meanwhile_is_bad_input_and_writes_nothing(tmp_home: Home) -> None:
    write_store(tmp_home, make_store({"openrouter": [
        make_row("aaaaaa", label="one", priority=0, token="sk-or-v1-0123456789abcdefAAA1"),
        make_row("bbbbbb", label="two", priority=1, token="sk-or-v1-0123456789abcdefBBB2"),
    ]}))
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await on_row(app, pilot, "openrouter", "bbbbbb")
        from store.transaction import transaction

        with transaction(tmp_home) as doc:   # another writer removes it; we have not reloaded
            doc["credential_pool"]["openrouter"].pop()
        before = tmp_home.auth.read_bytes()
        await pilot.press("c", *"1h", "enter")
        await settle(app, pilot)
        assert any("TARGET" in n and "Nothing was written" in n for n in notes(app))
    assert tmp_home.auth.read_bytes() == before
