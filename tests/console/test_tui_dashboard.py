"""Pilot tests of the dashboard with a fake clock and the watcher off.

Changes from "outside" are made through store.transaction (as any writer would)
and picked up with ``app.reload()``, the same path the watcher worker takes.
"""

from __future__ import annotations

import os

import pytest
import yaml

from store.model import pool_rows
from store.paths import Home
from store.pools import policy
from store.transaction import transaction
from tests.conftest import make_row, make_store, write_store
from tests.tui_sample import NOW, write_sample
from tui.app.console import HermesAdminApp
from tui.services.clock import FakeClock
from tui.widgets import Banner, CredentialTable, EmptyState, StatusBar

pytestmark = pytest.mark.usefixtures("utc")


def app_for(home: Home, clock: FakeClock | None = None, **kw) -> HermesAdminApp:
    return HermesAdminApp(home, clock=clock or FakeClock(NOW), watch=False, tick=False, **kw)


def key(pool: str, rid: str) -> str:
    return f"cred\x1f{pool}\x1f{rid}"


def table_of(app: HermesAdminApp) -> CredentialTable:
    return app.dashboard.query_one(CredentialTable)


def bench(home: Home, pool: str, rid: str, now: float, code: int = 429, **kw) -> None:
    with transaction(home) as doc:
        rows = pool_rows(doc, pool)
        row = next(r for r in rows if r["id"] == rid)
        policy.mark_exhausted(rows, row, now, code=code, **kw)


async def test_countdown_ticks_and_flips_to_ready_without_writing(tmp_home: Home) -> None:
    doc = make_store({"openrouter": [
        make_row("aaaaaa", label="one", priority=0, last_status="exhausted",
                 last_status_at=NOW - 3590, last_error_code=429),
        make_row("bbbbbb", label="two", priority=1),
    ]})
    write_store(tmp_home, doc)
    before = (tmp_home.auth.read_bytes(), os.stat(tmp_home.auth).st_mtime_ns)
    clock = FakeClock(NOW)
    app = app_for(tmp_home, clock)
    async with app.run_test(size=(100, 30)) as pilot:
        table = table_of(app)
        k = key("openrouter", "aaaaaa")
        assert table.cell_text(k, "left") == "10s"
        assert table.cell_text(k, "status") == "◐ cooling"
        assert table.cell_text(key("openrouter", "bbbbbb"), "pos") == "2←"
        clock.advance(1)
        app.dashboard.tick()
        await pilot.pause()
        assert table.cell_text(k, "left") == "9s"
        clock.advance(9)
        app.dashboard.tick()
        await pilot.pause()
        assert table.cell_text(k, "status") == "○ ready"
        assert table.cell_text(k, "left") == "—"
        # Back in the running: fill_first now picks it again, and the header counts moved.
        assert table.cell_text(k, "pos") == "1←"
        assert " ".join(table.row_texts("pool\x1fopenrouter")).split() == \
            ["▾", "openrouter", "fill_first", "1", "ok", "0", "cooling", "1", "ready", "0", "dead"]
        assert any(e.kind == "ready" and e.id == "aaaaaa" for e in app.events)
    assert (tmp_home.auth.read_bytes(), os.stat(tmp_home.auth).st_mtime_ns) == before


