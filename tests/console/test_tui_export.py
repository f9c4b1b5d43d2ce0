"""``:export csv FILE`` and ``:export json FILE`` write the dashboard's current view: the
filter's rows in the table's order, the columns on screen, fingerprints only, 0600, no link
written through, and a clear error (nothing written) otherwise (#28)."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.widgets import Input

from screens.command_line import CommandLine
from store.paths import Home
from tests.conftest import make_row, make_store, write_store
from tests.tui_sample import CANARY, app_for, notes, write_sample
from tui.services import export

SIZE = (100, 30)


async def command(app, pilot, text: str) -> None:
    await pilot.press("colon")
    await pilot.pause()
    assert isinstance(app.screen, CommandLine)
    app.screen.query_one(Input).value = text
    await pilot.press("enter")
    await pilot.pause()


async def test_csv_and_json_of_the_filtered_view(tmp_home: Home, tmp_path: Path) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await command(app, pilot, "filter cooling")
        await pilot.press("escape")            # the filter box closes; the filter stays
        await pilot.pause()
        app.dashboard.filter_text = "cooling"
        app.dashboard.refresh_table()
        await command(app, pilot, f"export csv {tmp_path / 'view.csv'}")
        await command(app, pilot, f"export json {tmp_path / 'view.json'}")
        said = notes(app)
    assert any("exported 2 rows" in n and "as csv" in n for n in said), said
    text = (tmp_path / "view.csv").read_text()
    lines = list(csv.reader(io.StringIO(text)))
    assert lines[0][:3] == ["pool", "label", "status"]
    assert [r[1] for r in lines[1:]] == ["backup-key", "third"]          # the filter's rows, in order
    rows = json.loads((tmp_path / "view.json").read_text())
    assert [r["label"] for r in rows] == ["backup-key", "third"] and rows[0]["key"] == "sk-or-…XYZ9"
    for name in ("view.csv", "view.json"):
        data = (tmp_path / name).read_text()
        assert CANARY not in data and CANARY[-12:] not in data            # fingerprints only
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600


async def test_a_link_a_missing_folder_and_a_bad_format_write_nothing(tmp_home: Home, tmp_path: Path) -> None:
    write_sample(tmp_home)
    target = tmp_path / "target.txt"
    target.write_text("keep me")
    os.symlink(target, tmp_path / "link.csv")
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await command(app, pilot, f"export csv {tmp_path / 'link.csv'}")
        assert "symlink" in notes(app)[-1] and "nothing was written" in notes(app)[-1]
        await command(app, pilot, f"export json {tmp_path / 'no' / 'such' / 'x.json'}")
        assert "x.json" in notes(app)[-1] and "nothing was written" in notes(app)[-1]
        await command(app, pilot, f"export xml {tmp_path / 'x.xml'}")
        assert isinstance(app.screen, CommandLine)                       # refused on the line
    assert target.read_text() == "keep me" and (tmp_path / "link.csv").is_symlink()
    assert not (tmp_path / "no").exists() and not (tmp_path / "x.xml").exists()


def test_formula_cells_are_quoted_negative_control(monkeypatch) -> None:
    """A label a spreadsheet would run (``=cmd``) is written as text; with the guard off (the
    control) the same cell starts with ``=``."""
    row = [{"pool": "p", "label": "=HYPERLINK(1)"}]
    assert export.render("csv", ["pool", "label"], row).decode().splitlines()[1] == "p,'=HYPERLINK(1)"
    monkeypatch.setattr(export, "FORMULA", ())
    assert export.render("csv", ["pool", "label"], row).decode().splitlines()[1] == "p,=HYPERLINK(1)"


@pytest.mark.parametrize("fmt", ["csv", "json"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(label=st.text(max_size=30), pool=st.text(min_size=1, max_size=12).filter(str.isprintable))
def test_hostile_labels_read_back_as_one_row_each(tmp_path: Path, fmt, label, pool) -> None:
    """Newlines, ESC, quotes and commas in a label or pool name never start a new row nor
    reach the file raw (escaped by the console's funnel)."""
    rows = [{"pool": export.shown(pool), "label": export.shown(label)}]
    data = export.render(fmt, ["pool", "label"], rows).decode()
    assert "\x1b" not in data and "\r" not in data.replace("\r\n", "")
    back = json.loads(data) if fmt == "json" else [
        dict(zip(["pool", "label"], r, strict=True)) for r in list(csv.reader(io.StringIO(data)))[1:]]
    assert len(back) == 1


async def test_export_of_a_big_home_names_every_row(tmp_home: Home, tmp_path: Path) -> None:
    """Rows never on screen are formatted for the file too."""
    write_store(tmp_home, make_store({"openrouter": [make_row(f"r{i:04d}", label=f"k{i}", priority=i)
                                                     for i in range(300)]}))
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        path, n = export.export_view(app.dashboard.table, "json", str(tmp_path / "all.json"))
    assert n == 300 and [r["label"] for r in json.loads(path.read_text())][-1] == "k299"
