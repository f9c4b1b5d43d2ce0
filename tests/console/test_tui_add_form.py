"""The add form reads top to bottom: it opens on Pool, marks the focused field with a bar and a
bold label (not one cursor cell), and a validation error moves focus to the field it names,
whether the form's own check or the store's write found it."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Input, Label

from screens.add_key import AddKeyScreen
from store.paths import Home
from store.transaction import transaction
from tests.conftest import make_row
from tests.tui_sample import app_for, on_row, settle, write_sample

pytestmark = pytest.mark.usefixtures("utc")


def marked(screen: Any) -> list[str]:
    """The labels of the fields drawn as focused (a bar at the left)."""
    return [str(f.query_one(Label).render()) for f in screen.query(".field")
            if f.styles.border_left[0] == "thick"]


async def test_opens_on_pool_and_marks_the_focused_field(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, AddKeyScreen)
        assert app.focused is screen.query_one("#add-pool")
        assert marked(screen) == ["Pool"]
        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is screen.query_one("#add-key-value")
        assert marked(screen) == ["Key (hidden as you type; paste works)"]    # one bar, moved
        # A new pool: its name is the next thing to type.
        screen.query_one("#add-pool").value = "\x00new"
        await pilot.pause()
        assert app.focused is screen.query_one("#add-new-pool") and marked(screen) == ["Pool"]


async def test_an_error_from_the_write_moves_focus_to_its_field(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 34)) as pilot:
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        # The form checked against the store as it was when it opened; meanwhile another
        # process takes the label, so only the write itself finds it.
        with transaction(tmp_home) as doc:
            doc["credential_pool"]["openrouter"].append(make_row("9e9e9e", label="fresh", priority=3))
        screen.query_one("#add-key-value", Input).value = "sk-or-v1-" + "e" * 40
        screen.query_one("#add-label", Input).value = "fresh"
        screen.query_one("#add-priority", Input).focus()
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert app.screen is screen and "fresh" in screen.error_text and screen.error_text.startswith("label: ")
        assert app.focused is screen.query_one("#add-label")
        assert marked(screen) == ["Label (optional)"]
