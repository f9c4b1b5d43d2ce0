"""Undo in the console: ``L`` then ``u`` undoes the highlighted operator action after a
confirmation naming what comes back, refuses with the reason when a later operator action
changed the same rows, and writes through the writer like every console write (an agent's
later counts survive). The flash line's ``L, then u`` after a destructive write is true."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable

from screens.audit_view import AuditScreen
from screens.confirm import ConfirmScreen
from store.ops import actions, undo
from store.ops.write import StoreChange, perform
from store.paths import Home
from store.transaction import transaction
from tests.tui_sample import app_for, audit_lines, config_home, notes, on_row, rows_by_id, settle, write_sample
from tui.text.sentences import READ_ONLY
from tui.widgets.flash import FlashLine

pytestmark = pytest.mark.usefixtures("utc")


def flash(app: Any) -> str:
    line = app.dashboard.query_one(FlashLine)
    return line.text if line.display else ""


async def open_audit(app: Any, pilot: Any) -> AuditScreen:
    await pilot.press("L")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, AuditScreen)
    return screen


async def test_l_then_u_after_a_remove_brings_the_row_back(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_row(app, pilot, "openrouter", "0f0f0f")
        await pilot.press("d", "y")
        await settle(app, pilot)
        assert "0f0f0f" not in rows_by_id(tmp_home)
        assert flash(app).startswith("✔ remove · openrouter · third: cooling 1m 35s → removed · undo: L, then u")
        # What the flash line says, pressed as it says.
        audit_view = await open_audit(app, pilot)
        await pilot.press("u")
        await pilot.pause()
        confirm = app.screen
        assert isinstance(confirm, ConfirmScreen)
        assert "openrouter third (id=0f0f0f): comes back" in confirm.text     # Plan.describe()
        assert "remove · openrouter" in confirm.title_text
        await pilot.press("y")
        await settle(app, pilot)
        back = rows_by_id(tmp_home)["0f0f0f"]
        assert back["label"] == "third" and back["last_error_code"] == 429 and back["request_count"] == 40
        # The audit view stays, with the undo itself on top; the flash line offers the redo.
        assert app.screen is audit_view
        assert audit_view.entries[0]["action"] == "undo"
        assert audit_view.query_one(DataTable).row_count == 2
        assert "undo · openrouter · third: back (cooling 1m 35s)" in flash(app) and "redo: L, then u" in flash(app)


async def test_undo_is_refused_when_a_later_action_changed_the_same_row(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("r", "y")                     # the older action...
        await settle(app, pilot)
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("c")
        await pilot.pause()
        await pilot.press(*"15m", "enter")              # ...and a later one on the same row
        await settle(app, pilot)
        before = tmp_home.auth.read_bytes()
        await open_audit(app, pilot)
        await pilot.press("down", "u")                  # the older one: the reset
        await settle(app, pilot)
        assert isinstance(app.screen, AuditScreen)      # no question asked
        said = notes(app)[-1]
        assert said.startswith("cannot undo ") and "a later operator action changed the same rows" in said
        assert "openrouter/d4e5f6" in said and "Undo that one first" in said
        assert tmp_home.auth.read_bytes() == before
        # Control: the newest one has nothing after it, so it is asked about.
        await pilot.press("up", "u")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)


async def test_an_agents_later_counts_survive_the_undo(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("r", "y")
        await settle(app, pilot)
        with transaction(tmp_home) as doc:              # an agent, no operator history
            row = next(r for r in doc["credential_pool"]["openrouter"] if r["id"] == "d4e5f6")
            row["request_count"] = 99
        app.reload()
        await open_audit(app, pilot)
        await pilot.press("u", "y")
        await settle(app, pilot)
        row = rows_by_id(tmp_home)["d4e5f6"]
        assert row["last_status"] == "exhausted" and row["last_error_code"] == 402   # the reset undone
        assert row["request_count"] == 99                                          # the agent's kept
        assert audit_lines(tmp_home)[-1]["action"] == "undo" and audit_lines(tmp_home)[-1]["via"] == "tui"


async def test_a_config_edit_is_undone_in_config_yaml(tmp_home: Home) -> None:
    config_home(tmp_home)
    original = tmp_home.config.read_text()
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("up", "up", "enter")
        await settle(app, pilot)
        assert "round_robin" in tmp_home.config.read_text()
        await open_audit(app, pilot)
        await pilot.press("u")
        await pilot.pause()
        assert "config.yaml: credential_pool_strategies put back" in app.screen.text
        await pilot.press("y")
        await settle(app, pilot)
        assert tmp_home.config.read_text() == original          # comments and all
        assert undo.list_ids(tmp_home)[-1] == audit_lines(tmp_home)[-1]["history"]


async def test_read_only_and_an_action_without_history_say_why(tmp_home: Home) -> None:
    write_sample(tmp_home)
    tmp_home.audit.write_text('{"time": 1767225600, "user": "ops", "host": "h", "via": "cli", '
                              '"action": "reset", "pool": "openrouter", "changes": []}\n')
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await open_audit(app, pilot)
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.screen, AuditScreen)
        assert "kept no copy" in notes(app)[-1]
    # An operator action with its history, then a read-only console: refused, nothing written.
    perform(tmp_home, StoreChange(lambda doc, now: actions.reset(doc, "openrouter", "d4e5f6", now)), via="cli")
    before = tmp_home.auth.read_bytes()
    app = app_for(tmp_home, read_only=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await open_audit(app, pilot)
        await pilot.press("u")
        await settle(app, pilot)
        assert isinstance(app.screen, AuditScreen) and notes(app)[-1] == READ_ONLY
    assert tmp_home.auth.read_bytes() == before
