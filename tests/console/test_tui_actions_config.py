"""Pilot tests of the config editors (strategy, fallback chain, routing), the probe key,
the audit view and the help; plus the writer's pure parts. Each asserts on the screen and
on the file; config edits keep the operator's comments."""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml
from textual.widgets import DataTable, Input, OptionList

from screens.audit_view import AuditScreen, audit_rows
from screens.confirm import ConfirmScreen
from screens.dashboard_changes import cooldown_rows, move_row, reset_rows
from screens.fallback_edit import FallbackAddScreen
from screens.help import HelpScreen
from screens.probe_result import ProbeResultScreen
from screens.routing_edit import RoutingEditScreen
from screens.strategy import StrategyScreen, strategy_choices
from store.errors import BadInput, LockTimeout, StoreUnreadable
from store.ops.actions import Outcome
from store.ops.write import outcomes_of
from store.paths import Home
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.tui_sample import (
    NOW,
    app_for,
    audit_lines,
    config_home,
    key,
    on_row,
    sample_doc,
    settle,
    table_of,
    write_sample,
)
from tui.app.registry import help_scopes
from tui.demo.fake_provider import FakeProvider
from tui.services.writer import BAD_INPUT, FAILED, LOCK_TIMEOUT, OK, UNREADABLE, WriteRequest, run_write

pytestmark = pytest.mark.usefixtures("utc")

COMMENTS = ("# Operator notes: keep these.", "# the primary", "# cheap keys first",
            "# first choice when nous is out", "# watch the bill")





def comments_kept(home: Home, *, gone: tuple[str, ...] = ()) -> None:
    """Every operator comment is still there (those above a removed entry may leave with it)."""
    text = home.config.read_text()
    for c in COMMENTS:
        if c not in gone:
            assert c in text, c
    assert yaml.safe_load(text)["unknown_section"] == {"kept": True}


def config_rows(app: Any, table_id: str) -> list[list[str]]:
    t = app.screen.query_one(table_id, DataTable)
    return [[str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]


# ---------------------------------------------------------------- strategy

def test_strategy_choices_mark_the_current_one_and_offer_only_known_names() -> None:
    values = [v for v, _ in strategy_choices("round_robin")]
    assert values == ["fill_first", "round_robin", "random", "least_used", "default"]
    lines = dict(strategy_choices("round_robin"))
    assert lines["round_robin"].startswith("● round_robin") and "rotate" in lines["round_robin"]
    assert lines["fill_first"].startswith("  fill_first")
    assert dict(strategy_choices(None))["default"].startswith("●")
    assert not any(line.startswith("●") for line in dict(strategy_choices("quota_aware")).values())


async def test_strategy_picker_writes_config_with_comments_and_cancel_writes_nothing(tmp_home: Home) -> None:
    config_home(tmp_home)
    before = tmp_home.config.read_bytes()
    app = app_for(tmp_home)
    async with app.run_test(size=(110, 30)) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, StrategyScreen)
        assert app.screen.query_one(OptionList).highlighted == 3   # least_used, the current one
        await pilot.press("escape")
        await settle(app, pilot)
        assert tmp_home.config.read_bytes() == before
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("up", "up", "enter")                     # round_robin
        await settle(app, pilot)
        data = yaml.safe_load(tmp_home.config.read_text())
        assert data["credential_pool_strategies"] == {"openrouter": "round_robin"}
        comments_kept(tmp_home)
        assert "round_robin" in " ".join(table_of(app).row_texts("pool\x1fopenrouter"))
        # The pool header row works too; "default" removes the setting.
        table_of(app).move_to_key("pool\x1fopenrouter")
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("end", "enter")
        await settle(app, pilot)
        assert "credential_pool_strategies" not in yaml.safe_load(tmp_home.config.read_text())
    actions = [e["action"] for e in audit_lines(tmp_home)]
    assert actions == ["config.strategy", "config.strategy"]


# ---------------------------------------------------------------- fallback chain

