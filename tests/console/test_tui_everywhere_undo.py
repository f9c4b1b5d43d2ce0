"""Reset everywhere from the root console, then ``:undo``: every profile's bench comes back
(one action id across the profiles, undone together; store.profiles.undo_all). The audit view
that asked for the undo lists it on top at once (negative control: its callback dropped)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable

from screens import undo_flow
from screens.audit_view import AuditScreen
from screens.confirm import ConfirmScreen
from store.ops import undo
from store.profiles import undo_all
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.profiles_sample import NOW, SHARED, home, make_root, root_app, row_key, table
from tests.tui_sample import notes, settle

NAMES = ("default", "team-a", "team-b")


def shared_status(root, name: str) -> str | None:
    rows = read_doc(home(root, name))["credential_pool"]["openrouter"]
    return next(r for r in rows if r["access_token"] == SHARED)["last_status"]


def three(tmp_path: Path):
    """make_root's two holders of SHARED, plus team-b holding it benched too."""
    root = make_root(tmp_path)
    doc = read_doc(home(root, "team-b"))
    doc["credential_pool"]["openrouter"] = [make_row(
        "d4d4d4", label="third", token=SHARED, last_status="exhausted", last_status_at=NOW - 30,
        last_error_code=429, last_error_reason="rate_limit_exceeded", last_error_reset_at=NOW + 3600)]
    write_store(home(root, "team-b"), make_store(doc["credential_pool"]))
    return root


async def command(app, pilot, text: str) -> None:
    await pilot.press("colon")
    await pilot.press(*text, "enter")
    await pilot.pause()


@pytest.mark.parametrize("together", [True, False])
async def test_reset_everywhere_then_undo_brings_every_bench_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, together: bool) -> None:
    root = three(tmp_path)
    if not together:     # negative control: an undo of its own home only
        monkeypatch.setattr(undo_all, "sharing", lambda h, action_id, meta: [("", h)])
    app = root_app(root)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        assert table(app).move_to_key(row_key("team-a", "openrouter", "a1a1a1"))
        await pilot.pause()
        await pilot.press("R")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "default, team-a, team-b" in app.screen.text
        await pilot.press("y")
        await settle(app, pilot)
        assert [shared_status(root, n) for n in NAMES] == [None, None, None]
        ids = {undo.list_ids(home(root, n))[-1] for n in NAMES}
        assert len(ids) == 1                       # one action, one id in every profile
        await command(app, pilot, "undo")
        assert isinstance(app.screen, ConfirmScreen)
        if together:      # the acting profile's first
            assert "every profile it changed: team-a, default, team-b" in app.screen.text
        await pilot.press("y")
        await settle(app, pilot)
        expect = ["exhausted"] * 3 if together else [None, "exhausted", None]
        assert [shared_status(root, n) for n in NAMES] == expect
        if together:
            assert any("put back in team-a, default, team-b" in n for n in notes(app)), notes(app)


@pytest.mark.parametrize("refresh", [True, False], ids=["refresh", "control-no-callback"])
async def test_the_audit_view_lists_an_everywhere_undo_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refresh: bool) -> None:
    """`L`, `u` on a reset everywhere, `y`: the undo lands in every profile and the open audit
    view lists it on top, highlighted. Negative control: the everywhere undo's callback not
    passed on (as before the fix), the view still shows the reset on top."""
    root = three(tmp_path)
    if not refresh:
        real = undo_flow.write_all
        monkeypatch.setattr(undo_flow, "write_all", lambda app, hps, on_done=None: real(app, hps))
    app = root_app(root)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        assert table(app).move_to_key(row_key("team-a", "openrouter", "a1a1a1"))
        await pilot.pause()
        await pilot.press("R")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        await pilot.press("L")
        await pilot.pause()
        view = app.screen
        assert isinstance(view, AuditScreen) and view.entries[0]["action"] == "reset"
        await pilot.press("u")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and "every profile it changed" in app.screen.text
        await pilot.press("y")
        await settle(app, pilot)
        assert [shared_status(root, n) for n in NAMES] == ["exhausted"] * 3     # undone everywhere
        assert app.screen is view
        top = view.entries[0]["action"]
        assert top == ("undo" if refresh else "reset"), [e["action"] for e in view.entries]
        if refresh:
            assert view.query_one(DataTable).cursor_row == 0
