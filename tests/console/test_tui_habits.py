"""The habits operators missed (#28): a pool header says when the pool is usable again, and
``l`` lists the selected key's recent requests from the proxy's request log."""

from __future__ import annotations

import pytest

from screens.request_log import RequestLogScreen
from store.paths import Home
from tests.conftest import make_row, make_store, write_store
from tests.console.habits_helpers import all_cooling, proxy_file, req
from tests.tui_sample import NOW, app_for, on_row, table_of, visible_text, write_sample
from tui.widgets.table_rows import RowStore

HEADER = "pool\x1fopenrouter"


async def test_a_pool_with_nothing_usable_says_when_it_is_usable_again(tmp_home: Home, utc) -> None:
    all_cooling(tmp_home)
    for size in ((80, 24), (200, 50)):
        async with app_for(tmp_home).run_test(size=size) as pilot:
            await pilot.pause()
            app = pilot.app
            table = table_of(app)
            header = " ".join(table.row_texts(HEADER))
            words = "usable 00:05" if size[0] < 100 else "usable again at 00:05"   # shorter at 80
            assert words in header, (size, header)                        # the first of the two
            assert "0 ok" in header and "2 cooling" in header             # the counts stay whole
            assert "usable again" not in " ".join(table.row_texts("pool\x1fnous"))   # a usable pool
            assert words in visible_text(app)


@pytest.mark.parametrize("control", [False, True], ids=["as-built", "control-time-not-in-signature"])
async def test_the_header_follows_a_change_of_the_bench(tmp_home: Home, utc, monkeypatch, control) -> None:
    """The counts stay the same (0 ok, 2 cooling) while the time moves: the header's cache must
    see it (its signature holds the time). The control leaves the time out of the signature:
    the header then keeps the old time."""
    if control:
        real = RowStore.signature
        monkeypatch.setattr(RowStore, "signature",
                            lambda self, e, fps: real(self, e, fps)[:-1] if e.cred is None else real(self, e, fps))
    all_cooling(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        assert "usable again at 00:05" in " ".join(table_of(app).row_texts(HEADER))
        assert "usable again at 00:05" in visible_text(app)
        write_store(tmp_home, make_store({"openrouter": [
            make_row("aaaaaa", label="one", priority=0, last_status="exhausted", last_status_at=NOW - 10,
                     last_error_code=429, last_error_reset_at=NOW + 1800),
            make_row("bbbbbb", label="two", priority=1, last_status="exhausted", last_status_at=NOW - 10,
                     last_error_code=429, last_error_reset_at=NOW + 900)],
            "nous": [make_row("cccccc", label="fine", priority=0)]}))
        app.reload()
        await pilot.pause()
        assert ("usable again at 00:15" in visible_text(app)) is not control


async def test_l_lists_the_rows_requests_from_every_proxy_newest_first(tmp_home: Home, utc) -> None:
    write_sample(tmp_home)
    proxy_file(tmp_home, 8645, [req(NOW - 60, "openrouter", "a1b2c3", 200, "served"),
                                req(NOW - 50, "openrouter", "d4e5f6", 402, "passed_on"),
                                req(NOW - 40, "openrouter", "a1b2c3", 429, "passed_on")])
    proxy_file(tmp_home, 8646, [req(NOW - 45, "openrouter", "a1b2c3", 200, "fallback", route="nous")])
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("l")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RequestLogScreen)
        assert [(r[0], r[1], r[2], r[3], r[5]) for r in screen.rows] == [
            ("23:59:20", ":8645", "openrouter", "429", "passed_on"),
            ("23:59:15", ":8646", "nous", "200", "fallback"),
            ("23:59:00", ":8645", "openrouter", "200", "served")]      # never d4e5f6's
        text = visible_text(app)
        assert "Recent requests of openrouter primary" in text and "3 requests" in text
        assert "/v1/chat" not in text                                    # no path, body or header
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RequestLogScreen)


async def test_l_says_when_no_proxy_ran_or_none_used_the_key(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_row(app, pilot, "anthropic", "aa11bb")
        await pilot.press("l")
        await pilot.pause()
        assert "No proxy has run on this home" in visible_text(app)
        await pilot.press("escape")
        proxy_file(tmp_home, 8645, [req(NOW - 60, "openrouter", "a1b2c3", 200, "served")])
        await pilot.press("l")
        await pilot.pause()
        assert app.screen.rows == [] and "None of the last requests of 1 proxy" in visible_text(app)


async def test_ctrl_d_and_ctrl_u_move_half_a_page(tmp_home: Home) -> None:
    """less's and vi's half page: ctrl+d moves the cursor (and the view) half the table's
    height down, ctrl+u back up; pagedown still moves a whole page."""
    write_store(tmp_home, make_store({"openrouter": [
        make_row(f"r{i:05d}", label=f"key-{i}", priority=i) for i in range(60)]}))
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = table_of(app)
        table.move_cursor(row=0)
        page = table.size.height - 1            # the title line is not a row's
        await pilot.press("ctrl+d")
        await pilot.pause()
        half = table.cursor_row
        assert 1 < half < page and abs(half - page // 2) <= 1, (half, page)
        await pilot.press("ctrl+d", "ctrl+d")
        await pilot.pause()
        assert table.cursor_row == 3 * half and table.scroll_y > 0     # the view followed
        await pilot.press("ctrl+u")
        await pilot.pause()
        assert table.cursor_row == 2 * half
        await pilot.press("ctrl+u", "ctrl+u", "ctrl+u")
        await pilot.pause()
        assert table.cursor_row == 0
        await pilot.press("pagedown")
        await pilot.pause()
        assert table.cursor_row > half + 1
