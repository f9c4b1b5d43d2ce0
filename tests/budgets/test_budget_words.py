"""Over budget, in words (#29): a running proxy's status file carries its budget state, and
``proxy status``, ``list`` (text and JSON), the console's status bar, the proxy panel and the
detail view say "over budget" in words, never colour alone. The status is written by the
proxy's own writer from a real proxy whose key went over its budget."""

from __future__ import annotations

import json
import threading
import time

import pytest
from textual.widgets import DataTable

from screens.detail import DetailScreen
from store.proxy.observing.stats import write_status
from tests.budgets.conftest import ask, budgets, costing
from tests.cli.inprocess import run_main
from tests.console.proxy_panel_helpers import SIZE, cells, panel_of, screen_text
from tests.hermes_real import wait_for
from tests.proxy.upstream import ScriptedUpstream
from tests.proxy_helpers import EDGE_KEYS, edge_seed, running_chain_proxy
from tests.tui_sample import app_for, key
from tui.services import proxy_feed
from tui.widgets import StatusBar
from tui.widgets.credential_table import CredentialTable

pytestmark = pytest.mark.slow
WORDS = "over budget: $1.00 a day, resets 00:00 UTC"


@pytest.fixture
def over(tmp_home):
    """A proxy ran with a $1 day budget per key; each key spent $1 (over). Its last running
    status stays on the home, rewritten every half second as a live proxy's is (a loaded
    machine may take longer than the staleness bound between two steps of a test)."""
    with ScriptedUpstream() as up:
        up.script(None, costing(1.0))
        edge_seed(tmp_home, up.url, keys=2, fallback=False)
        budgets(tmp_home, "openrouter:\n  key: {day: 1.00}")
        with running_chain_proxy(tmp_home) as p:
            assert ask(p)[1] == "or0edg"
            assert ask(p)[1] == "or1edg"
            st = p.server.status()
    stop = threading.Event()
    live = {"status": st}

    def keep_writing() -> None:
        while True:
            write_status(tmp_home, {**live["status"], "updated_at": time.time()})
            if stop.wait(0.5):
                return

    writer = threading.Thread(target=keep_writing, daemon=True)
    writer.start()
    assert wait_for(lambda: proxy_feed.live_status(tmp_home) is not None, timeout=10)
    yield tmp_home, st, live
    stop.set()
    writer.join(10)


def test_the_status_file_names_the_key_over_budget(over):
    home, st, _live = over
    budget = st["chain"][0]["budget"]
    assert budget["rows_over"] == {"or0edg": WORDS, "or1edg": WORDS}
    assert budget["over"] == "over budget: every key" and budget["day_usd"] == 2.0
    assert proxy_feed.over_budget(proxy_feed.live_status(home)) == {("openrouter", "or0edg"): WORDS,
                                                                    ("openrouter", "or1edg"): WORDS}


def test_proxy_status_and_list_say_it(over):
    home, _st, _live = over
    code, out, _err = run_main(["proxy", "status", "--home", str(home.root)], b"")
    assert code == 0 and "      over budget: every key" in out and "openrouter/or0edg" in out and WORDS in out
    code, out, _err = run_main(["list", "--home", str(home.root)], b"")
    line = next(x for x in out.splitlines() if "id=or0edg" in x)
    assert code == 0 and f"[{WORDS}]" in line
    code, out, _err = run_main(["list", "--json", "--home", str(home.root)], b"")
    creds = json.loads(out)["pools"]["openrouter"]["credentials"]
    assert {c["id"]: c["budget"] for c in creds} == {"or0edg": WORDS, "or1edg": WORDS}
    assert not any(k in out for k in EDGE_KEYS)


def test_control_no_live_proxy_list_says_nothing_of_budgets(over):
    home, st, live = over
    live["status"] = {**st, "state": "stopped"}
    assert wait_for(lambda: proxy_feed.live_status(home) is None, timeout=10)
    code, out, _err = run_main(["list", "--home", str(home.root)], b"")
    assert code == 0 and "over budget" not in out


async def test_the_console_says_it_in_words(over):
    home, _st, _live = over
    app = app_for(home)
    async with app.run_test(size=SIZE) as pilot:
        # The dashboard's first look for a proxy waits for its first frame: on a busy machine
        # one pause may not see it (bounded wait, about 10 s at most).
        for _ in range(200):
            await pilot.pause(0.05)
            if "2 over budget" in app.dashboard.query_one(StatusBar).text:
                break
        assert "2 over budget" in app.dashboard.query_one(StatusBar).text
        table = app.dashboard.query_one(CredentialTable)
        assert "$ over budget" in table.line_text(key("openrouter", "or0edg"))     # the table's row, in words
        assert "$ over budget" in screen_text(app)
        table.move_to_key(key("openrouter", "or0edg"))
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        assert ("budget", WORDS) in [(f, v) for f, v, _m in app.screen.lines]
        assert "over budget" in app.screen.title_text and "over budget" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("x")
        await pilot.pause()
        panel = panel_of(app)
        rows = {r[1]: r for r in cells(panel.query_one("#proxy-creds", DataTable))}
        assert rows["or0edg"][6] == "over budget: $1.00 a day"     # after the conversations column
        assert "(over budget: every key)" in str(panel.query_one("#proxy-routes").render())