async def test_tick_updates_only_cells_whose_text_changed(tmp_home: Home, monkeypatch) -> None:
    doc = make_store({"openrouter": [
        make_row("aaaaaa", label="seconds", priority=0, last_status="exhausted",
                 last_status_at=NOW - 3030, last_error_code=429),        # 9m 30s: moves
        make_row("bbbbbb", label="days", priority=1, last_status="exhausted",
                 last_status_at=NOW, last_error_code=429,
                 last_error_reset_at=NOW + 6 * 86400 + 23 * 3600 + 1800),  # 6d 23h: still
        make_row("cccccc", label="fine", priority=2),
    ]})
    write_store(tmp_home, doc)
    clock = FakeClock(NOW)
    app = app_for(tmp_home, clock)
    async with app.run_test(size=(100, 30)) as pilot:
        table = table_of(app)
        a, b = key("openrouter", "aaaaaa"), key("openrouter", "bbbbbb")
        assert "9m 30s" in table.line_text(a)
        writes: list[tuple[str, str]] = []
        real_write, real_update = table.cells.write_countdown, table.cells.update_cell
        monkeypatch.setattr(table.cells, "write_countdown", lambda k, t: (
            writes.append((str(k), t)), real_write(k, t)))
        monkeypatch.setattr(table.cells, "update_cell", lambda *a, **kw: (
            writes.append(("update_cell", str(a))), real_update(*a, **kw)))
        clock.advance(1)
        app.dashboard.tick()
        await pilot.pause()
        assert writes == [(a, "9m 29s")]
        # ...and the screen shows it: the row's cached rendering was invalidated.
        assert "9m 29s" in table.line_text(a) and "6d 23h" in table.line_text(b)
        # Control: the spy does see every cell that moves (two hours later both change).
        writes.clear()
        clock.advance(3600 * 2)
        app.dashboard.tick()
        await pilot.pause()
        assert (b, "6d 21h") in writes and (a, "—") not in writes


async def test_countdown_render_cache_control(tmp_home: Home, monkeypatch) -> None:
    """Negative control: without the per-row version the cached line stays stale."""
    doc = make_store({"openrouter": [
        make_row("aaaaaa", priority=0, last_status="exhausted", last_status_at=NOW - 3030,
                 last_error_code=429),
        make_row("bbbbbb", priority=1),
    ]})
    write_store(tmp_home, doc)
    clock = FakeClock(NOW)
    app = app_for(tmp_home, clock)
    async with app.run_test(size=(100, 30)) as pilot:
        table = table_of(app)
        a = key("openrouter", "aaaaaa")
        assert "9m 30s" in table.line_text(a)

        class Forgetful(dict):
            def __setitem__(self, k, v) -> None:  # drops the version bump
                pass

        monkeypatch.setattr(table.cells, "versions", Forgetful(table.cells.versions))
        clock.advance(1)
        app.dashboard.tick()
        await pilot.pause()
        assert table.cell_text(a, "left") == "9m 29s"   # the data did change...
        assert "9m 30s" in table.line_text(a)           # ...but the screen would not


async def test_reload_reconciles_by_key_and_keeps_cursor_on_the_credential(tmp_home: Home,
                                                                           monkeypatch) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        table = table_of(app)
        third = key("openrouter", "0f0f0f")
        assert table.move_to_key(third)
        row_before = table.cursor_row
        cleared = []
        monkeypatch.setattr(table, "clear", lambda *a, **k: cleared.append(1))
        updates: list[tuple[str, str]] = []
        real = table.cells.update_cell
        monkeypatch.setattr(table.cells, "update_cell", lambda r, c, v, **kw: (
            updates.append((str(r), str(c))), real(r, c, v, **kw)))
        # Another process moves "third" to the top of its pool.
        with transaction(tmp_home) as doc:
            rows = pool_rows(doc, "openrouter")
            policy.move(rows, next(r for r in rows if r["id"] == "0f0f0f"), 0)
            doc["credential_pool"]["openrouter"] = rows
        app.reload()
        await pilot.pause()
        assert table.cursor_credential is not None and table.cursor_credential.id == "0f0f0f"
        assert table.cursor_row != row_before
        assert table.order.index(third) < table.order.index(key("openrouter", "a1b2c3"))
        assert not cleared
        # Untouched pool: not a single cell written.
        assert not [u for u in updates if "anthropic" in u[0]]
        # A row that vanishes is removed, the cursor stays at the same height.
        with transaction(tmp_home) as doc:
            doc["credential_pool"]["openrouter"] = [
                r for r in doc["credential_pool"]["openrouter"] if r["id"] != "0f0f0f"]
        app.reload()
        await pilot.pause()
        assert third not in table.order
        assert table.cursor_entry is not None


