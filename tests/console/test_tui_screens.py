"""Pilot tests of the detail, help and config screens, the bindings and the palette."""

from __future__ import annotations

import pytest
from textual.binding import Binding
from textual.widgets import DataTable

from screens.commands import ConsoleCommands
from screens.config_view import ConfigScreen, strategy_rows
from screens.dashboard import DashboardScreen
from screens.detail import DetailScreen, detail_lines, is_secret_field, masked_row
from screens.help import HelpScreen
from store.paths import Home
from store.pools.view import build_pools
from store.transaction import transaction
from tests.tui_sample import CANARY, NOW, sample_doc, write_sample
from tui.app.console import HermesAdminApp
from tui.services.clock import FakeClock
from tui.widgets import CredentialTable

pytestmark = pytest.mark.usefixtures("utc")


def app_for(home: Home, clock: FakeClock | None = None, **kw) -> HermesAdminApp:
    return HermesAdminApp(home, clock=clock or FakeClock(NOW), watch=False, tick=False, **kw)


def detail_text(screen: DetailScreen) -> str:
    return "\n".join(" | ".join(line) for line in screen.lines)


def test_secret_fields_are_masked_but_not_the_fingerprint() -> None:
    for name in ("access_token", "refresh_token", "agent_key", "api_key", "client_secret",
                 "id_token"):
        assert is_secret_field(name), name
    for name in ("secret_fingerprint", "label", "auth_type", "source"):
        assert not is_secret_field(name), name
    row = {"access_token": CANARY, "secret_fingerprint": "sha256:0123456789abcdef",
           "nested": {"refresh_token": CANARY, "other": 1}}
    shown = masked_row(row)
    assert CANARY not in repr(shown)
    assert shown["access_token"] == "sk-or-…XYZ9"
    assert shown["secret_fingerprint"] == "sha256:0123456789abcdef"
    assert shown["nested"]["other"] == 1


def test_detail_lines_list_every_field_and_explain_the_reset_time() -> None:
    pv = build_pools(sample_doc(), now=NOW)[1]
    third = next(cv for cv in pv.credentials if cv.id == "0f0f0f")
    lines = {name: (value, meaning) for name, value, meaning in detail_lines(third, NOW)}
    for field in third.row:
        if field not in ("model_cooldowns",):
            assert field in lines, field
    raw, meaning = lines["last_error_reset_at"]
    assert raw == str((NOW + 95) * 1000)           # the stored value, as stored (ms)
    assert "2026-01-01 00:01:35 local" in meaning and "in 1m 35s" in meaning
    assert lines["model_cooldowns.openai/gpt-5"][1].endswith("in 10m")
    assert lines["effective status"][0] == "◐ cooling"
    rule, meaning = lines["countdown rule"]         # which rule gave it, and which Hermes
    assert rule.startswith("the provider's reset time") and "not told" in rule and "Hermes rule" in meaning
    assert CANARY not in repr(detail_lines(
        next(cv for cv in pv.credentials if cv.id == "d4e5f6"), NOW))


async def test_detail_screen_follows_store_and_clock(tmp_home: Home) -> None:
    write_sample(tmp_home)
    clock = FakeClock(NOW)
    app = app_for(tmp_home, clock)
    async with app.run_test(size=(100, 40)) as pilot:
        table = app.dashboard.query_one(CredentialTable)
        table.move_to_key("cred\x1fopenrouter\x1fd4e5f6")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        text = detail_text(app.screen)
        assert "custom_note" in text and '{"team": "ops"}' in text   # unknown field kept
        assert "sk-or-…XYZ9" in text and CANARY not in text
        assert "insufficient_credits" in text
        # The store changes underneath: the open detail shows it.
        with transaction(tmp_home) as doc:
            doc["credential_pool"]["openrouter"][1]["last_error_message"] = "topped up?"
        app.reload()
        await pilot.pause()
        assert "topped up?" in detail_text(app.screen)
        with transaction(tmp_home) as doc:
            del doc["credential_pool"]["openrouter"][1]
        app.reload()
        await pilot.pause()
        assert "REMOVED" in app.screen.title_text
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)


