"""store.watch.pool_cache: a reload rebuilds only the pools that changed, and never serves a
view whose cooldowns have run out."""

from __future__ import annotations

from store.paths import Home
from store.transaction import transaction
from store.watch.home import HomeLoader
from tests.conftest import make_row, make_store, write_store
from tests.tui_sample import NOW
from tui.services.clock import FakeClock


def seed(home: Home) -> None:
    write_store(home, make_store({
        "a": [make_row("aaaaaa", priority=0), make_row("bbbbbb", priority=1)],
        "b": [make_row("cccccc", priority=0, last_status="exhausted", last_status_at=NOW - 30,
                       last_error_code=429)],
    }))


def views(state) -> dict:
    return {pv.key: pv for pv in state.pools}


def test_untouched_pool_is_reused_and_written_pool_rebuilt(tmp_home: Home) -> None:
    seed(tmp_home)
    loader = HomeLoader(tmp_home, FakeClock(NOW))
    first = views(loader.load())
    with transaction(tmp_home) as doc:
        doc["credential_pool"]["a"][1]["label"] = "renamed"
    second = loader.load({"auth.json"})
    v2 = views(second)
    assert v2["b"] is first["b"]                      # nobody wrote to b: same object
    assert v2["a"] is not first["a"] and v2["a"].credentials[1].label == "renamed"
    assert second.events == []                         # a rename is no status event


def test_a_cooldown_that_ended_rebuilds_its_pool(tmp_home: Home) -> None:
    seed(tmp_home)
    clock = FakeClock(NOW)
    loader = HomeLoader(tmp_home, clock)
    first = views(loader.load())
    assert first["b"].credentials[0].effective.status == "cooling"
    clock.advance(3600 * 2)                            # past the 1 h default TTL
    later = views(loader.load({"config.yaml"}))
    # Control: same rows, but the clock moved the status, so the view is new.
    assert later["b"] is not first["b"]
    assert later["b"].credentials[0].effective.status != "cooling"
    assert later["a"] is first["a"]


def test_a_status_change_still_raises_its_event(tmp_home: Home) -> None:
    seed(tmp_home)
    loader = HomeLoader(tmp_home, FakeClock(NOW))
    loader.load()
    with transaction(tmp_home) as doc:
        row = doc["credential_pool"]["a"][0]
        row.update(last_status="exhausted", last_status_at=NOW, last_error_code=429)
    state = loader.load({"auth.json"})
    assert [(e.kind, e.id) for e in state.events] == [("exhausted", "aaaaaa")]
