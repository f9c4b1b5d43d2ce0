"""Keys sent as one burst reach the widget they were typed for (tui.app.key_order), in Pilot.

A burst is posted to the app in one go, as the driver posts what one read of the terminal
gave: ``/ready`` filters, ``:sort`` lands in the command line, ``/cool`` in the filter box,
and ``r`` ``y`` opens the question without answering it. Controls: the mechanism off, the
same bursts act on the table (the reset is written); the question's guard off, the ``y`` of
the burst confirms; a deliberate ``y`` after the question is shown resets the row.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual import events
from textual.widgets import Input

from screens.command_line import CommandLine
from screens.confirm import ConfirmScreen
from screens.cooldown import CooldownScreen
from store.paths import Home
from tests.tui_sample import app_for, audit_lines, on_row, settle, write_sample
from tui.widgets.guarded import GuardedModal

pytestmark = pytest.mark.usefixtures("utc")

NAMES = {"/": "slash", ":": "colon"}


async def burst(app: Any, pilot: Any, text: str) -> None:
    """Every key of *text* posted before the app handles the first: one read of the terminal."""
    for ch in text:
        app.post_message(events.Key(NAMES.get(ch, ch), ch))
    for _ in range(200):                       # bounded: until every key of it has gone
        await pilot.pause()
        if not (app.key_order.token or app.key_order.waiting):
            break
    await settle(app, pilot)


def typed(app: Any) -> str | None:
    focused = app.focused
    return focused.value if isinstance(focused, Input) else None


async def test_a_burst_lands_in_the_filter_box(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await burst(app, pilot, "/ready")
        assert typed(app) == "ready" and app.focused.id == "filter"
        assert not isinstance(app.screen, ConfirmScreen) and audit_lines(tmp_home) == []
        await pilot.press("escape")
        await burst(app, pilot, "/cool")
        assert typed(app) == "cool" and app.screen is app.dashboard
        assert audit_lines(tmp_home) == []


async def test_a_burst_lands_in_the_command_line(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await burst(app, pilot, ":sort")
        assert isinstance(app.screen, CommandLine) and typed(app) == "sort"


async def test_r_and_y_in_one_burst_ask_and_do_not_answer(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await burst(app, pilot, "ry")
        assert isinstance(app.screen, ConfirmScreen)
        assert app.key_order.dropped == ["y"] and audit_lines(tmp_home) == []
        await pilot.press("y")           # deliberate: pressed with the question on screen
        await settle(app, pilot)
        assert [e["action"] for e in audit_lines(tmp_home)] == ["reset"]


@pytest.mark.parametrize("off", ["order", "guard"])
async def test_control_each_protection_off_the_burst_writes(tmp_home: Home, off: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    if off == "guard":      # keys still one at a time, but the question takes the burst's y
        monkeypatch.setattr(GuardedModal, "answers_to", lambda self, t: True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        if off == "order":
            app.key_order.enabled = False
        await burst(app, pilot, "ry")
        assert [e["action"] for e in audit_lines(tmp_home)] == ["reset"]
        if off == "order":
            await burst(app, pilot, ":sort")
            assert typed(app) != "sort"


async def test_the_cooldown_form_takes_no_key_of_the_burst_that_opened_it(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await on_row(app, pilot, "openrouter", "a1b2c3")
        for key, ch in [("c", "c"), ("2", "2"), ("h", "h"), ("enter", "\r")]:
            app.post_message(events.Key(key, ch))
        for _ in range(200):
            await pilot.pause()
            if not (app.key_order.token or app.key_order.waiting):
                break
        # the form's own default stands: none of the burst's keys was typed into it
        assert isinstance(app.screen, CooldownScreen) and typed(app) == "15m"
        assert audit_lines(tmp_home) == []
        await pilot.press("1", "5", "m", "enter")     # typed with the form on screen
        await settle(app, pilot)
        assert [e["action"] for e in audit_lines(tmp_home)] == ["cooldown"]


async def test_a_pasted_page_of_keys_lands_whole_and_in_order(tmp_home: Home) -> None:
    """Hundreds of keys in one burst: every one reaches the filter box, in order (the queue is
    worked in a loop, not a recursion that a page of keys would exhaust)."""
    write_sample(tmp_home)
    app = app_for(tmp_home)
    text = "".join("abcdefghij"[i % 10] for i in range(600))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await burst(app, pilot, "/" + text)
        assert typed(app) == text
