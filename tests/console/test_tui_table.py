"""The Line API credential table: cost follows what changed, and the htop/k9s habits.

Render work is counted with a spy on the table's painter (``render_row``: one call =
one row turned into a Strip). No timing anywhere: counts and screen text only.
"""

from __future__ import annotations

import hashlib
from typing import Any

from store.paths import Home
from store.redaction.fingerprints import fingerprint
from store.transaction import transaction
from tests.conftest import make_row, make_store, write_store
from tests.tui_sample import NOW, write_sample
from tui.app.console import HermesAdminApp
from tui.services.clock import FakeClock
from tui.widgets import CredentialTable
from tui.widgets.table_rows import RowStore

SIZE = (140, 45)


def app_for(home: Home, clock: FakeClock | None = None, **kw: Any) -> HermesAdminApp:
    kw.setdefault("tick", False)
    return HermesAdminApp(home, clock=clock or FakeClock(NOW), watch=False, **kw)


def key(pool: str, rid: str) -> str:
    return f"cred\x1f{pool}\x1f{rid}"


def table_of(app: HermesAdminApp) -> CredentialTable:
    return app.dashboard.query_one(CredentialTable)


def token(i: int) -> str:
    return "sk-or-v1-" + hashlib.sha256(str(i).encode()).hexdigest()[:40]


def big_home(home: Home, n: int = 1000, pools: int = 20, *, cooling=lambda i: i % 2 == 0) -> None:
    """n credentials over *pools*; the cooling ones have 1-50 minutes left (seconds tick)."""
    per = n // pools
    cp: dict[str, list] = {}
    for i in range(n):
        p = f"pool{i // per:02d}"
        rows = cp.setdefault(p, [])
        extra: dict[str, Any] = {}
        if cooling(i):
            extra = dict(last_status="exhausted", last_status_at=NOW - 3010 - (i % 500),
                         last_error_code=429, last_error_reason="rate_limit_exceeded")
        rows.append(make_row(f"{i:06x}", label=f"key-{i:05d}", priority=len(rows),
                             token=token(i), **extra))
    write_store(home, make_store(cp))


def spy_renders(table: CredentialTable, monkeypatch) -> list[str]:
    calls: list[str] = []
    real = table.painter.render_row

    def counted(row_key: str, cursor: bool):
        calls.append(row_key)
        return real(row_key, cursor)

    monkeypatch.setattr(table.painter, "render_row", counted)
    return calls


async def test_one_row_reconcile_at_1000_rows_renders_one_row(tmp_home: Home, monkeypatch) -> None:
    big_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = table_of(app)
        assert len(table.order) == 1020
        calls = spy_renders(table, monkeypatch)
        target = key("pool00", f"{3:06x}")            # on screen, not under the cursor

        async def relabel(label: str) -> None:
            with transaction(tmp_home) as doc:
                doc["credential_pool"]["pool00"][3]["label"] = label   # same length
            app.reload()
            await pilot.pause()

        await relabel("key-XXXXX")
        assert calls == [target]
        assert "key-XXXXX" in table.line_text(target)
        # Scrolling away and back reuses the cached strips: nothing is rendered again
        # (the cursor row aside, which only moves when the cursor does).
        calls.clear()
        table.scroll_to(y=200, animate=False, immediate=True)
        await pilot.pause()
        table.scroll_to(y=0, animate=False, immediate=True)
        await pilot.pause()
        first_page = set(table.order[:40])
        assert not first_page & set(calls)
        # Negative control: a reconcile that invalidated the whole cache (every row
        # re-rendered, as DataTable's table-wide cache did) is caught by the same spy.
        calls.clear()
        def repaint_all(keys) -> None:
            table.painter.strips.clear()
            table.refresh()

        monkeypatch.setattr(table, "refresh_rows", repaint_all)
        await relabel("key-YYYYY")
        assert len(calls) >= 40 and calls != [target]