async def test_fallback_editor_adds_refuses_duplicates_removes_and_moves(tmp_home: Home) -> None:
    config_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("v", "2")
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, FallbackAddScreen)
        await pilot.press("enter")
        await pilot.pause()
        assert form.error_text == "provider: is required"
        # A duplicate of an existing entry: store.config's message, inline; nothing written.
        before = tmp_home.config.read_bytes()
        form.query_one("#fb-provider", Input).value = "OpenRouter"
        form.query_one("#fb-model", Input).value = "anthropic/claude-sonnet-4"
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.screen is form and "already #1 in the fallback chain" in form.error_text
        assert form.error_text.startswith("model: ")
        # The primary cannot be its own fallback.
        form.query_one("#fb-provider", Input).value = "nous"
        form.query_one("#fb-model", Input).value = "hermes-4"
        await pilot.press("enter")
        await settle(app, pilot)
        assert "is the primary model" in form.error_text
        assert tmp_home.config.read_bytes() == before
        form.query_one("#fb-provider", Input).value = "xai"
        form.query_one("#fb-model", Input).value = "grok-4"
        form.query_one("#fb-key-env", Input).value = "XAI_KEY"
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.screen.id == "config"
        chain = yaml.safe_load(tmp_home.config.read_text())["fallback_providers"]
        assert chain[-1] == {"provider": "xai", "model": "grok-4", "key_env": "XAI_KEY"}
        assert [r[1:3] for r in config_rows(app, "#fallback-table")][-1] == ["xai", "grok-4"]
        comments_kept(tmp_home)
        # Move #3 up: the cursor follows the entry.
        table = app.screen.query_one("#fallback-table", DataTable)
        table.move_cursor(row=2)
        await pilot.press("K")
        await settle(app, pilot)
        chain = yaml.safe_load(tmp_home.config.read_text())["fallback_providers"]
        assert [e["model"] for e in chain] == ["anthropic/claude-sonnet-4", "grok-4", "local"]
        assert table.cursor_row == 1
        # Remove #1 after confirming; n first leaves it.
        table.move_cursor(row=0)
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "claude-sonnet-4" in app.screen.text
        await pilot.press("n")
        await settle(app, pilot)
        assert len(yaml.safe_load(tmp_home.config.read_text())["fallback_providers"]) == 3
        await pilot.press("x", "y")
        await settle(app, pilot)
        chain = yaml.safe_load(tmp_home.config.read_text())["fallback_providers"]
        assert [e["model"] for e in chain] == ["grok-4", "local"]
        # The comment above the removed entry described it, and may leave with it.
        comments_kept(tmp_home, gone=("# first choice when nous is out",))
    assert [e["action"] for e in audit_lines(tmp_home)] == [
        "config.fallback.add", "config.fallback.move", "config.fallback.remove"]


# ---------------------------------------------------------------- routing

async def test_routing_editor_sets_each_kind_and_unsets(tmp_home: Home) -> None:
    config_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("v", "3")
        await pilot.pause()
        keys = [r[0] for r in config_rows(app, "#routing-table")]
        assert keys == ["sort", "only", "ignore", "order", "require_parameters", "data_collection"]
        table = app.screen.query_one("#routing-table", DataTable)
        table.focus()
        table.move_cursor(row=0)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, RoutingEditScreen)
        assert [o.id for o in app.screen.query_one(OptionList).options] == ["price", "throughput", "latency"]
        await pilot.press("down", "down", "enter")
        await settle(app, pilot)
        table.move_cursor(row=3)
        await pilot.press("enter")                                 # Enter on a row edits it too
        await pilot.pause()
        await pilot.press(*"anthropic, google", "enter")
        await settle(app, pilot)
        table.move_cursor(row=4)
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("enter")                                 # true
        await settle(app, pilot)
        table.move_cursor(row=5)
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("down", "enter")                         # deny
        await settle(app, pilot)
        routing = yaml.safe_load(tmp_home.config.read_text())["provider_routing"]
        assert routing == {"sort": "latency", "ignore": ["together"], "order": ["anthropic", "google"],
                           "require_parameters": True, "data_collection": "deny"}
        assert ["order", "anthropic, google"] in config_rows(app, "#routing-table")
        # A list with a bad name is refused inline by store.config's parser.
        table.move_cursor(row=1)
        await pilot.press("e")
        await pilot.pause()
        before = tmp_home.config.read_bytes()
        await pilot.press(*"open ai", "enter")
        await pilot.pause()
        assert app.screen.error_text.startswith("value: only: provider name 'open ai' has a space")
        await pilot.press("escape")
        await pilot.pause()
        assert tmp_home.config.read_bytes() == before
        # Unset: x, y. An unset key cannot be removed again.
        table.move_cursor(row=2)
        await pilot.press("x", "y")
        await settle(app, pilot)
        assert "ignore" not in yaml.safe_load(tmp_home.config.read_text())["provider_routing"]
        assert app.screen.edit_reason("remove_entry") == "ignore is not set"
        comments_kept(tmp_home)


# ---------------------------------------------------------------- probe

