"""At 80 columns nothing that matters is cut: `?` help keeps every binding id whole, findings and
probe results wrap instead of ending in `…`, and the root console's status bar names the
acting profile (and the proxy, as a single home's does). Each has a control showing the
old layout loses it."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from screens.findings_view import COLUMNS as FINDING_COLUMNS
from screens.findings_view import FindingsScreen, finding_row
from screens.help import COLUMNS, HelpScreen, column_widths
from screens.probe_result import ProbeResultScreen
from store.ops.probe_report import ProbeReport, ProbeRow
from store.paths import Home
from store.proxy.observing.stats import write_status
from tests.profiles_sample import home, make_root, root_app
from tests.tui_sample import NOW, app_for, fitted, proxy_status, write_sample
from tui.widgets import StatusBar
from tui.widgets.plain_table import fill_plain
from tui.widgets.status import fit_parts

pytestmark = pytest.mark.usefixtures("utc")
SIZE = (80, 24)


def cells(table: DataTable) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_help_keeps_every_binding_id_whole(tmp_home: Home) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        await fitted(pilot)
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        table = screen.query_one(DataTable)
        assert [str(c.label) for c in table.columns.values()] == ["key", "does", "id"]
        ids = [r[-1] for r in cells(table)]
        assert ids == [r[3] for r in screen.rows]                   # every one, whole
        assert "dashboard.reset" in ids and "profiles.bench_everywhere" in ids
        assert table.max_scroll_x == 0
        # Control: the four columns the help had need more than 80 columns give it.
        assert sum(max(len(r[i]) for r in screen.rows) + 2 for i in range(4)) > table.size.width
        assert set(column_widths(screen.rows, table.size.width)) == {"key", "does", "id"}
        assert list(column_widths(screen.rows, 200)) == list(COLUMNS)


def probe_report() -> ProbeReport:
    return ProbeReport("openai-codex", NOW, True, [
        ProbeRow("rrr111", "reopens", 1, "cdx-to…000A", "reopened", "worst window 20% used", True,
                 False, "cooling", "reopened"),
        ProbeRow("uuu333", "erroring", 3, "cdx-to…000C", "unknown", "usage endpoint answered HTTP 500",
                 False, False, "cooling", "unknown (usage endpoint answered HTTP 500)")])


async def shown_whole(app: Any, pilot: Any, screen: Any, expected: list[list[str]]) -> DataTable:
    app.push_screen(screen)
    await pilot.pause()
    await fitted(pilot)
    table = screen.query_one(DataTable)
    assert table.max_scroll_x == 0                                   # nothing off to the right
    assert cells(table) == expected                                  # each cell whole, wrapped
    assert sum(c.width + 2 for c in table.columns.values()) <= table.size.width
    return table


async def test_findings_and_probe_results_wrap_instead_of_cutting(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = root_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        findings = list(app.root_state.findings)
        expected = [list(finding_row(f)) for f in findings]
        assert any("key sk-or-…cdQ1 is in 2 profiles" in r[3] for r in expected)
        table = await shown_whole(app, pilot, FindingsScreen(findings), expected)
        assert max(table.get_row_height(k) for k in table.rows) > 1    # the finding took more lines
        app.pop_screen()
        await pilot.pause()
        report = probe_report()
        screen = ProbeResultScreen(report)
        await shown_whole(app, pilot, screen, [list(r) for r in screen.rows])
        # Control: the one-line cells the screens had run off the right at 80 columns.
        plain = screen.query_one(DataTable)
        plain.clear(columns=True)
        fill_plain(plain, FINDING_COLUMNS, [finding_row(f) for f in findings])
        await pilot.pause()
        assert plain.max_scroll_x > 0


async def test_the_root_status_bar_names_the_acting_profile_and_the_proxy(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = root_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        # Written now, not before the app started: on a busy machine the start-up alone
        # outlasted the status file's freshness and the proxy read as gone.
        write_status(home(root, "default"), proxy_status(time.time(), os.getpid()))
        app.dashboard.proxy.poll()
        await pilot.pause()
        bar = app.dashboard.query_one(StatusBar)
        assert "acting: default" in bar.text and "proxy :8645 · ▶ fallback nous (x)" in bar.text
        assert len(bar.text) <= 80
        await pilot.resize_terminal(140, 24)
        await pilot.pause()
        assert "profile: all · acting: default · proxy :8645 · 13 req/min · ▶ fallback nous (x)" in bar.text
    # Control: the old bar put the acting profile last, after the root's path: cut at 80.
    old = [(" hermes-admin ", "", 0, ""), ("● LIVE", "", 0, ""),
           (f"00:00:00 gen 1 · sort priority · profile: all · acting: default · {root.path}", "", 0, "")]
    assert "acting: default" not in fit_parts(old, 80).plain


def test_status_parts_go_least_important_first() -> None:
    parts = [(" hermes-admin ", "bold reverse", 0, ""), (" READ-ONLY ", "bold reverse", 0, ""),
             ("● LIVE", "bold", 0, ""), ("profile: all · acting: team-a", "bold", 1, "acting: team-a"),
             ("⟳ resetting 1 credential…", "bold", 2, ""), ("00:00:00 gen 7", "", 7, ""),
             ("sort priority", "", 8, ""), ("/very/long/path/to/the/root/of/profiles", "", 9, "")]
    wide = fit_parts(parts, 200).plain
    assert wide.endswith("sort priority · /very/long/path/to/the/root/of/profiles")
    cut = fit_parts(parts, 150).plain
    assert len(cut) == 150 and cut.endswith("…the/root/of/profiles") and "gen 7" in cut   # the path gives first
    narrow = fit_parts(parts, 100).plain
    assert "profile: all · acting: team-a" in narrow and "resetting" in narrow and "gen" not in narrow
    tight = fit_parts(parts, 80).plain                                          # then the short forms
    assert tight.endswith("acting: team-a · ⟳ resetting 1 credential…") and "READ-ONLY" in tight
    assert len(fit_parts(parts, 20).plain) == 20
