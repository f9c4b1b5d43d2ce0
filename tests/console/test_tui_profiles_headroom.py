"""The root console shows each profile's headroom, as the one-home dashboard does (#21).

Every profile's home has its own sidecar; its readings appear on that profile's rows only,
under the view's ``<profile>/<pool>`` keys. The same id in two profiles is two rows, so a
reading in team-a must not show on default's row of the same id: that is the negative control
for mapping the readings by profile.
"""

from __future__ import annotations

from pathlib import Path

from store.agent.headroom import Headroom
from store.dialects.readings import Reading
from store.pools.view import row_fingerprint
from tests.conftest import read_doc
from tests.profiles_sample import home, make_root, root_app, row_key, table
from tests.tui_sample import NOW
from tui.text import headroom as words

RPM = Reading("requests", "openai", NOW - 2, limit=500, remaining=12, reset_at=NOW + 25)


def _cell(app, profile: str, rid: str) -> str:
    t = table(app)
    k = row_key(profile, "openrouter", rid)
    t.row_texts(k)                       # formats the row if it was deferred
    return t.rows.cells.row(k)["headroom"][0]


async def test_a_profiles_sidecar_shows_on_its_rows_only(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    team_a = home(root, "team-a")
    rows = {r["id"]: r for r in read_doc(team_a)["credential_pool"]["openrouter"]}
    room = Headroom(team_a, clock=lambda: NOW)
    room.record("openrouter", "a1a1a1", row_fingerprint("openrouter", rows["a1a1a1"]), [RPM])
    assert room.flush(force=True)
    app = root_app(root)
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.pause()
        assert "12/500 rpm" in _cell(app, "team-a", "a1a1a1")
        # default holds the same key under the same id: its own sidecar says nothing.
        assert _cell(app, "default", "a1a1a1") == words.NULL
        assert _cell(app, "team-a", "b2b2b2") == words.NULL


async def test_no_sidecar_anywhere_means_no_headroom_column(tmp_path: Path) -> None:
    app = root_app(make_root(tmp_path))
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.pause()
        assert "headroom" not in [c.value for c in table(app).columns]
