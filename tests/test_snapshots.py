"""Snapshot tests of the main screens (pytest-textual-snapshot).

Deterministic by construction: a frozen clock, no watcher, no tick, TZ=UTC, fixed
ids, and a fixed home path (it is shown on screen). Regenerate with
``pytest tests/test_snapshots.py --snapshot-update`` and look at the SVGs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from store.paths import Home
from tests.test_tui_cells import CANARY, NOW, utc, write_sample  # noqa: F401
from tui.app import HermesAdminApp
from tui.clock import FakeClock
from tui.widgets import CredentialTable

pytestmark = pytest.mark.usefixtures("utc")
BASE = Path("/tmp/hermes-admin-snapshots")


def fixed_home(name: str, *, create: bool = True) -> Home:
    root = BASE / name
    shutil.rmtree(root, ignore_errors=True)
    if create:
        root.mkdir(parents=True, mode=0o700)
    return Home(root)


def make_app(home: Home, **kw) -> HermesAdminApp:
    return HermesAdminApp(home, clock=FakeClock(NOW), watch=False, tick=False, **kw)


def test_normal(snap_compare) -> None:
    home = fixed_home("normal")
    write_sample(home)
    assert snap_compare(make_app(home), terminal_size=(110, 20))


def test_80x24(snap_compare) -> None:
    home = fixed_home("narrow")
    write_sample(home)
    assert snap_compare(make_app(home, read_only=True), terminal_size=(80, 24))


def test_no_color_still_reads(snap_compare, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    home = fixed_home("nocolor")
    write_sample(home)
    assert snap_compare(make_app(home), terminal_size=(80, 16))


def test_corrupt_banner_keeps_stale_view(snap_compare) -> None:
    home = fixed_home("corrupt")
    write_sample(home)
    app = make_app(home)

    async def corrupt(pilot) -> None:
        home.auth.write_bytes(b'{"credential_pool": {"openrouter": [')
        app.reload()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 20), run_before=corrupt)


def test_empty_home(snap_compare) -> None:
    home = fixed_home("missing", create=False)
    assert snap_compare(make_app(home), terminal_size=(100, 16))


def test_detail(snap_compare) -> None:
    home = fixed_home("detail")
    write_sample(home)
    app = make_app(home)

    async def open_detail(pilot) -> None:
        await pilot.pause()
        app.dashboard.query_one(CredentialTable).move_to_key("cred\x1fopenrouter\x1f0f0f0f")
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 40), run_before=open_detail)


def test_events_and_wide(snap_compare) -> None:
    home = fixed_home("events")
    write_sample(home)
    app = make_app(home)

    async def bench_and_show(pilot) -> None:
        from store import policy
        from store.model import pool_rows
        from store.transaction import transaction

        with transaction(home) as doc:
            rows = pool_rows(doc, "openrouter")
            policy.mark_exhausted(rows, rows[0], NOW, code=429, reason="rate_limit_exceeded",
                                  message="Rate limit exceeded: free-models-per-day")
        app.reload()
        await pilot.press("e", "w")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 24), run_before=bench_and_show)


def test_snapshots_hold_no_full_key() -> None:
    snaps = Path(__file__).parent / "__snapshots__"
    files = list(snaps.rglob("*.svg"))
    if not files:
        pytest.skip("no snapshots generated yet")
    shown = 0
    for f in files:
        text = f.read_text(encoding="utf-8")
        assert CANARY not in text and CANARY[-12:] not in text, f
        shown += "sk-or-…XYZ9" in text.replace("&#160;", " ")
    # Control: the canary's row is on screen in the snapshots, as its fingerprint.
    assert shown >= 3
