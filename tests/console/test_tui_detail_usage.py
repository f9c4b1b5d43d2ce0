"""The detail view's usage (#29): a key's spend today, in 7 and 30 days with its status and
the genai-prices version beside an estimate, tokens by kind, the cache hit ratio, and a
subscription window's burn rate and projected exhaustion (store.monitor.burn's projection);
``—`` where unknown."""

from __future__ import annotations

from screens.detail_usage import burn_lines
from store.dialects.readings import Reading
from store.monitor import burn
from store.paths import Home
from store.usage import report
from store.usage.money import prices_version
from tests.console.habits_helpers import seed_sidecar
from tests.console.spend_helpers import seed_ledger, spent
from tests.tui_sample import NOW, key, make_app, table_of, write_sample

DAY = 86400.0


async def detail_lines(app, pilot, pool: str, rid: str) -> dict[str, tuple[str, str]]:
    await pilot.pause()
    assert table_of(app).move_to_key(key(pool, rid))
    await pilot.press("enter")
    await app.workers.wait_for_complete()
    await pilot.pause()
    return {name: (value, meaning) for name, value, meaning in app.screen.lines}


async def test_spend_windows_tokens_and_cache(tmp_path):
    home = Home(tmp_path)
    write_sample(home)
    seed_ledger(home, [
        spent("openrouter", "a1b2c3", 0.30, "actual", input=1000, cache_read=600, output=200, reasoning=40),
        spent("openrouter", "a1b2c3", 0.12, "estimated", input=1000, cache_read=200, output=100, reasoning=0),
        spent("openrouter", "a1b2c3", 2.00, "actual", at=NOW - 3 * DAY),
        spent("openrouter", "a1b2c3", 5.00, "actual", at=NOW - 20 * DAY),
    ])
    app = make_app(home)
    async with app.run_test(size=(160, 45)) as pilot:
        lines = await detail_lines(app, pilot, "openrouter", "a1b2c3")
    value, meaning = lines["spend today"]
    assert value == f"2 requests · ~$0.42 est. genai-prices {prices_version()}" and meaning.startswith("estimated")
    assert lines["tokens today"][0] == "input 2,000 · output 300 · cache read 800 · cache write 0 · reasoning 40"
    assert lines["cache hits today"][0] == "40%"
    assert lines["spend 7 days"][0].startswith("3 requests · ~$2.42")
    assert lines["spend 30 days"][0].startswith("4 requests · ~$7.42")


async def test_a_key_without_usage_and_a_home_without_a_ledger(tmp_path):
    home = Home(tmp_path)
    write_sample(home)
    app = make_app(home)
    async with app.run_test(size=(160, 45)) as pilot:
        lines = await detail_lines(app, pilot, "openrouter", "d4e5f6")
    assert lines["spend"][0] == "—" and "no usage ledger yet" in lines["spend"][1]
    seed_ledger(home, [spent("openrouter", "a1b2c3", 0.3, "actual")])
    app = make_app(home)
    async with app.run_test(size=(160, 45)) as pilot:
        lines = await detail_lines(app, pilot, "openrouter", "d4e5f6")
    assert lines["spend today"] == ("—", "no answer recorded")


async def test_reader_patched_out_shows_no_spend(tmp_path, monkeypatch):
    """Negative control: the same ledger, the query patched out: no figure in the view."""
    home = Home(tmp_path)
    write_sample(home)
    seed_ledger(home, [spent("openrouter", "a1b2c3", 0.42, "actual")])
    monkeypatch.setattr(report, "key_windows", lambda *a, **k: {"today": None, "7 days": None, "30 days": None})
    app = make_app(home)
    async with app.run_test(size=(160, 45)) as pilot:
        lines = await detail_lines(app, pilot, "openrouter", "a1b2c3")
    assert lines["spend today"][0] == "—" and not any("$0.42" in v for v, _ in lines.values())


async def test_a_subscription_row_is_included_with_its_burn(tmp_path):
    home = Home(tmp_path)
    # 5h window: 90% used 4h in (reset in 1h): 22.5%/h, runs out in ~27 min, before the reset.
    seed_sidecar(home, {"a1b2c3": [Reading("5h", "anthropic-unified", NOW - 1, utilization=0.9,
                                            reset_at=NOW + 3600)]})
    seed_ledger(home, [spent("openrouter", "a1b2c3", None, "included")])
    app = make_app(home)
    async with app.run_test(size=(160, 45)) as pilot:
        lines = await detail_lines(app, pilot, "openrouter", "a1b2c3")
    assert lines["spend today"][0] == "1 request · incl." and lines["spend today"][1].startswith("included")
    value, meaning = lines["burn 5h"]
    assert value.startswith("90% used · +22.5%/h · runs out in 26m"), value
    assert "average since the window began" in meaning


def test_burn_uses_the_monitors_projection(monkeypatch):
    """The projection is store.monitor.burn's: patched to say never, the view says so too."""
    slow = Reading("5h", "anthropic-unified", NOW, utilization=0.2, reset_at=NOW + 3600)
    fast = Reading("5h", "anthropic-unified", NOW, utilization=0.9, reset_at=NOW + 3600)
    assert "not before the window resets" in burn_lines([slow], NOW, lambda w: None)[0][1]
    assert "runs out in" in burn_lines([fast], NOW, lambda w: None)[0][1]
    monkeypatch.setattr(burn.Trend, "exhausts_at", lambda self: None)
    assert "not before the window resets" in burn_lines([fast], NOW, lambda w: None)[0][1]


def test_a_seen_trend_wins_over_the_average():
    r = Reading("5h", "anthropic-unified", NOW, utilization=0.5, reset_at=NOW + 3600)
    seen = burn.Trend(0.5, NOW, 0.25 / 3600, NOW + 3600, "anthropic-unified")
    value, meaning = burn_lines([r], NOW, lambda w: seen)[0][1:]
    assert value.startswith("50% used · +25.0%/h") and "trend of the readings seen" in meaning


def test_no_burn_for_a_window_without_use_or_stale():
    stale = Reading("5h", "anthropic-unified", NOW - 9000, utilization=0.9, reset_at=NOW - 60)
    counts = Reading("requests", "openai", NOW, limit=500, remaining=10, reset_at=NOW + 30)
    assert burn_lines([stale, counts], NOW, lambda w: None) == []
