"""A subscription row with no answer recorded today (#29): its spend reads ``incl.`` with its
window's use (``incl. 5h 42%``), or ``incl.`` with no reading, in the dashboard's spend column
and in the detail view, never ``—``: its answers are included in the subscription whether or
not the ledger has one of them today. A subscription row's window use brings the column even
with no ledger at all (it is a figure); a bare ``incl.`` does not.

Which rows are subscriptions is the proxy's answer (an OAuth row, an Anthropic OAuth token)
and the pricer's (every row of a subscription pool): a property test holds the console's
:func:`tui.widgets.table_spend.subscription` to :class:`store.usage.cost.Pricer`.

Negative controls: with the row's subscription patched out, the same homes show ``—`` (the
behaviour before), no spend column, and the detail view's ``—``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.agent.headroom import Headroom
from store.dialects.anthropic import uses_oauth
from store.dialects.readings import Reading, Usage
from store.model import AUTH_OAUTH
from store.paths import Home
from store.pools.view import row_fingerprint
from store.usage.cost import Pricer
from store.usage.record import INCLUDED
from tests.console.spend_helpers import seed_ledger, spend_read, spent
from tests.tui_sample import NOW, key, make_app, table_of, visible_text, write_sample
from tui.widgets import table_spend
from tui.widgets.table_spend import spend_text, subscription

pytestmark = pytest.mark.usefixtures("utc")
FIVE_H = Reading("5h", "anthropic-unified", NOW - 2, utilization=0.42, reset_at=NOW + 3600)


def claude_home(home: Home, *, reading: bool = True, ledger: bool = True, fp: str | None = None) -> Home:
    """The sample home (its anthropic row ``aa11bb`` is an OAuth login) with a 5h reading for
    that row and a ledger whose only line today is an openrouter key's."""
    doc = write_sample(home)
    if reading:
        row = doc["credential_pool"]["anthropic"][0]
        room = Headroom(home, clock=lambda: NOW)
        room.record("anthropic", "aa11bb", fp or row_fingerprint("anthropic", row), [FIVE_H])
        assert room.flush(force=True)
    if ledger:
        seed_ledger(home, [spent("openrouter", "a1b2c3", 0.30, "actual")])
    return home


def cell(app, pool: str, rid: str) -> str:
    table = table_of(app)
    table.row_texts(key(pool, rid))
    return table.rows.cells.row(key(pool, rid))["spend"][0]


def spend_shown(app) -> bool:
    return "spend" in table_of(app).column_layout.keys


@pytest.fixture
def not_subscribed(monkeypatch):
    """The control: no row is a subscription's (the console before this fix)."""
    monkeypatch.setattr(table_spend, "subscription", lambda pool, row: False)


# -- the words -------------------------------------------------------------------------------

def test_words_of_a_subscription_row_with_no_ledger_line():
    assert spend_text(None, [FIVE_H], NOW, subscribed=True) == "incl. 5h 42%"
    assert spend_text(None, [], NOW, subscribed=True) == "incl."
    assert spend_text(None, [FIVE_H], NOW + 7200, subscribed=True) == "incl."     # a stale reading says nothing
    assert spend_text(None, [FIVE_H], NOW, over=True, subscribed=True) == "incl. 5h 42% over budget"
    # Control: not a subscription's, no ledger line: nothing known.
    assert spend_text(None, [FIVE_H], NOW) == "—"


def test_which_rows_are_subscriptions():
    assert subscription("anthropic", {"auth_type": AUTH_OAUTH})
    assert subscription("team-a/anthropic", {"auth_type": AUTH_OAUTH})          # a root's view key
    assert subscription("anthropic", {"auth_type": "api_key", "access_token": "sk-ant-oat01-x"})
    assert not subscription("anthropic", {"auth_type": "api_key", "access_token": "sk-ant-api03-x"})
    assert subscription("openai-codex", {"auth_type": "api_key"})
    assert not subscription("openrouter", {"auth_type": "api_key", "access_token": "sk-ant-oat01-x"})


POOLS = st.sampled_from(["anthropic", "openai-codex", "openrouter", "nous", "openai-api", "custom:x"])
AUTH = st.sampled_from([AUTH_OAUTH, "api_key", None, "device_code", ""])
TOKENS = st.sampled_from(["", "sk-ant-api03-abc", "sk-ant-oat01-abc", "eyJhbGci", "cc-abc", "sk-or-v1-abc",
                          "sk-abc"]) | st.text(max_size=12)