async def test_tick_renders_only_visible_cooling_rows(tmp_home: Home, monkeypatch) -> None:
    big_home(tmp_home)
    clock = FakeClock(NOW)
    app = app_for(tmp_home, clock)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = table_of(app)
        visible = [table.order[i] for i in table.visible_range()]
        cooling = {k for k in visible if k in table.cooling_keys()}
        assert 10 < len(cooling) < len(visible)
        calls = spy_renders(table, monkeypatch)
        clock.advance(1)
        app.dashboard.tick()
        await pilot.pause()
        assert set(calls) == cooling and len(calls) == len(cooling)
        # Every cooling row off screen kept its old countdown (brought up to date on scroll).
        assert len(table.cooling_keys()) == 500


async def test_one_row_reload_walks_only_its_row_and_keeps_the_order(tmp_home: Home,
                                                                     monkeypatch) -> None:
    big_home(tmp_home)
    with transaction(tmp_home):
        pass  # the file in the writer's own layout: the next write then moves one row's bytes
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = table_of(app)
        taken: list[str] = []
        rebuilt: list[int] = []
        real_take, real_order = table.rows.take, table.rows.rebuild_order
        monkeypatch.setattr(table.rows, "take", lambda e, *a: (taken.append(e.key), real_take(e, *a))[1])
        monkeypatch.setattr(table.rows, "rebuild_order", lambda: (rebuilt.append(1), real_order())[1])
        order = table.order
        row = key("pool07", f"{7 * 50 + 3:06x}")
        with transaction(tmp_home) as doc:
            doc["credential_pool"]["pool07"][3]["label"] = "relabelled"
        app.reload()
        await pilot.pause()
        # Only the written row (and its pool's header, whose counts it may move) is looked
        # at; the 1,020-row order is not rebuilt.
        assert taken == ["pool\x1fpool07", row] and rebuilt == []
        assert table.order == order
        assert table.cell_text(row, "label") == "relabelled"
        # Control: a write that moves a row walks its pool whole and rebuilds the order,
        # and the same spies see it.
        taken.clear()
        with transaction(tmp_home) as doc:
            rows = doc["credential_pool"]["pool07"]
            rows[0]["priority"], rows[1]["priority"] = 1, 0
        app.reload()
        await pilot.pause()
        assert len(taken) == 51 and rebuilt
        assert table.order.index(key("pool07", f"{7 * 50 + 1:06x}")) < \
            table.order.index(key("pool07", f"{7 * 50:06x}"))


async def test_tick_splices_the_countdown_and_repaints_only_those_lines(tmp_home: Home,
                                                                       monkeypatch) -> None:
    big_home(tmp_home)
    clock = FakeClock(NOW)
    app = app_for(tmp_home, clock)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = table_of(app)
        cooling = [table.order[i] for i in table.visible_range()
                   if table.order[i] in table.cooling_keys()]
        frames: list[str] = []
        real_frame = table.painter.frame
        monkeypatch.setattr(table.painter, "frame", lambda k, *a: (frames.append(k), real_frame(k, *a))[1])
        regions: list = []
        real_refresh = table.refresh
        monkeypatch.setattr(table, "refresh", lambda *r, **kw: (regions.extend(r),
                                                                real_refresh(*r, **kw))[1])
        before = {k: table.line_text(k) for k in cooling}
        clock.advance(1)
        app.dashboard.tick()
        await pilot.pause()
        # Every visible countdown moved on screen...
        assert all(table.line_text(k) != before[k] for k in cooling)
        # ...without rebuilding any row's other cells (the cached frame takes the new text)...
        assert frames == []
        # ...and only their lines were marked for repaint.
        assert len(regions) == len(cooling) and {r.height for r in regions} == {1}
        top = int(table.scroll_y)
        assert {r.y for r in regions} == {table.order.index(k) - top + 1 for k in cooling}
        # Negative control: a tick that had to rebuild rows is seen by the same spy.
        table.painter.frames.clear()
        clock.advance(1)
        app.dashboard.tick()
        await pilot.pause()
        assert set(frames) == set(cooling)


