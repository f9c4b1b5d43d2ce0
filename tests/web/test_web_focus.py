"""The console served to a browser keeps its focus through a blur (Textual's web driver posts
one at start); a terminal's console still honours one. In-process, with Textual's pilot.

The second test is the negative control: the same blur on a terminal console drops the
table's focus, so Down moves nothing, which is what the browser showed before the fix.
"""

from __future__ import annotations

from textual import events

from store.paths import Home
from tests.tui_sample import app_for, table_of, write_sample
from tui.widgets import CredentialTable


async def _blur_then_down(home: Home, via: str) -> tuple[object, int, int]:
    write_sample(home)
    app = app_for(home, via=via, remote="127.0.0.1" if via == "web" else None)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        table = table_of(app)
        before = table.cursor_row
        app.post_message(events.AppBlur())
        await pilot.pause()
        focused = app.focused
        await pilot.press("down")
        await pilot.pause()
        return focused, before, table.cursor_row


async def test_a_web_console_keeps_its_focus_through_a_blur(tmp_home: Home) -> None:
    focused, before, after = await _blur_then_down(tmp_home, "web")
    assert isinstance(focused, CredentialTable)
    assert after == before + 1


async def test_control_a_terminal_console_loses_its_focus_on_a_blur(tmp_home: Home) -> None:
    focused, before, after = await _blur_then_down(tmp_home, "tui")
    assert focused is None