@settings(max_examples=300, deadline=None)
@given(pool=POOLS, auth_type=AUTH, token=TOKENS)
def test_the_console_agrees_with_the_pricer(pool, auth_type, token):
    """What the proxy hands the pricer (its OAuth decision) and what the pricer makes of it:
    ``included`` exactly for the rows the console calls subscriptions."""
    oauth = auth_type == AUTH_OAUTH or uses_oauth(pool, auth_type, token)
    priced = Pricer().cost(pool, "m", Usage(input_tokens=10, output_tokens=2), oauth=oauth)
    assert (priced.status == INCLUDED) == subscription(pool, {"auth_type": auth_type, "access_token": token})


# -- the dashboard ---------------------------------------------------------------------------

async def test_a_subscription_row_with_no_answer_today_reads_its_window(tmp_path):
    app = make_app(claude_home(Home(tmp_path)))
    async with app.run_test(size=(200, 40)) as pilot:
        await spend_read(app, pilot)
        assert cell(app, "openrouter", "a1b2c3") == "$0.30"
        assert cell(app, "anthropic", "aa11bb") == "incl. 5h 42%"
        assert "incl. 5h 42%" in visible_text(app)


async def test_control_not_a_subscription_reads_a_dash(tmp_path, not_subscribed):
    app = make_app(claude_home(Home(tmp_path)))
    async with app.run_test(size=(200, 40)) as pilot:
        await spend_read(app, pilot)
        assert cell(app, "anthropic", "aa11bb") == "—"
        assert "incl." not in visible_text(app)


async def test_no_reading_reads_incl(tmp_path):
    app = make_app(claude_home(Home(tmp_path), reading=False))
    async with app.run_test(size=(200, 40)) as pilot:
        await spend_read(app, pilot)
        assert cell(app, "anthropic", "aa11bb") == "incl."


async def test_a_windows_use_brings_the_column_with_no_ledger(tmp_path):
    app = make_app(claude_home(Home(tmp_path), ledger=False))
    async with app.run_test(size=(200, 40)) as pilot:
        await spend_read(app, pilot)
        assert spend_shown(app)
        assert cell(app, "anthropic", "aa11bb") == "incl. 5h 42%"
        assert cell(app, "openrouter", "a1b2c3") == "—"


async def test_control_no_ledger_no_subscription_no_column(tmp_path, not_subscribed):
    app = make_app(claude_home(Home(tmp_path), ledger=False))
    async with app.run_test(size=(200, 40)) as pilot:
        await spend_read(app, pilot)
        assert not spend_shown(app)


async def test_another_secrets_reading_brings_no_column(tmp_path):
    """A reading recorded for the key the row held before says nothing of the key it holds."""
    app = make_app(claude_home(Home(tmp_path), ledger=False, fp="sha256:0000000000000000"))
    async with app.run_test(size=(200, 40)) as pilot:
        await spend_read(app, pilot)
        assert not spend_shown(app)


async def test_a_bare_incl_brings_no_column(tmp_path):
    app = make_app(claude_home(Home(tmp_path), reading=False, ledger=False))
    async with app.run_test(size=(200, 40)) as pilot:
        await spend_read(app, pilot)
        assert not spend_shown(app)


# -- the detail view -------------------------------------------------------------------------

async def detail_spend(tmp_path) -> list[tuple[str, str, str]]:
    app = make_app(claude_home(Home(tmp_path)))
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        table_of(app).move_to_key(key("anthropic", "aa11bb"))
        await pilot.press("enter")
        for _ in range(50):                  # bounded: the usage is read on a worker
            await app.workers.wait_for_complete()
            await pilot.pause()
            if any(name.startswith("spend") for name, _v, _m in app.screen.lines):
                break
        return [line for line in app.screen.lines if line[0].startswith("spend")]


async def test_the_detail_view_says_included(tmp_path):
    lines = {name: (value, meaning) for name, value, meaning in await detail_spend(tmp_path)}
    assert lines["spend today"][0] == "incl. 5h 42%"
    assert lines["spend 7 days"][0] == lines["spend 30 days"][0] == "incl."
    assert "included in a subscription" in lines["spend today"][1] and "no answer recorded" in lines["spend today"][1]


async def test_control_the_detail_view_without_the_subscription_says_a_dash(tmp_path, not_subscribed):
    lines = {name: (value, meaning) for name, value, meaning in await detail_spend(tmp_path)}
    assert lines["spend today"] == ("—", "no answer recorded")


def test_no_ledger_at_all_says_included_and_why():
    from screens.detail_usage import usage_lines

    why = "no usage ledger yet: a proxy on this home records each answer's usage"
    ((name, value, meaning),) = usage_lines(None, why, included="incl. 5h 42%")
    assert (name, value) == ("spend", "incl. 5h 42%") and "included in a subscription" in meaning and why in meaning
    assert usage_lines(None, why) == [("spend", "—", why)]                # control: not a subscription's