async def test_first_fill_formats_only_the_rows_on_screen_with_exact_widths(tmp_home: Home,
                                                                            monkeypatch) -> None:
    # Labels of every length, so the widths depend on rows far off screen.
    big_home(tmp_home)
    with transaction(tmp_home) as doc:
        doc["credential_pool"]["pool19"][-1]["label"] = "a-much-longer-label-" + "x" * 12
    formatted: list[str] = []
    real_cells = RowStore.format_row
    monkeypatch.setattr(RowStore, "format_row",
                        lambda self, e, *a: (formatted.append(e.key), real_cells(self, e, *a))[1])
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = table_of(app)
        shown = {table.order[i] for i in table.visible_range()}
        creds = {k for k in formatted if k.startswith("cred")}
        assert creds and creds <= shown | {table.cursor_key}
        widths = [c.width for c in table.columns]
        # The longest label (last row of the last pool, never shown) sized its column.
        assert table.columns[1].width == len("a-much-longer-label-" + "x" * 12)
        # Scrolling formats the rows that come into view, and only those.
        formatted.clear()
        table.scroll_to(y=500, animate=False, immediate=True)
        await pilot.pause()
        assert set(formatted) <= {table.order[i] for i in table.visible_range()} and formatted
        # Every row formatted (the control: the spy sees all 1,000): same widths, exact.
        formatted.clear()
        for k in table.order:
            table.row_texts(k)
        table.relayout()
        assert len([k for k in formatted if k.startswith("cred")]) > 900
        assert [c.width for c in table.columns] == widths