async def test_external_bench_updates_only_that_row(tmp_home: Home, monkeypatch) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        table = table_of(app)
        updates: list[str] = []
        real = table.cells.update_cell
        monkeypatch.setattr(table.cells, "update_cell", lambda r, c, v, **kw: (
            updates.append(str(r)), real(r, c, v, **kw)))
        bench(tmp_home, "openrouter", "a1b2c3", NOW, code=429, reason="rate_limit_exceeded")
        app.reload()
        await pilot.pause()
        k = key("openrouter", "a1b2c3")
        assert table.cell_text(k, "status") == "◐ cooling"
        # Cut or whole, depending on how wide the terminal lets the column grow.
        assert table.cell_text(k, "error").startswith("429 rate_limit_e")
        assert set(updates) <= {k, "pool\x1fopenrouter"}, updates
        assert any(e.kind == "exhausted" and e.id == "a1b2c3" and e.code == 429
                   for e in app.events)


async def test_filter_narrows_live_enter_selects_first_match_escape_clears(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        table = table_of(app)
        full = len(table.order)
        await pilot.press("slash")
        await pilot.press(*"cool")
        await pilot.pause()
        assert {table.entry(k).cred.id for k in table.order if not table.entry(k).is_header} == \
            {"d4e5f6", "0f0f0f"}
        await pilot.press("i", "n", "g", "space", "t", "h")
        await pilot.pause()
        assert [table.entry(k).cred.id for k in table.order if table.entry(k).cred] == ["0f0f0f"]
        await pilot.press("enter")
        await pilot.pause()
        assert app.focused is table
        assert table.cursor_credential.id == "0f0f0f"
        assert "filter “cooling th”" in app.dashboard.query_one(StatusBar).text
        await pilot.press("escape")
        await pilot.pause()
        assert len(table.order) == full
        # The filter on a word nothing has says so.
        await pilot.press("slash", *"zzz")
        await pilot.pause()
        assert "No credential matches “zzz”" in app.dashboard.query_one(EmptyState).text


async def test_no_home_says_where_it_looked_and_how_to_add(tmp_path) -> None:
    home = Home(tmp_path / "nowhere")
    app = app_for(home)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        text = app.dashboard.query_one(EmptyState).text
        assert f"No Hermes home at {home.root}" in text
        assert "$HERMES_HOME" in text and "~/.hermes" in text
        assert f"hermes-admin --home {home.root} add openrouter --api-key -" in text
        assert "hermes auth add" in text
    assert not home.root.exists()  # looking never creates it


async def test_no_store_and_empty_store(tmp_home: Home) -> None:
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        text = app.dashboard.query_one(EmptyState).text
        assert f"{tmp_home.auth} does not exist" in text and "--api-key -" in text
        write_store(tmp_home, make_store({}))
        app.reload()
        await pilot.pause()
        assert "has no credential pools yet" in app.dashboard.query_one(EmptyState).text
    assert not (tmp_home.root / "auth.lock").exists()


async def test_corrupt_store_keeps_last_good_view_marked_stale(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        table = table_of(app)
        rows = len(table.order)
        tmp_home.auth.write_bytes(b'{"credential_pool": {"openrouter": [')
        app.reload()
        await pilot.pause()
        banner = app.dashboard.query_one(Banner)
        assert banner.has_class("-shown") and banner.has_class("-error")
        assert str(tmp_home.auth) in banner.text and "invalid JSON" in banner.text
        assert "STALE" in banner.text and "STALE" in app.dashboard.query_one(StatusBar).text
        assert len(table.order) == rows and table.display
        assert any(e.kind == "notice" and "unreadable" in e.text for e in app.events)
        # Fixed: the banner goes and the view is live again.
        write_sample(tmp_home)
        app.reload()
        await pilot.pause()
        assert not banner.has_class("-shown")
        assert "STALE" not in app.dashboard.query_one(StatusBar).text
    assert tmp_home.auth.read_bytes().startswith(b"{")


async def test_corrupt_store_from_the_start(tmp_home: Home) -> None:
    tmp_home.auth.write_bytes(b"")
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert "file is empty" in app.dashboard.query_one(Banner).text
        assert "cannot be read" in app.dashboard.query_one(EmptyState).text
    assert tmp_home.auth.read_bytes() == b""


async def test_half_written_config_keeps_last_good_with_warning(tmp_home: Home) -> None:
    write_sample(tmp_home)
    tmp_home.config.write_text("credential_pool_strategies:\n  openrouter: round_robin\n")
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        header = " ".join(table_of(app).row_texts("pool\x1fopenrouter"))
        assert "round_robin" in header
        tmp_home.config.write_text("credential_pool_strategies:\n  openrouter: [least_u")
        app.reload()
        await pilot.pause()
        banner = app.dashboard.query_one(Banner).text
        assert str(tmp_home.config) in banner and "last good config" in banner
        assert "round_robin" in " ".join(table_of(app).row_texts("pool\x1fopenrouter"))
        tmp_home.config.write_text("credential_pool_strategies:\n  openrouter: least_used\n")
        app.reload()
        await pilot.pause()
        assert "least_used" in " ".join(table_of(app).row_texts("pool\x1fopenrouter"))
        assert "last good config" not in app.dashboard.query_one(Banner).text


async def test_pause_holds_updates_until_resumed(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        table = table_of(app)
        k = key("openrouter", "a1b2c3")
        await pilot.press("z")
        bench(tmp_home, "openrouter", "a1b2c3", NOW)
        app.reload()
        await pilot.pause()
        assert table.cell_text(k, "status") == "● ok"
        assert "PAUSED (1 held)" in app.dashboard.query_one(StatusBar).text
        await pilot.press("z")
        await pilot.pause()
        assert table.cell_text(k, "status") == "◐ cooling"


async def test_wide_toggle_and_sort_keep_the_cursor(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        table = table_of(app)
        table.move_to_key(key("openrouter", "d4e5f6"))
        await pilot.press("w")
        await pilot.pause()
        assert table.wide and "message" in [c.value for c in table.columns]
        assert table.cursor_credential.id == "d4e5f6"
        assert table.cell_text(key("openrouter", "d4e5f6"), "message") == "Insufficient credits"
        await pilot.press("o", "o")  # status order, then time left
        await pilot.pause()
        assert table.cursor_credential.id == "d4e5f6"
        assert app.dashboard.sort == "left"


async def test_read_only_is_announced(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home, read_only=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert app.read_only
        assert "READ-ONLY" in app.dashboard.query_one(StatusBar).text


async def test_dashboard_session_leaves_store_byte_identical(tmp_home: Home) -> None:
    # Includes an elapsed cooldown: showing it "ready" must not be written back.
    doc = make_store({"openrouter": [
        make_row("aaaaaa", priority=0, last_status="exhausted", last_status_at=NOW - 7200,
                 last_error_code=429),
        make_row("bbbbbb", priority=1, token="sk-or-v1-0123456789abcdefAAA1"),
    ]})
    write_store(tmp_home, doc)
    tmp_home.config.write_text("credential_pool_strategies:\n  openrouter: round_robin\n")
    listing = sorted(os.listdir(tmp_home.root))
    snap = {p: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in (tmp_home.auth, tmp_home.config)}
    clock = FakeClock(NOW)
    app = app_for(tmp_home, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        for keys in (("down", "enter"), ("escape",), ("w", "e", "o", "z", "z"), ("v",),
                     ("escape", "question_mark"), ("escape",)):
            await pilot.press(*keys)
            clock.advance(30)
            app.dashboard.tick()
            app.reload()
            await pilot.pause()
        assert table_of(app).cell_text(key("openrouter", "aaaaaa"), "status") == "○ ready"
    assert {p: (p.read_bytes(), os.stat(p).st_mtime_ns) for p in snap} == snap
    # The one new file is hermes-admin's own settings: the view the operator changed (w, o),
    # kept for the next session (#28); nothing of Hermes's.
    assert sorted(set(os.listdir(tmp_home.root)) - {"hermes-admin.yaml"}) == listing
    assert list(yaml.safe_load((tmp_home.root / "hermes-admin.yaml").read_text())) == ["console"]
    # Control: the same check does notice a write through the store's own path.
    with transaction(tmp_home) as d:
        d["credential_pool"]["openrouter"][0]["request_count"] = 1
    assert (tmp_home.auth.read_bytes(), os.stat(tmp_home.auth).st_mtime_ns) != snap[tmp_home.auth]


async def test_labels_from_the_store_are_shown_as_written_never_as_markup(tmp_home: Home) -> None:
    write_store(tmp_home, make_store({"openrouter": [
        make_row("aaaaaa", label="[bold]team[/]", priority=0),
        make_row("bbbbbb", label="ops[1]", priority=1, last_error_reason="[/oops]",
                 last_status="exhausted", last_status_at=NOW, last_error_code=429),
    ]}))
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        table = table_of(app)
        assert "[bold]team[/]" in table.line_text(key("openrouter", "aaaaaa"))
        assert "429 [/oops]" in table.line_text(key("openrouter", "bbbbbb"))
        await pilot.press("w", "down", "enter")
        await pilot.pause()
        assert "[/oops]" in "\n".join(" ".join(x) for x in app.screen.lines)


async def test_off_screen_countdowns_are_fresh_when_scrolled_into_view(tmp_home: Home) -> None:
    rows = [make_row(f"{i:06x}", label=f"k{i:03d}", priority=i, last_status="exhausted",
                     last_status_at=NOW - 3000 - i, last_error_code=429) for i in range(60)]
    write_store(tmp_home, make_store({"openrouter": rows}))
    clock = FakeClock(NOW)
    app = app_for(tmp_home, clock)
    async with app.run_test(size=(100, 20)) as pilot:
        table = table_of(app)
        far = key("openrouter", f"{59:06x}")
        assert table.line_text(far) == ""          # off screen
        clock.advance(5)
        app.dashboard.tick()
        await pilot.pause()
        await pilot.press("ctrl+end")
        await pilot.pause()
        # TTL 3600 s, benched 3059 s before NOW, 5 s later: 536 s left.
        assert "8m 56s" in table.line_text(far)


async def test_the_console_freezes_its_long_lived_heap_once_the_first_home_is_shown(
        tmp_home: Home, monkeypatch) -> None:
    import gc

    from screens.dashboard import DashboardScreen
    write_sample(tmp_home)
    asked: list[str | None] = []
    real_set_timer = DashboardScreen.set_timer
    monkeypatch.setattr(DashboardScreen, "set_timer", lambda self, delay, cb=None, **kw: (
        asked.append(kw.get("name")), real_set_timer(self, delay, cb, **kw))[1])
    before = gc.get_freeze_count()
    try:
        # Control first: a test app (freeze_heap off) never asks for it.
        app = HermesAdminApp(tmp_home, clock=FakeClock(NOW), watch=False, tick=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
        assert "settle-heap" not in asked and gc.get_freeze_count() == before
        app = HermesAdminApp(tmp_home, clock=FakeClock(NOW), watch=False, tick=False,
                             freeze_heap=True)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            assert asked.count("settle-heap") == 1 and not app.freeze_heap
            for _ in range(100):                 # bounded: the freeze waits ~1 s
                if gc.get_freeze_count() > before:
                    break
                await pilot.pause(0.05)
            assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()
