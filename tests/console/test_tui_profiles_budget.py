"""The root console keeps a running proxy's ``$ over budget`` note through its refreshes (#29).

The note comes from the acting profile's proxy status file (the proxy watch); the profiles
dashboard also notes findings (``⚑ shared``) before the reason. Both are notes of the table:
a refresh of the view (the store read again, a store change) must keep the proxy's, and the
proxy's must not drop the findings'. A row named by both says both.

Negative control: the table's notes replaced by every caller (as before the fix: the
findings' notes set again on each refresh) loses the over-budget note after one refresh.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from store.paths import Home
from store.proxy.observing.stats import write_status
from store.transaction import transaction
from tests.profiles_sample import home, make_root, root_app, row_key, table
from tui.services import proxy_feed
from tui.widgets import credential_table
from tui.widgets.table_notes import BUDGET, FINDINGS, RowNotes

pytestmark = pytest.mark.usefixtures("utc")
WORDS = "over budget: $1.00 a day, resets 00:00 UTC"


def proxy_over(h: Home, *rids: str) -> None:
    """The status file of a proxy running on *h* whose budget holds *rids* of openrouter."""
    write_status(h, {"port": 8645, "pid": os.getpid(), "state": "running", "primary": "openrouter",
                     "active": "openrouter", "updated_at": time.time() + 600,
                     "chain": [{"pool": "openrouter", "budget": {"rows_over": dict.fromkeys(rids, WORDS)}}]})
    assert proxy_feed.over_budget(proxy_feed.live_status(h)) == {("openrouter", r): WORDS for r in rids}


def reason(app, profile: str, rid: str) -> str:
    t = table(app)
    k = row_key(profile, "openrouter", rid)
    t.row_texts(k)                       # formats the row if it was deferred
    return t.rows.cells.row(k)["reason"][0]


async def watched(app, pilot) -> None:
    """Until the proxy watch has read the status file (its first look follows the first frame)."""
    for _ in range(100):                 # bounded
        if app.dashboard.proxy.over:
            return
        await pilot.pause()
    raise AssertionError("the proxy watch never read the status file")


async def refreshed_notes(tmp_path: Path) -> list[tuple[str, str]]:
    """(default's shared key, team-a's own key) reason cells: after the proxy's note, after a
    refresh, after a store change of the acting profile."""
    root = make_root(tmp_path)
    default = home(root, "default")
    proxy_over(default, "a1a1a1")
    app = root_app(root)
    seen = []
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.pause()
        assert app.acting == "default"
        await watched(app, pilot)
        await pilot.pause()
        seen.append((reason(app, "default", "a1a1a1"), reason(app, "team-a", "a1a1a1")))
        app.reload()                     # the view refreshed: every profile read again
        await pilot.pause()
        seen.append((reason(app, "default", "a1a1a1"), reason(app, "team-a", "a1a1a1")))
        with transaction(default) as doc:          # a store change of the acting profile
            doc["credential_pool"]["openrouter"][0]["label"] = "ops-key-2"
        app.reload()
        for _ in range(50):
            await pilot.pause()
            if "ops-key-2" in table(app).row_texts(row_key("default", "openrouter", "a1a1a1")):
                break
        seen.append((reason(app, "default", "a1a1a1"), reason(app, "team-a", "a1a1a1")))
        assert table(app).cell_text(row_key("default", "openrouter", "a1a1a1"), "label") == "ops-key-2"
    return seen


async def test_the_over_budget_note_outlives_a_refresh_and_a_store_change(tmp_path: Path) -> None:
    for own, other in await refreshed_notes(tmp_path):
        # default's key is over budget and named by a finding: it says both, in words.
        assert "$ over budget" in own and "⚑ " in own, own
        # team-a's copy of the key is shared, and its proxy (none runs there) holds nothing.
        assert "⚑ shared" in other and "over budget" not in other, other


async def test_control_notes_replaced_by_each_caller_lose_it_on_refresh(tmp_path: Path, monkeypatch) -> None:
    def replace_all(self, notes, kind=""):      # the table before the fix: the last caller wins
        self.refresh_rows(self.rows.set_notes(notes, self.countdowns.now))

    monkeypatch.setattr(credential_table.CredentialTable, "set_notes", replace_all)
    seen = await refreshed_notes(tmp_path)
    assert "over budget" not in seen[1][0] and "over budget" not in seen[2][0], seen   # gone on refresh



def test_each_kind_replaces_its_own_notes_only() -> None:
    notes = RowNotes()
    row, other = ("default/openrouter", "a1a1a1"), ("team-a/openrouter", "a1a1a1")
    assert notes.set(FINDINGS, {row: "⚑ shared", other: "⚑ shared"}) == {row: "⚑ shared", other: "⚑ shared"}
    assert notes.set(BUDGET, {row: "$ over budget"}) == {row: "$ over budget ⚑ shared", other: "⚑ shared"}
    assert notes.set(FINDINGS, {}) == {row: "$ over budget"}          # the findings went, the budget stays
    assert notes.set(BUDGET, {row: ""}) == {}                          # an empty note is no note