async def test_probe_key_shows_verdicts_and_lifts_only_what_reopened(tmp_home: Home) -> None:
    now = time.time()
    tokens = {"r": "cdx-token-reopened-TUI0A", "l": "cdx-token-limited-TUI0B"}
    with FakeProvider() as fake:
        bench = dict(last_status="exhausted", last_status_at=now - 30, last_error_code=429,
                     last_error_reason="usage_limit_reached", last_error_reset_at=now + 7200)
        write_store(tmp_home, make_store({"openai-codex": [
            make_row("rrr111", label="reopens", token=tokens["r"], priority=0,
                     base_url=fake.url + "/backend-api", **bench),
            make_row("lll222", label="limited", token=tokens["l"], priority=1,
                     base_url=fake.url + "/backend-api", **bench),
            make_row("ok3333", label="fine", token="cdx-token-fine-TUI0C", priority=2),
        ]}))
        fake.usage(tokens["r"], 20.0)
        fake.usage(tokens["l"], 100.0)
        from tui.services.clock import FakeClock

        app = app_for(tmp_home, clock=FakeClock(now))
        async with app.run_test(size=(120, 30)) as pilot:
            await on_row(app, pilot, "openai-codex", "lll222")
            await pilot.press("p")
            await settle(app, pilot)
            screen = app.screen
            assert isinstance(screen, ProbeResultScreen)
            rows = {r[1]: r for r in screen.rows}
            assert rows["reopens"][3] == "✔ reopened" and "cooldown lifted" in rows["reopens"][4]
            assert rows["limited"][3] == "✖ still limited"
            assert rows["limited"][4] == "still limited (worst window 100% used)"
            assert rows["fine"][3] == "· not probed" and rows["fine"][4] == "not probed (ok)"
            assert "openai-codex has a usable credential" in screen.query_one("#probe-summary").render().plain
            text = app.export_screenshot()
            await pilot.press("escape")
            await pilot.pause()
            t = table_of(app)
            assert t.cell_text(key("openai-codex", "rrr111"), "status") == "● ok"
            assert t.cell_text(key("openai-codex", "lll222"), "status") == "◐ cooling"
    rows = {r["id"]: r for r in read_doc(tmp_home)["credential_pool"]["openai-codex"]}
    assert rows["rrr111"]["last_status"] is None and rows["rrr111"]["status_cleared_at"] == now
    assert rows["lll222"]["last_status"] == "exhausted"
    (entry,) = audit_lines(tmp_home)
    assert entry["action"] == "probe-lift" and entry["via"] == "tui"
    assert [c["id"] for c in entry["changes"]] == ["rrr111"]
    for token in tokens.values():
        assert token not in text and token not in tmp_home.audit.read_text()


# ---------------------------------------------------------------- audit view and help

def test_audit_rows_read_newest_first_and_word_each_change() -> None:
    entries = [
        {"time": NOW, "user": "ops", "host": "console", "via": "cli", "action": "reset", "pool": "openrouter",
         "changes": [{"id": "d4e5f6", "label": "backup", "before": {"last_status": "exhausted"},
                      "after": {"last_status": None}}], "notes": ["a reset is local"]},
        {"time": NOW + 60, "user": "ops", "host": "console", "via": "tui", "action": "config.strategy",
         "pool": "openrouter", "changes": [{"id": "credential_pool_strategies.openrouter",
                                            "label": "config.yaml", "before": {"value": None},
                                            "after": {"value": "random"}}]},
    ]
    rows = audit_rows(entries)
    assert rows[0][:5] == ("2026-01-01 00:01:00", "ops@console", "tui", "config.strategy", "openrouter")
    assert rows[0][6] == "— → random"
    assert rows[1][5] == "backup(d4e5f6)" and rows[1][6] == "exhausted → ok"