async def test_help_lists_every_binding_from_the_bindings(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one(DataTable)
        ids = {str(table.get_row_at(i)[3]) for i in range(table.row_count)}
        for cls in (HermesAdminApp, DashboardScreen, CredentialTable, DetailScreen,
                    ConfigScreen, HelpScreen):
            for b in cls.BINDINGS:
                assert b.id in ids, b
        # Generated, not hand-written: a remapped key shows its new key.
        await pilot.press("escape")
        app.set_keymap({"dashboard.wide": "W"})
        await pilot.press("question_mark")
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert ["dashboard", "W", "Wide", "dashboard.wide"] in rows


def test_every_binding_has_an_id_and_a_description() -> None:
    classes = (HermesAdminApp, DashboardScreen, CredentialTable, DetailScreen, ConfigScreen,
               HelpScreen)
    for cls in classes:
        for b in cls.BINDINGS:
            assert isinstance(b, Binding) and b.id and b.description, (cls.__name__, b)
    ids = [b.id for cls in classes for b in cls.BINDINGS]
    assert len(ids) == len(set(ids))


async def test_config_views_flag_unknown_strategies_and_show_chains(tmp_home: Home) -> None:
    write_sample(tmp_home)
    tmp_home.config.write_text(
        "credential_pool_strategies:\n  openrouter: quota_aware  # from the docs\n"
        "  nous: round_robin\n"
        "fallback_providers:\n  - provider: openrouter\n    model: anthropic/claude-sonnet-4\n"
        "  - provider: custom\n    model: local\n    base_url: http://localhost:8000/v1/\n"
        "    key_env: MY_LOCAL_KEY\n"
        "fallback_model:\n  provider: openrouter\n  model: anthropic/claude-sonnet-4\n"
        "provider_routing:\n  sort: price\n  ignore: [together]\n"
        "auxiliary:\n  vision:\n    provider: auto\n    fallback_chain:\n"
        "      - provider: openrouter\n        model: google/gemini-3-flash-preview\n"
        "        timeout: 240\n")
    app = app_for(tmp_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("v")
        await pilot.pause()
        assert isinstance(app.screen, ConfigScreen)

        def rows(table_id: str) -> list[list[str]]:
            t = app.screen.query_one(table_id, DataTable)
            return [[str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]

        strat = {r[0]: r for r in rows("#strategies-table")}
        assert strat["openrouter"][2] == "fill_first" and "unknown" in strat["openrouter"][3]
        assert strat["nous"][1] == "round_robin" and "no credentials" in strat["nous"][3]
        assert strat["anthropic"][2] == "fill_first"
        chain = rows("#fallback-table")
        # Merged and de-duplicated: the legacy fallback_model repeats entry 1.
        assert [r[1:3] for r in chain] == [["openrouter", "anthropic/claude-sonnet-4"],
                                           ["custom", "local"]]
        assert chain[1][4] == "$MY_LOCAL_KEY"
        await pilot.press("3")
        assert ["sort", "price"] in rows("#routing-table")
        assert ["ignore", "together"] in rows("#routing-table")
        await pilot.press("4")
        aux = rows("#auxiliary-table")
        assert aux[0][:3] == ["vision", "primary", "auto"]
        assert aux[1][2:] == ["openrouter", "google/gemini-3-flash-preview", "240"]
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)


def test_strategy_rows_without_state() -> None:
    assert strategy_rows(None) == []


async def test_command_palette_lists_screens_and_runs_them(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        provider = ConsoleCommands(app.screen)
        names = [c.name for c in provider.commands()]
        for expected in ("Help: keys", "Filter credentials", "Toggle wide columns",
                         "Config: Fallback chain", "Config: Routing", "Config: Auxiliary",
                         "Pause / resume live updates", "Toggle events timeline"):
            assert expected in names
        hits = [h async for h in provider.search("routing")]
        assert hits and "Routing" in str(hits[0].text)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"config: routing")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert isinstance(app.screen, ConfigScreen)
        from textual.widgets import TabbedContent

        assert app.screen.query_one(TabbedContent).active == "routing"
