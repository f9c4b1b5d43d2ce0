"""A key pasted into a plain-text field of a form is refused (``looks like an API key; it was
not used or shown``) and taken off the screen: the field is emptied, so no part of the key is
left on screen under a message saying it was not shown. Every form that runs the check: the
cooldown's reason, each field of the fallback form, the add form's new pool and base URL
(its key field, and a key typed as a label, stay masked with bullets)."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Input

from screens.add_key import NEW_POOL, AddKeyScreen
from screens.cooldown import CooldownScreen
from screens.fallback_edit import FallbackAddScreen
from store.paths import Home
from tests.tui_sample import app_for, config_home, on_row, settle, visible_text, write_sample

pytestmark = pytest.mark.usefixtures("utc")

BODY = "canary0123ZYXWVUT9876zz"
CANARY = f"sk-or-v1-{BODY}{BODY}QQQQ"
PIECES = [CANARY[i:i + 10] for i in range(9, len(CANARY) - 10)]   # any 10 cells of its body


def shown_anywhere(app: Any, screen: Any) -> list[str]:
    """The pieces of the canary on the rendered screen, or in a field's value (not masked)."""
    text = visible_text(app)
    values = " ".join(i.value for i in screen.query(Input) if not i.password)
    return [p for p in PIECES if p in text or p in values]


async def test_cooldown_reason_holding_a_key_is_emptied(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("c")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CooldownScreen)
        await pilot.press("tab", *f"leaked {CANARY}")
        await pilot.pause()
        assert shown_anywhere(app, screen)          # typed: on screen until Enter
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.screen is screen and "looks like an API key" in screen.error_text
        assert shown_anywhere(app, screen) == []
        assert app.focused is screen.query_one("#cooldown-reason")


@pytest.mark.parametrize("field", ["fb-provider", "fb-model", "fb-base-url", "fb-key-env"])
async def test_fallback_field_holding_a_key_is_emptied(tmp_home: Home, field: str) -> None:
    config_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("v", "2")
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FallbackAddScreen)
        values = {"fb-provider": "xai", "fb-model": "grok-4", field: f"leaked {CANARY}"}
        for name, value in values.items():
            screen.query_one(f"#{name}", Input).value = value
        await pilot.pause()
        before = tmp_home.config.read_bytes()
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.screen is screen and "looks like an API key" in screen.error_text
        assert shown_anywhere(app, screen) == []
        assert screen.query_one(f"#{field}", Input).value == ""
        assert app.focused is screen.query_one(f"#{field}")
        assert tmp_home.config.read_bytes() == before


@pytest.mark.parametrize("field", ["add-new-pool", "add-base-url", "add-label"])
async def test_add_form_field_holding_a_key_is_emptied_or_masked(tmp_home: Home, field: str) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("a")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, AddKeyScreen)
        if field == "add-new-pool":
            screen.query_one("#add-pool").value = NEW_POOL
            await pilot.pause()
        screen.query_one("#add-key-value", Input).value = "sk-or-v1-" + "e" * 40
        screen.query_one(f"#{field}", Input).value = f"leaked {CANARY}"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert app.screen is screen and "looks like an API key" in screen.error_text
        assert shown_anywhere(app, screen) == []
        assert screen.query_one("#add-key-value", Input).password     # the key field keeps its bullets