async def test_audit_view_lists_this_sessions_actions(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("L")
        await pilot.pause()
        assert isinstance(app.screen, AuditScreen) and app.screen.rows == []
        await pilot.press("escape")
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("r", "y")
        await settle(app, pilot)
        await pilot.press("L")
        await pilot.pause()
        (row,) = app.screen.rows
        assert row[2:7] == ("tui", "reset", "openrouter", "backup-key(d4e5f6)", "exhausted → ok")


async def test_help_lists_every_new_binding(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(140, 60)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one(DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        ids = {r[3] for r in rows}
        for _where, cls in help_scopes():
            for b in cls.BINDINGS:
                assert b.id and b.description, (cls.__name__, b)
                assert b.id in ids, b
        assert ["dashboard", "p", "Probe", "dashboard.probe"] in rows
        assert ["dashboard", "z", "Pause", "dashboard.pause"] in rows
        assert ["dashboard", "K", "Move up", "dashboard.move_up"] in rows
    all_ids = [b.id for _w, cls in help_scopes() for b in cls.BINDINGS]
    assert len(all_ids) == len(set(all_ids))


async def test_a_keymap_moves_an_action_key(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        app.set_keymap({"dashboard.reset": "R"})
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("r")
        await pilot.pause()
        assert app.screen.id == "dashboard"
        await pilot.press("R")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)


# ---------------------------------------------------------------- pure parts

def test_bulk_helpers_group_by_pool_and_check_in_the_fresh_document() -> None:
    doc = sample_doc()
    outs = reset_rows(doc, [("openrouter", "d4e5f6"), ("anthropic", "aa11bb"), ("openrouter", "0f0f0f")], NOW)
    assert [(o.pool, [c.id for c in o.changes]) for o in outs] == [
        ("openrouter", ["d4e5f6", "0f0f0f"]), ("anthropic", ["aa11bb"])]
    outs = cooldown_rows(doc, [("openrouter", "a1b2c3")], NOW + 60, NOW, None)
    assert doc["credential_pool"]["openrouter"][0]["last_error_reset_at"] == NOW + 60
    with pytest.raises(BadInput, match="already first"):
        move_row(doc, "openrouter", "a1b2c3", -1)
    with pytest.raises(BadInput, match="no credential with id zzz"):
        move_row(doc, "openrouter", "zzz", 1)
    move_row(doc, "openrouter", "a1b2c3", 1)
    assert [r["id"] for r in sorted(doc["credential_pool"]["openrouter"], key=lambda r: r["priority"])] == \
        ["d4e5f6", "a1b2c3", "0f0f0f"]


def test_run_write_classifies_failures_and_redacts_secrets(tmp_home: Home) -> None:
    secret = "sk-or-v1-SECRET0123456789abcdefZZZ9"
    req = WriteRequest(1, "testing", tmp_home.lock, secrets=(secret,))

    def boom(exc: Exception):
        def fn():
            raise exc
        return fn

    cases = [
        (LockTimeout(tmp_home.lock, 1), LOCK_TIMEOUT),
        (BadInput("--label", f"bad {secret}"), BAD_INPUT),
        (StoreUnreadable(tmp_home.auth, "truncated JSON"), UNREADABLE),
        (RuntimeError(f"kaboom {secret}"), FAILED),
    ]
    for exc, kind in cases:
        result = run_write(req, boom(exc), tmp_home, now=NOW)
        assert result.kind == kind and not result.ok
        assert secret not in (result.error or "") + (result.problem or "") + result.message()
        assert "Nothing was written" in result.message()
    bad = run_write(req, boom(BadInput("--label", "taken")), tmp_home, now=NOW)
    assert (bad.field, bad.problem) == ("--label", "taken")
    assert not tmp_home.audit.exists()
    ok = run_write(req, lambda: Outcome("reset", "openrouter"), tmp_home, now=NOW)
    assert ok.kind == OK and audit_lines(tmp_home)[0]["action"] == "reset"


def test_outcomes_of_every_shape() -> None:
    from store.config.edit import ConfigChange
    from store.ops.probe_report import ProbeReport

    o = Outcome("reset", "p")
    assert outcomes_of(o) == [o] and outcomes_of([o, None, [o]]) == [o, o]
    assert outcomes_of(ConfigChange("strategy", "k", None, "random", written=False)) == []
    assert outcomes_of(ConfigChange("strategy", "k", None, "random"))[0].action == "config.strategy"
    assert outcomes_of(ProbeReport("p", NOW, True)) == []
    assert outcomes_of(ProbeReport("p", NOW, True, outcome=o)) == [o]
    assert outcomes_of("something else") == []


async def test_writes_run_off_the_event_loop_and_report_back_on_it(tmp_home: Home) -> None:
    import threading

    write_sample(tmp_home)
    app = app_for(tmp_home)
    seen: dict[str, int] = {}
    async with app.run_test(size=(100, 30)) as pilot:
        loop_thread = threading.get_ident()

        def fn() -> Outcome:
            seen["fn"] = threading.get_ident()
            return Outcome("noop", "openrouter")

        def done(result: Any) -> bool:
            seen["done"] = threading.get_ident()
            return True

        assert app.writer.submit("testing", fn, on_done=done) is not None
        assert app.writer.busy
        await settle(app, pilot)
        assert not app.writer.busy
    assert seen["fn"] != loop_thread and seen["done"] == loop_thread