async def test_tick_sleeps_while_no_cooling_row_is_on_screen(tmp_home: Home) -> None:
    # 200 fine rows, then 20 cooling ones far below the first screen.
    big_home(tmp_home, n=220, pools=1, cooling=lambda i: i >= 200)
    app = app_for(tmp_home, tick=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = table_of(app)
        assert table.cooling_keys() and not table.visible_cooling()
        # Asleep: at most a one-shot timer for when the first off-screen cooldown ends.
        clock = table.countdowns
        assert not clock.ticking and (clock.timer is None or clock.timer.name == "flip")
        # Control: with a cooling row on screen, the same table ticks.
        table.move_cursor(row=len(table.order) - 1)
        await pilot.pause()
        assert table.visible_cooling() and table.countdowns.ticking and table.countdowns.timer.name == "countdown"


async def test_fingerprints_sharing_prefix_and_last4_differ_at_80_columns(tmp_home: Home) -> None:
    a = "sk-or-v1-" + "a" * 24 + "1111" + "Q9Z2"
    b = "sk-or-v1-" + "a" * 24 + "2222" + "Q9Z2"
    assert fingerprint(a) == fingerprint(b)          # the usual form cannot tell them apart
    write_store(tmp_home, make_store({"openrouter": [
        make_row("aaaaaa", priority=0, token=a), make_row("bbbbbb", priority=1, token=b),
        make_row("cccccc", priority=2, token="sk-or-v1-" + "c" * 32)]}))
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = table_of(app)
        fa = table.cell_text(key("openrouter", "aaaaaa"), "fingerprint")
        fb = table.cell_text(key("openrouter", "bbbbbb"), "fingerprint")
        # The shortest tail that tells them apart: five characters here.
        assert fa != fb and fa.endswith("…1Q9Z2") and fb.endswith("…2Q9Z2")
        assert a not in table.line_text(key("openrouter", "aaaaaa"))
        # An unclashing key keeps the usual four.
        assert table.cell_text(key("openrouter", "cccccc"), "fingerprint").endswith("…cccc")


async def test_resize_leaves_no_stale_characters(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        table = table_of(app)
        wide = table.columns
        await pilot.resize_terminal(70, 30)
        await pilot.pause()
        assert table.columns != wide
        for y in range(len(table.order) + 1):
            line = table.render_line(y)
            assert line.cell_length == table.scrollable_content_region.width == 70


async def test_pools_fold_and_brackets_jump(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        table = table_of(app)
        assert table.cursor_key == key("anthropic", "aa11bb")
        await pilot.press("right_square_bracket")
        assert table.cursor_key == "pool\x1fopenrouter"
        await pilot.press("left_square_bracket")
        assert table.cursor_key == "pool\x1fanthropic"
        await pilot.press("enter")                      # fold anthropic
        await pilot.pause()
        assert key("anthropic", "aa11bb") not in table.order
        assert table.row_texts("pool\x1fanthropic")[0] == "▸"
        assert table.cursor_key == "pool\x1fanthropic"
        await pilot.press("right")                      # unfold
        await pilot.pause()
        assert key("anthropic", "aa11bb") in table.order
        assert table.row_texts("pool\x1fanthropic")[0] == "▾"
        await pilot.press("right_square_bracket", "left")   # fold openrouter with ←
        await pilot.pause()
        assert [k for k in table.order if "openrouter" in k] == ["pool\x1fopenrouter"]
        # A reload keeps the fold.
        app.reload()
        await pilot.pause()
        assert [k for k in table.order if "openrouter" in k] == ["pool\x1fopenrouter"]


async def test_space_tags_and_moves_down(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        table = table_of(app)
        assert table.move_to_key(key("openrouter", "a1b2c3"))
        await pilot.press("space", "space")
        await pilot.pause()
        assert app.dashboard.operator.tags == {("openrouter", "a1b2c3"), ("openrouter", "d4e5f6")}
        assert table.cursor_key == key("openrouter", "0f0f0f")
        assert table.cell_text(key("openrouter", "d4e5f6"), "pos").startswith("✓")


async def test_labels_stay_plain_text(tmp_home: Home) -> None:
    write_store(tmp_home, make_store({"openrouter": [
        make_row("aaaaaa", label="[/]", priority=0), make_row("bbbbbb", label="[b]x", priority=1)]}))
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        table = table_of(app)
        assert "[/]" in table.line_text(key("openrouter", "aaaaaa"))
        assert "[b]x" in table.line_text(key("openrouter", "bbbbbb"))


async def test_one_row_reload_repaints_that_line_and_the_status_bar_only(tmp_home: Home,
                                                                         monkeypatch) -> None:
    """A reload is not a screen layout: the table marks one line, and the status bar
    ("gen N" moved) repaints its own line. A layout would send every visible line of
    every widget to the terminal again (what made 10,000 rows cost more than 6)."""
    from tui.widgets.status import StatusBar
    big_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = table_of(app)
        screen = app.screen
        layouts: list[int] = []
        real_layout = screen._refresh_layout
        monkeypatch.setattr(screen, "_refresh_layout",
                            lambda *a, **kw: (layouts.append(1), real_layout(*a, **kw))[1])
        regions: list = []
        real_refresh = table.refresh
        monkeypatch.setattr(table, "refresh", lambda *r, **kw: (regions.append((r, kw)),
                                                                real_refresh(*r, **kw))[1])
        # The screen's start-up layouts can land after the first pause on a busy machine:
        # wait (bounded) for a pause with none before measuring what one reload costs.
        for _ in range(50):
            layouts.clear()
            await pilot.pause()
            if not layouts:
                break
        regions.clear()

        async def relabel(label: str) -> None:
            with transaction(tmp_home) as doc:
                doc["credential_pool"]["pool00"][3]["label"] = label
            app.reload()
            await pilot.pause()

        await relabel("key-XXXXX")
        target = key("pool00", f"{3:06x}")
        assert "key-XXXXX" in table.line_text(target)
        assert layouts == []
        assert [len(r) for r, _ in regions] == [1] and regions[0][0][0].height == 1
        assert regions[0][0][0].y == table.order.index(target) - int(table.scroll_y) + 1
        assert "gen 2" in app.dashboard.query_one(StatusBar).text
        # Negative control: a status bar whose every update asks for a layout is caught.
        monkeypatch.setattr(StatusBar, "FIXED_SIZE", False)
        await relabel("key-YYYYY")
        assert layouts

