"""Acting on more than one row, and finding rows: whole pools from their header, a range
mark, n/N through the filter's matches, the sort turned round, and the column chooser.
Each with a control: the same keys elsewhere act on one row, or nothing."""

from __future__ import annotations

import pytest

from screens.column_chooser import ColumnChooser
from screens.confirm import ConfirmScreen
from screens.cooldown import CooldownScreen
from screens.dashboard import DashboardScreen
from store.paths import Home
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.tui_sample import NOW, app_for, audit_lines, key, notes, on_row, rows_by_id, settle, table_of, write_sample
from tui.widgets.status import StatusBar
from tui.widgets.table_cursor import RANGE_MARK

pytestmark = pytest.mark.usefixtures("utc")
SIZE = (100, 30)
HEADER = "pool\x1fopenrouter"


async def on_header(app, pilot, pool: str = "openrouter") -> None:
    assert table_of(app).move_to_key(f"pool\x1f{pool}")
    await pilot.pause()


# ---------------------------------------------------------------- whole pools
async def test_reset_on_a_pool_header_resets_the_whole_pool_after_naming_its_rows(tmp_home: Home) -> None:
    write_sample(tmp_home)
    before = read_doc(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await on_header(app, pilot)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        text = app.screen.text
        assert "Reset the whole pool openrouter: 3 credentials?" in text
        assert all(f"(id {rid})" in text for rid in ("a1b2c3", "d4e5f6", "0f0f0f"))
        assert "aa11bb" not in text
        await pilot.press("y")
        await settle(app, pilot)
        rows = rows_by_id(tmp_home)
        assert all(rows[rid]["last_status"] is None for rid in ("d4e5f6", "0f0f0f"))
        assert all(rows[rid]["status_cleared_at"] == NOW for rid in rows)
        # The other pool is untouched.
        assert read_doc(tmp_home)["credential_pool"]["anthropic"] == before["credential_pool"]["anthropic"]
    (entry,) = audit_lines(tmp_home)
    assert sorted(c["id"] for c in entry["changes"]) == ["0f0f0f", "a1b2c3", "d4e5f6"]


async def test_control_reset_on_a_credential_row_still_resets_that_row_alone(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("r")
        await pilot.pause()
        assert "whole pool" not in app.screen.text and "0f0f0f" not in app.screen.text
        await pilot.press("y")
        await settle(app, pilot)
        rows = rows_by_id(tmp_home)
        assert rows["d4e5f6"]["last_status"] is None and rows["0f0f0f"]["last_status"] == "exhausted"


async def test_a_whole_pool_under_a_filter_is_the_rows_the_filter_shows(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", *"cooling", "enter")
        await on_header(app, pilot)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, CooldownScreen)
        lines = "\n".join(app.screen.lines)
        assert "of the whole pool openrouter" in lines
        assert "d4e5f6" in lines and "0f0f0f" in lines and "a1b2c3" not in lines


async def test_space_on_a_pool_header_tags_every_row_then_untags_them(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        table = table_of(app)
        await on_header(app, pilot)
        await pilot.press("space")
        await pilot.pause()
        pool = {("openrouter", r) for r in ("a1b2c3", "d4e5f6", "0f0f0f")}
        assert app.dashboard.operator.tags == pool
        assert all(table.cell_text(key(p, r), "pos").startswith("✓") for p, r in pool)
        assert any("tagged 3 rows of openrouter" in n for n in notes(app))
        await on_header(app, pilot)
        await pilot.press("space")
        await pilot.pause()
        assert app.dashboard.operator.tags == set()


async def test_an_empty_pool_header_says_why_it_cannot_reset(tmp_home: Home) -> None:
    write_store(tmp_home, make_store({"openrouter": [], "anthropic": [make_row("aa11bb")]}))
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await on_header(app, pilot)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert any("openrouter has no credential to act on" in n for n in notes(app))


# ---------------------------------------------------------------- range mark
async def test_a_range_mark_spans_pools_and_space_tags_it(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        table = table_of(app)
        await on_row(app, pilot, "anthropic", "aa11bb")
        await pilot.press("m", "down", "down", "down")   # over the openrouter header
        await pilot.pause()
        ranged = [key("anthropic", "aa11bb"), key("openrouter", "a1b2c3"), key("openrouter", "d4e5f6")]
        assert [k for k in table.order if table.cell_text(k, "pos").startswith(RANGE_MARK)] == ranged
        await pilot.press("up")                          # the range follows the cursor back
        await pilot.pause()
        assert not table.cell_text(ranged[-1], "pos").startswith(RANGE_MARK)
        await pilot.press("down", "space")
        await pilot.pause()
        assert app.dashboard.operator.tags == {("anthropic", "aa11bb"), ("openrouter", "a1b2c3"),
                                               ("openrouter", "d4e5f6")}
        assert not table.range_active
        assert all(table.cell_text(k, "pos").startswith("✓") for k in ranged)


async def test_control_esc_ends_a_range_mark_and_tags_nothing(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        table = table_of(app)
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("m", "down", "escape")
        await pilot.pause()
        assert not table.range_active and app.dashboard.operator.tags == set()
        assert not any(table.cell_text(k, "pos").startswith(RANGE_MARK) for k in table.order
                       if not table.entry(k).is_header)


async def test_reset_over_a_range_names_the_range_and_writes_only_it(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("m", "down", "r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        text = app.screen.text
        assert "Reset 2 tagged credentials?" in text and "a1b2c3" not in text
        await pilot.press("y")
        await settle(app, pilot)
        rows = rows_by_id(tmp_home)
        assert rows["d4e5f6"]["last_status"] is None and rows["0f0f0f"]["last_status"] is None
        assert "status_cleared_at" not in rows["a1b2c3"]


# ---------------------------------------------------------------- n / N
def many_pools(home: Home) -> None:
    cp = {}
    for p in ("alpha", "beta", "gamma"):
        cp[p] = [make_row(f"{p[0]}{i}", label=f"{p}-{'cool' if i % 2 else 'fine'}-{i}", priority=i,
                          token=f"sk-or-v1-{p}{i:030d}") for i in range(4)]
    write_store(home, make_store(cp))


async def test_n_and_N_step_through_the_matches_into_folded_pools_and_wrap(tmp_home: Home) -> None:
    many_pools(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        table = table_of(app)
        await pilot.press("slash", *"cool", "enter")
        await pilot.pause()
        await on_header(app, pilot, "beta")
        await pilot.press("enter")                   # fold beta
        await pilot.pause()
        assert key("beta", "b1") not in table.order
        await on_header(app, pilot, "alpha")
        seen = []
        for _ in range(6):
            await pilot.press("n")
            await pilot.pause()
            seen.append(table.cursor_credential.id)
        assert seen == ["a1", "a3", "b1", "b3", "g1", "g3"]
        assert key("beta", "b1") in table.order          # unfolded to show the match
        await pilot.press("n")
        await pilot.pause()
        assert table.cursor_credential.id == "a1"
        assert "past the last match, back to the first: match 1 of 6 rows" in notes(app)[-1]
        await pilot.press("N")
        await pilot.pause()
        assert table.cursor_credential.id == "g3"
        assert "past the first match, back to the last" in notes(app)[-1]


async def test_control_n_without_a_filter_moves_nothing_and_says_how(tmp_home: Home) -> None:
    many_pools(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        table = table_of(app)
        await pilot.pause()
        here = table.cursor_key
        await pilot.press("n")
        await pilot.pause()
        assert table.cursor_key == here
        assert "filter with / first" in notes(app)[-1]


# ---------------------------------------------------------------- sort direction
async def test_O_turns_the_order_round_shows_it_and_keeps_the_cursor(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        table = table_of(app)
        status = app.dashboard.query_one(StatusBar)

        def ids() -> list[str]:
            return [table.entry(k).cred.id for k in table.order if "openrouter" in k and "cred" in k]

        assert ids() == ["a1b2c3", "d4e5f6", "0f0f0f"] and "sort priority ↑" in status.text
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("O")
        await pilot.pause()
        assert ids() == ["0f0f0f", "d4e5f6", "a1b2c3"] and "sort priority ↓" in status.text
        assert table.cursor_credential.id == "d4e5f6"
        await pilot.press("o", "o", "o", "o")               # requests: most first, turned round
        await pilot.pause()
        assert app.dashboard.sort == "requests" and "sort requests ↑" in status.text
        assert ids() == ["d4e5f6", "a1b2c3", "0f0f0f"]      # 3, 12, 40 requests
        await pilot.press("O")
        await pilot.pause()
        assert ids() == ["0f0f0f", "a1b2c3", "d4e5f6"] and "sort requests ↓" in status.text


# ---------------------------------------------------------------- the column chooser
async def test_the_column_chooser_is_keyboard_only_and_its_choice_stays(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        table = table_of(app)
        shown = [c.value for c in table.columns]
        await pilot.press("W")
        await pilot.pause()
        chooser = app.screen
        assert isinstance(chooser, ColumnChooser)
        assert chooser.ticked == tuple(k for k in shown if k != "pos")
        # Untick label (the first line), tick message (down to it), show them.
        await pilot.press("space")
        await pilot.press(*["down"] * chooser.keys.index("message"), "space", "enter")
        await pilot.pause()
        want = ["pos", *[k for k in chooser.keys if k in chooser.ticked]]
        assert [c.value for c in table.columns] == want
        assert "label" not in want and "message" in want
        # The choice stays across a reload and a trip to wide and back.
        app.reload()
        await pilot.press("w", "w")
        await pilot.pause()
        assert [c.value for c in table.columns] == want
        # Esc leaves it; a goes back to automatic.
        await pilot.press("W", "space", "escape")
        await pilot.pause()
        assert [c.value for c in table.columns] == want
        await pilot.press("W", "a")
        await pilot.pause()
        assert [c.value for c in table.columns] == shown


async def test_the_column_chooser_refuses_an_empty_choice(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("W")
        await pilot.pause()
        chooser = app.screen
        for i, k in enumerate(chooser.keys):
            if chooser.ticks[k]:
                chooser.query_one("OptionList").highlighted = i
                await pilot.press("space")
        assert chooser.ticked == ()
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is chooser   # still open, saying why
        assert "tick at least one column" in str(chooser.query_one("#columns-error").render())


# ---------------------------------------------------------------- on a root of profiles
async def test_on_a_root_a_whole_pool_reset_writes_that_profile_only(tmp_path) -> None:
    from tests.profiles_sample import home, make_root, root_app, row_key, table

    root = make_root(tmp_path)
    before = {p: read_doc(home(root, p)) for p in ("default", "team-b")}
    app = root_app(root)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        assert table(app).move_to_key("pool\x1fteam-a/openrouter")
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "whole pool team-a/openrouter: 2 credentials" in app.screen.text
        await pilot.press("y")
        await settle(app, pilot)
        rows = read_doc(home(root, "team-a"))["credential_pool"]["openrouter"]
        assert all(r["status_cleared_at"] == NOW for r in rows)
        assert {p: read_doc(home(root, p)) for p in before} == before
        # Control: a range across two profiles is refused, naming them; nothing written.
        assert table(app).move_to_key(row_key("default", "openrouter", "a1a1a1"))
        await pilot.press("m", "down", "down", "down", "r")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert any("tagged rows are in profile" in n for n in notes(app))
        assert {p: read_doc(home(root, p)) for p in before} == before


def test_a_chooser_line_wraps_under_its_words() -> None:
    from rich.console import Console
    from rich.text import Text

    from screens.column_chooser import ABOUT, ColumnChooser
    from tui.widgets.table_columns import TITLES

    def lines(renderable) -> list[str]:
        console = Console(width=60, record=True, color_system=None)
        console.print(renderable)
        return [line.rstrip() for line in console.export_text().splitlines() if line.strip()]

    got = lines(ColumnChooser(["label"], "auto").line("spend"))
    assert len(got) == 2 and got[0].startswith("[ ] spend") and got[1].startswith(" " * 17), got
    # Control: the line as one Text (as before) wraps back under the box.
    before = lines(Text(f"[ ] {TITLES['spend']:<12} {ABOUT['spend']}"))
    assert len(before) == 2 and not before[1].startswith(" "), before
