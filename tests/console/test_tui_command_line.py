"""``:`` commands: one for every action that has a key, acting where its argument says (a row,
a pool, a sort order, a tab, a profile, an action to undo), with completion and history; and
the command palette shows each command's key."""

from __future__ import annotations

from typing import Any

import pytest
from textual.binding import Binding
from textual.widgets import Input, Static, TabbedContent

from screens.command_line import CommandLine
from screens.command_words import Target, Vocabulary, candidates, completed, parse, specs_from
from screens.commands import ConsoleCommands
from screens.config_view import ConfigScreen
from screens.confirm import ConfirmScreen
from screens.dashboard import DashboardScreen
from screens.help import HelpScreen, class_bindings
from store.paths import Home
from tests.tui_sample import app_for, key, notes, rows_by_id, settle, table_of, write_sample
from tui.app.console import HermesAdminApp

pytestmark = pytest.mark.usefixtures("utc")


def specs(profiles: bool = False) -> list:
    groups = [("app", class_bindings(HermesAdminApp)), ("dashboard", class_bindings(DashboardScreen))]
    return specs_from(groups, lambda b: b.key, profiles=profiles)


VOCAB = Vocabulary(
    targets=[Target("openrouter", "openrouter", "pool-or"),
             Target("openrouter", "openrouter", "r1", "a1b2c3", "primary"),
             Target("openrouter", "openrouter", "r2", "d4e5f6", "backup key"),
             Target("openrouter", "openrouter", "r3", "0f0f0f", "twin"),
             Target("openrouter", "openrouter", "r4", "1f1f1f", "twin"),
             Target("anthropic", "anthropic", "pool-an")],
    sorts=("priority", "status"), tabs=("strategies", "fallback"), undo_ids=("b", "a"))


def keyed_actions(classes: list[tuple[str, type]]) -> set[tuple[str, str]]:
    """(target, action) of every binding with an id that is not the app's own or the line itself."""
    return {(t, b.action.partition("(")[0]) for t, cls in classes for b in class_bindings(cls)
            if b.id and "." not in b.action and b.action not in ("command_line", "quit")}


def missing_commands(classes: list[tuple[str, type]], got: list) -> set[tuple[str, str]]:
    have = {(s.target, s.action) for s in got} | {("app", "back_or_quit")}   # q is :quit
    return keyed_actions(classes) - have


def test_every_action_with_a_key_is_a_command() -> None:
    classes = [("app", HermesAdminApp), ("dashboard", DashboardScreen)]
    got = specs()
    assert missing_commands(classes, got) == set()
    names = {s.name: s for s in got}
    assert {"reset", "cooldown", "remove", "move-up", "sort", "filter", "config", "help", "quit",
            "undo", "messages", "audit", "proxy", "fleet"} <= set(names)
    assert names["reset"].key == "r" and names["reset"].usage == "reset POOL [ROW]"
    assert names["quit"].action == "quit" and names["profile"].key == ""
    assert {s.name: s for s in specs(profiles=True)}["profile"].key == "P"
    # Negative control: a command list that lost one is caught.
    assert missing_commands(classes, [s for s in got if s.name != "probe"]) == {("dashboard", "probe")}


def test_parse_names_a_row_a_pool_or_says_why_not() -> None:
    got = specs()
    row = parse(":reset openrouter primary", got, VOCAB)
    assert not isinstance(row, str) and row.target.row_key == "r1"
    assert parse("reset openrouter d4e5f6", got, VOCAB).target.row_key == "r2"          # by id
    assert parse("reset openrouter 'backup key'", got, VOCAB).target.row_key == "r2"    # quoted label
    assert parse("reset openrouter", got, VOCAB).target.row_key == "pool-or"            # the pool
    assert parse("strategy anthropic", got, VOCAB).target.row_key == "pool-an"
    assert "use the id (0f0f0f, 1f1f1f)" in parse("remove openrouter twin", got, VOCAB)
    assert "no pool 'nope'" in parse("reset nope", got, VOCAB)
    assert "no row 'ghost' in openrouter" in parse("reset openrouter ghost", got, VOCAB)
    assert parse("sort status", got, VOCAB).args == ("status",)
    assert parse("sort sideways", got, VOCAB) == "sort by one of: priority, status"
    assert "takes no argument" in parse("wide please", got, VOCAB)
    assert "unknown command 'resett'" in parse("resett", got, VOCAB)
    assert "one home" in parse("profile team-a", got, VOCAB)
    assert parse("q", got, VOCAB).spec.name == "quit"                                   # an alias


def test_completion_of_names_and_arguments() -> None:
    got = specs()
    assert {"reset", "remove"} <= set(candidates("re", got, VOCAB))
    assert candidates("reset ", got, VOCAB) == ["openrouter", "anthropic"]
    assert candidates("reset openrouter ", got, VOCAB) == ["primary", "backup key", "twin", "a1b2c3",
                                                           "d4e5f6", "0f0f0f", "1f1f1f"]
    assert completed("so", got, VOCAB) == "sort "
    assert completed("sort s", got, VOCAB) == "sort status "
    assert completed("reset op", got, VOCAB) == "reset openrouter "
    assert completed("reset openrouter ba", got, VOCAB) == "reset openrouter 'backup key' "
    assert completed("undo ", got, VOCAB) is None or completed("undo ", got, VOCAB).startswith("undo ")
    assert completed("zzz", got, VOCAB) is None


