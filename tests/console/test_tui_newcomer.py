"""The newcomer's list of #28: what a first-time operator tripped over at 80x24."""

from __future__ import annotations

from rich.console import Console

from screens.cooldown import CooldownScreen
from screens.dashboard import DashboardScreen
from store.paths import Home
from tests.tui_sample import NOW, app_for, notes, on_row, rows_by_id, settle, write_sample


async def test_move_under_a_status_sort_is_refused_saying_why(tmp_home: Home) -> None:
    """K / J under a sort other than priority would change a priority with no visible move:
    refused, naming the sort and the way out; under the priority sort the same K moves the row
    (the control: the refusal is the sort's, not the harness's)."""
    write_sample(tmp_home)
    before = tmp_home.auth.read_bytes()
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("o")                                   # sort by status
        await pilot.pause()
        assert app.dashboard.sort == "status"
        await on_row(app, pilot, "openrouter", "0f0f0f")
        await pilot.press("K")
        await settle(app, pilot)
        assert tmp_home.auth.read_bytes() == before
        said = notes(app)[-1]
        assert "sorted by status" in said and "priority" in said, said
        await pilot.press(*"oooo")                               # back round to priority
        await pilot.pause()
        assert app.dashboard.sort == "priority"
        await on_row(app, pilot, "openrouter", "0f0f0f")
        await pilot.press("K")
        await settle(app, pilot)
        assert tmp_home.auth.read_bytes() != before
        assert rows_by_id(tmp_home)["0f0f0f"]["priority"] == 1


async def test_the_column_chooser_lists_headroom_and_shows_it(tmp_home: Home) -> None:
    """``W`` lists the headroom column with the rest, and ticking it shows it (#28)."""
    from screens.column_chooser import ColumnChooser
    from tests.tui_sample import table_of

    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("W")
        await pilot.pause()
        chooser = app.screen
        assert isinstance(chooser, ColumnChooser) and "headroom" in chooser.keys
        shown = Console(width=100, record=True, color_system=None)
        shown.print(chooser.line("headroom"))
        assert "rate-limit" in shown.export_text()
        await pilot.press(*["down"] * chooser.keys.index("headroom"), "space", "enter")
        await pilot.pause()
        assert "headroom" in [c.value for c in table_of(app).columns]


async def test_a_cooldown_change_reads_cooling_before_and_after(tmp_home: Home) -> None:
    """A longer bench on a cooling row reads ``cooling 1m 35s → cooling 10m``: the length the
    operator changed, not ``exhausted → exhausted`` (the stored word, both sides)."""
    from tui.services.write_feedback import status_words

    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_row(app, pilot, "openrouter", "0f0f0f")
        await pilot.press("c", *"10m", "enter")
        await settle(app, pilot)
        for _ in range(3):     # a second confirmation would name a shorter bench: none here
            await pilot.pause()
        said = notes(app)[-1]
        assert "third: cooling 1m 35s → cooling 10m" in said, said
        assert "exhausted" not in said
    # The words themselves, and the stored word when no clock is given (the control).
    bench = {"last_status": "exhausted", "last_error_reset_at": 1_000.0 + 600}
    assert status_words(bench, 1_000.0) == "cooling 10m"
    assert status_words(bench, 2_000.0) == "ready"
    assert status_words(bench, None) == "exhausted"
    assert status_words({"last_status": None}, 1_000.0) == "ok"


async def test_colon_undo_asks_with_the_action_not_its_history_id(tmp_home: Home) -> None:
    """``:undo`` names the action as ``L`` then ``u`` does (action · pool of its time), never
    ``Undo 20261203T105438502998Z-6cc06b?``."""
    from textual.widgets import Input

    from screens.command_line import CommandLine
    from screens.confirm import ConfirmScreen

    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        await pilot.press("colon")
        await pilot.pause()
        assert isinstance(app.screen, CommandLine)
        app.screen.query_one(Input).value = "undo"
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        title = app.screen.title_text
        assert title.startswith("Undo reset · openrouter of 20") and title.endswith("?"), title
        assert "Z-" not in title                    # no history id (20261203T105438502998Z-6cc06b)


