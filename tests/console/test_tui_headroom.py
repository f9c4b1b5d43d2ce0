"""The dashboard's headroom column (#21): the tightest fresh window a provider reported for each
key, read from the home's sidecar, as a bar, a number and a word; stale in words; the first
column to give way; gone (the screen as before) while no key has a reading."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from store.dialects.readings import Reading
from store.paths import Home
from tests.console.habits_helpers import seed_sidecar
from tests.tui_sample import NOW, key, make_app, table_of, visible_text, write_sample
from tui.text import headroom as words
from tui.widgets import table_columns as TC
from tui.widgets.table_columns import columns_for

RPM = Reading("requests", "openai", NOW - 2, limit=500, remaining=12, reset_at=NOW + 25)
FIVE_H = Reading("5h", "anthropic-unified", NOW - 2, utilization=0.62, reset_at=NOW + 3600)


def cell_text(app, rid: str) -> str:
    table = table_of(app)
    k = key("openrouter", rid)
    assert table.rows.cells.formatted(k)
    return table.rows.cells.row(k)["headroom"][0]


def test_cell_words_bar_number():
    text, style = words.cell([RPM, FIVE_H], NOW)
    assert text == "▕░░░░░▏ 12/500 rpm"                                 # the tightest: 2.4% left
    assert style                                                       # low: drawn cooling too
    text, _ = words.cell([FIVE_H], NOW)
    assert text == "▕██░░░▏ 38% 5h"
    assert words.cell([], NOW) == (words.NULL, "")


def test_stale_reading_said_in_words_never_as_current():
    text, style = words.cell([RPM], NOW + 30)      # past its reset
    assert text.startswith("stale ") and "▕" not in text and style == ""
    assert words.list_text([RPM], NOW + 30).startswith("headroom stale")
    js = words.as_json([RPM], NOW + 30)
    assert js["tightest"] is None and js["windows"][0]["stale"] is True


@given(left=st.floats(0, 1), width=st.integers(0, 30), counts=st.booleans())
def test_fit_never_overflows_nor_halves_a_number(left, width, counts):
    r = (Reading("requests", "openai", NOW, limit=500, remaining=round(500 * left), reset_at=NOW + 9)
         if counts else Reading("5h", "anthropic-unified", NOW, utilization=1 - left, reset_at=NOW + 9))
    text = words.cell([r], NOW)[0]
    cut = words.fit(text, width)
    assert len(cut) <= max(width, 0)
    for token in cut.replace("▏", " ").split(" "):
        if token and token[0].isdigit() and not token.endswith("…"):
            assert token in text.replace("▏", " ").split(" ") or token.endswith("%")


def test_column_joins_from_80_and_gives_way_below():
    natural = {"headroom": len("▕░░░░░▏ 12/500 rpm")}
    assert "headroom" in {s.key for s in columns_for("auto", (), 79, natural)}
    assert "headroom" not in {s.key for s in columns_for("auto", (), 78, natural)}
    assert "headroom" not in {s.key for s in columns_for("auto", (), 200, {})}     # no reading: no column


def test_headroom_gives_way_before_the_code_and_reason():
    """At 80 columns a mostly empty headroom column shrinks to its words (no bar) before the
    code/reason column loses a cell: the reason keeps 13 cells, not 9 (#28)."""
    natural = {"headroom": len("▕██░░░▏ 38% 5h"), "label": len("backup-key")}
    specs = columns_for("auto", (), 79, natural)
    got = dict(zip((s.key for s in specs), TC.widths(specs, 79, natural), strict=True))
    assert got["headroom"] == 6 and got["error"] >= 13, got
    assert words.fit("▕██░░░▏ 38% 5h", got["headroom"]) == "38% 5h"


def test_headroom_gives_way_negative_control(monkeypatch):
    """With the headroom's old floor (10 cells, a bar kept) the reason is cut to 9 again."""
    natural = {"headroom": len("▕██░░░▏ 38% 5h"), "label": len("backup-key")}
    monkeypatch.setattr(TC, "SHRINK", (("headroom", 10), *TC.SHRINK[1:]))
    monkeypatch.setattr(TC, "FLOOR", {**TC.FLOOR, "headroom": 10})
    specs = columns_for("auto", (), 79, natural)
    got = dict(zip((s.key for s in specs), TC.widths(specs, 79, natural), strict=True))
    assert got["error"] == 9 and got["headroom"] == 10, got


async def test_dashboard_shows_the_sidecar(tmp_path):
    home = Home(tmp_path)
    seed_sidecar(home, {"a1b2c3": [RPM, FIVE_H], "0f0f0f": [Reading("5h", "anthropic-unified", NOW - 9000,
                                                                        utilization=0.9, reset_at=NOW - 60)]})
    app = make_app(home)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        assert "12/500 rpm" in cell_text(app, "a1b2c3")
        assert cell_text(app, "0f0f0f").startswith("stale")
        assert cell_text(app, "d4e5f6") == words.NULL
        screen = visible_text(app)
        assert "headroom" in screen and "12/500 rpm" in screen and "stale" in screen


async def test_80_columns_keep_it_readable(tmp_path):
    home = Home(tmp_path)
    seed_sidecar(home, {"a1b2c3": [FIVE_H]})
    app = make_app(home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = visible_text(app)
        assert "38% 5h" in screen and "primary" in screen


async def test_readings_of_another_secret_are_not_shown(tmp_path):
    """Negative control for the binding: readings recorded for a row's old secret (re-keyed
    since) must not show against the new one, and with nothing bound there is no column."""
    home = Home(tmp_path)
    seed_sidecar(home, {"a1b2c3": [RPM]}, fp_of=lambda rid: "sk-or-…OLD1")
    app = make_app(home)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        assert cell_text(app, "a1b2c3") == words.NULL
        assert "12/500" not in visible_text(app)
        assert "headroom" not in {s.key for s in table_of(app).column_layout.specs}


async def test_detail_view_lists_every_window_with_its_reset_and_the_rules(tmp_path):
    home = Home(tmp_path)
    seed_sidecar(home, {"a1b2c3": [RPM, FIVE_H, Reading("7d", "anthropic-unified", NOW - 99_000,
                                                         utilization=0.5, reset_at=NOW - 10)]})
    (tmp_path / "hermes-admin.yaml").write_text("headroom:\n  threshold: 0.05\n")
    app = make_app(home)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        assert table_of(app).move_to_key(key("openrouter", "a1b2c3"))
        await pilot.press("enter")
        await pilot.pause()
        lines = {name: (value, meaning) for name, value, meaning in app.screen.lines}
        value, meaning = lines["headroom rpm"]
        assert value == "12 of 500 left (2%)"
        assert meaning.startswith("resets ") and "00:00:25" in meaning and "in 25s" in meaning
        assert lines["headroom 5h"][0] == "38% left" and "in 1h" in lines["headroom 5h"][1]
        assert lines["headroom 7d"][0].startswith("stale:") and "not current" in lines["headroom 7d"][1]
        rule = lines["headroom rules"]
        assert rule[0] == "threshold 5%" and "not picked until then" in rule[1]
        names = [n for n, _, _ in app.screen.lines]
        assert names.index("headroom rpm") < names.index("headroom 5h")    # tightest first


async def test_detail_view_without_readings_is_unchanged(tmp_path):
    home = Home(tmp_path)
    write_sample(home)
    app = make_app(home)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        assert table_of(app).move_to_key(key("openrouter", "a1b2c3"))
        await pilot.press("enter")
        await pilot.pause()
        assert not any(n.startswith("headroom") for n, _, _ in app.screen.lines)