async def command(app: Any, pilot: Any, text: str) -> None:
    await pilot.press("colon")
    await pilot.pause()
    assert isinstance(app.screen, CommandLine)
    app.screen.query_one(Input).value = text
    await pilot.press("enter")
    await pilot.pause()


async def test_reset_a_row_by_name_asks_then_writes(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await command(app, pilot, "reset openrouter backup-key")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "backup-key (id d4e5f6)" in app.screen.title_text
        await pilot.press("y")
        await settle(app, pilot)
        assert rows_by_id(tmp_home)["d4e5f6"]["last_status"] is None
        assert table_of(app).cursor_key == key("openrouter", "d4e5f6")     # the cursor went there
        # A pool: the cursor goes to its header, and the key's own rule applies there.
        await command(app, pilot, "reset anthropic")
        await settle(app, pilot)
        assert table_of(app).cursor_entry.is_header and table_of(app).cursor_entry.pool.key == "anthropic"


async def test_a_mistake_stays_on_the_line_and_sort_filter_config_help_undo_run(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await command(app, pilot, "reset nopool")
        assert isinstance(app.screen, CommandLine)
        assert "no pool 'nopool'" in str(app.screen.query_one("#command-error", Static).render())
        await pilot.press("escape")
        await command(app, pilot, "sort status")
        assert app.dashboard.sort == "status"
        await command(app, pilot, "filter cooling")
        assert app.dashboard.filter_text == "cooling"
        await pilot.press("escape")
        await command(app, pilot, "config fallback")
        assert isinstance(app.screen, ConfigScreen)
        assert app.screen.query_one(TabbedContent).active == "fallback"
        await command(app, pilot, "help reset")                   # from another view, too
        assert isinstance(app.screen, HelpScreen) and app.screen.query_one(Input).value == "reset"
        await pilot.press("escape")
        await pilot.pause()
        await command(app, pilot, "undo")
        assert "cannot undo" in notes(app)[-1]                    # nothing done yet: says so


async def test_history_and_tab_completion(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await command(app, pilot, "sort label")
        await command(app, pilot, "wide")
        await pilot.press("colon")
        await pilot.pause()
        box = app.screen.query_one(Input)
        await pilot.press(*"so")
        await pilot.press("up")
        assert box.value == "wide"
        await pilot.press("up")
        assert box.value == "sort label"
        await pilot.press("down", "down")
        assert box.value == "so"                                  # the line being typed is back
        await pilot.press("tab")
        assert box.value == "sort "
        await pilot.press(*"st", "tab")
        assert box.value == "sort status "
        hints = str(app.screen.query_one("#command-hints", Static).render())
        assert "sort ORDER  (o)" in hints
        await pilot.press("enter")
        await pilot.pause()
        assert app.dashboard.sort == "status"
        assert app.commands.history == ["sort label", "wide", "sort status"]


async def test_the_palette_shows_each_commands_key(tmp_home: Home, tmp_path) -> None:
    write_sample(tmp_home)
    keymap = tmp_path / "keymap.yaml"
    keymap.write_text("dashboard.reset: R\n")
    app = HermesAdminApp(tmp_home, watch=False, tick=False, keymap_file=keymap)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        cmds = {c.name: c for c in ConsoleCommands(app.screen).commands()}
        assert cmds["Reset cooldown"].key == "R"                   # the operator's key
        assert cmds["Help: keys"].key == "?" and cmds["Toggle wide columns"].key == "w"
        assert cmds["Config: Fallback chain"].key == "v 2"
        assert cmds["Command line"].key == ":"
        hits = [h async for h in ConsoleCommands(app.screen).search("reset cool")]
        assert hits and str(hits[0].prompt).endswith("  R")
        unkeyed = [n for n, c in cmds.items() if not c.key]
        assert unkeyed == ["Dashboard"]
        assert all(isinstance(b, Binding) for b in class_bindings(DashboardScreen))


async def _hint_lines(monkeypatch: pytest.MonkeyPatch, funnel: Any = None) -> list[str]:
    """The ``:`` line's hint for ``reset `` on a vocabulary with a pool name that holds a line break."""
    from textual.app import App

    if funnel is not None:
        monkeypatch.setattr("screens.command_line.shown", funnel)
    vocab = Vocabulary(targets=[Target("default/anthropic", "default/anthropic", "pool-a"),
                                Target("evil\nFORGED", "evil\nFORGED", "pool-e")],
                       sorts=("priority",), tabs=(), undo_ids=())
    app = App()
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(CommandLine(specs(), vocab))
        await pilot.pause()
        await pilot.press(*"reset ")
        await pilot.pause()
        return str(app.screen.query_one("#command-hints", Static).render()).splitlines()


async def test_the_hint_is_readable_and_a_name_cannot_start_a_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28: the hint read ``Reset cooldown\\x0adefault/anthropic``. The usage and the choices
    are two lines of ours; a line break inside a pool name is shown escaped, on its line."""
    lines = await _hint_lines(monkeypatch)
    assert len(lines) == 2, lines
    assert lines[0].startswith("reset POOL [ROW]") and "\\x0a" not in lines[0]
    assert lines[1].startswith("default/anthropic") and "evil\\x0aFORGED" in lines[1]


async def test_negative_control_a_funnel_that_lets_a_break_pass_gives_a_forged_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    lines = await _hint_lines(monkeypatch, funnel=lambda text: str(text))
    assert any(line.startswith("FORGED") for line in lines), lines