def test_feedback_never_names_internal_fields_or_config_keys() -> None:
    """``M`` and the flash line say a write in the operator's words: no ``failure_reason,
    last_error_code``, no ``config.strategy · credential_pool_strategies.openrouter``."""
    from store.ops.actions import Change, Outcome
    from tui.services.write_feedback import done_feedback, note_words

    undo = Outcome("undo", "openrouter", [Change("openrouter", "a1", "primary", {"last_status": "exhausted"},
                                                 {"last_status": None})],
                   ["primary: kept failure_reason, last_error_code (changed since by another writer)"])
    fb = done_feedback("undoing x", [undo], history_id="x", now=1_000.0)
    assert "kept failure reason, error code (changed since" in fb.message, fb.message
    assert "failure_reason" not in fb.message and "last_error_code" not in fb.message
    cfg = Outcome("config.strategy", "openrouter", [Change("openrouter", "credential_pool_strategies.openrouter",
                                                           "config.yaml", {"value": "least_used"},
                                                           {"value": "round_robin"})])
    fb = done_feedback("setting the strategy", [cfg], now=1_000.0)
    assert fb.flash == "strategy · openrouter · strategy of openrouter: least_used → round_robin", fb.flash
    # The control: the words come from the map, an unknown name is left as it is.
    assert note_words("kept some_new_field") == "kept some_new_field"


async def test_help_at_80_columns_has_no_twin_lines_and_a_whole_title(tmp_home: Home) -> None:
    """Without its ``where`` column (80 columns), help names the screen in the words of a key
    that acts elsewhere than its id says: ``r Reset`` no longer appears twice; the title fits."""
    from textual.widgets import DataTable

    from screens.help import TITLE, HelpScreen

    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark", *"reset")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        table = screen.query_one(DataTable)
        assert "where" not in [str(c.label) for c in table.columns.values()]
        lines = [tuple(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]
        assert len(lines) == len(set(lines)), lines
        assert ("r", "Reset (on profiles)", "dashboard.reset") in [tuple(x.strip() for x in ln) for ln in lines]
        title = str(screen.query_one("#help-title").render())
        assert title.endswith("Esc: close)") and len(title) <= screen.query_one("#help-title").size.width
        assert len(TITLE.format(what="4 of 151 keys")) > 72                 # the long one would be cut


async def test_a_keymap_warning_and_a_proxy_panel_message_never_cover_a_table(tmp_home: Home, tmp_path,
                                                                            monkeypatch) -> None:
    """A keymap warning at start lands on the dashboard's flash line (it is not composed yet
    when the keymap is read), and a message in the proxy panel on the panel's own flash line:
    no toast over a table. The control: the same message through Textual's own notify is a
    toast over the table, so the harness sees one when there is one."""
    from textual.app import App

    from screens.proxy_view import ProxyScreen
    from tests.tui_sample import proxy_status
    from tui.app.console import HermesAdminApp
    from tui.services.clock import FakeClock
    from tui.widgets.flash import FlashLine

    async def toasts(app, pilot) -> list:
        for _ in range(20):                      # bounded: the toast rack mounts later
            await pilot.pause()
        return [t for s in app.screen_stack for t in s.query("Toast")]

    write_sample(tmp_home)
    keymap = tmp_path / "keymap.yaml"
    keymap.write_text("no.such_binding: X\n")
    app = HermesAdminApp(tmp_home, clock=FakeClock(1_767_225_600.0), watch=False, tick=False,
                         keymap_file=keymap)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:    # toasts drawn, if any
        await pilot.pause()
        assert await toasts(app, pilot) == []
        assert "keymap ignored" in app.dashboard.query_one(FlashLine).text
        App.notify(app, "a toast", timeout=30)                                 # the control
        assert await toasts(app, pilot) != []
        app.clear_notifications()
        monkeypatch.setattr(ProxyScreen, "poll", lambda self: self.show(proxy_status()))
        app.push_screen(ProxyScreen(tmp_home))
        await pilot.pause()
        app.notify("the proxy did not answer", severity="warning")
        assert await toasts(app, pilot) == []
        assert "the proxy did not answer" in app.screen.query_one(FlashLine).text


async def test_the_cooldown_preview_error_wraps_at_80_columns(tmp_home: Home) -> None:
    """A long ``✖`` preview wraps within the modal instead of losing its end (#28)."""
    from textual.widgets import Static

    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("c", *"soon")
        await pilot.pause()
        preview = app.screen.query_one("#cooldown-preview", Static)
        assert app.screen.preview.endswith("2026-11-29T18:30)")
        assert len(app.screen.preview) > preview.size.width and preview.size.height >= 2


async def test_cooldown_default_is_a_real_value_enter_benches_15m(tmp_home: Home) -> None:
    """The for/until field opens holding 15m (not a placeholder that looks filled in, #28):
    its preview shows at once and Enter benches for 15 minutes; typing replaces it."""
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, CooldownScreen)
        assert app.screen.preview == "until 00:15:00, in 15m"
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DashboardScreen)
        row = rows_by_id(tmp_home)["a1b2c3"]
        assert row["last_error_reset_at"] == NOW + 900 and row["last_status"] == "exhausted"
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("c", *"2h")                  # typed over the default, not after it
        await pilot.pause()
        assert app.screen.preview == "until 02:00:00, in 2h 0m"
